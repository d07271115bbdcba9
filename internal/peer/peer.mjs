#!/usr/bin/env node
// peer.mjs — scribe's test harness: runs the real @anthropic-ai/claude-agent-sdk
// (pinned to 0.3.337 in ./package.json, installed into ./node_modules by
// scripts/test) as a "peer" reader of a Claude Code config directory, so the
// files scribe writes can be cross-checked against what Claude Code itself sees.
// Test-only: nothing in scribe's runtime uses it. Driven from Go by peer.go.
// Adapted from our team's shared compat harness. Purely local: the SDK's
// session functions read <configDir>/projects/** from disk and need no API key
// or network.
//
// Usage:
//   node peer.mjs list     <configDir> [projectCwd] [--no-worktrees] [--no-programmatic] [--limit N] [--offset N]
//   node peer.mjs messages <configDir> <sessionId> [projectCwd] [--system] [--limit N] [--offset N]
//   node peer.mjs info     <configDir> <sessionId> [projectCwd]
//   node peer.mjs subagents <configDir> <sessionId> [projectCwd]
//   node peer.mjs subagent-messages <configDir> <sessionId> <agentId> [projectCwd] [--limit N] [--offset N]
//   node peer.mjs fork     <configDir> <sessionId> [projectCwd] [--up-to UUID] [--title T]   (WRITES a new file)
//   node peer.mjs rename   <configDir> <sessionId> <title> [projectCwd]          (WRITES: renameSession)
//   node peer.mjs tag      <configDir> <sessionId> <tag>|--clear [projectCwd]    (WRITES: tagSession)
//   node peer.mjs tag-many <configDir> <sessionId> <tags.json> [projectCwd]  (WRITES: tagSession once per tag of
//                                            the JSON array, in order; prints [{ok}|{error}] per tag)
//   node peer.mjs archive | unarchive | delete <configDir> <sessionId> [projectCwd]   (WRITES)
//   node peer.mjs sanitize <path>...        (prints the project-dir name the SDK derives for each path)
//   node peer.mjs serve                     (one command per stdin line, a JSON array of its arguments;
//                                            one {"ok","out"|"error"} line per answer: see serve())
//
// Output: JSON on stdout (pretty-printed unless --compact). Exit 2 on usage error.
// The SDK resolves the config dir from CLAUDE_CONFIG_DIR (else ~/.claude) at
// every call; this script sets it from <configDir> before each command.
// The SDK is looked up (1) at $PEER_SDK (a path to the package's sdk.mjs),
// (2) in node_modules next to this script (internal/peer/node_modules). It is
// never picked up from the current directory or a global install, so the tests
// always judge against the pinned version.
// Needs Node >= 18.

import path from 'node:path';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import readline from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

class UsageError extends Error {}

function usage(msg) {
  throw new UsageError(msg ?? '');
}

async function loadSdk() {
  if (process.env.PEER_SDK) return import(pathToFileURL(path.resolve(process.env.PEER_SDK)).href);
  const here = path.dirname(fileURLToPath(import.meta.url));
  const req = createRequire(path.join(here, 'peer-resolve.cjs'));
  let file;
  try {
    file = req.resolve('@anthropic-ai/claude-agent-sdk');
  } catch {
    file = undefined;
  }
  // node_modules may be a symlink (a git worktree links the main checkout's):
  // compare resolved paths.
  let mods = path.join(here, 'node_modules');
  try {
    mods = fs.realpathSync(mods);
  } catch {}
  if (!file || !file.startsWith(mods + path.sep) || !fs.existsSync(file)) {
    process.stderr.write(
      `peer.mjs: cannot find @anthropic-ai/claude-agent-sdk in ${path.join(here, 'node_modules')}: ` +
        'run scripts/test (or: cd internal/peer && npm ci --omit=optional), or set PEER_SDK=<.../sdk.mjs>\n',
    );
    throw new Error('no SDK');
  }
  return import(pathToFileURL(file).href);
}
let sdkPromise;
function sdkOnce() {
  sdkPromise ??= loadSdk();
  return sdkPromise;
}

const opt = (o) => {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
};

// handle runs one command line and returns what it prints, and whether
// compactly.
async function handle(argv) {
  const flags = { system: false, compact: false, worktrees: true, programmatic: true };
  const done = (value) => ({ value, compact: flags.compact });
  const pos = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--system') flags.system = true;
    else if (a === '--compact') flags.compact = true;
    else if (a === '--no-worktrees') flags.worktrees = false;
    else if (a === '--no-programmatic') flags.programmatic = false;
    else if (a === '--limit') flags.limit = Number(argv[++i]);
    else if (a === '--offset') flags.offset = Number(argv[++i]);
    else if (a === '--up-to') flags.upTo = argv[++i];
    else if (a === '--title') flags.title = argv[++i];
    else if (a === '--clear') flags.clear = true;
    else if (a.startsWith('--')) usage(`unknown flag ${a}`);
    else pos.push(a);
  }
  const cmd = pos.shift();
  if (!cmd) usage();

  if (cmd === 'sanitize') {
    // Mirror of the SDK's/CLI's rule (checked against both):
    // every char outside [A-Za-z0-9] -> '-'; if longer than 200 chars, keep the
    // first 200 and append '-' + base36(|javaStringHash(path)|).
    const hash = (s) => {
      let h = 0;
      for (let i = 0; i < s.length; i++) h = ((h << 5) - h + s.charCodeAt(i)) | 0;
      return h;
    };
    const sanitize = (p) => {
      const s = p.replace(/[^a-zA-Z0-9]/g, '-');
      return s.length <= 200 ? s : `${s.slice(0, 200)}-${Math.abs(hash(p)).toString(36)}`;
    };
    return done(pos.map((p) => ({ path: p, projectDir: sanitize(p) })));
  }

  // views reads its config folders from a file; every other command takes one.
  const configDir = cmd === 'views' ? undefined : pos.shift();
  if (cmd !== 'views') {
    if (!configDir) usage('missing <configDir>');
    process.env.CLAUDE_CONFIG_DIR = path.resolve(configDir);
  }
  // The SDK never needs these for local reads; make sure nothing leaks in.
  delete process.env.ANTHROPIC_API_KEY;

  const sdk = await sdkOnce();
  switch (cmd) {
    case 'views': {
      // views <groups.json>: for each group {dirs, sids}, what the SDK sees in
      // each of its config folders: listSessions (worktrees and programmatic
      // sessions included, as 'list'), and for every session listed in any of
      // the group's folders or named in sids, getSessionInfo,
      // getSessionMessages (system messages included), listSubagents and
      // getSubagentMessages of each agent. One process for what 'list', 'messages', 'subagents' and
      // 'subagent-messages' would take hundreds of.
      const file = pos.shift();
      if (!file) usage('missing <groups.json>');
      const groups = JSON.parse(fs.readFileSync(file, 'utf8'));
      const res = [];
      for (const g of groups) {
        const lists = [];
        for (const d of g.dirs) {
          process.env.CLAUDE_CONFIG_DIR = path.resolve(d);
          lists.push(await sdk.listSessions({ includeWorktrees: true, includeProgrammatic: true }));
        }
        const sids = new Set(g.sids ?? []);
        for (const l of lists) for (const s of l) sids.add(s.sessionId);
        const views = [];
        for (let i = 0; i < g.dirs.length; i++) {
          process.env.CLAUDE_CONFIG_DIR = path.resolve(g.dirs[i]);
          const v = { list: lists[i], info: {}, messages: {}, subagents: {}, subMessages: {} };
          for (const sid of [...sids].sort()) {
            v.info[sid] = (await sdk.getSessionInfo(sid, {})) ?? null;
            v.messages[sid] = await sdk.getSessionMessages(sid, { includeSystemMessages: true });
            const agents = await sdk.listSubagents(sid, {});
            v.subagents[sid] = agents;
            v.subMessages[sid] = {};
            for (const a of agents) v.subMessages[sid][a] = await sdk.getSubagentMessages(sid, a, {});
          }
          views.push(v);
        }
        res.push(views);
      }
      return done(res);
    }
    case 'list': {
      const dir = pos.shift();
      const r = await sdk.listSessions(
        opt({
          dir: dir ? path.resolve(dir) : undefined,
          limit: flags.limit,
          offset: flags.offset,
          includeWorktrees: flags.worktrees,
          includeProgrammatic: flags.programmatic,
        }),
      );
      return done(r);
    }
    case 'messages': {
      const sid = pos.shift();
      if (!sid) usage('missing <sessionId>');
      const dir = pos.shift();
      const r = await sdk.getSessionMessages(
        sid,
        opt({
          dir: dir ? path.resolve(dir) : undefined,
          includeSystemMessages: flags.system,
          limit: flags.limit,
          offset: flags.offset,
        }),
      );
      return done(r);
    }
    case 'info': {
      const sid = pos.shift();
      if (!sid) usage('missing <sessionId>');
      const dir = pos.shift();
      return done((await sdk.getSessionInfo(sid, opt({ dir: dir ? path.resolve(dir) : undefined }))) ?? null);
    }
    case 'subagents': {
      const sid = pos.shift();
      if (!sid) usage('missing <sessionId>');
      const dir = pos.shift();
      return done(await sdk.listSubagents(sid, opt({ dir: dir ? path.resolve(dir) : undefined })));
    }
    case 'subagent-messages': {
      const sid = pos.shift();
      const agentId = pos.shift();
      if (!sid || !agentId) usage('missing <sessionId> <agentId>');
      const dir = pos.shift();
      return done(
        await sdk.getSubagentMessages(
          sid,
          agentId,
          opt({ dir: dir ? path.resolve(dir) : undefined, limit: flags.limit, offset: flags.offset }),
        ),
      );
    }
    case 'fork-many': {
      // fork-many <forks.json>: forkSession for each {session, upTo, title},
      // in order, in one process; the new session ids.
      const file = pos.shift();
      if (!file) usage('missing <forks.json>');
      const ids = [];
      for (const f of JSON.parse(fs.readFileSync(file, 'utf8'))) {
        const r = await sdk.forkSession(f.session, opt({ upToMessageId: f.upTo || undefined, title: f.title || undefined }));
        ids.push(r.sessionId);
      }
      return done(ids);
    }
    case 'fork': {
      const sid = pos.shift();
      if (!sid) usage('missing <sessionId>');
      const dir = pos.shift();
      return done(
        await sdk.forkSession(
          sid,
          opt({ dir: dir ? path.resolve(dir) : undefined, upToMessageId: flags.upTo, title: flags.title }),
        ),
      );
    }
    case 'rename':
    case 'tag': {
      const sid = pos.shift();
      const value = cmd === 'tag' && flags.clear ? null : pos.shift();
      if (!sid || value === undefined) usage(`missing <sessionId> <${cmd === 'tag' ? 'tag' : 'title'}>`);
      const dir = pos.shift();
      const fn = cmd === 'tag' ? sdk.tagSession : sdk.renameSession;
      await fn(sid, value, opt({ dir: dir ? path.resolve(dir) : undefined }));
      return done({ ok: true });
    }
    case 'mutate-steps': {
      // mutate-steps <steps.json>: renameSession or tagSession for each
      // {op, session, value}, in order, each followed by a copy of the whole
      // config folder to the step's snapshot folder.
      const file = pos.shift();
      if (!file) usage('missing <steps.json>');
      for (const s of JSON.parse(fs.readFileSync(file, 'utf8'))) {
        const fn = s.op === 'tag' ? sdk.tagSession : sdk.renameSession;
        await fn(s.session, s.value, {});
        fs.cpSync(process.env.CLAUDE_CONFIG_DIR, s.snapshot, { recursive: true, preserveTimestamps: true });
      }
      return done({ ok: true });
    }
    case 'tag-many': {
      const sid = pos.shift();
      const file = pos.shift();
      if (!sid || !file) usage('missing <sessionId> <tags.json>');
      const dir = pos.shift();
      const tags = JSON.parse(fs.readFileSync(file, 'utf8'));
      const res = [];
      for (const tag of tags) {
        try {
          await sdk.tagSession(sid, tag, opt({ dir: dir ? path.resolve(dir) : undefined }));
          res.push({ ok: true });
        } catch (e) {
          res.push({ ok: false, error: String(e && e.message || e) });
        }
      }
      return done(res);
    }
    case 'archive':
    case 'unarchive':
    case 'delete': {
      const sid = pos.shift();
      if (!sid) usage('missing <sessionId>');
      const dir = pos.shift();
      const fn = { archive: sdk.archiveSession, unarchive: sdk.unarchiveSession, delete: sdk.deleteSession }[cmd];
      await fn(sid, opt({ dir: dir ? path.resolve(dir) : undefined }));
      return done({ ok: true });
    }
    default:
      usage(`unknown command ${cmd}`);
  }
}

// serve answers one command line per input line, a JSON array of its
// arguments, with one output line: {"ok":true,"out":<value>} or
// {"ok":false,"error":"..."}. Go's peer package keeps it running for a whole
// test binary: the SDK loads once instead of once per call.
async function serve() {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    let res;
    try {
      const r = await handle(JSON.parse(line));
      res = `{"ok":true,"out":${JSON.stringify(r.value) ?? 'null'}}`;
    } catch (e) {
      res = JSON.stringify({ ok: false, error: String((e && (e.stack || e.message)) || e) });
    }
    process.stdout.write(res + '\n');
  }
}

const argv = process.argv.slice(2);
if (argv[0] === 'serve') {
  await serve();
} else {
  try {
    const r = await handle(argv);
    process.stdout.write(JSON.stringify(r.value, null, r.compact ? 0 : 2) + '\n');
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    if (e.message) process.stderr.write(`peer.mjs: ${e.message}\n`);
    process.stderr.write('usage: node peer.mjs list|messages|info|subagents|subagent-messages|fork|sanitize|serve ...\n');
    process.exit(2);
  }
}
