#!/usr/bin/env node
// store-harness.mjs — the real Claude Agent SDK as the judge of scribe's
// SessionStore package (clients/session-store), against a running
// `scribe serve`. Test-only; driven from Go (cmd/scribe/sessionstore_test.go).
//
// Usage:
//   node store-harness.mjs contracts <baseUrl> <token> [--broken NAME] [--store memory]
//       Runs the 13 store contracts (the SDK's published list, in our
//       words, with UUID session ids and SDK-shaped entries; the published
//       suite itself, with its own ids, is store-conformance.mjs):
//       append/load, null for unknown keys,
//       order, empty append, subpaths apart, projects apart, listSessions,
//       no subpaths in it, delete, cascade, subpath delete, listSubkeys, no
//       main key in it) against ScribeSessionStore, or the SDK's own
//       InMemorySessionStore (--store memory), or ScribeSessionStore broken
//       on purpose in one way (--broken NAME, see BROKEN), and prints
//       {"results":[{"n","name","ok","error"?}]}.
//   node store-harness.mjs fold <baseUrl> <token>
//       Each append folded into the summary exactly once (see runFold).
//   node store-harness.mjs import <configDir> <cwd> <baseUrl> <token> <sessionId>
//       importSessionToStore of one session, then prints {"projectKey",
//       "keys":{"<subpath or ''>":[entries as loaded back]}}.
//   node store-harness.mjs corpus <corpusRoot> <workDir> <baseUrl> <token> [--fold]
//       Lays the corpus's Claude Code sessions out as a config folder under
//       workDir, imports each into the store with the SDK's
//       importSessionToStore, and compares what the SDK's listSessions,
//       getSessionMessages, listSubagents, getSubagentMessages and
//       forkSession answer from the store with what they answer from the
//       files. With --fold the store gets foldSessionSummary, and its
//       listSessions is also compared with the SDK's InMemorySessionStore
//       given the same imports. --limit N takes the first N sessions;
//       --broken NAME wraps the store as for contracts. Prints
//       {"sessions","agents","compared","mismatches":[…],"sdkDifferences":[…]}.
//
// The SDK is the pinned one in ./node_modules (or $PEER_SDK); CLAUDE_CONFIG_DIR is set
// before it is loaded. Exit 2 on a usage error.

import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
// PEER_SDK (set by internal/peer when SCRIBE_PEER_DIR names another SDK
// install) else the pinned one next to this script.
const sdkPath = process.env.PEER_SDK || path.join(here, 'node_modules', '@anthropic-ai', 'claude-agent-sdk', 'sdk.mjs');
const pkgPath = path.join(here, '..', '..', 'clients', 'session-store', 'index.mjs');

function usage(msg) {
  process.stderr.write(`store-harness.mjs: ${msg}\n`);
  process.exit(2);
}

const argv = process.argv.slice(2);
const flags = {};
const pos = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--fold') flags.fold = true;
  else if (argv[i] === '--broken' || argv[i] === '--store' || argv[i] === '--limit') flags[argv[i].slice(2)] = argv[++i];
  else pos.push(argv[i]);
}

// ---- the contracts -------------------------------------------------------

const entry = (type, extra = {}) => ({ type, uuid: randomUUID(), timestamp: new Date().toISOString(), ...extra });
const user = (text) => entry('user', { message: { role: 'user', content: [{ type: 'text', text }] }, nested: { a: [1, 2, { b: null }] } });
const sub = (id) => `subagents/agent-${id}`;

function expect(ok, what, got) {
  if (!ok) throw new Error(`${what}; got ${JSON.stringify(got)?.slice(0, 300)}`);
}
function expectEqual(got, want, what) {
  expect(isDeepStrictEqual(got, want), `${what}: want ${JSON.stringify(want)?.slice(0, 300)}`, got);
}

// CONTRACTS: each makes its own keys (a fresh project and session ids), so
// they are independent and can run against one server.
const CONTRACTS = [
  ['append then load returns the same entries in order', async (s, P) => {
    const k = { projectKey: P, sessionId: randomUUID() };
    const es = [user('one'), entry('assistant', { message: { content: 'two' } }), user('three')];
    await s.append(k, es);
    expectEqual(await s.load(k), es, 'load');
  }],
  ['load of an unknown key returns null', async (s, P) => {
    const sid = randomUUID();
    expectEqual(await s.load({ projectKey: P, sessionId: sid }), null, 'main');
    expectEqual(await s.load({ projectKey: P, sessionId: sid, subpath: sub('nobody') }), null, 'subpath');
  }],
  ['several appends keep the order of the calls', async (s, P) => {
    const k = { projectKey: P, sessionId: randomUUID() };
    const es = [user('a'), user('b'), user('c'), user('d'), { type: 'custom-title', customTitle: 'no uuid' }];
    await s.append(k, es.slice(0, 1));
    await s.append(k, es.slice(1, 3));
    await s.append(k, es.slice(3));
    expectEqual(await s.load(k), es, 'load');
  }],
  ['append of no entries is a no-op', async (s, P) => {
    const k = { projectKey: P, sessionId: randomUUID() };
    await s.append(k, []);
    expectEqual(await s.load(k), null, 'load after an empty append');
    const es = [user('x')];
    await s.append(k, es);
    await s.append(k, []);
    expectEqual(await s.load(k), es, 'load after entries and an empty append');
  }],
  ['subpath keys are stored apart from the main transcript', async (s, P) => {
    const sid = randomUUID();
    const main = [user('main')];
    const agent = [user('agent'), { type: 'agent_metadata', agentType: 'general-purpose' }];
    await s.append({ projectKey: P, sessionId: sid }, main);
    await s.append({ projectKey: P, sessionId: sid, subpath: sub('a1') }, agent);
    expectEqual(await s.load({ projectKey: P, sessionId: sid }), main, 'main');
    expectEqual(await s.load({ projectKey: P, sessionId: sid, subpath: sub('a1') }), agent, 'subpath');
  }],
  ['project keys are isolated', async (s, P) => {
    const P2 = P + '-other';
    const s1 = randomUUID();
    const s2 = randomUUID();
    await s.append({ projectKey: P, sessionId: s1 }, [user('p1')]);
    await s.append({ projectKey: P2, sessionId: s2 }, [user('p2')]);
    expectEqual(await s.load({ projectKey: P2, sessionId: s1 }), null, 'P1 session seen from P2');
    const ids = (await s.listSessions(P2)).map((x) => x.sessionId);
    expectEqual(ids, [s2], 'listSessions(P2)');
  }],
  ['listSessions returns the project sessions with mtime in epoch ms', async (s, P) => {
    const ids = [randomUUID(), randomUUID()];
    const before = Date.now();
    for (const id of ids) await s.append({ projectKey: P, sessionId: id }, [user(id)]);
    const list = await s.listSessions(P);
    expectEqual(list.map((x) => x.sessionId).sort(), [...ids].sort(), 'session ids');
    for (const x of list) {
      expect(Number.isInteger(x.mtime) && Math.abs(x.mtime - before) < 10 * 60 * 1000, 'mtime: want integer epoch milliseconds near now', x.mtime);
    }
  }],
  ['listSessions leaves subagent subpaths out', async (s, P) => {
    const sid = randomUUID();
    await s.append({ projectKey: P, sessionId: sid }, [user('main')]);
    await s.append({ projectKey: P, sessionId: sid, subpath: sub('a1') }, [user('agent')]);
    await s.append({ projectKey: P, sessionId: randomUUID(), subpath: sub('a2') }, [user('only an agent')]);
    expectEqual((await s.listSessions(P)).map((x) => x.sessionId), [sid], 'session ids');
  }],
  ['delete of the main key, then load, returns null', async (s, P) => {
    const k = { projectKey: P, sessionId: randomUUID() };
    await s.append(k, [user('x')]);
    await s.delete(k);
    expectEqual(await s.load(k), null, 'load after delete');
    expectEqual((await s.listSessions(P)).map((x) => x.sessionId), [], 'listSessions after delete');
  }],
  ['delete of the main key cascades to its subkeys', async (s, P) => {
    const k = { projectKey: P, sessionId: randomUUID() };
    await s.append(k, [user('main')]);
    await s.append({ ...k, subpath: sub('a1') }, [user('agent')]);
    await s.delete(k);
    expectEqual(await s.load({ ...k, subpath: sub('a1') }), null, 'subkey after delete');
    expectEqual(await s.listSubkeys(k), [], 'listSubkeys after delete');
  }],
  ['delete with a subpath removes only that subkey', async (s, P) => {
    const k = { projectKey: P, sessionId: randomUUID() };
    const main = [user('main')];
    const a2 = [user('a2')];
    await s.append(k, main);
    await s.append({ ...k, subpath: sub('a1') }, [user('a1')]);
    await s.append({ ...k, subpath: sub('a2') }, a2);
    await s.delete({ ...k, subpath: sub('a1') });
    expectEqual(await s.load({ ...k, subpath: sub('a1') }), null, 'deleted subkey');
    expectEqual(await s.load(k), main, 'main');
    expectEqual(await s.load({ ...k, subpath: sub('a2') }), a2, 'other subkey');
  }],
  ['listSubkeys returns the subpaths of the session', async (s, P) => {
    const k = { projectKey: P, sessionId: randomUUID() };
    await s.append(k, [user('main')]);
    for (const a of ['a1', 'a2', 'b3']) await s.append({ ...k, subpath: sub(a) }, [user(a)]);
    expectEqual((await s.listSubkeys(k)).sort(), [sub('a1'), sub('a2'), sub('b3')], 'subkeys');
  }],
  ['listSubkeys leaves the main transcript out', async (s, P) => {
    const k = { projectKey: P, sessionId: randomUUID() };
    await s.append(k, [user('main')]);
    await s.append({ ...k, subpath: sub('a1') }, [user('agent')]);
    expectEqual(await s.listSubkeys(k), [sub('a1')], 'subkeys');
  }],
];

// BROKEN: ScribeSessionStore wrong in one way each, to show that the
// contract that checks it fails.
const BROKEN = {
  reverse: (s) => ({ ...bind(s), load: async (k) => (await s.load(k))?.slice().reverse() ?? null }),
  'empty-not-null': (s) => ({ ...bind(s), load: async (k) => (await s.load(k)) ?? [] }),
  'append-empty': (s) => ({ ...bind(s), append: (k, es) => s.append(k, es.length ? es : [{ type: 'x' }]) }),
  'no-subpath': (s) => {
    const strip = ({ subpath, ...k }) => k;
    return { ...bind(s), append: (k, es) => s.append(strip(k), es), load: (k) => s.load(strip(k)), delete: (k) => s.delete(strip(k)), listSubkeys: async () => [] };
  },
  'one-project': (s) => {
    const one = (k) => ({ ...k, projectKey: 'one-project' });
    return { ...bind(s), append: (k, es) => s.append(one(k), es), load: (k) => s.load(one(k)), listSessions: () => s.listSessions('one-project') };
  },
  'mtime-seconds': (s) => ({ ...bind(s), listSessions: async (p) => (await s.listSessions(p)).map((x) => ({ ...x, mtime: Math.floor(x.mtime / 1000) })) }),
  'list-subpaths': (s) => ({
    ...bind(s),
    listSessions: async (p) => {
      const out = [];
      for (const x of await s.listSessions(p)) {
        out.push(x);
        for (const k of await s.listSubkeys({ projectKey: p, sessionId: x.sessionId })) out.push({ ...x, sessionId: `${x.sessionId}/${k}` });
      }
      return out;
    },
  }),
  'no-delete': (s) => ({ ...bind(s), delete: async () => {} }),
  'no-cascade': (s) => ({
    ...bind(s),
    delete: async (k) => {
      if (k.subpath !== undefined) return s.delete(k);
      const keep = [];
      for (const sp of await s.listSubkeys(k)) keep.push([sp, await s.load({ ...k, subpath: sp })]);
      await s.delete(k);
      for (const [sp, es] of keep) await s.append({ ...k, subpath: sp }, es);
    },
  }),
  'delete-whole-session': (s) => ({ ...bind(s), delete: ({ subpath, ...k }) => s.delete(k) }),
  'subkeys-empty': (s) => ({ ...bind(s), listSubkeys: async () => [] }),
  'subkeys-main': (s) => ({ ...bind(s), listSubkeys: async (k) => ['', ...(await s.listSubkeys(k))] }),
};

function bind(s) {
  return {
    append: (k, es) => s.append(k, es),
    load: (k) => s.load(k),
    listSessions: (p) => s.listSessions(p),
    delete: (k) => s.delete(k),
    listSubkeys: (k) => s.listSubkeys(k),
  };
}

async function runContracts(baseUrl, token) {
  const sdk = await import(pathToFileURL(sdkPath).href);
  const { ScribeSessionStore } = await import(pathToFileURL(pkgPath).href);
  const results = [];
  for (let i = 0; i < CONTRACTS.length; i++) {
    const [name, fn] = CONTRACTS[i];
    let store = flags.store === 'memory' ? new sdk.InMemorySessionStore() : new ScribeSessionStore({ baseUrl, token });
    if (flags.broken) {
      if (!BROKEN[flags.broken]) usage(`no broken variant ${flags.broken}; have ${Object.keys(BROKEN).join(', ')}`);
      store = BROKEN[flags.broken](store);
    }
    const P = `-contract-${i + 1}-${randomUUID().slice(0, 8)}`;
    try {
      await fn(store, P);
      results.push({ n: i + 1, name, ok: true });
    } catch (err) {
      results.push({ n: i + 1, name, ok: false, error: String(err?.message ?? err) });
    }
  }
  return { results };
}

// ---- the corpus ------------------------------------------------------------

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// layCorpus copies every <uuid>.jsonl of the corpus (with its <uuid>/
// folder of subagents) into one project folder; returns the session ids.
function layCorpus(root, projectDir) {
  const ids = [];
  const walk = (dir) => {
    for (const d of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, d.name);
      if (d.isDirectory()) {
        if (!UUID.test(d.name)) walk(p);
        continue;
      }
      const id = d.name.replace(/\.jsonl$/, '');
      if (!d.name.endsWith('.jsonl') || !UUID.test(id) || ids.includes(id)) continue;
      ids.push(id);
      fs.copyFileSync(p, path.join(projectDir, d.name));
      const side = path.join(dir, id);
      if (fs.existsSync(side)) fs.cpSync(side, path.join(projectDir, id), { recursive: true });
    }
  };
  fs.mkdirSync(projectDir, { recursive: true });
  walk(root);
  return ids.sort();
}

// listed drops what can only differ between a file and a store (the file's
// size and mtime) and sorts by id.
const listed = (list) =>
  list.map(({ lastModified, fileSize, ...rest }) => rest).sort((a, b) => (a.sessionId < b.sessionId ? -1 : 1));

// firstDiff finds where a and b first differ.
function firstDiff(a, b, at) {
  if (isDeepStrictEqual(a, b)) return null;
  if (a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) {
      const d = firstDiff(a[k], b[k], `${at}/${k}`);
      if (d) return d;
    }
  }
  return { at: at || '/', a, b };
}

// plain is store without listSessionSummaries.
const plain = (s) => ({
  append: (k, es) => s.append(k, es),
  load: (k) => s.load(k),
  listSessions: (p) => s.listSessions(p),
  delete: (k) => s.delete(k),
  listSubkeys: (k) => s.listSubkeys(k),
});

// forkShape is a fork's messages without what a fork draws anew: ids, and
// the time of what the fork itself writes.
const started = Date.now();
const forkShape = (msgs) =>
  msgs.map(({ uuid, session_id, timestamp, ...rest }) => (Date.parse(timestamp) >= started ? rest : { ...rest, timestamp }));

async function runCorpus(root, work, baseUrl, token) {
  const cwd = '/corpus/proj';
  const config = path.join(work, 'config');
  process.env.CLAUDE_CONFIG_DIR = config;
  let ids = layCorpus(root, path.join(config, 'projects', cwd.replace(/[^a-zA-Z0-9]/g, '-')));
  if (flags.limit) ids = ids.slice(0, Number(flags.limit));
  const sdk = await import(pathToFileURL(sdkPath).href);
  const { ScribeSessionStore } = await import(pathToFileURL(pkgPath).href);
  let store = new ScribeSessionStore({ baseUrl, token, ...(flags.fold ? { foldSessionSummary: sdk.foldSessionSummary } : {}) });
  if (flags.broken) store = BROKEN[flags.broken](store);
  const mem = flags.fold ? new sdk.InMemorySessionStore() : null;
  // Without --fold the SDK's store is compared without its summaries too.
  const memAll = mem ?? new sdk.InMemorySessionStore();
  const mismatches = [];
  let compared = 0;
  const same = (what, local, remote) => {
    compared++;
    if (!isDeepStrictEqual(local, remote)) {
      const d = firstDiff(local, remote, '');
      mismatches.push({ what, at: d.at, local: JSON.stringify(d.a)?.slice(0, 400), store: JSON.stringify(d.b)?.slice(0, 400) });
    }
  };
  for (const id of ids) {
    await sdk.importSessionToStore(id, store, { dir: cwd });
    await sdk.importSessionToStore(id, memAll, { dir: cwd });
  }
  const local = { dir: cwd };
  const remote = { dir: cwd, sessionStore: store };
  // listSessions from a store reads whole transcripts where from files it
  // reads a file's head and tail only, so the two can differ on a long
  // session (a summary line out of the tail window): the SDK's own store
  // answers the same as ours there, and that is the measure.
  const fromFiles = listed(await sdk.listSessions(local));
  const fromStore = listed(await sdk.listSessions(remote));
  const fromMemory = listed(await sdk.listSessions({ dir: cwd, sessionStore: mem ?? plain(memAll) }));
  same('listSessions vs InMemorySessionStore', fromMemory, fromStore);
  const sdkDifferences = [];
  for (let i = 0; i < fromFiles.length; i++) {
    const d = firstDiff(fromFiles[i], fromStore[i], `/${i}`);
    if (d === null) continue;
    if (isDeepStrictEqual(fromStore[i], fromMemory[i])) sdkDifferences.push({ at: d.at, files: d.a, stores: d.b });
    else same(`listSessions ${fromFiles[i].sessionId}`, fromFiles[i], fromStore[i]);
  }
  compared += fromFiles.length;
  let agents = 0;
  for (const id of ids) {
    same(`getSessionMessages ${id}`, await sdk.getSessionMessages(id, local), await sdk.getSessionMessages(id, remote));
    const la = (await sdk.listSubagents(id, local)).sort();
    same(`listSubagents ${id}`, la, (await sdk.listSubagents(id, remote)).sort());
    for (const a of la) {
      agents++;
      same(`getSubagentMessages ${id} ${a}`, await sdk.getSubagentMessages(id, a, local), await sdk.getSubagentMessages(id, a, remote));
    }
  }
  // Forks last: a local fork adds a file to the project. A session with
  // nothing to fork must be refused the same way from both.
  const fork = async (id, o) => {
    try {
      const f = await sdk.forkSession(id, o);
      return { messages: forkShape(await sdk.getSessionMessages(f.sessionId, o)) };
    } catch (err) {
      return { error: String(err?.message ?? err) };
    }
  };
  for (const id of ids) {
    same(`forkSession ${id}`, await fork(id, local), await fork(id, remote));
  }
  return { sessions: ids.length, agents, compared, mismatches, sdkDifferences };
}

// runImport imports one session of a config folder with the SDK's
// importSessionToStore, and prints the keys it wrote with their entries
// as the store loads them back.
async function runImport(config, cwd, baseUrl, token, id) {
  process.env.CLAUDE_CONFIG_DIR = config;
  const sdk = await import(pathToFileURL(sdkPath).href);
  const { ScribeSessionStore } = await import(pathToFileURL(pkgPath).href);
  const store = new ScribeSessionStore({ baseUrl, token });
  await sdk.importSessionToStore(id, store, { dir: cwd });
  const projectKey = cwd.replace(/[^a-zA-Z0-9]/g, '-'); // the SDK's projectKey of a short cwd
  const keys = {};
  keys[''] = await store.load({ projectKey, sessionId: id });
  for (const sp of await store.listSubkeys({ projectKey, sessionId: id })) keys[sp] = await store.load({ projectKey, sessionId: id, subpath: sp });
  return { projectKey, keys };
}

// ---- the summary fold -----------------------------------------------------

// runFold checks that each append's batch is folded into the summary
// exactly once, with a fold that counts entries (the SDK's own fold is
// idempotent on its fields, so it could not tell): when the answer of a
// summary write is lost after the server applied it, when the request is
// lost before it got there, and with two clients appending to one session
// at once (compare-and-set). Prints {"cases":[{"name","want","got"}]}.
async function runFold(baseUrl, token) {
  const { ScribeSessionStore } = await import(pathToFileURL(pkgPath).href);
  const count = (prev, key, entries, o) => ({ sessionId: key.sessionId, mtime: o?.mtime ?? 0, data: { n: (prev?.data?.n ?? 0) + entries.length } });
  const P = `-fold-${randomUUID().slice(0, 8)}`;
  const summaryOf = async (s, sid) => (await s.listSessionSummaries(P)).find((x) => x.sessionId === sid)?.data?.n;
  // lossy drops the answer (after: the server applied it) or the request
  // (before) of the first summary write.
  const lossy = (when) => {
    let armed = true;
    return async (url, init) => {
      const hit = armed && init?.method === 'PUT' && String(url).includes('/summary?');
      if (hit) armed = false;
      if (hit && when === 'before') throw new TypeError('fetch failed (request lost)');
      const resp = await fetch(url, init);
      if (hit) throw new TypeError('fetch failed (answer lost)');
      return resp;
    };
  };
  const cases = [];
  for (const when of ['after', 'before']) {
    const s = new ScribeSessionStore({ baseUrl, token, foldSessionSummary: count, fetch: lossy(when) });
    const sid = randomUUID();
    await s.append({ projectKey: P, sessionId: sid }, [user('a'), user('b')]);
    await s.append({ projectKey: P, sessionId: sid }, [user('c')]);
    cases.push({ name: `answer lost ${when} the write`, want: 3, got: await summaryOf(s, sid) });
  }
  const a = new ScribeSessionStore({ baseUrl, token, foldSessionSummary: count });
  const b = new ScribeSessionStore({ baseUrl, token, foldSessionSummary: count });
  const sid = randomUUID();
  const key = { projectKey: P, sessionId: sid };
  await a.append(key, [user('first')]);
  await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).append(key, [user(`e${i}`), user(`f${i}`)])));
  cases.push({ name: 'two clients at once', want: 41, got: await summaryOf(a, sid) });
  // Subagent appends are not folded (the SDK folds the main transcript).
  await a.append({ ...key, subpath: sub('x') }, [user('agent')]);
  cases.push({ name: 'subagent appends left out', want: 41, got: await summaryOf(a, sid) });
  return { cases };
}

// ---- main ------------------------------------------------------------------

const [cmd, ...args] = pos;
let out;
if (cmd === 'contracts' && args.length === 2) {
  out = await runContracts(args[0], args[1]);
} else if (cmd === 'fold' && args.length === 2) {
  out = await runFold(args[0], args[1]);
} else if (cmd === 'import' && args.length === 5) {
  out = await runImport(...args);
} else if (cmd === 'corpus' && args.length === 4) {
  out = await runCorpus(args[0], args[1], args[2], args[3]);
} else {
  usage('want: contracts <baseUrl> <token> [--broken NAME] [--store memory] | corpus <corpusRoot> <workDir> <baseUrl> <token> [--fold]');
}
process.stdout.write(JSON.stringify(out) + '\n');
