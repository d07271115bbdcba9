package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/internal/testenv"
	"github.com/e0dc0000/scribe/watch/watchsim"
)

// watchEnv is a Claude config folder, an archive and a configuration
// that mirrors the one into the other.
type watchEnv struct {
	dir, claude, projects, archive, cfg string
	env                                 []string
	bin                                 string
}

func newWatchEnv(t *testing.T) *watchEnv { return newWatchEnvWith(t, "") }

// newWatchEnvWith adds an events sink to the team server at base (when
// not "") to the pipeline.
func newWatchEnvWith(t *testing.T, base string) *watchEnv {
	t.Helper()
	dir := t.TempDir()
	we := &watchEnv{dir: dir, claude: filepath.Join(dir, "claude"), archive: filepath.Join(dir, "archive"), bin: testenv.BuildScribe(t)}
	we.projects = filepath.Join(we.claude, "projects")
	if err := os.MkdirAll(we.projects, 0o700); err != nil {
		t.Fatal(err)
	}
	we.cfg = filepath.Join(dir, "scribe.hcl")
	hcl := fmt.Sprintf("sink \"jsonl\" \"archive\" {\n  dir = %q\n  drain_interval = \"10ms\"\n}\npipeline {\n  sinks = [\"jsonl/archive\"]\n}\n", we.archive)
	if base != "" {
		hcl = fmt.Sprintf(`sink "jsonl" "archive" {
  dir            = %q
  drain_interval = "10ms"
}
sink "events" "team" {
  base_url     = %q
  token        = %q
  timeout      = "10s"
  max_attempts = 30
  backoff_min  = "20ms"
  backoff_max  = "100ms"
  flush_wait   = "90s"
}
pipeline {
  sinks = ["jsonl/archive", "events/team"]
}
`, we.archive, base, cloudToken)
	}
	if err := os.WriteFile(we.cfg, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	we.env = append(cleanEnv(), "CLAUDE_CONFIG_DIR="+we.claude, "SCRIBE_LOG_LEVEL=warn")
	return we
}

func (we *watchEnv) start(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(we.bin, append([]string{"watch", "--config", we.cfg, "--rescan", "1s", "--flush-interval", "20ms"}, args...)...)
	cmd.Env = we.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, &stderr
}

// TestWatchSurvivesKill9 runs the simulator while `scribe watch` is
// killed with SIGKILL at random points (5 times; SCRIBE_WATCH_KILLS=50
// for the long run), then lets a last watch catch up: the archive holds
// every line exactly once, the deletion is recorded, and the Claude Agent
// SDK reads each session from the archive exactly as from the source.
func TestWatchSurvivesKill9(t *testing.T) {
	kills := watchKills(t, 5)
	p := peer.Find(t)
	we := newWatchEnv(t)
	sim, stderr := watchKillScenario(t, we, kills, nil)
	// The SDK reads the archive exactly as the source.
	for _, sess := range sim.Sessions {
		if sess.Deleted || sess.Truncated {
			continue // the source no longer holds what the archive keeps
		}
		src := p.Messages(t, we.claude, sess.ID, sess.CWD, false)
		got := p.Messages(t, we.archive, sess.ID, sess.CWD, false)
		if !jsonEqual(src, got) {
			t.Fatalf("session %s: the SDK reads %d messages from the archive, %d from the source", sess.ID, len(got), len(src))
		}
		for _, a := range sess.Agents {
			src := p.SubagentMessages(t, we.claude, sess.ID, a.Agent, sess.CWD)
			got := p.SubagentMessages(t, we.archive, sess.ID, a.Agent, sess.CWD)
			if !jsonEqual(src, got) {
				t.Fatalf("subagent %s of %s: the SDK reads %d messages from the archive, %d from the source", a.Agent, sess.ID, len(got), len(src))
			}
		}
	}
	t.Logf("%d lines written by the simulator, all in the archive once; watch said: %s", sim.Lines(), stderr)
}

// TestWatchSurvivesKill9TeamServer is the same run with the team server
// as a second sink: it holds every entry exactly once too.
func TestWatchSurvivesKill9TeamServer(t *testing.T) {
	kills := watchKills(t, 3)
	srv := startCloudServer(t)
	we := newWatchEnvWith(t, srv.url())
	// Checked while the last watch still runs: an entry the server did not
	// take yet waits in the events sink's spool for the next run.
	holds := func(sess *watchsim.Session) {
		checkServerHolds(t, srv, sess.ID, sess.Main, "subagents=false")
		for _, a := range sess.Agents {
			checkServerHolds(t, srv, sess.ID, a, "session_agent_id="+a.Agent)
		}
	}
	// The scenario deletes a session as soon as the archive holds it, maybe
	// before the last watch read it again: lines a killed run put in the
	// archive only then reach the server from the archive's copy.
	watchKillScenario(t, we, kills, func(sim *watchsim.Sim) {
		for _, sess := range sim.Sessions {
			holds(sess)
		}
	})
}

// checkServerHolds wants every uuid line the simulator wrote to f on the
// server exactly once (lines before a truncation at most once).
func checkServerHolds(t *testing.T, srv *cloudServer, sid string, f *watchsim.File, query string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		have := map[string]int{}
		for _, p := range srv.history(sid, query) {
			var e struct{ UUID string }
			_ = json.Unmarshal([]byte(p), &e)
			have[e.UUID]++
		}
		missing, problem := 0, ""
		for i, l := range f.Lines {
			var e struct{ UUID string }
			_ = json.Unmarshal(l, &e)
			if e.UUID == "" {
				continue
			}
			switch n := have[e.UUID]; {
			case n > 1:
				problem = fmt.Sprintf("%s: entry %s is on the server %d times", f.Path, e.UUID, n)
			case n == 0 && i >= f.Optional:
				missing++
			}
		}
		if problem != "" {
			t.Fatal(problem)
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d entries missing on the server after 60s", f.Path, missing)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func watchKills(t *testing.T, def int) int {
	v := os.Getenv("SCRIBE_WATCH_KILLS")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("SCRIBE_WATCH_KILLS=%q: want a positive number", v)
	}
	return n
}

// watchKillScenario runs the simulator while `scribe watch` is killed
// with SIGKILL at random points (kills times, and at least until every
// special case happened), then lets a last watch catch up, deletes a
// session, stops watch with SIGTERM and checks that the archive holds
// every line exactly once and the deletion's lifecycle record.
func watchKillScenario(t *testing.T, we *watchEnv, kills int, beforeStop func(*watchsim.Sim)) (*watchsim.Sim, string) {
	t.Helper()
	seed := time.Now().UnixNano()
	t.Logf("seed %d, %d kills", seed, kills)
	rng := rand.New(rand.NewSource(seed))
	sim := watchsim.New(we.projects, 5, seed)
	stopSim := runSim(sim)
	minSteps := time.Now().Add(16 * sim.Interval) // every special case happens
	for i := 0; i < kills || time.Now().Before(minSteps); i++ {
		cmd, stderr := we.start(t)
		time.Sleep(time.Duration(50+rng.Intn(500)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if strings.Contains(stderr.String(), "panic") {
			t.Fatalf("watch panicked:\n%s", stderr)
		}
	}
	if err := stopSim(); err != nil {
		t.Fatal(err)
	}
	if err := sim.Finish(); err != nil {
		t.Fatal(err)
	}

	cmd, stderr := we.start(t)
	archiveProjects := filepath.Join(we.archive, "projects")
	waitArchive(t, sim, archiveProjects, stderr)
	// Claude Code's retention sweep deletes a session: nothing mirrored
	// is lost, and the deletion is a lifecycle record.
	gone := sim.Sessions[3]
	t.Logf("deleting session %s", gone.ID)
	if err := sim.Delete(gone); err != nil {
		t.Fatal(err)
	}
	side := filepath.Join(archiveProjects, filepath.Base(gone.Dir), gone.ID, "scribe-lifecycle.jsonl")
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(side)
		if bytes.Contains(b, []byte(`"event":"transcript_deleted"`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no transcript_deleted record in %s:\n%s\nwatch stderr:\n%s", side, b, stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if beforeStop != nil {
		beforeStop(sim)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watch after SIGTERM: %v\n%s", err, stderr)
	}
	if _, err := sim.Verify(archiveProjects, true); err != nil {
		t.Fatal(err)
	}
	if sim.SealedTorn > 0 {
		t.Logf("%d writes torn by a kill were sealed in the archive (each line whole after it)", sim.SealedTorn)
	}
	for _, f := range []string{".meta.json"} {
		for _, a := range sim.Sessions[0].Agents {
			src := strings.TrimSuffix(a.Path, ".jsonl") + f
			rel, _ := filepath.Rel(we.projects, src)
			want, _ := os.ReadFile(src)
			got, err := os.ReadFile(filepath.Join(archiveProjects, rel))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("sidecar %s not mirrored: %v", rel, err)
			}
		}
	}

	return sim, strings.TrimSpace(stderr.String())
}

// runSim steps the simulator every sim.Interval until the returned stop
// is called, which returns the first error of a step.
func runSim(sim *watchsim.Sim) (stop func() error) {
	done, simErr := make(chan struct{}), make(chan error, 1)
	go func() {
		tick := time.NewTicker(sim.Interval)
		defer tick.Stop()
		for step := 0; ; step++ {
			select {
			case <-done:
				simErr <- nil
				return
			case <-tick.C:
			}
			if err := sim.Step(step); err != nil {
				simErr <- err
				return
			}
		}
	}()
	return func() error { close(done); return <-simErr }
}

func waitArchive(t *testing.T, sim *watchsim.Sim, archiveProjects string, stderr *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		missing, err := sim.Verify(archiveProjects, false)
		if err != nil {
			t.Fatalf("%v\nwatch stderr:\n%s", err, stderr)
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			_, err := sim.Verify(archiveProjects, true)
			t.Fatalf("%d lines still missing from the archive after 60s: %v\nwatch stderr:\n%s", missing, err, stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func jsonEqual(a, b []json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		var x, y any
		if json.Unmarshal(a[i], &x) != nil || json.Unmarshal(b[i], &y) != nil {
			return false
		}
		xb, _ := json.Marshal(x)
		yb, _ := json.Marshal(y)
		if !bytes.Equal(xb, yb) {
			return false
		}
	}
	return true
}

// TestWatchRefusesTheWatchedFolderAsASink: the local store (jsonl/local,
// listed by the user: left out, watch mirrors into the built-in archive)
// writes into ~/.claude, which watch reads.
func TestWatchRefusesTheWatchedFolderAsASink(t *testing.T) {
	we := newWatchEnv(t)
	for name, cfg := range map[string]string{
		"local":    "pipeline {\n  sinks = [\"jsonl/local\"]\n}\n",
		"same dir": fmt.Sprintf("sink \"jsonl\" \"copy\" {\n  dir = %q\n}\npipeline {\n  sinks = [\"jsonl/copy\"]\n}\n", we.claude),
	} {
		p := filepath.Join(we.dir, "bad.hcl")
		if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		out, _, code := runScribe(t, runOpts{bin: we.bin, base: we.env, combined: true}, "watch", "--once", "--config", p)
		if code != 2 {
			t.Fatalf("%s: watch with a sink into the watched folder: exit %d, want 2\n%s", name, code, out)
		}
		if !strings.Contains(out, "a folder watch follows") || !strings.Contains(out, `sink "jsonl" "archive" { dir = `) {
			t.Fatalf("%s: the error does not say what is wrong and how to configure an archive:\n%s", name, out)
		}
		if _, err := os.Stat(filepath.Join(we.claude, "scribe")); err == nil {
			t.Fatalf("%s: watch wrote into the watched folder", name)
		}
	}
}

func TestWatchPrintService(t *testing.T) {
	we := newWatchEnv(t)
	for _, tc := range []struct {
		flag string
		want []string
	}{
		{"", []string{"[Service]", "ExecStart=", " watch --config " + we.cfg, "WantedBy=default.target", "Environment=CLAUDE_CONFIG_DIR=" + we.claude}},
		{"--launchd", []string{"<key>ProgramArguments</key>", "<string>watch</string>", "<string>" + we.cfg + "</string>", "<key>KeepAlive</key>"}},
	} {
		args := []string{"watch", "--print-service", "--config", we.cfg}
		if tc.flag != "" {
			args = append(args, tc.flag)
		}
		cmd := exec.Command(we.bin, args...)
		cmd.Env = we.env
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Fatalf("watch --print-service %s lacks %q:\n%s", tc.flag, w, out)
			}
		}
	}
}

// TestWatchMetricsAndArchiveReads: --metrics serves the figures, and
// ls/show read the archive with --from.
func TestWatchMetricsAndArchiveReads(t *testing.T) {
	we := newWatchEnv(t)
	sim := watchsim.New(we.projects, 2, 7)
	for i := 0; i < 4; i++ {
		if err := sim.Step(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := sim.Finish(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd, stderr := we.start(t, "--metrics", addr)
	waitArchive(t, sim, filepath.Join(we.archive, "projects"), stderr)
	var body string
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			if strings.Contains(body, "scribe_watch_lag_bytes 0\n") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics never showed a caught-up watch: %v\n%s", err, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, want := range []string{"scribe_watch_files_followed ", `scribe_watch_entries_total{result="accepted"} `, `scribe_sink_written_total{sink="jsonl/archive"} `, "scribe_watch_errors_total 0"} {
		if !strings.Contains(body, want) {
			t.Fatalf("metrics lack %q:\n%s", want, body)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watch after SIGTERM: %v\n%s", err, stderr)
	}
	sess := sim.Sessions[0]
	run := func(args ...string) string {
		return mustScribe(t, runOpts{bin: we.bin, base: we.env, combined: true}, append(args, "--config", we.cfg)...)
	}
	// Claude Code's sweep deletes the source: the archive still lists and
	// shows it.
	if err := sim.Delete(sess); err != nil {
		t.Fatal(err)
	}
	if out := run("ls", "--all", "--from", "jsonl/archive", "--json"); !strings.Contains(out, sess.ID) {
		t.Fatalf("ls --from jsonl/archive does not list %s:\n%s", sess.ID, out)
	}
	if out := run("show", sess.ID[:8], "--from", "jsonl/archive"); !strings.Contains(out, "── user") {
		t.Fatalf("show --from jsonl/archive:\n%s", out)
	}
	if out := run("info", sess.ID, "--from", "jsonl/archive"); !strings.Contains(out, sess.ID) {
		t.Fatalf("info --from jsonl/archive:\n%s", out)
	}
}

func waitForCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
