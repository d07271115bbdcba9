#!/usr/bin/env node
// store-hostile.mjs — hostile cases for the SessionStore package
// (clients/session-store) against a running `scribe serve` with its default
// max_body_bytes (8 MiB). Test-only; driven from Go
// (cmd/scribe/sessionstore_hostile_test.go).
//
// Usage: node store-hostile.mjs <baseUrl> <token>
// Prints {"results":[{"name","ok","error"?}]}: one line per case.
//
//   - sdk-retry-after-lost: the first append's request is applied but its
//     answers are lost (every attempt of the client); the SDK then calls
//     append again with the same entries, as its mirror does. Nothing is
//     stored twice, the entries without a uuid included.
//   - sdk-retry-fold: with foldSessionSummary, the summary's write is
//     applied but its answer lost, and the read that would tell is lost
//     too; the SDK's retry of the append folds nothing twice (a counting
//     fold shows it).
//   - abandoned-append: the SDK gives up waiting on an append (its
//     sendTimeoutMs) and sends the next batch while the first is still
//     on its way (here: held before it is sent); the batches land in the
//     order they were appended all the same.
//   - nested-subpaths: the subpaths the SDK makes for workflow subagents
//     (subagents/workflows/<run>/agent-<id>, …/journal) are stored,
//     loaded and listed like subagents/agent-<id>, and the SDK's
//     listSubagents and getSubagentMessages find the nested agent.
//   - utf8-parts: three entries of about 4.5 MB of UTF-8 each (1.5 M
//     characters): each fits under the server's limit alone, so the
//     append succeeds and loads back whole.
//   - many-entries: 12,000 entries in one append (the server takes at most
//     10,000 per request) load back whole and in order.
//   - server-away: nothing listens at the base URL: the append fails as
//     lost (status 0), and its message names the URL and the cause.
//   - oversize-entry: an entry larger than the limit among small ones:
//     the append fails with 413 and nothing of it is stored.
//   - oversize-request-answered: a client whose maxRequestBytes is over
//     the server's limit sends a 9 MB request: it gets the server's 413
//     (request_too_large), not a connection reset.

import path from 'node:path';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgPath = path.join(here, '..', '..', 'clients', 'session-store', 'index.mjs');
const { ScribeSessionStore } = await import(pathToFileURL(pkgPath).href);

const [baseUrl, token] = process.argv.slice(2);
if (!baseUrl || !token) {
  process.stderr.write('usage: store-hostile.mjs <baseUrl> <token>\n');
  process.exit(2);
}

const key = () => ({ projectKey: '-hostile', sessionId: randomUUID() });
const user = (i) => ({ type: 'user', uuid: randomUUID(), message: { role: 'user', content: `m${i}` } });

function expect(ok, what) {
  if (!ok) throw new Error(what);
}

const cases = {
  async 'sdk-retry-after-lost'() {
    let drop = true;
    const fetchDrop = async (url, init) => {
      const r = await fetch(url, init);
      if (drop && init.method === 'POST') {
        await r.text();
        throw new TypeError('fetch failed (the answer was lost)');
      }
      return r;
    };
    const s = new ScribeSessionStore({ baseUrl, token, fetch: fetchDrop, retries: 1 });
    const k = key();
    const entries = [user(1), { type: 'custom-title', customTitle: 't', sessionId: k.sessionId }, user(2)];
    let lost = false;
    try {
      await s.append(k, entries);
    } catch (err) {
      lost = err.lost === true;
    }
    expect(lost, 'the first append did not fail as lost');
    drop = false;
    await s.append(k, entries); // the SDK's retry: the same entries again
    const got = (await s.load(k)).map((e) => e.type);
    expect(JSON.stringify(got) === JSON.stringify(['user', 'custom-title', 'user']), `loaded ${JSON.stringify(got)}`);
  },

  async 'sdk-retry-fold'() {
    let drop = true;
    const fetchDrop = async (url, init) => {
      if (drop && init.method === 'GET' && url.includes('/summary?') && dropGets-- <= 0) {
        throw new TypeError('fetch failed (no answer)');
      }
      const r = await fetch(url, init);
      if (drop && init.method === 'PUT') {
        await r.text();
        throw new TypeError('fetch failed (the answer was lost)');
      }
      return r;
    };
    let dropGets = 1; // the first read of the summary goes through
    const fold = (prev, k, entries) => ({ sessionId: k.sessionId, mtime: Date.now(), data: { n: (prev?.data?.n ?? 0) + entries.length } });
    const s = new ScribeSessionStore({ baseUrl, token, fetch: fetchDrop, retries: 0, foldSessionSummary: fold });
    const k = key();
    const entries = [user(1), { type: 'x' }, user(2)];
    let failed = false;
    try {
      await s.append(k, entries);
    } catch {
      failed = true;
    }
    expect(failed, 'the first append did not fail');
    drop = false;
    await s.append(k, entries);
    const sums = await s.listSessionSummaries(k.projectKey);
    const n = sums.find((x) => x.sessionId === k.sessionId)?.data?.n;
    expect(n === 3, `summary counts ${n} entries, want 3`);
    const got = await s.load(k);
    expect(got.length === 3, `loaded ${got.length} entries`);
  },

  async 'abandoned-append'() {
    let hold = true;
    const slowFirst = async (url, init) => {
      if (init.method === 'POST' && hold) {
        hold = false;
        await new Promise((resolve) => setTimeout(resolve, 1500));
      }
      return fetch(url, init);
    };
    const s = new ScribeSessionStore({ baseUrl, token, fetch: slowFirst });
    const k = key();
    const first = s.append(k, [{ ...user(1), n: 1 }]);
    // The SDK's timeout, much shorter than the hold: it moves on.
    await Promise.race([first.catch(() => {}), new Promise((resolve) => setTimeout(resolve, 50))]);
    await s.append(k, [{ ...user(2), n: 2 }]);
    await first;
    const got = (await s.load(k)).map((e) => e.n);
    expect(JSON.stringify(got) === '[1,2]', `loaded in the order ${JSON.stringify(got)}`);
  },

  async 'nested-subpaths'() {
    const sdk = await import(pathToFileURL(process.env.PEER_SDK || path.join(here, 'node_modules', '@anthropic-ai', 'claude-agent-sdk', 'sdk.mjs')).href);
    const s = new ScribeSessionStore({ baseUrl, token });
    const k = { projectKey: '-hostile-nested', sessionId: randomUUID() };
    const wf = 'subagents/workflows/wf-1/agent-abc123';
    const journal = 'subagents/workflows/wf-1/journal';
    const main = { type: 'user', uuid: randomUUID(), sessionId: k.sessionId, parentUuid: null, isSidechain: false,
      timestamp: new Date().toISOString(), message: { role: 'user', content: 'main' } };
    const agent = { ...main, uuid: randomUUID(), isSidechain: true, agentId: 'abc123', message: { role: 'user', content: 'nested' } };
    await s.append(k, [main]);
    await s.append({ ...k, subpath: wf }, [agent]);
    await s.append({ ...k, subpath: journal }, [{ type: 'x', n: 1 }]);
    const keys = await s.listSubkeys(k);
    expect(JSON.stringify(keys) === JSON.stringify([wf, journal]), `listSubkeys ${JSON.stringify(keys)}`);
    const j = await s.load({ ...k, subpath: journal });
    expect(j?.length === 1 && j[0].n === 1, `load ${journal}: ${JSON.stringify(j)}`);
    const opts = { sessionStore: s, dir: '/hostile/nested' }; // the project key '-hostile-nested'
    const agents = await sdk.listSubagents(k.sessionId, opts);
    expect(JSON.stringify(agents) === '["abc123"]', `the SDK's listSubagents: ${JSON.stringify(agents)}`);
    const msgs = await sdk.getSubagentMessages(k.sessionId, 'abc123', opts);
    expect(msgs.length === 1 && msgs[0].uuid === agent.uuid, `the SDK's getSubagentMessages: ${JSON.stringify(msgs).slice(0, 200)}`);
  },

  async 'utf8-parts'() {
    const s = new ScribeSessionStore({ baseUrl, token });
    const k = key();
    const big = (c) => ({ type: 'user', uuid: randomUUID(), text: c.repeat(1500000) });
    await s.append(k, [big('字'), big('語'), big('文')]);
    const got = await s.load(k);
    expect(got?.length === 3 && got[2].text.length === 1500000, `loaded ${got?.length} entries`);
  },

  async 'many-entries'() {
    const s = new ScribeSessionStore({ baseUrl, token });
    const k = key();
    const entries = Array.from({ length: 12000 }, (_, i) => (i % 4 === 0 ? { type: 'x', i } : { ...user(i), i }));
    await s.append(k, entries);
    const got = await s.load(k);
    expect(got?.length === 12000 && got.every((e, i) => e.i === i), `loaded ${got?.length} entries, not in order or not all`);
  },

  async 'server-away'() {
    const srv = net.createServer();
    await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
    const away = `http://127.0.0.1:${srv.address().port}`;
    await new Promise((resolve) => srv.close(resolve));
    const s = new ScribeSessionStore({ baseUrl: away, token, retries: 1 });
    let err;
    try {
      await s.append(key(), [user(1)]);
    } catch (e) {
      err = e;
    }
    expect(err?.lost === true && err.status === 0, `append: ${err?.status} lost=${err?.lost}`);
    expect(err.message.includes(away) && err.message.includes('ECONNREFUSED'), `message: ${err.message}`);
  },

  async 'oversize-entry'() {
    const s = new ScribeSessionStore({ baseUrl, token });
    const k = key();
    let status = 0;
    try {
      await s.append(k, [user(1), { type: 'user', uuid: randomUUID(), blob: 'x'.repeat(9 << 20) }, user(3)]);
    } catch (err) {
      status = err.status;
    }
    expect(status === 413, `append: status ${status}, want 413`);
    const got = await s.load(k);
    expect(got === null, `after the 413, load returned ${got?.length} entries`);
  },
  async 'oversize-request-answered'() {
    // A client allowed larger requests than the server takes sends 9 MB
    // in one request: fetch sends it whole before it reads the answer,
    // and gets the server's 413 and its error type, not a reset (lost).
    const s = new ScribeSessionStore({ baseUrl, token, maxRequestBytes: 16 << 20, retries: 0 });
    const k = key();
    let err = null;
    try {
      await s.append(k, [user(1), { type: 'user', uuid: randomUUID(), blob: 'x'.repeat(9 << 20) }]);
    } catch (e) {
      err = e;
    }
    expect(err?.status === 413 && err.type === 'request_too_large' && !err.lost, `append: ${err?.message ?? 'no error'}, want the server's 413 request_too_large`);
    const got = await s.load(k);
    expect(got === null, `after the 413, load returned ${got?.length} entries`);
  },
};

const results = [];
for (const [name, run] of Object.entries(cases)) {
  try {
    await run();
    results.push({ name, ok: true });
  } catch (err) {
    results.push({ name, ok: false, error: String(err?.message ?? err).slice(0, 300) });
  }
}
process.stdout.write(JSON.stringify({ results }) + '\n');
