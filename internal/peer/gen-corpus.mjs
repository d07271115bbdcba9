#!/usr/bin/env node
// gen-corpus.mjs — scribe's test-data generator: writes Claude Code style
// session transcripts (JSONL) in Claude Code's on-disk layout, for scribe's
// tests (driven from Go by peer.go: Peer.GenFixture / Peer.GenBulk).
// Test-only; adapted from our team's shared compat harness. No dependencies.
// Own code (not taken from Claude Code); it follows the on-disk format as read
// from @anthropic-ai/claude-code 2.1.x / @anthropic-ai/claude-agent-sdk 0.3.x.
//
//   node gen-corpus.mjs fixture <configDir> <projectCwd>
//       A handful of hand-made sessions covering: summary entry, custom title +
//       tag + last-prompt, a subagent (sidechain) transcript, a compact boundary,
//       an interrupted turn, an in-file branch, a sidechain-only top-level file.
//       Prints the session ids it wrote as JSON.
//   node gen-corpus.mjs bulk <configDir> <projectCwd> <count> [bytesPerSession=200000] [seed=1]
//       <count> synthetic sessions of roughly bytesPerSession each, deterministic
//       for a given seed, mtimes spread over the last 10 days.
//
// Layout written: <configDir>/projects/<sanitized projectCwd>/<sessionId>.jsonl
// and <configDir>/projects/<sanitized>/<sessionId>/subagents/agent-<agentId>.jsonl

import fs from 'node:fs';
import path from 'node:path';

const VERSION = '2.1.332';

export function sanitizePath(p) {
  const s = p.replace(/[^a-zA-Z0-9]/g, '-');
  if (s.length <= 200) return s;
  let h = 0;
  for (let i = 0; i < p.length; i++) h = ((h << 5) - h + p.charCodeAt(i)) | 0;
  return `${s.slice(0, 200)}-${Math.abs(h).toString(36)}`;
}

// Deterministic PRNG (mulberry32) so corpora are reproducible.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
function uuidFrom(r) {
  const h = [];
  for (let i = 0; i < 16; i++) h.push(Math.floor(r() * 256));
  h[6] = (h[6] & 0x0f) | 0x40;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.map((b) => b.toString(16).padStart(2, '0')).join('');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

// A session writer that stamps the common envelope fields in the order the
// 2.1.x CLI uses: parentUuid, [logicalParentUuid], isSidechain, [agentId],
// [promptId], <message's own fields: type, message, uuid, timestamp, ...>,
// userType, entrypoint, cwd, sessionId, version, gitBranch.
class Session {
  constructor({ sessionId, cwd, gitBranch = 'main', r, t0, agentId, isSidechain = false }) {
    Object.assign(this, { sessionId, cwd, gitBranch, r, agentId, isSidechain });
    this.t = t0;
    this.lines = [];
    this.last = null; // uuid of the last chain entry
  }
  ts() {
    this.t += 1000 + Math.floor(this.r() * 4000);
    return new Date(this.t).toISOString();
  }
  uuid() {
    return uuidFrom(this.r);
  }
  chain(own, { parent = this.last, logicalParentUuid, promptId } = {}) {
    const e = { parentUuid: parent };
    if (logicalParentUuid !== undefined) e.logicalParentUuid = logicalParentUuid;
    e.isSidechain = this.isSidechain;
    if (this.agentId) e.agentId = this.agentId;
    if (promptId) e.promptId = promptId;
    Object.assign(e, own);
    e.userType = 'external';
    e.entrypoint = 'cli';
    e.cwd = this.cwd;
    e.sessionId = this.sessionId;
    e.version = VERSION;
    e.gitBranch = this.gitBranch;
    this.lines.push(JSON.stringify(e));
    this.last = own.uuid;
    return own.uuid;
  }
  meta(obj) {
    this.lines.push(JSON.stringify(obj));
  }
  user(content, extra = {}, opts = {}) {
    const uuid = this.uuid();
    return this.chain(
      { type: 'user', message: { role: 'user', content }, ...extra.pre, uuid, timestamp: this.ts(), ...extra.post },
      { promptId: typeof content === 'string' && !extra.pre?.isMeta ? this.uuid() : undefined, ...opts },
    );
  }
  assistant(content, { stop = 'end_turn', msgId, opts = {} } = {}) {
    const uuid = this.uuid();
    const id = msgId ?? `msg_01${uuid.replace(/-/g, '').slice(0, 22)}`;
    return this.chain(
      {
        message: {
          model: 'claude-sonnet-4-5',
          id,
          type: 'message',
          role: 'assistant',
          content,
          stop_reason: stop,
          stop_sequence: null,
          usage: { input_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 34 },
        },
        requestId: `req_011C${uuid.replace(/-/g, '').slice(0, 20)}`,
        type: 'assistant',
        uuid,
        timestamp: this.ts(),
      },
      opts,
    );
  }
  toolRound(name, input, resultText) {
    const id = `toolu_01${this.uuid().replace(/-/g, '').slice(0, 22)}`;
    const a = this.assistant([{ type: 'tool_use', id, name, input }], { stop: 'tool_use' });
    this.user([{ tool_use_id: id, type: 'tool_result', content: resultText }], {
      post: { toolUseResult: { stdout: resultText, stderr: '', interrupted: false, isImage: false }, sourceToolAssistantUUID: a },
    });
    return id;
  }
  write(file) {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    fs.writeFileSync(file, this.lines.join('\n') + '\n', { mode: 0o600 });
  }
}

function fixture(configDir, cwd) {
  const r = rng(42);
  const projDir = path.join(configDir, 'projects', sanitizePath(cwd));
  const base = Date.parse('2026-01-10T09:00:00.000Z');
  const ids = {};

  // S1: plain Q/A with a tool round, a summary entry keyed by leafUuid, and a subagent.
  {
    const s = new Session({ sessionId: uuidFrom(r), cwd, r, t0: base });
    s.user('Fix the login bug in auth.ts');
    const toolId = s.toolRound('Bash', { command: 'npm test', description: 'Run tests' }, '1 failing');
    // subagent transcript (sidechain) spawned by a Task/Agent tool call
    const agentId = 'a1b2c3d4e5f6a7b8c';
    const sub = new Session({ sessionId: s.sessionId, cwd, r, t0: base + 5000, agentId, isSidechain: true });
    sub.user('Search the codebase for the login handler');
    sub.assistant([{ type: 'text', text: 'The handler is in src/auth.ts:42.' }]);
    sub.write(path.join(projDir, s.sessionId, 'subagents', `agent-${agentId}.jsonl`));
    fs.writeFileSync(
      path.join(projDir, s.sessionId, 'subagents', `agent-${agentId}.meta.json`),
      JSON.stringify({ agentType: 'Explore', toolUseId: toolId }),
    );
    const leaf = s.assistant([{ type: 'text', text: 'Fixed: the token check used == instead of ===.' }]);
    s.meta({ type: 'summary', summary: 'Login bug fix in auth.ts', leafUuid: leaf });
    s.write(path.join(projDir, `${s.sessionId}.jsonl`));
    ids.withSummaryAndSubagent = s.sessionId;
    ids.subagentId = agentId;
  }
  // S2: custom title, tag and last-prompt metadata entries (as /rename, /tag write them).
  {
    const s = new Session({ sessionId: uuidFrom(r), cwd, r, t0: base + 3600e3, gitBranch: 'feature/x' });
    s.user('Write a README for this project');
    s.assistant([{ type: 'text', text: 'Here is a README draft.' }]);
    s.user('Make it shorter');
    s.assistant([{ type: 'text', text: 'Shorter version done.' }]);
    s.meta({ type: 'custom-title', customTitle: 'README work', sessionId: s.sessionId });
    s.meta({ type: 'tag', tag: 'docs', sessionId: s.sessionId });
    s.meta({ type: 'last-prompt', lastPrompt: 'Make it shorter', sessionId: s.sessionId });
    s.write(path.join(projDir, `${s.sessionId}.jsonl`));
    ids.withCustomTitleTag = s.sessionId;
  }
  // S3: compact boundary: old chain, boundary (parentUuid null + logicalParentUuid),
  // compact summary user message, then the conversation continues.
  {
    const s = new Session({ sessionId: uuidFrom(r), cwd, r, t0: base + 7200e3 });
    s.user('Refactor the payment module');
    s.assistant([{ type: 'text', text: 'Refactoring step 1 done.' }]);
    s.user('Continue');
    const pre = s.assistant([{ type: 'text', text: 'Refactoring step 2 done.' }]);
    const bUuid = s.uuid();
    s.chain(
      {
        type: 'system',
        subtype: 'compact_boundary',
        content: 'Conversation compacted',
        isMeta: false,
        timestamp: s.ts(),
        uuid: bUuid,
        level: 'info',
        compactMetadata: { trigger: 'manual', preTokens: 48213 },
      },
      { parent: null, logicalParentUuid: pre },
    );
    s.user(
      'This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\nThe user asked to refactor the payment module; steps 1-2 are done.',
      { pre: { isVisibleInTranscriptOnly: true, isCompactSummary: true } },
    );
    s.user('Now add tests');
    s.assistant([{ type: 'text', text: 'Added 5 tests.' }]);
    s.write(path.join(projDir, `${s.sessionId}.jsonl`));
    ids.withCompactBoundary = s.sessionId;
  }
  // S4: interrupted turn: last entry is a tool_result (assistant never answered).
  {
    const s = new Session({ sessionId: uuidFrom(r), cwd, r, t0: base + 9000e3 });
    s.user('Run the migrations');
    s.toolRound('Bash', { command: 'make migrate' }, 'migrated 3 tables');
    s.write(path.join(projDir, `${s.sessionId}.jsonl`));
    ids.interruptedTurn = s.sessionId;
  }
  // S5: in-file branch (two children of one parent, as after a rewind/edit):
  // the newer branch should win.
  {
    const s = new Session({ sessionId: uuidFrom(r), cwd, r, t0: base + 10000e3 });
    s.user('Pick a color');
    const a1 = s.assistant([{ type: 'text', text: 'Blue.' }]);
    s.user('Why blue?');
    s.assistant([{ type: 'text', text: 'Because the sky.' }]);
    s.last = a1; // branch from a1
    s.user('Actually pick a different color');
    s.assistant([{ type: 'text', text: 'Green.' }]);
    s.write(path.join(projDir, `${s.sessionId}.jsonl`));
    ids.branched = s.sessionId;
  }
  // S6: a top-level file whose first line is a sidechain entry (old-style agent
  // transcript); listings skip it.
  {
    const s = new Session({ sessionId: uuidFrom(r), cwd, r, t0: base + 11000e3, agentId: 'deadbeef', isSidechain: true });
    s.user('sidechain-only prompt');
    s.assistant([{ type: 'text', text: 'sidechain reply' }]);
    s.write(path.join(projDir, `${s.sessionId}.jsonl`));
    ids.sidechainOnly = s.sessionId;
  }
  // give each file a distinct, known mtime (ascending in creation order)
  let i = 0;
  for (const k of ['withSummaryAndSubagent', 'withCustomTitleTag', 'withCompactBoundary', 'interruptedTurn', 'branched', 'sidechainOnly']) {
    const t = new Date(base + 86400e3 + i++ * 60e3);
    fs.utimesSync(path.join(projDir, `${ids[k]}.jsonl`), t, t);
  }
  return { projectDir: path.relative(configDir, projDir), ...ids };
}

const WORDS = 'the a of to and in is it that for on with as was by this be are from at or an code file test run build fix error value function return module import export type string number list map'.split(' ');
function text(r, n) {
  const w = [];
  for (let i = 0; i < n; i++) w.push(WORDS[Math.floor(r() * WORDS.length)]);
  return w.join(' ');
}

function bulk(configDir, cwd, count, bytes, seed) {
  const r = rng(seed);
  const projDir = path.join(configDir, 'projects', sanitizePath(cwd));
  fs.mkdirSync(projDir, { recursive: true, mode: 0o700 });
  const now = Date.now();
  let total = 0;
  for (let n = 0; n < count; n++) {
    const t0 = now - 10 * 86400e3 + Math.floor(r() * 9 * 86400e3);
    const s = new Session({ sessionId: uuidFrom(r), cwd, r, t0 });
    let size = 0;
    let turn = 0;
    while (size < bytes) {
      const before = s.lines.length;
      s.user(`Task ${turn}: ${text(r, 12 + Math.floor(r() * 20))}`);
      const rounds = Math.floor(r() * 3);
      for (let k = 0; k < rounds; k++) s.toolRound('Read', { file_path: `${cwd}/src/f${k}.ts` }, text(r, 150 + Math.floor(r() * 300)));
      s.assistant([{ type: 'text', text: text(r, 40 + Math.floor(r() * 120)) }]);
      for (let j = before; j < s.lines.length; j++) size += Buffer.byteLength(s.lines[j]) + 1;
      turn++;
    }
    if (n % 5 === 0) s.meta({ type: 'custom-title', customTitle: `Session ${n}`, sessionId: s.sessionId });
    s.meta({ type: 'last-prompt', lastPrompt: `Task ${turn - 1}`, sessionId: s.sessionId });
    const f = path.join(projDir, `${s.sessionId}.jsonl`);
    s.write(f);
    const mt = new Date(s.t);
    fs.utimesSync(f, mt, mt);
    total += fs.statSync(f).size;
  }
  return { projectDir: path.relative(configDir, projDir), sessions: count, totalBytes: total };
}

const [cmd, configDir, cwd, ...rest] = process.argv.slice(2);
if (!cmd || !configDir || !cwd) {
  process.stderr.write('usage: gen-corpus.mjs fixture <configDir> <projectCwd> | bulk <configDir> <projectCwd> <count> [bytes] [seed]\n');
  process.exit(2);
}
const absCfg = path.resolve(configDir);
const absCwd = path.resolve(cwd);
if (cmd === 'fixture') console.log(JSON.stringify(fixture(absCfg, absCwd), null, 2));
else if (cmd === 'bulk') console.log(JSON.stringify(bulk(absCfg, absCwd, Number(rest[0] ?? 2000), Number(rest[1] ?? 200000), Number(rest[2] ?? 1))));
else {
  process.stderr.write(`unknown command ${cmd}\n`);
  process.exit(2);
}
