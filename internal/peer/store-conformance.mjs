#!/usr/bin/env node
// store-conformance.mjs — the Agent SDK team's SessionStore conformance
// suite as they publish it, restated in our own words with the same inputs,
// calls and expectations, run against scribe's SessionStore package
// (clients/session-store) over a running `scribe serve`. Test-only; driven
// from Go (cmd/scribe/sessionstore_conformance_test.go).
//
// Usage:
//   node store-conformance.mjs <suite> <baseUrl> <token,token,...> [--store memory]
//
// <suite>:
//   ts  examples/session-stores/shared/conformance.ts of
//       anthropics/claude-agent-sdk-typescript: 13 contracts on the key
//       {projectKey:"proj", sessionId:"sess"}, entries {type, ...} without
//       uuids, session ids "s", "s1", "s2", "s3", "other", "never", the same
//       session id under two project keys ("A"/"B", "proj"/"proj2").
//   py  the Python SDK's port (claude_agent_sdk.testing.
//       run_session_store_conformance, which the Go and Rust ports follow):
//       the same 13 contracts with its own inputs (entries {type:"x"} with
//       uuids "b", "a", "z", "m", session ids "nope", "s1", "main", "sess2",
//       subpath "nope", subagents/agent-1), and its 14th contract,
//       listSessionSummaries, with the SDK's foldSessionSummary (plus the
//       Go port's two checks: a summary's mtime is not before listSessions'
//       and a subagent append leaves it alone).
//
// The suites want a fresh, isolated store per contract: each contract takes
// the next token of the list (one tenant each: tenants share nothing), or a
// new InMemorySessionStore (--store memory: the SDK's own store, to show the
// restatement is the suite). A contract whose optional method the store
// lacks is reported skipped, never passed silently.
//
// Prints {"suite","results":[{"n","name","ok","skipped"?,"error"?}]}. Exit 2
// on a usage error.

import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
// PEER_SDK (set by internal/peer when SCRIBE_PEER_DIR names another SDK
// install) else the pinned one next to this script.
const sdkPath = process.env.PEER_SDK || path.join(here, 'node_modules', '@anthropic-ai', 'claude-agent-sdk', 'sdk.mjs');
const pkgPath = path.join(here, '..', '..', 'clients', 'session-store', 'index.mjs');

function usage(msg) {
  process.stderr.write(`store-conformance.mjs: ${msg}\n`);
  process.exit(2);
}

// ---- assertions ------------------------------------------------------------

class Skip extends Error {}

function fail(what, got, want) {
  const show = (v) => (v === undefined ? 'undefined' : JSON.stringify(v)?.slice(0, 300));
  throw new Error(`${what}: got ${show(got)}, want ${show(want)}`);
}

// sortedJSON is v as JSON with every object's keys in code-unit order, so
// that two values compare equal whatever order a store keeps keys in (the
// suite's own comparison of entries).
function sortedJSON(v) {
  return JSON.stringify(v, (_k, x) => {
    if (!x || typeof x !== 'object' || Array.isArray(x)) return x;
    const out = {};
    for (const k of Object.keys(x).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) out[k] = x[k];
    return out;
  });
}

const same = (what, got, want) => sortedJSON(got) === sortedJSON(want) || fail(what, got, want);
const isNull = (what, got) => got === null || fail(what, got, null);
const equal = (what, got, want) => isDeepStrictEqual(got, want) || fail(what, got, want);
const truthy = (what, ok, got) => ok || fail(what, got, 'true');
const needs = (store, method) => {
  if (typeof store[method] !== 'function') throw new Skip(`the store has no ${method}`);
};

// ---- ts: shared/conformance.ts ---------------------------------------------

const KEY = { projectKey: 'proj', sessionId: 'sess' };
const E = (type, extra = {}) => ({ type, ...extra });

const TS = [
  ['append then load returns same entries in same order', async (fresh) => {
    const store = await fresh();
    const entries = [E('a', { n: 1, nested: { x: [1, 2] } }), E('b', { n: 2 })];
    await store.append(KEY, entries);
    same('load', await store.load(KEY), entries);
  }],
  ['load unknown key returns null', async (fresh) => {
    const store = await fresh();
    isNull('load of the main key', await store.load(KEY));
    isNull('load of subagents/a', await store.load({ ...KEY, subpath: 'subagents/a' }));
  }],
  ['multiple append calls preserve call order', async (fresh) => {
    const store = await fresh();
    await store.append(KEY, [E('a')]);
    await store.append(KEY, [E('b'), E('c')]);
    await store.append(KEY, [E('d')]);
    same('load', await store.load(KEY), [E('a'), E('b'), E('c'), E('d')]);
  }],
  ['append([]) is a no-op', async (fresh) => {
    const store = await fresh();
    await store.append(KEY, []);
    isNull('load after append([])', await store.load(KEY));
    await store.append(KEY, [E('a')]);
    await store.append(KEY, []);
    same('load', await store.load(KEY), [E('a')]);
  }],
  ['subpath keys are stored independently of main', async (fresh) => {
    const store = await fresh();
    await store.append(KEY, [E('main')]);
    await store.append({ ...KEY, subpath: 'subagents/x' }, [E('sub')]);
    same('load of the main key', await store.load(KEY), [E('main')]);
    same('load of subagents/x', await store.load({ ...KEY, subpath: 'subagents/x' }), [E('sub')]);
  }],
  ['projectKey isolation', async (fresh) => {
    const store = await fresh();
    const A = { projectKey: 'A', sessionId: 's' };
    const B = { projectKey: 'B', sessionId: 's' };
    await store.append(A, [E('a')]);
    await store.append(B, [E('b')]);
    same('load A', await store.load(A), [E('a')]);
    same('load B', await store.load(B), [E('b')]);
  }],
  ['listSessions returns sessionIds for project', async (fresh) => {
    const store = await fresh();
    needs(store, 'listSessions');
    await store.append({ projectKey: 'P', sessionId: 's1' }, [E('a')]);
    await store.append({ projectKey: 'P', sessionId: 's2' }, [E('b')]);
    await store.append({ projectKey: 'Q', sessionId: 's3' }, [E('c')]);
    const ids = (await store.listSessions('P')).map((s) => s.sessionId).sort();
    equal('sorted session ids of P', ids, ['s1', 's2']);
    const r = await store.listSessions('P');
    truthy('every mtime > 1e12', r.every((s) => s.mtime > 1e12), r);
    equal('listSessions("never-seen")', await store.listSessions('never-seen'), []);
  }],
  ['listSessions excludes subagent subpaths', async (fresh) => {
    const store = await fresh();
    needs(store, 'listSessions');
    await store.append({ projectKey: 'P', sessionId: 's1', subpath: 'subagents/x' }, [E('sub')]);
    const ids = (await store.listSessions('P')).map((s) => s.sessionId);
    truthy('s1 not listed', !ids.includes('s1'), ids);
  }],
  ['delete main then load returns null', async (fresh) => {
    const store = await fresh();
    needs(store, 'delete');
    await store.append(KEY, [E('a')]);
    await store.delete(KEY);
    isNull('load after delete', await store.load(KEY));
    await store.delete({ projectKey: 'x', sessionId: 'never' });
  }],
  ['delete main cascades to subkeys', async (fresh) => {
    const store = await fresh();
    needs(store, 'delete');
    await store.append(KEY, [E('main')]);
    await store.append({ ...KEY, subpath: 'subagents/a' }, [E('sa')]);
    await store.append({ ...KEY, subpath: 'subagents/b' }, [E('sb')]);
    await store.append({ projectKey: 'proj', sessionId: 'other' }, [E('o')]);
    await store.append({ projectKey: 'proj2', sessionId: 'sess' }, [E('p2')]);
    await store.delete(KEY);
    isNull('load of the main key', await store.load(KEY));
    isNull('load of subagents/a', await store.load({ ...KEY, subpath: 'subagents/a' }));
    isNull('load of subagents/b', await store.load({ ...KEY, subpath: 'subagents/b' }));
    same('load of proj/other', await store.load({ projectKey: 'proj', sessionId: 'other' }), [E('o')]);
    same('load of proj2/sess', await store.load({ projectKey: 'proj2', sessionId: 'sess' }), [E('p2')]);
    if (typeof store.listSubkeys === 'function') equal('listSubkeys after delete', await store.listSubkeys(KEY), []);
  }],
  ['delete with subpath removes only that subkey', async (fresh) => {
    const store = await fresh();
    needs(store, 'delete');
    await store.append(KEY, [E('main')]);
    await store.append({ ...KEY, subpath: 'subagents/a' }, [E('sa')]);
    await store.append({ ...KEY, subpath: 'subagents/b' }, [E('sb')]);
    await store.delete({ ...KEY, subpath: 'subagents/a' });
    same('load of the main key', await store.load(KEY), [E('main')]);
    isNull('load of subagents/a', await store.load({ ...KEY, subpath: 'subagents/a' }));
    same('load of subagents/b', await store.load({ ...KEY, subpath: 'subagents/b' }), [E('sb')]);
  }],
  ['listSubkeys returns subpaths for the session', async (fresh) => {
    const store = await fresh();
    needs(store, 'listSubkeys');
    await store.append({ ...KEY, subpath: 'subagents/a' }, [E('sa')]);
    await store.append({ ...KEY, subpath: 'subagents/b' }, [E('sb')]);
    await store.append({ projectKey: 'proj', sessionId: 'other', subpath: 'subagents/c' }, [E('sc')]);
    equal('sorted subkeys', (await store.listSubkeys(KEY)).sort(), ['subagents/a', 'subagents/b']);
  }],
  ['listSubkeys excludes main transcript', async (fresh) => {
    const store = await fresh();
    needs(store, 'listSubkeys');
    await store.append(KEY, [E('main')]);
    equal('listSubkeys', await store.listSubkeys(KEY), []);
    equal('listSubkeys of x/never', await store.listSubkeys({ projectKey: 'x', sessionId: 'never' }), []);
  }],
];

// ---- py: the Python port (and the Go port's additions to its 14th) ----------

const X = (fields) => ({ type: 'x', ...fields });
const SUB1 = { ...KEY, subpath: 'subagents/agent-1' };
const SUB2 = { ...KEY, subpath: 'subagents/agent-2' };
const count = (what, got, n) => (Array.isArray(got) && got.length === n) || fail(what, got, `${n} entries`);

const PY = [
  ['append then load returns same entries in same order', async (fresh) => {
    const store = await fresh();
    await store.append(KEY, [X({ uuid: 'b', n: 1 }), X({ uuid: 'a', n: 2 })]);
    equal('load', await store.load(KEY), [X({ uuid: 'b', n: 1 }), X({ uuid: 'a', n: 2 })]);
  }],
  ['load unknown key returns None', async (fresh) => {
    const store = await fresh();
    isNull('load of proj/nope', await store.load({ projectKey: 'proj', sessionId: 'nope' }));
    await store.append(KEY, [X({ uuid: 'x', n: 1 })]);
    isNull('load of subpath "nope"', await store.load({ ...KEY, subpath: 'nope' }));
  }],
  ['multiple append calls preserve call order', async (fresh) => {
    const store = await fresh();
    await store.append(KEY, [X({ uuid: 'z', n: 1 })]);
    await store.append(KEY, [X({ uuid: 'a', n: 2 }), X({ uuid: 'm', n: 3 })]);
    await store.append(KEY, [X({ uuid: 'b', n: 4 })]);
    equal('load', await store.load(KEY), [X({ uuid: 'z', n: 1 }), X({ uuid: 'a', n: 2 }), X({ uuid: 'm', n: 3 }), X({ uuid: 'b', n: 4 })]);
  }],
  ['append([]) is a no-op', async (fresh) => {
    const store = await fresh();
    await store.append(KEY, [X({ uuid: 'a', n: 1 })]);
    await store.append(KEY, []);
    equal('load', await store.load(KEY), [X({ uuid: 'a', n: 1 })]);
  }],
  ['subpath keys are stored independently of main', async (fresh) => {
    const store = await fresh();
    await store.append(KEY, [X({ uuid: 'm', n: 1 })]);
    await store.append(SUB1, [X({ uuid: 's', n: 1 })]);
    equal('load of the main key', await store.load(KEY), [X({ uuid: 'm', n: 1 })]);
    equal('load of subagents/agent-1', await store.load(SUB1), [X({ uuid: 's', n: 1 })]);
  }],
  ['project_key isolation', async (fresh) => {
    const store = await fresh();
    await store.append({ projectKey: 'A', sessionId: 's1' }, [X({ from: 'A' })]);
    await store.append({ projectKey: 'B', sessionId: 's1' }, [X({ from: 'B' })]);
    equal('load A/s1', await store.load({ projectKey: 'A', sessionId: 's1' }), [X({ from: 'A' })]);
    equal('load B/s1', await store.load({ projectKey: 'B', sessionId: 's1' }), [X({ from: 'B' })]);
    if (typeof store.listSessions === 'function') {
      count('listSessions("A")', await store.listSessions('A'), 1);
      count('listSessions("B")', await store.listSessions('B'), 1);
    }
  }],
  ['list_sessions returns session_ids for project', async (fresh) => {
    const store = await fresh();
    needs(store, 'listSessions');
    await store.append({ projectKey: 'proj', sessionId: 'a' }, [X({ n: 1 })]);
    await store.append({ projectKey: 'proj', sessionId: 'b' }, [X({ n: 1 })]);
    await store.append({ projectKey: 'other', sessionId: 'c' }, [X({ n: 1 })]);
    const sessions = await store.listSessions('proj');
    equal('sorted session ids', sessions.map((s) => s.sessionId).sort(), ['a', 'b']);
    truthy('every mtime finite and > 1e12', sessions.every((s) => Number.isFinite(s.mtime) && s.mtime > 1e12), sessions);
    equal('listSessions("never-appended-project")', await store.listSessions('never-appended-project'), []);
  }],
  ['list_sessions excludes subagent subpaths', async (fresh) => {
    const store = await fresh();
    needs(store, 'listSessions');
    await store.append({ projectKey: 'proj', sessionId: 'main' }, [X({ n: 1 })]);
    await store.append({ projectKey: 'proj', sessionId: 'main', subpath: 'subagents/agent-1' }, [X({ n: 1 })]);
    equal('session ids', (await store.listSessions('proj')).map((s) => s.sessionId), ['main']);
  }],
  ['delete main then load returns None', async (fresh) => {
    const store = await fresh();
    needs(store, 'delete');
    await store.delete({ projectKey: 'proj', sessionId: 'never-written' });
    await store.append(KEY, [X({ n: 1 })]);
    await store.delete(KEY);
    isNull('load after delete', await store.load(KEY));
  }],
  ['delete main cascades to subkeys', async (fresh) => {
    const store = await fresh();
    needs(store, 'delete');
    const other = { projectKey: 'proj', sessionId: 'sess2' };
    const otherProj = { projectKey: 'other-proj', sessionId: KEY.sessionId };
    for (const k of [KEY, SUB1, SUB2, other, otherProj]) await store.append(k, [X({ n: 1 })]);
    await store.delete(KEY);
    isNull('load of the main key', await store.load(KEY));
    isNull('load of subagents/agent-1', await store.load(SUB1));
    isNull('load of subagents/agent-2', await store.load(SUB2));
    count('load of proj/sess2', await store.load(other), 1);
    count('load of other-proj/sess', await store.load(otherProj), 1);
    if (typeof store.listSubkeys === 'function') equal('listSubkeys after delete', await store.listSubkeys(KEY), []);
    if (typeof store.listSessions === 'function') {
      const ids = (await store.listSessions(KEY.projectKey)).map((s) => s.sessionId);
      truthy('sess not listed after delete', !ids.includes(KEY.sessionId), ids);
    }
  }],
  ['delete with subpath removes only that subkey', async (fresh) => {
    const store = await fresh();
    needs(store, 'delete');
    for (const k of [KEY, SUB1, SUB2]) await store.append(k, [X({ n: 1 })]);
    await store.delete(SUB1);
    isNull('load of subagents/agent-1', await store.load(SUB1));
    count('load of subagents/agent-2', await store.load(SUB2), 1);
    count('load of the main key', await store.load(KEY), 1);
    if (typeof store.listSubkeys === 'function') equal('listSubkeys', await store.listSubkeys(KEY), ['subagents/agent-2']);
  }],
  ['list_subkeys returns subpaths', async (fresh) => {
    const store = await fresh();
    needs(store, 'listSubkeys');
    await store.append(KEY, [X({ n: 1 })]);
    await store.append(SUB1, [X({ n: 1 })]);
    await store.append(SUB2, [X({ n: 1 })]);
    await store.append({ projectKey: KEY.projectKey, sessionId: 'other-sess', subpath: 'subagents/agent-x' }, [X({ n: 1 })]);
    const subkeys = await store.listSubkeys(KEY);
    equal('sorted subkeys', [...subkeys].sort(), ['subagents/agent-1', 'subagents/agent-2']);
    truthy('subagents/agent-x not listed', !subkeys.includes('subagents/agent-x'), subkeys);
  }],
  ['list_subkeys excludes main transcript', async (fresh) => {
    const store = await fresh();
    needs(store, 'listSubkeys');
    await store.append(KEY, [X({ n: 1 })]);
    equal('listSubkeys', await store.listSubkeys(KEY), []);
    equal('listSubkeys of proj/never-appended', await store.listSubkeys({ projectKey: 'proj', sessionId: 'never-appended' }), []);
  }],
  ['list_session_summaries returns persisted fold output', async (fresh, sdk) => {
    const store = await fresh();
    needs(store, 'listSessionSummaries');
    const key = { projectKey: 'proj', sessionId: 'summ-sess' };
    await store.append(key, [X({ timestamp: '2024-01-01T00:00:00.000Z', customTitle: 'first' }), X({ timestamp: '2024-01-01T00:00:01.000Z' })]);
    await store.append(key, [X({ timestamp: '2024-01-01T00:00:02.000Z', customTitle: 'second' })]);
    await store.append({ projectKey: 'other', sessionId: 'elsewhere' }, [X({ timestamp: '2024-01-01T00:00:00.000Z' })]);
    const summaries = await store.listSessionSummaries('proj');
    equal('summary session ids', summaries.map((s) => s.sessionId), ['summ-sess']);
    const summ = summaries[0];
    truthy('mtime finite and > 1e12', Number.isFinite(summ.mtime) && summ.mtime > 1e12, summ.mtime);
    truthy('data is an object', summ.data !== null && typeof summ.data === 'object' && !Array.isArray(summ.data), summ.data);
    // Go port: the summary is not older than listSessions' mtime.
    if (typeof store.listSessions === 'function') {
      const listed = (await store.listSessions('proj')).find((s) => s.sessionId === 'summ-sess');
      truthy('summary mtime >= listSessions mtime', listed && summ.mtime >= listed.mtime, { summary: summ.mtime, listed });
    }
    const refolded = sdk.foldSessionSummary(summ, key, [X({ timestamp: '2024-01-01T00:00:03.000Z' })]);
    equal('refolded sessionId', refolded.sessionId, 'summ-sess');
    truthy('refolded mtime >= summary mtime', refolded.mtime >= summ.mtime, refolded.mtime);
    // Go port: a subagent append leaves the main summary as it was.
    await store.append({ ...key, subpath: 'subagents/agent-1' }, [X({ timestamp: '2024-01-01T00:00:09.000Z', customTitle: 'subagent' })]);
    const after = (await store.listSessionSummaries('proj')).find((s) => s.sessionId === 'summ-sess');
    equal('summary data after a subagent append', after?.data, summ.data);
    equal('listSessionSummaries("never-appended-project")', await store.listSessionSummaries('never-appended-project'), []);
    if (typeof store.delete === 'function') {
      await store.delete(key);
      equal('listSessionSummaries after delete', await store.listSessionSummaries('proj'), []);
    }
  }],
];

// ---- main ------------------------------------------------------------------

const argv = process.argv.slice(2);
const flags = {};
const pos = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--store') flags.store = argv[++i];
  else pos.push(argv[i]);
}
const [suite, baseUrl, tokenList] = pos;
const contracts = { ts: TS, py: PY }[suite];
if (!contracts || !baseUrl || !tokenList || pos.length !== 3) usage('want: <ts|py> <baseUrl> <token,token,...> [--store memory]');
if (flags.store !== undefined && flags.store !== 'memory') usage(`--store ${flags.store}: only "memory"`);
const tokens = tokenList.split(',');
if (flags.store === undefined && tokens.length < contracts.length) usage(`${contracts.length} contracts want as many tokens (one tenant each); got ${tokens.length}`);

const sdk = await import(pathToFileURL(sdkPath).href);
const { ScribeSessionStore } = await import(pathToFileURL(pkgPath).href);
// The py suite's 14th contract needs listSessionSummaries, which the
// package has with the SDK's fold.
const fold = suite === 'py' ? { foldSessionSummary: sdk.foldSessionSummary } : {};
const results = [];
for (let i = 0; i < contracts.length; i++) {
  const [name, fn] = contracts[i];
  const fresh = async () => (flags.store === 'memory' ? new sdk.InMemorySessionStore() : new ScribeSessionStore({ baseUrl, token: tokens[i], ...fold }));
  try {
    await fn(fresh, sdk);
    results.push({ n: i + 1, name, ok: true });
  } catch (err) {
    if (err instanceof Skip) results.push({ n: i + 1, name, ok: false, skipped: true, error: err.message });
    else results.push({ n: i + 1, name, ok: false, error: String(err?.message ?? err) });
  }
}
process.stdout.write(JSON.stringify({ suite, results }) + '\n');
