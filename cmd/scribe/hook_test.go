package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/e0dc0000/scribe/server/wire"
	"github.com/e0dc0000/scribe/watch/watchsim"
)

// hookRun runs `scribe hook` with one event and wants exit 0 and nothing
// on stdout (Claude Code would add it to the conversation).
func (we *watchEnv) hook(t *testing.T, ev map[string]any) {
	t.Helper()
	b, _ := json.Marshal(ev)
	stdout, stderr, code := runScribe(t, runOpts{bin: we.bin, base: we.env, stdin: string(b)}, "hook", "--config", we.cfg)
	if code != 0 {
		t.Fatalf("scribe hook %s: exit %d\n%s", ev["hook_event_name"], code, stderr)
	}
	if stdout != "" {
		t.Fatalf("scribe hook printed on stdout: %q", stdout)
	}
}

func hookEvent(sess *watchsim.Session, name string, extra ...string) map[string]any {
	ev := map[string]any{"session_id": sess.ID, "transcript_path": sess.Main.Path, "cwd": sess.CWD, "hook_event_name": name}
	for i := 0; i+1 < len(extra); i += 2 {
		ev[extra[i]] = extra[i+1]
	}
	return ev
}

func serverState(t *testing.T, srv *cloudServer, sid string) string {
	t.Helper()
	var l wire.SessionList
	if err := json.Unmarshal(srv.get("/v1/sessions?limit=1000"), &l); err != nil {
		t.Fatal(err)
	}
	for _, d := range l.Data {
		if d.ID == sid {
			return d.State
		}
	}
	return ""
}

// TestHookRecordsDeltaStateAndLifecycle drives a session through Claude
// Code's hook events with no watch running: each hook mirrors the
// transcript's delta, the state machine follows the events on the team
// server, and the lifecycle events land beside the archived transcript.
func TestHookRecordsDeltaStateAndLifecycle(t *testing.T) {
	srv := startCloudServer(t)
	we := newWatchEnvWith(t, srv.url())
	sim := watchsim.New(we.projects, 1, 3)
	sess := sim.Sessions[0]
	step := 0
	write := func() {
		if err := sim.Step(step); err != nil {
			t.Fatal(err)
		}
		step++
		if err := sim.Finish(); err != nil {
			t.Fatal(err)
		}
	}
	we.hook(t, hookEvent(sess, "SessionStart", "source", "startup", "model", "claude-sonnet-4-5"))
	write()
	we.hook(t, hookEvent(sess, "UserPromptSubmit", "prompt", "fix it"))
	if got := serverState(t, srv, sess.ID); got != "running" {
		t.Fatalf("after UserPromptSubmit the server says %q, want running", got)
	}
	write()
	we.hook(t, hookEvent(sess, "Notification", "notification_type", "permission_prompt", "message", "Claude needs your permission"))
	if got := serverState(t, srv, sess.ID); got != "requires_action" {
		t.Fatalf("after a permission notification the server says %q, want requires_action", got)
	}
	we.hook(t, hookEvent(sess, "PostToolUse", "tool_name", "Bash"))
	if got := serverState(t, srv, sess.ID); got != "running" {
		t.Fatalf("after PostToolUse the server says %q, want running", got)
	}
	write()
	write()
	a := sess.Agents[0]
	we.hook(t, hookEvent(sess, "SubagentStop", "agent_id", a.Agent, "agent_transcript_path", a.Path))
	we.hook(t, hookEvent(sess, "Stop"))
	if got := serverState(t, srv, sess.ID); got != "idle" {
		t.Fatalf("after Stop the server says %q, want idle", got)
	}
	we.hook(t, hookEvent(sess, "PreCompact", "trigger", "manual"))
	we.hook(t, hookEvent(sess, "PostCompact", "trigger", "manual"))
	we.hook(t, hookEvent(sess, "SessionEnd", "reason", "prompt_input_exit"))
	var cp struct {
		States map[string]string `json:"states"`
	}
	if err := json.Unmarshal(mustReadFile(t, filepath.Join(we.archive, "scribe", "watch", "checkpoints.json")), &cp); err != nil {
		t.Fatal(err)
	}
	if _, ok := cp.States[sess.ID]; ok {
		t.Fatalf("the checkpoints still keep the state of an ended session: %v", cp.States)
	}
	archiveProjects := filepath.Join(we.archive, "projects")
	if _, err := sim.Verify(archiveProjects, true); err != nil {
		t.Fatal(err)
	}
	side := string(mustReadFile(t, filepath.Join(archiveProjects, filepath.Base(sess.Dir), sess.ID, "scribe-lifecycle.jsonl")))
	for _, want := range []string{`"event":"session_start"`, `"source":"startup"`, `"event":"session_end"`, `prompt_input_exit`, `"event":"compaction_started"`, `"event":"compaction"`} {
		if !strings.Contains(side, want) {
			t.Fatalf("lifecycle sidecar lacks %s:\n%s", want, side)
		}
	}
	meta := strings.TrimSuffix(a.Path, ".jsonl") + ".meta.json"
	rel, _ := filepath.Rel(we.projects, meta)
	if !bytes.Equal(mustReadFile(t, meta), mustReadFile(t, filepath.Join(archiveProjects, rel))) {
		t.Fatal("the subagent's .meta.json is not in the archive")
	}
	if ents, _ := os.ReadDir(filepath.Join(we.archive, "scribe", "watch", "inbox")); len(ents) != 0 {
		t.Fatalf("%d hook events left in the inbox", len(ents))
	}
	checkServerHolds(t, srv, sess.ID, sess.Main, "subagents=false")
}

func mustReadFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHookIsHarmless: a broken event or configuration never fails the
// user's turn (exit 0, nothing on stdout) and is logged.
func TestHookIsHarmless(t *testing.T) {
	we := newWatchEnv(t)
	state := filepath.Join(we.dir, "xdg")
	for name, tc := range map[string]struct{ stdin, cfg string }{
		"not json":       {"{nope", we.cfg},
		"no session":     {`{"hook_event_name":"Stop"}`, we.cfg},
		"watched folder": {`{"session_id":"x","hook_event_name":"Stop"}`, localSinkConfig(t, we.dir)},
	} {
		args := []string{"hook"}
		if tc.cfg != "" {
			args = append(args, "--config", tc.cfg)
		}
		out, _, code := runScribe(t, runOpts{bin: we.bin, base: we.env, env: []string{"XDG_STATE_HOME=" + state}, stdin: tc.stdin}, args...)
		if code != 0 || len(out) > 0 {
			t.Fatalf("%s: scribe hook: exit %d, stdout %q; want exit 0 and silence", name, code, out)
		}
	}
	logs := string(mustReadFile(t, filepath.Join(we.archive, "scribe", "watch", "hook.log"))) + string(mustReadFile(t, filepath.Join(state, "scribe", "watch", "hook.log")))
	if _, err := os.Stat(filepath.Join(we.claude, "scribe")); err == nil {
		t.Fatal("hook wrote into the watched folder")
	}
	for _, want := range []string{"not JSON", "without session_id", "a folder watch follows"} {
		if !strings.Contains(logs, want) {
			t.Fatalf("hook.log lacks %q:\n%s", want, logs)
		}
	}
}

// TestHookAndWatchTogetherNeverDouble: while watch runs, hooks hand their
// events to it; the archive holds every line once and the inbox empties.
func TestHookAndWatchTogetherNeverDouble(t *testing.T) {
	we := newWatchEnv(t)
	sim := watchsim.New(we.projects, 2, 11)
	cmd, stderr := we.start(t)
	var wg sync.WaitGroup
	for step := 0; step < 12; step++ {
		if err := sim.Step(step); err != nil {
			t.Fatal(err)
		}
		for _, sess := range sim.Sessions {
			wg.Add(1)
			go func(ev map[string]any) {
				defer wg.Done()
				we.hook(t, ev)
			}(hookEvent(sess, []string{"UserPromptSubmit", "Stop"}[step%2]))
		}
		if step == 0 {
			for _, sess := range sim.Sessions {
				we.hook(t, hookEvent(sess, "SessionStart", "source", "startup"))
			}
		}
	}
	wg.Wait()
	if err := sim.Finish(); err != nil {
		t.Fatal(err)
	}
	archiveProjects := filepath.Join(we.archive, "projects")
	waitArchive(t, sim, archiveProjects, stderr)
	inbox := filepath.Join(we.archive, "scribe", "watch", "inbox")
	waitForCond(t, "the inbox to empty", func() bool { ents, _ := os.ReadDir(inbox); return len(ents) == 0 })
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watch: %v\n%s", err, stderr)
	}
	if _, err := sim.Verify(archiveProjects, true); err != nil {
		t.Fatal(err)
	}
	for _, sess := range sim.Sessions {
		side := mustReadFile(t, filepath.Join(archiveProjects, filepath.Base(sess.Dir), sess.ID, "scribe-lifecycle.jsonl"))
		if n := bytes.Count(side, []byte(`"event":"session_start"`)); n != 1 {
			t.Fatalf("session %s: %d session_start records, want 1:\n%s", sess.ID, n, side)
		}
	}
	// Hooks that ran before watch held the checkpoints handled their own
	// events; every later one went through watch's inbox.
	if strings.Contains(stderr.String(), " 0 hook events") {
		t.Fatalf("watch took no hook event: %s", stderr)
	}
}

// TestHookInterruptEndsTheTurn: Claude Code's Interrupt event (Esc, a
// denied permission, a rewind) is recorded as the end of the turn: the
// session's state goes back to idle and the hook logs no error.
func TestHookInterruptEndsTheTurn(t *testing.T) {
	we := newWatchEnv(t)
	sim := watchsim.New(we.projects, 1, 5)
	sess := sim.Sessions[0]
	if err := sim.Step(0); err != nil {
		t.Fatal(err)
	}
	if err := sim.Finish(); err != nil {
		t.Fatal(err)
	}
	state := func() string {
		t.Helper()
		var cp struct {
			States map[string]string `json:"states"`
		}
		if err := json.Unmarshal(mustReadFile(t, filepath.Join(we.archive, "scribe", "watch", "checkpoints.json")), &cp); err != nil {
			t.Fatal(err)
		}
		return cp.States[sess.ID]
	}
	we.hook(t, hookEvent(sess, "UserPromptSubmit", "prompt", "fix it"))
	if got := state(); got != "running" {
		t.Fatalf("after UserPromptSubmit the checkpoints say %q, want running", got)
	}
	we.hook(t, hookEvent(sess, "Interrupt", "source", "user", "reason", "stop", "via", "escape"))
	if got := state(); got != "idle" {
		t.Fatalf("after Interrupt the checkpoints say %q, want idle", got)
	}
	if log, err := os.ReadFile(filepath.Join(we.archive, "scribe", "watch", "hook.log")); err == nil && strings.Contains(string(log), "not recorded") {
		t.Fatalf("hook.log has an error:\n%s", log)
	}
	if ents, _ := os.ReadDir(filepath.Join(we.archive, "scribe", "watch", "inbox")); len(ents) != 0 {
		t.Fatalf("%d hook events left in the inbox", len(ents))
	}
}

// localSinkConfig writes a configuration whose pipeline lists the local
// store (Claude's folder, which watch and hook follow) and returns its path.
func localSinkConfig(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "local.hcl")
	if err := os.WriteFile(p, []byte("pipeline {\n  sinks = [\"jsonl/local\"]\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
