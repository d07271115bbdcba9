// ScribeSessionStore: the Claude Agent SDK's SessionStore over `scribe serve`
// (its /v1/session_store routes, documented in server/sessionstore.go).
//
//   import { query, foldSessionSummary } from '@anthropic-ai/claude-agent-sdk';
//   import { ScribeSessionStore } from '@scribe/session-store';
//   const sessionStore = new ScribeSessionStore({ baseUrl, token, foldSessionSummary });
//   for await (const m of query({ prompt, options: { sessionStore } })) { ... }
//
// Plain ESM, no dependencies: Node 20's fetch. What it retries, and why it
// is safe:
//   - reads (load, listSessions, listSubkeys, listSessionSummaries) and
//     delete: idempotent, retried on a lost answer, 429 and 503;
//   - append: each request carries a batch id, and the server stores an
//     entry once per uuid, or once per batch id and position for an entry
//     without a uuid, so a request sent again is not stored twice;
//   - the summary (with the foldSessionSummary option): read, fold, write
//     with a compare-and-set on the revision read; a stale revision (409)
//     reads and folds again. A write whose answer was lost is never sent
//     again as is: the client reads the summary back and looks for the
//     write's fold id, so a batch is folded once.

const ROUTE = '/v1/session_store/';
// A subpath is opaque to a store (subagents/agent-<id>, and the SDK's
// subagents/workflows/<run>/agent-<id>, …/journal): '/'-separated segments
// of letters, digits, '-', '_' and '.', none "." or "..", at most 512 bytes.
const SEGMENT = /^[A-Za-z0-9_.-]{1,128}$/;
function validSubpath(sub) {
  return typeof sub === 'string' && sub.length <= 512 && sub.split('/').every((g) => SEGMENT.test(g) && g !== '.' && g !== '..');
}
// The server takes at most this many entries in one request.
const MAX_ENTRIES = 10000;
// How many failed appends the store remembers for the SDK's retries.
const MAX_UNSURE = 64;

/** An answer of scribe serve that is an error, or no answer at all. */
export class ScribeStoreError extends Error {
  constructor(message, { status = 0, type = '', lost = false } = {}) {
    super(message);
    this.name = 'ScribeStoreError';
    this.status = status; // the HTTP status, 0 when there was no answer
    this.type = type; // the server's error type (conflict_error, …)
    this.lost = lost; // the request may or may not have been applied
  }
}

function randomId() {
  const b = new Uint8Array(12);
  globalThis.crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

// utf8Length is the length of s in UTF-8 bytes, what the server counts
// (s.length counts UTF-16 units: a third of the bytes of CJK text).
function utf8Length(s) {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      n += 4; // a surrogate pair
      i++;
    } else n += 3;
  }
  return n;
}

// fingerprint is the SHA-256 of s, in hex.
async function fingerprint(s) {
  const d = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(s));
  return Array.from(new Uint8Array(d), (x) => x.toString(16).padStart(2, '0')).join('');
}

// why says what a failed fetch met: Node's 'fetch failed' keeps the cause
// (ECONNREFUSED, a timeout, …) in err.cause.
function why(err) {
  const msg = err?.message ?? String(err);
  const cause = err?.cause;
  if (!cause) return msg;
  return `${msg} (${[cause.code, cause.message].filter(Boolean).join(': ')})`;
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function checkKey(key, withSubpath = true) {
  if (key === null || typeof key !== 'object') throw new TypeError('SessionStore key: want an object');
  const { projectKey, sessionId, subpath } = key;
  if (typeof projectKey !== 'string' || projectKey === '') throw new TypeError('SessionStore key: projectKey must be a non-empty string');
  if (typeof sessionId !== 'string' || sessionId === '') throw new TypeError('SessionStore key: sessionId must be a non-empty string');
  if (!withSubpath || subpath === undefined) return;
  if (!validSubpath(subpath)) {
    throw new TypeError(`SessionStore key: subpath ${JSON.stringify(subpath)} is not a path of letters, digits, '-', '_' and '.' (omit it for the main transcript)`);
  }
}

function keyQuery(key) {
  const q = { project_key: key.projectKey, session_id: key.sessionId };
  if (key.subpath !== undefined) q.subpath = key.subpath;
  return q;
}

export class ScribeSessionStore {
  #base;
  #origin;
  #token;
  #fetch;
  #timeoutMs;
  #retries;
  #maxRequestBytes;
  #fold;
  #tails = new Map(); // key → its last append, settled or not
  #unsure = new Map(); // fingerprint of a failed append → its batch and fold ids

  /**
   * @param {object} options
   * @param {string} options.baseUrl  scribe serve's URL, e.g. http://127.0.0.1:8787
   * @param {string} options.token    a bearer token of the tenant
   * @param {Function} [options.foldSessionSummary] the SDK's foldSessionSummary: with it, the
   *   store keeps a summary per session and has listSessionSummaries
   * @param {number} [options.timeoutMs=30000] per request
   * @param {number} [options.retries=3] attempts after the first, for what is safe to send again
   * @param {number} [options.maxRequestBytes=8388608] an append larger than this is sent in parts
   *   (at most the server's max_body_bytes, 8 MiB by default); an entry larger fails it
   * @param {typeof fetch} [options.fetch]
   */
  constructor({ baseUrl, token, foldSessionSummary, timeoutMs = 30000, retries = 3, maxRequestBytes = 8 << 20, fetch } = {}) {
    if (typeof baseUrl !== 'string' || baseUrl === '') throw new TypeError('ScribeSessionStore: baseUrl is required');
    if (typeof token !== 'string' || token === '') throw new TypeError('ScribeSessionStore: token is required');
    this.#origin = baseUrl.replace(/\/+$/, '');
    this.#base = this.#origin + ROUTE;
    this.#token = token;
    this.#fetch = fetch ?? globalThis.fetch;
    this.#timeoutMs = timeoutMs;
    this.#retries = retries;
    this.#maxRequestBytes = maxRequestBytes;
    if (foldSessionSummary !== undefined) {
      if (typeof foldSessionSummary !== 'function') throw new TypeError('ScribeSessionStore: foldSessionSummary must be a function');
      this.#fold = foldSessionSummary;
      // Only with the fold: without it the SDK lists with listSessions and load.
      this.listSessionSummaries = async (projectKey) => {
        checkKey({ projectKey, sessionId: '-' });
        const r = await this.#call('GET', 'summaries', { project_key: projectKey });
        return r.summaries;
      };
    }
  }

  async append(key, entries) {
    checkKey(key);
    if (!Array.isArray(entries)) throw new TypeError('append: entries must be an array');
    if (entries.length === 0) return;
    // Appends to one key go one after the other, each once the one before
    // it has settled: the SDK may stop waiting on an append (its
    // sendTimeoutMs) and send the next while the first is still under way.
    const k = JSON.stringify(keyQuery(key));
    const run = (this.#tails.get(k) ?? Promise.resolve()).then(() => this.#append(key, entries));
    const tail = run.catch(() => {});
    this.#tails.set(k, tail);
    tail.then(() => {
      if (this.#tails.get(k) === tail) this.#tails.delete(k);
    });
    return run;
  }

  async #append(key, entries) {
    const parts = this.#split(entries);
    // An append that failed may have been applied in whole or in part, and
    // the SDK sends the same entries again: that retry takes the failed
    // append's batch and fold ids, so the server stores it once (entries
    // without a uuid too) and the summary folds it once.
    const fp = await fingerprint(JSON.stringify(keyQuery(key)) + '\n' + parts.join('\n'));
    const ids = this.#unsure.get(fp) ?? { batch: randomId(), fold: randomId() };
    this.#unsure.delete(fp);
    try {
      for (let i = 0; i < parts.length; i++) {
        const q = { ...keyQuery(key), batch: parts.length === 1 ? ids.batch : `${ids.batch}-p${i}` };
        await this.#call('POST', 'entries', q, parts[i]);
      }
      if (this.#fold && key.subpath === undefined) await this.#foldSummary(key, entries, ids.fold);
    } catch (err) {
      this.#unsure.set(fp, ids);
      if (this.#unsure.size > MAX_UNSURE) this.#unsure.delete(this.#unsure.keys().next().value);
      throw err;
    }
  }

  async load(key) {
    checkKey(key);
    const r = await this.#call('GET', 'entries', keyQuery(key));
    return r.entries;
  }

  async listSessions(projectKey) {
    checkKey({ projectKey, sessionId: '-' });
    const r = await this.#call('GET', 'sessions', { project_key: projectKey });
    return r.sessions;
  }

  async delete(key) {
    checkKey(key);
    await this.#call('DELETE', 'entries', keyQuery(key));
  }

  async listSubkeys(key) {
    checkKey(key, false);
    const r = await this.#call('GET', 'subkeys', { project_key: key.projectKey, session_id: key.sessionId });
    return r.subkeys;
  }

  // #split cuts entries into request bodies of at most maxRequestBytes of
  // UTF-8 and MAX_ENTRIES entries. An entry that fits in no request fails
  // the append (413) before anything of it is sent: none of it is stored.
  #split(entries) {
    const parts = [];
    let cur = [];
    let size = 2;
    for (const [i, e] of entries.entries()) {
      const s = JSON.stringify(e);
      const n = utf8Length(s);
      if (n + 2 > this.#maxRequestBytes) {
        throw new ScribeStoreError(`append: entries[${i}] is ${n} bytes of JSON, over maxRequestBytes (${this.#maxRequestBytes}): nothing of this append was stored`,
          { status: 413, type: 'request_too_large' });
      }
      if (cur.length > 0 && (size + n + 1 > this.#maxRequestBytes || cur.length >= MAX_ENTRIES)) {
        parts.push('[' + cur.join(',') + ']');
        cur = [];
        size = 2;
      }
      cur.push(s);
      size += n + 1;
    }
    parts.push('[' + cur.join(',') + ']');
    return parts;
  }

  // #foldSummary folds entries into the summary once: the write carries
  // foldId, and a summary that holds it already is left as is.
  async #foldSummary(key, entries, foldId) {
    const q = keyQuery(key);
    for (let attempt = 0; attempt < 20; attempt++) {
      const cur = await this.#call('GET', 'summary', q);
      // A write of this fold whose answer was lost (this call's or a failed
      // append's that this one retries) may have landed: not twice.
      if (cur.folds.includes(foldId)) return;
      const next = this.#fold(cur.summary ?? undefined, key, entries, { mtime: Date.now() });
      const body = JSON.stringify({ revision: cur.revision, data: next.data, fold_id: foldId });
      try {
        await this.#call('PUT', 'summary', q, body, { once: true });
        return;
      } catch (err) {
        if (!(err instanceof ScribeStoreError)) throw err;
        if (err.status === 409) continue; // another write came first (or this one, late): read again
        if (!err.lost) throw err;
        // The answer was lost: the next read tells whether it landed. If it
        // lands later, its revision is stale by then, or ours is: one 409.
      }
      await sleep(Math.min(1000, 10 * 2 ** attempt) * Math.random());
    }
    throw new ScribeStoreError('summary: too many concurrent writers, gave up folding', { status: 409, type: 'conflict_error' });
  }

  // #call sends one request and returns its decoded answer. Unless once,
  // a lost answer, 429 or 503 is sent again (retries times).
  async #call(method, route, query, body, { once = false } = {}) {
    const url = this.#base + route + '?' + new URLSearchParams(query).toString();
    const headers = { authorization: `Bearer ${this.#token}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    for (let attempt = 0; ; attempt++) {
      const retry = !once && attempt < this.#retries;
      let resp;
      try {
        resp = await this.#fetch(url, { method, headers, body, signal: AbortSignal.timeout(this.#timeoutMs) });
      } catch (err) {
        if (retry) {
          await sleep(100 * 2 ** attempt);
          continue;
        }
        throw new ScribeStoreError(`${method} ${route}: no answer from scribe serve at ${this.#origin}: ${why(err)}`, { lost: true });
      }
      let text = '';
      try {
        text = await resp.text();
      } catch (err) {
        if (retry) continue;
        throw new ScribeStoreError(`${method} ${route}: answer cut: ${why(err)}`, { lost: true, status: resp.status });
      }
      if (resp.ok) {
        try {
          return JSON.parse(text);
        } catch {
          throw new ScribeStoreError(`${method} ${route}: the answer is not JSON: ${text.slice(0, 200)}`, { status: resp.status });
        }
      }
      let type = '';
      let message = text.slice(0, 500);
      try {
        const e = JSON.parse(text).error;
        type = e?.type ?? '';
        message = e?.message ?? message;
      } catch {
        // not the server's JSON error: keep the text
      }
      const transient = resp.status === 429 || resp.status === 503;
      if (transient && retry) {
        const after = Number(resp.headers.get('retry-after'));
        await sleep(Number.isFinite(after) && after > 0 ? Math.min(after, 10) * 1000 : 100 * 2 ** attempt);
        continue;
      }
      // A 503 may come after the write was applied (a store timeout).
      throw new ScribeStoreError(`${method} ${route}: ${resp.status} ${message}`, { status: resp.status, type, lost: resp.status === 503 });
    }
  }
}
