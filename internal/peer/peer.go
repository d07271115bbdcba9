// Package peer runs the real Claude Agent SDK (npm @anthropic-ai/claude-agent-sdk,
// pinned in package.json next to this file) as a reference reader of Claude
// Code config folders, for scribe's compatibility tests.
//
// The SDK lives in internal/peer/node_modules, installed by scripts/test
// (npm ci --omit=optional). Every call is a `peer.mjs <command> ...` line
// answered by a long-lived `node peer.mjs serve` (one per core, the SDK
// loaded once), and decodes the JSON the SDK returned. The SDK reads
// sessions offline: no API key, no network.
//
// Test-only: nothing in scribe's runtime imports this package.
package peer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/internal/testenv"
)

// SDKPackage is the npm package used as the reference reader.
const SDKPackage = "@anthropic-ai/claude-agent-sdk"

// SDKVersion is the exact version the tests are judged against.
const SDKVersion = "0.3.337"

// DirEnv names another install of the SDK to judge against instead of the
// pin: a folder whose node_modules holds SDKPackage, at any version
// (scripts/compat-latest installs the newest release into one and sets
// it). The scripts stay internal/peer's; node gets the other package's
// sdk.mjs in PEER_SDK. The default run (unset) is on the pin.
const DirEnv = "SCRIBE_PEER_DIR"

// RequireEnv is the environment variable that turns a missing peer from a
// skipped test into a failed one (scripts/test sets it to 1).
const RequireEnv = "SCRIBE_REQUIRE_PEER"

// DefaultTimeout bounds one peer.mjs run.
const DefaultTimeout = 2 * time.Minute

// Peer runs peer.mjs and gen-corpus.mjs with the pinned SDK.
type Peer struct {
	Node    string        // path of the node binary
	Dir     string        // internal/peer (holds peer.mjs, gen-corpus.mjs, node_modules)
	SDKDir  string        // internal/peer/node_modules/@anthropic-ai/claude-agent-sdk
	Version string        // the installed SDK version (== SDKVersion unless Other)
	Timeout time.Duration // per run; DefaultTimeout unless changed
	// Other is set when SDKDir is another install than the pin's (DirEnv).
	Other bool
}

// Find locates node and the installed SDK. If either is missing (or the SDK
// is not the pinned version) it skips the test, or fails it when
// SCRIBE_REQUIRE_PEER=1, with a message saying to run scripts/test.
func Find(t testing.TB) *Peer {
	t.Helper()
	p, err := find(testenv.RepoRoot(t))
	if err != nil {
		msg := fmt.Sprintf("Claude Agent SDK peer unavailable (%v); run `scripts/test` "+
			"(it installs %s@%s into internal/peer/node_modules with `npm ci --omit=optional`)",
			err, SDKPackage, SDKVersion)
		if os.Getenv(RequireEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

func find(root string) (*Peer, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New("node is not on PATH")
	}
	dir := filepath.Join(root, "internal", "peer")
	for _, f := range []string{"peer.mjs", "gen-corpus.mjs"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return nil, fmt.Errorf("%s is missing", filepath.Join(dir, f))
		}
	}
	modules, other := filepath.Join(dir, "node_modules"), false
	if d := os.Getenv(DirEnv); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %v", DirEnv, d, err)
		}
		modules, other = filepath.Join(abs, "node_modules"), true
	}
	sdkDir := filepath.Join(modules, filepath.FromSlash(SDKPackage))
	raw, err := os.ReadFile(filepath.Join(sdkDir, "package.json"))
	if err != nil {
		return nil, fmt.Errorf("%s is not installed in %s", SDKPackage, modules)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		return nil, fmt.Errorf("%s/package.json: %v", sdkDir, err)
	}
	if pkg.Version != SDKVersion && !other {
		return nil, fmt.Errorf("installed %s is %s, want %s (%s names another install to judge against)", SDKPackage, pkg.Version, SDKVersion, DirEnv)
	}
	if _, err := os.Stat(filepath.Join(sdkDir, "sdk.mjs")); err != nil {
		return nil, fmt.Errorf("%s/sdk.mjs is missing", sdkDir)
	}
	return &Peer{Node: node, Dir: dir, SDKDir: sdkDir, Version: pkg.Version, Timeout: DefaultTimeout, Other: other}, nil
}

// timeout is how long one node process may run.
func (p *Peer) timeout() time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return DefaultTimeout
}

// Run runs `node <script> args...` in the peer folder and returns its stdout.
// A non-zero exit, a timeout or a start failure fails the test and shows the
// command and its stderr.
func (p *Peer) Run(t testing.TB, script string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout())
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Node, append([]string{filepath.Join(p.Dir, script)}, args...)...)
	cmd.Dir = p.Dir
	cmd.Env = p.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second // a child of node holding stderr must not outlast the timeout
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		t.Fatalf("peer: node %s %s: timed out after %v\nstderr:\n%s", script, strings.Join(args, " "), p.timeout(), stderr.String())
	}
	if err != nil {
		t.Fatalf("peer: node %s %s: %v (after %v)\nstderr:\n%s", script, strings.Join(args, " "), err,
			time.Since(start).Round(time.Millisecond), stderr.String())
	}
	return stdout.Bytes()
}

// env is the environment for node: ours, minus anything that could make
// the SDK read another config folder or reach an API, with PEER_SDK (the
// scripts' way to another SDK install) only when DirEnv names one.
func (p *Peer) env() []string {
	env := peerEnv()
	if p.Other {
		env = append(env, "PEER_SDK="+filepath.Join(p.SDKDir, "sdk.mjs"))
	}
	return env
}

func peerEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "CLAUDE_CONFIG_DIR", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
			"NODE_OPTIONS", "CLAUDE_CODE_PROJECT_DIR_NAME", "CLAUDE_CODE_DISABLE_PRECOMPACT_SKIP", "PEER_SDK":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// Script runs script, the source of an ES module, with node in the peer
// folder, the SDK reading configDir, and decodes what it prints into out.
// The script finds the SDK module's path in SCRIBE_SDK_MJS and queries (as
// JSON, in a file) in SCRIBE_SDK_QUERIES: one process for many SDK calls.
func (p *Peer) Script(t testing.TB, configDir, script string, queries, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout())
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Node, "--input-type=module", "-e", script)
	cmd.Dir = p.Dir
	cmd.Env = append(p.env(), "CLAUDE_CONFIG_DIR="+configDir, "SCRIBE_SDK_MJS="+filepath.Join(p.SDKDir, "sdk.mjs"),
		"SCRIBE_SDK_QUERIES="+jsonFile(t, "queries.json", queries))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("peer: sdk script: %v\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("peer: sdk script printed %.2000s: %v", stdout.Bytes(), err)
	}
}

// jsonFile writes v as JSON into a file named name in a temporary folder
// of t's, and returns its path.
func jsonFile(t testing.TB, name string, v any) string {
	t.Helper()
	in, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, in, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// runJSON runs a peer.mjs command in a server (see serve.go) and decodes
// its answer into v.
func (p *Peer) runJSON(t testing.TB, v any, args ...string) {
	t.Helper()
	out := p.call(t, args...)
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("peer: decode output of peer.mjs %s: %v\noutput: %.2000s", strings.Join(args, " "), err, out)
	}
}

// SessionInfo mirrors the SDK's SDKSessionInfo. Optional fields the SDK left
// out are zero; Raw keeps the object as the SDK returned it (so an absent
// field and an empty one can be told apart).
type SessionInfo struct {
	SessionID    string `json:"sessionId"`
	Summary      string `json:"summary"`
	LastModified int64  `json:"lastModified"`
	FileSize     int64  `json:"fileSize"`
	CustomTitle  string `json:"customTitle"`
	FirstPrompt  string `json:"firstPrompt"`
	GitBranch    string `json:"gitBranch"`
	Cwd          string `json:"cwd"`
	Tag          string `json:"tag"`
	CreatedAt    int64  `json:"createdAt"`
	Archived     bool   `json:"archived"`

	Raw map[string]any `json:"-"`
}

func decodeInfo(t testing.TB, raw json.RawMessage) SessionInfo {
	t.Helper()
	var si SessionInfo
	if err := json.Unmarshal(raw, &si); err != nil {
		t.Fatalf("peer: decode SDKSessionInfo: %v\n%.2000s", err, raw)
	}
	if err := json.Unmarshal(raw, &si.Raw); err != nil {
		t.Fatalf("peer: decode SDKSessionInfo: %v\n%.2000s", err, raw)
	}
	return si
}

// List is listSessions: every project under configDir when projectCwd is "",
// else the project of that path. Extra args are peer.mjs flags
// (--no-worktrees, --no-programmatic, --limit N, --offset N).
func (p *Peer) List(t testing.TB, configDir, projectCwd string, args ...string) []SessionInfo {
	t.Helper()
	a := []string{"list", configDir}
	if projectCwd != "" {
		a = append(a, projectCwd)
	}
	var raws []json.RawMessage
	p.runJSON(t, &raws, append(a, args...)...)
	out := make([]SessionInfo, 0, len(raws))
	for _, r := range raws {
		out = append(out, decodeInfo(t, r))
	}
	return out
}

// ViewGroup names config folders to look at side by side (see Views), and
// session ids to read in them even when no listing shows them.
type ViewGroup struct {
	Dirs []string `json:"dirs"`
	Sids []string `json:"sids"`
}

// View is what the SDK sees in one config folder: listSessions, and for
// each session of its group, getSessionInfo, getSessionMessages (system
// messages included), listSubagents and getSubagentMessages.
type View struct {
	List        []SessionInfo
	Info        map[string]*SessionInfo // getSessionInfo; nil when undefined
	Messages    map[string][]json.RawMessage
	Subagents   map[string][]string
	SubMessages map[string]map[string][]json.RawMessage
}

// Views reads every group in one process (peer.mjs views): for each group,
// a View per folder, over the sessions listed in any of its folders or
// named in Sids. It answers what List, Messages, Subagents and
// SubagentMessages would, without a process for each call.
func (p *Peer) Views(t testing.TB, groups []ViewGroup) [][]View {
	t.Helper()
	file := jsonFile(t, "groups.json", groups)
	var raw [][]struct {
		List        []json.RawMessage                       `json:"list"`
		Info        map[string]json.RawMessage              `json:"info"`
		Messages    map[string][]json.RawMessage            `json:"messages"`
		Subagents   map[string][]string                     `json:"subagents"`
		SubMessages map[string]map[string][]json.RawMessage `json:"subMessages"`
	}
	p.runJSON(t, &raw, "views", file)
	if len(raw) != len(groups) {
		t.Fatalf("peer: views answered %d groups of %d", len(raw), len(groups))
	}
	out := make([][]View, len(raw))
	for i, g := range raw {
		for _, v := range g {
			list := make([]SessionInfo, 0, len(v.List))
			for _, r := range v.List {
				list = append(list, decodeInfo(t, r))
			}
			info := make(map[string]*SessionInfo, len(v.Info))
			for sid, r := range v.Info {
				if !bytes.Equal(bytes.TrimSpace(r), []byte("null")) {
					si := decodeInfo(t, r)
					info[sid] = &si
				} else {
					info[sid] = nil
				}
			}
			out[i] = append(out[i], View{List: list, Info: info, Messages: v.Messages, Subagents: v.Subagents, SubMessages: v.SubMessages})
		}
	}
	return out
}

// Info is getSessionInfo; nil when the SDK returns undefined (unknown,
// sidechain-only or untitled session).
func (p *Peer) Info(t testing.TB, configDir, sessionID, projectCwd string) *SessionInfo {
	t.Helper()
	a := []string{"info", configDir, sessionID}
	if projectCwd != "" {
		a = append(a, projectCwd)
	}
	var raw json.RawMessage
	p.runJSON(t, &raw, a...)
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	si := decodeInfo(t, raw)
	return &si
}

// Messages is getSessionMessages (includeSystemMessages = system): the
// SessionMessage objects as the SDK returned them, in order.
func (p *Peer) Messages(t testing.TB, configDir, sessionID, projectCwd string, system bool) []json.RawMessage {
	t.Helper()
	a := []string{"messages", configDir, sessionID}
	if projectCwd != "" {
		a = append(a, projectCwd)
	}
	if system {
		a = append(a, "--system")
	}
	var msgs []json.RawMessage
	p.runJSON(t, &msgs, a...)
	return msgs
}

// Subagents is listSubagents: the agent ids of a session.
func (p *Peer) Subagents(t testing.TB, configDir, sessionID, projectCwd string) []string {
	t.Helper()
	a := []string{"subagents", configDir, sessionID}
	if projectCwd != "" {
		a = append(a, projectCwd)
	}
	var ids []string
	p.runJSON(t, &ids, a...)
	return ids
}

// SubagentMessages is getSubagentMessages.
func (p *Peer) SubagentMessages(t testing.TB, configDir, sessionID, agentID, projectCwd string) []json.RawMessage {
	t.Helper()
	a := []string{"subagent-messages", configDir, sessionID, agentID}
	if projectCwd != "" {
		a = append(a, projectCwd)
	}
	var msgs []json.RawMessage
	p.runJSON(t, &msgs, a...)
	return msgs
}

// Fork is forkSession (it WRITES a new session file into configDir) and
// returns the new session id. upToUUID and title are optional ("" = unset).
func (p *Peer) Fork(t testing.TB, configDir, sessionID, projectCwd, upToUUID, title string) string {
	t.Helper()
	a := []string{"fork", configDir, sessionID}
	if projectCwd != "" {
		a = append(a, projectCwd)
	}
	if upToUUID != "" {
		a = append(a, "--up-to", upToUUID)
	}
	if title != "" {
		a = append(a, "--title", title)
	}
	var r struct {
		SessionID string `json:"sessionId"`
	}
	p.runJSON(t, &r, a...)
	if r.SessionID == "" {
		t.Fatalf("peer: forkSession(%s) returned no sessionId", sessionID)
	}
	return r.SessionID
}

// ForkRequest is one forkSession call of ForkMany ("" leaves an option
// unset).
type ForkRequest struct {
	Session string `json:"session"`
	UpTo    string `json:"upTo"`
	Title   string `json:"title"`
}

// ForkMany is Fork for each request, in order, in one process (it WRITES
// the new sessions into configDir); the new session ids.
func (p *Peer) ForkMany(t testing.TB, configDir string, forks []ForkRequest) []string {
	t.Helper()
	file := jsonFile(t, "forks.json", forks)
	var ids []string
	p.runJSON(t, &ids, "fork-many", configDir, file)
	if len(ids) != len(forks) {
		t.Fatalf("peer: fork-many returned %d ids for %d forks", len(ids), len(forks))
	}
	for i, id := range ids {
		if id == "" {
			t.Fatalf("peer: forkSession(%s) returned no sessionId", forks[i].Session)
		}
	}
	return ids
}

// Mutate runs one of the SDK's session mutators on configDir (it WRITES):
// op is "rename" or "tag" (value is the title or tag; a tag of nil clears
// it) or "archive", "unarchive", "delete" (value unused).
func (p *Peer) Mutate(t testing.TB, configDir, op, sessionID string, value *string) {
	t.Helper()
	a := []string{op, configDir, sessionID}
	switch {
	case op == "tag" && value == nil:
		a = append(a, "--clear")
	case op == "rename" || op == "tag":
		a = append(a, *value)
	}
	var r struct {
		OK bool `json:"ok"`
	}
	p.runJSON(t, &r, a...)
	if !r.OK {
		t.Fatalf("peer: %s(%s) did not report ok", op, sessionID)
	}
}

// MutateStep is one step of MutateSteps: renameSession or tagSession
// (Op "rename" or "tag") of Session with Value, then a copy of the config
// folder into Snapshot.
type MutateStep struct {
	Op       string `json:"op"`
	Session  string `json:"session"`
	Value    string `json:"value"`
	Snapshot string `json:"snapshot"`
}

// MutateSteps runs the steps in order in one process (it WRITES configDir
// and every snapshot folder).
func (p *Peer) MutateSteps(t testing.TB, configDir string, steps []MutateStep) {
	t.Helper()
	file := jsonFile(t, "steps.json", steps)
	var r struct {
		OK bool `json:"ok"`
	}
	p.runJSON(t, &r, "mutate-steps", configDir, file)
	if !r.OK {
		t.Fatal("peer: mutate-steps did not report ok")
	}
}

// TagResult is what tagSession did with one tag of TagMany.
type TagResult struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
}

// TagMany runs the SDK's tagSession on sessionID once per tag, in order, in
// one node process (it WRITES a tag line per accepted tag); tags are passed
// as JSON, so NUL and any other code point reach the SDK as they are.
func (p *Peer) TagMany(t testing.TB, configDir, sessionID string, tags []string) []TagResult {
	t.Helper()
	b, err := json.Marshal(tags)
	if err != nil {
		t.Fatalf("peer: encode tags: %v", err)
	}
	file := filepath.Join(t.TempDir(), "tags.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatalf("peer: write tags: %v", err)
	}
	var r []TagResult
	p.runJSON(t, &r, "tag-many", configDir, sessionID, file)
	if len(r) != len(tags) {
		t.Fatalf("peer: tag-many answered %d results for %d tags", len(r), len(tags))
	}
	return r
}

// Sanitize returns the project folder name the SDK derives for each path
// (peer.mjs mirrors the SDK's rule).
func (p *Peer) Sanitize(t testing.TB, paths ...string) []string {
	t.Helper()
	if len(paths) == 0 {
		return nil
	}
	var r []struct {
		Path       string `json:"path"`
		ProjectDir string `json:"projectDir"`
	}
	p.runJSON(t, &r, append([]string{"sanitize"}, paths...)...)
	if len(r) != len(paths) {
		t.Fatalf("peer: sanitize returned %d names for %d paths", len(r), len(paths))
	}
	out := make([]string, len(r))
	for i, x := range r {
		out[i] = x.ProjectDir
	}
	return out
}

// GenFixture writes gen-corpus.mjs's hand-made fixture sessions for project
// cwd into configDir and returns what it printed: "projectDir" (relative to
// configDir) and the session ids by role (withSummaryAndSubagent, subagentId,
// withCustomTitleTag, withCompactBoundary, interruptedTurn, branched,
// sidechainOnly).
func (p *Peer) GenFixture(t testing.TB, configDir, cwd string) map[string]string {
	t.Helper()
	out := p.Run(t, "gen-corpus.mjs", "fixture", configDir, cwd)
	var ids map[string]string
	if err := json.Unmarshal(out, &ids); err != nil {
		t.Fatalf("peer: decode gen-corpus fixture output: %v\n%.2000s", err, out)
	}
	return ids
}

// BulkResult is what gen-corpus.mjs bulk reports.
type BulkResult struct {
	ProjectDir string `json:"projectDir"` // relative to the config dir
	Sessions   int    `json:"sessions"`
	TotalBytes int64  `json:"totalBytes"`
}

// GenBulk writes count deterministic synthetic sessions of about bytesPerSession bytes
// each (seed selects the corpus) for project cwd into configDir.
func (p *Peer) GenBulk(t testing.TB, configDir, cwd string, count, bytesPerSession int, seed int) BulkResult {
	t.Helper()
	out := p.Run(t, "gen-corpus.mjs", "bulk", configDir, cwd,
		strconv.Itoa(count), strconv.Itoa(bytesPerSession), strconv.Itoa(seed))
	var r BulkResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("peer: decode gen-corpus bulk output: %v\n%.2000s", err, out)
	}
	return r
}

// UUIDs returns the "uuid" field of each SDK message, in order ("" where a
// message has none or is not an object).
func UUIDs(msgs []json.RawMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		var v struct {
			UUID string `json:"uuid"`
		}
		if json.Unmarshal(m, &v) == nil {
			out[i] = v.UUID
		}
	}
	return out
}
