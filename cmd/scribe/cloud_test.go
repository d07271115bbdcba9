package main_test

// The cloud side end to end: real `scribe serve` processes (embedded
// JetStream, each with its own data folder, on 127.0.0.1 and a free port),
// real `scribe record`, `push`, `pull` and `resume` processes, and the real
// Claude Agent SDK reading what pull wrote.
//
//   - TestCloudRecordPullReadsTheSame: record corpus sessions with the events
//     (then the ingress) sink on, pull them into an empty config folder, and
//     the SDK lists and reads both folders the same; pull again changes
//     nothing, and a changed local copy is replaced with a backup.
//   - TestPushAllTwiceStoresOnce: push --all, then again: every entry once,
//     in file order, and the second push stores nothing.
//   - TestPushAfterKill9: kill -9 scribe serve (then restart it), or the push
//     itself, during a push; push again: every entry once, in order.
//   - TestCloudIngressThroughFlakyProxy: the ingress sink through a loopback
//     proxy that loses the answer of every 4th connection and delays the
//     others: after the final flush every entry is on the server once, in
//     order.
//   - TestCloudIngress409Storm: two record processes write the same session
//     through the ingress sink at the same time.
//   - TestCloudResumeFallsBackToTheServer: with the local file gone, resume
//     is served by the cloud loader and says why the local store missed.
//
// Every wait is bounded; every address is loopback.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/internal/testenv"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

const (
	cloudToken  = "scribe-cloud-test-token-0123456789"
	cloudTenant = "acme"
	// cloudCmdTimeout bounds one scribe command.
	cloudCmdTimeout = 2 * time.Minute
)

// cloudUnits are corpus sessions with subagents, small enough for tests.
var cloudUnits = []string{
	"29ccd257-68b1-427f-ae5f-6524b7cb6f20",
	"0ccf1a04-1b4c-43b6-8aa5-79e41db43a68",
	"4b2030ed-5563-49ea-b703-6a002f2d3cc8",
}

// ---------------------------------------------------------------------------
// scribe serve

type cloudServer struct {
	t       *testing.T
	bin     string
	dataDir string
	cfg     string
	addr    string

	cmd  *exec.Cmd
	done chan struct{}
	log  *cloudBuffer
	hc   *http.Client
}

type cloudBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *cloudBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *cloudBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// cloudFreeAddr returns 127.0.0.1:<a port free right now>.
func cloudFreeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startCloudServer(t *testing.T) *cloudServer {
	t.Helper()
	dir := t.TempDir()
	s := &cloudServer{
		t:       t,
		bin:     testenv.BuildScribe(t),
		dataDir: filepath.Join(dir, "data"),
		cfg:     filepath.Join(dir, "serve.hcl"),
		addr:    cloudFreeAddr(t),
		log:     &cloudBuffer{},
		hc:      &http.Client{Timeout: 20 * time.Second},
	}
	sum := sha256.Sum256([]byte(cloudToken))
	hcl := fmt.Sprintf(`server {
  listen   = %q
  data_dir = %q
  tokens   = [{ sha256 = %q, tenant = %q, scopes = ["read", "write"] }]
}
`, s.addr, s.dataDir, hex.EncodeToString(sum[:]), cloudTenant)
	if err := os.WriteFile(s.cfg, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *cloudServer) url() string { return "http://" + s.addr }

// start runs scribe serve and waits (at most 60 s) until /readyz answers.
func (s *cloudServer) start() {
	s.t.Helper()
	cmd := exec.Command(s.bin, "serve", "--config", s.cfg, "--log-level", "warn")
	cmd.Env = cleanEnv()
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(s.done)
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-s.done:
			s.t.Fatalf("scribe serve exited at start:\n%s", s.log.String())
		default:
		}
		resp, err := s.hc.Get(s.url() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("scribe serve not ready after 60s (last: %v)\n%s", err, s.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill9 kills the server with SIGKILL and waits for it to be gone.
func (s *cloudServer) kill9() {
	s.t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		s.t.Fatal("scribe serve did not die after SIGKILL")
	}
}

// stop ends the server: SIGTERM, then SIGKILL after 20 s.
func (s *cloudServer) stop() {
	if s.cmd == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.done
	}
}

// get GETs a route with the token; it fails the test unless the answer is
// 200.
func (s *cloudServer) get(route string) []byte {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.url()+route, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+cloudToken)
	resp, err := s.hc.Do(req)
	if err != nil {
		s.t.Fatalf("GET %s: %v", route, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		s.t.Fatalf("GET %s: %d %s (%v)", route, resp.StatusCode, b, err)
	}
	return b
}

// history returns the payloads of a session's History (query: subagents=…
// or session_agent_id=…), following next_cursor (at most 200 pages).
func (s *cloudServer) history(sid, query string) []string {
	s.t.Helper()
	var out []string
	cursor := ""
	for page := 0; ; page++ {
		if page == 200 {
			s.t.Fatalf("history of %s: more than 200 pages", sid)
		}
		route := "/v1/code/sessions/" + sid + "/teleport-events?limit=1000&" + query
		if cursor != "" {
			route += "&cursor=" + url.QueryEscape(cursor)
		}
		var p struct {
			Data []struct {
				Payload json.RawMessage `json:"payload"`
			} `json:"data"`
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(s.get(route), &p); err != nil {
			s.t.Fatal(err)
		}
		for _, d := range p.Data {
			out = append(out, string(d.Payload))
		}
		if p.NextCursor == nil {
			return out
		}
		cursor = *p.NextCursor
	}
}

// counts returns the entries the server holds for each session.
func (s *cloudServer) counts() map[string]int64 {
	s.t.Helper()
	var l struct {
		Data []struct {
			ID      string `json:"id"`
			Entries int64  `json:"entries"`
		} `json:"data"`
	}
	if err := json.Unmarshal(s.get("/v1/sessions?limit=1000"), &l); err != nil {
		s.t.Fatal(err)
	}
	m := map[string]int64{}
	for _, d := range l.Data {
		m[d.ID] = d.Entries
	}
	return m
}

// metric reads a counter from /metrics (-1 when absent).
func (s *cloudServer) metric(name string) int64 {
	s.t.Helper()
	for _, line := range strings.Split(string(s.get("/metrics")), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return -1
}

// ---------------------------------------------------------------------------
// Client machines

// cloudMachine writes the configuration of a client machine: its config
// folder, the local store, the events and ingress sinks and the cloud
// loader pointed at base, pipeline.sinks as given, and resume's loaders.
func cloudMachine(t *testing.T, base string, sinks ...string) (cfgPath, configDir string) {
	t.Helper()
	root := t.TempDir()
	configDir = filepath.Join(root, "claude")
	if err := os.Mkdir(configDir, 0o700); err != nil {
		t.Fatal(err)
	}
	quoted := make([]string, len(sinks))
	for i, s := range sinks {
		quoted[i] = strconv.Quote(s)
	}
	client := fmt.Sprintf(`  base_url     = %q
  token        = %q
  timeout      = "10s"
  max_attempts = 30
  backoff_min  = "20ms"
  backoff_max  = "100ms"
  flush_wait   = "90s"
`, base, cloudToken)
	hcl := fmt.Sprintf(`config_dir = %q
log_level  = "warn"
pipeline {
  sinks  = [%s]
  guards = []
}
sink "jsonl" "local" {}
sink "events" "team" {
%s}
sink "ingress" "team" {
%s}
loader "cloud" "team" {
  base_url = %q
  token    = %q
  timeout  = "10s"
}
loader "summary" "default" {}
resume {
  loaders = ["jsonl/local", "cloud/team", "summary/default"]
}
`, configDir, strings.Join(quoted, ", "), client, client, base, cloudToken)
	cfgPath = filepath.Join(root, "scribe.hcl")
	if err := os.WriteFile(cfgPath, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgPath, configDir
}

// cloudRun runs scribe with args (bounded) and returns stdout, stderr and
// the exit code.
func cloudRun(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cloudCmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.BuildScribe(t), args...)
	cmd.Env = cleanEnv()
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("scribe %s: timed out after %v\nstderr:\n%s", strings.Join(args, " "), cloudCmdTimeout, errb.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// cloudRecorder records with a configuration file (recordUnit's recorder).
func cloudRecorder(cfgPath string) recorder {
	return func(t *testing.T, configDir string, f *corpusFile, session, cwd string) recordReport {
		t.Helper()
		args := []string{"record", "--config", cfgPath, "--config-dir", configDir, "--json"}
		if session != "" {
			args = append(args, "--session", session)
		}
		if cwd != "" {
			args = append(args, "--cwd", cwd)
		}
		out, errOut, code := cloudRun(t, "", append(args, f.abs)...)
		if code != 0 {
			t.Fatalf("scribe %s: exit %d\nstdout:\n%.3000s\nstderr:\n%.3000s", strings.Join(args, " "), code, out, errOut)
		}
		rep, err := decodeReport([]byte(out))
		if err != nil {
			t.Fatalf("%s: %v\n%s", f.rel, err, out)
		}
		return rep
	}
}

func cloudUnit(t *testing.T, sid string) *unit {
	t.Helper()
	for _, u := range loadCorpus(t).units {
		if u.sid == sid {
			return u
		}
	}
	t.Fatalf("corpus has no session %s", sid)
	return nil
}

// ---------------------------------------------------------------------------
// What the server must hold

// cloudExpect is a session as the server must hold it: the payloads of its
// main transcript and of each subagent, in order.
type cloudExpect struct {
	sid    string
	main   []string
	agents map[string][]string
	// entries is what /v1/sessions counts; sent the lines sent, dups the
	// repeated uuids among them.
	entries, sent, dups int
}

// expectFiles computes what the server holds after the session's files
// were sent in this order (main first, then the subagents in name order):
// an entry with a uuid once per session; a line without one once per
// copy when collapse is false (push keys copies apart), or once per
// distinct bytes when it is true (the sinks).
func expectFiles(t *testing.T, projDir, sid string, collapse bool) cloudExpect {
	t.Helper()
	exp := cloudExpect{sid: sid, agents: map[string][]string{}}
	type file struct{ path, agent string }
	files := []file{}
	if _, err := os.Stat(jsonl.MainFile(projDir, sid)); err == nil {
		files = append(files, file{path: jsonl.MainFile(projDir, sid)})
	}
	ents, _ := os.ReadDir(filepath.Join(projDir, sid, "subagents"))
	for _, e := range ents {
		if a, ok := strings.CutPrefix(e.Name(), "agent-"); ok && strings.HasSuffix(a, ".jsonl") {
			files = append(files, file{path: filepath.Join(projDir, sid, "subagents", e.Name()), agent: strings.TrimSuffix(a, ".jsonl")})
		}
	}
	seen := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			line = bytes.TrimSpace(line)
			if len(line) == 0 {
				continue
			}
			e, err := core.ParseEntry(line)
			if err != nil {
				t.Fatalf("%s: a line is not JSON: %v", f.path, err)
			}
			agent := f.agent
			if agent == "" {
				agent = e.Ref().AgentID
			}
			exp.sent++
			key := "u." + e.UUID
			if e.UUID == "" {
				key = "h." + agent + "\x00" + string(line)
				if !collapse {
					key += "\x00" + strconv.Itoa(exp.sent)
				}
			}
			if seen[key] {
				if e.UUID != "" {
					exp.dups++
				}
				continue
			}
			seen[key] = true
			exp.entries++
			if agent == "" {
				exp.main = append(exp.main, string(line))
			} else {
				exp.agents[agent] = append(exp.agents[agent], string(line))
			}
		}
	}
	return exp
}

// checkOnServer wants the server to hold exactly exp, in order.
func checkOnServer(t *testing.T, s *cloudServer, exp cloudExpect, counts map[string]int64) {
	t.Helper()
	if got := counts[exp.sid]; got != int64(exp.entries) {
		t.Errorf("session %s: /v1/sessions counts %d entries, want %d", exp.sid, got, exp.entries)
	}
	sameLines(t, exp.sid+" main transcript", s.history(exp.sid, "subagents=false"), exp.main)
	for a, want := range exp.agents {
		sameLines(t, exp.sid+" subagent "+a, s.history(exp.sid, "session_agent_id="+url.QueryEscape(a)), want)
	}
	if all := s.history(exp.sid, "subagents=true"); len(all) != exp.entries {
		t.Errorf("session %s: History with subagents holds %d rows, want %d", exp.sid, len(all), exp.entries)
	}
}

// sameLines wants got == want, line for line.
func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	show := func(s []string) string {
		if i < len(s) {
			return truncate(s[i], 160)
		}
		return "(end)"
	}
	t.Errorf("%s: %d rows, want %d; first difference at row %d:\n  got  %s\n  want %s", what, len(got), len(want), i, show(got), show(want))
}

// ---------------------------------------------------------------------------
// Record, pull, and the SDK reads the same

func TestCloudRecordPullReadsTheSame(t *testing.T) {
	p := peer.Find(t)
	for _, sink := range []string{"events/team", "ingress/team"} {
		t.Run(strings.Split(sink, "/")[0], func(t *testing.T) {
			srv := startCloudServer(t)
			cfgA, dirA := cloudMachine(t, srv.url(), "jsonl/local", sink)
			cfgB, dirB := cloudMachine(t, srv.url(), "jsonl/local")
			rec := cloudRecorder(cfgA)
			var units []*unit
			for _, sid := range cloudUnits {
				u := cloudUnit(t, sid)
				units = append(units, u)
				recordUnit(t, rec, dirA, u)
			}
			// The sink stored every entry once, in order.
			counts := srv.counts()
			for _, u := range units {
				checkOnServer(t, srv, expectFiles(t, layOriginal(t, t.TempDir(), u), u.sid, true), counts)
			}
			if t.Failed() {
				t.FailNow()
			}
			for _, u := range units {
				out, errOut, code := cloudRun(t, "", "pull", u.sid, "--config", cfgB, "--json")
				if code != 0 {
					t.Fatalf("pull %s: exit %d\n%s\n%s", u.sid, code, out, errOut)
				}
				var rep struct {
					Files []struct {
						Status string `json:"status"`
					} `json:"files"`
					Backups int `json:"backups"`
				}
				if err := json.Unmarshal([]byte(out), &rep); err != nil {
					t.Fatalf("pull --json: %v\n%s", err, out)
				}
				if len(rep.Files) != 1+len(u.agents) || rep.Backups != 0 {
					t.Errorf("pull %s into an empty folder: %s", u.sid, out)
				}
				for _, f := range rep.Files {
					if f.Status != "created" {
						t.Errorf("pull %s into an empty folder: a file %s, want created", u.sid, f.Status)
					}
				}
			}
			checkModes(t, "machine B", dirB)

			// The SDK sees the same in both folders.
			viewA, viewB := listView(t, p, dirA), listView(t, p, dirB)
			for _, u := range units {
				a, inA := viewA.list[u.sid]
				b, inB := viewB.list[u.sid]
				if !inA || !inB {
					t.Fatalf("session %s: listed on A %v, on B %v", u.sid, inA, inB)
				}
				keys := map[string]bool{}
				for k := range a.Raw {
					keys[k] = true
				}
				for k := range b.Raw {
					keys[k] = true
				}
				for k := range keys {
					if !listFieldsSkipped[k] && !reflect.DeepEqual(a.Raw[k], b.Raw[k]) {
						t.Errorf("session %s: listSessions field %s: A %v, B %v", u.sid, k, a.Raw[k], b.Raw[k])
					}
				}
				viewA.load(t, p, dirA, u.sid)
				viewB.load(t, p, dirB, u.sid)
				compareMessages(t, u.sid+" getSessionMessages", viewA.messages[u.sid], viewB.messages[u.sid])
				if len(viewA.subagents[u.sid]) != len(u.agents) || !slices.Equal(viewA.subagents[u.sid], viewB.subagents[u.sid]) {
					t.Errorf("session %s: listSubagents: A %q, B %q (the corpus has %d)", u.sid, viewA.subagents[u.sid], viewB.subagents[u.sid], len(u.agents))
				}
				for _, a := range viewA.subagents[u.sid] {
					compareMessages(t, u.sid+" getSubagentMessages "+a, viewA.subMsgs[u.sid][a], viewB.subMsgs[u.sid][a])
				}
			}
			if sink != "events/team" {
				return
			}

			// Pulling again changes nothing; a local change is replaced,
			// and kept as a backup.
			u := units[len(units)-1]
			out, _, code := cloudRun(t, "", "pull", u.sid, "--config", cfgB, "--json")
			if code != 0 || strings.Contains(out, `"created"`) || strings.Contains(out, `"replaced"`) || !strings.Contains(out, `"backups": 0`) {
				t.Errorf("second pull changed something (exit %d):\n%s", code, out)
			}
			proj, err := jsonl.Layout{ConfigDir: dirB}.FindSession(u.sid, "")
			if err != nil || proj == "" {
				t.Fatalf("find %s on B: %q %v", u.sid, proj, err)
			}
			mainB := jsonl.MainFile(proj, u.sid)
			before, _ := os.ReadFile(mainB)
			local := fmt.Sprintf(`{"type":"user","uuid":"00000000-0000-4000-8000-00000000abcd","parentUuid":null,"sessionId":%q,"message":{"role":"user","content":"only here"}}`, u.sid)
			changed := append(append([]byte{}, before...), local+"\n"...)
			if err := os.WriteFile(mainB, changed, 0o600); err != nil {
				t.Fatal(err)
			}
			out, _, code = cloudRun(t, "", "pull", u.sid, "--config", cfgB, "--json")
			var rep struct {
				Backups   int `json:"backups"`
				LocalOnly int `json:"local_only"`
				Files     []struct {
					Path, Status, Backup string
				} `json:"files"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
				t.Fatalf("pull over a changed copy: exit %d, %v\n%s", code, err, out)
			}
			if rep.Backups != 1 || rep.LocalOnly != 1 {
				t.Errorf("pull over a changed copy: %d backups, %d local-only entries; want 1 and 1\n%s", rep.Backups, rep.LocalOnly, out)
			}
			for _, f := range rep.Files {
				if f.Path != mainB {
					continue
				}
				now, _ := os.ReadFile(mainB)
				bak, _ := os.ReadFile(f.Backup)
				if f.Status != "replaced" || !bytes.Equal(now, before) || !bytes.Equal(bak, changed) {
					t.Errorf("pull over a changed copy: %s %s; the file holds the server's copy: %v, the backup the local one: %v",
						f.Status, f.Backup, bytes.Equal(now, before), bytes.Equal(bak, changed))
				}
			}
			checkModes(t, "machine B after a second pull", dirB)
		})
	}
}

// ---------------------------------------------------------------------------
// push

// cloudPushUnits are the sessions the push tests lay out: the corpus
// sessions with subagents plus a few plain ones, all of whose lines the
// server takes.
func cloudPushUnits(t *testing.T, extra int) []*unit {
	t.Helper()
	var out []*unit
	for _, sid := range cloudUnits {
		out = append(out, cloudUnit(t, sid))
	}
	for _, u := range loadCorpus(t).units {
		if extra == 0 {
			break
		}
		if u.main == nil || u.mainAt == "" || len(u.agents) > 0 || u.main.size > 100<<10 || len(u.main.malformed) > 0 ||
			len(u.main.sessionIDs) != 1 || u.main.sessionIDs[0] != u.sid || u.main.chainEntries() == 0 {
			continue
		}
		out = append(out, u)
		extra--
	}
	return out
}

type cloudPushReport struct {
	Sessions    int   `json:"sessions"`
	Files       int   `json:"files"`
	EntriesSent int64 `json:"entries_sent"`
	Stored      int64 `json:"stored"`
	Duplicates  int64 `json:"duplicates"`
	Bytes       int64 `json:"bytes"`
	Malformed   int64 `json:"malformed"`
	Refused     int64 `json:"refused"`
	Errors      []struct {
		Session, Error string
	} `json:"errors"`
}

func cloudPush(t *testing.T, cfg string, args ...string) (cloudPushReport, int, string) {
	t.Helper()
	out, errOut, code := cloudRun(t, "", append([]string{"push", "--config", cfg, "--json"}, args...)...)
	var rep cloudPushReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("push --json: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	return rep, code, out + errOut
}

// layPushFolder lays the units out in a fresh config folder and returns
// what the server must hold for each after a push.
func layPushFolder(t *testing.T, configDir string, units []*unit) []cloudExpect {
	t.Helper()
	var exps []cloudExpect
	for _, u := range units {
		proj := layOriginal(t, configDir, u)
		exps = append(exps, expectFiles(t, proj, u.sid, false))
	}
	return exps
}

func TestPushAllTwiceStoresOnce(t *testing.T) {
	srv := startCloudServer(t)
	cfg, dir := cloudMachine(t, srv.url(), "jsonl/local")
	units := cloudPushUnits(t, 5)
	exps := layPushFolder(t, dir, units)
	var sent, entries, dups int64
	for _, e := range exps {
		sent, entries, dups = sent+int64(e.sent), entries+int64(e.entries), dups+int64(e.dups)
	}

	// A refused token stops the push at once, storing nothing.
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.hcl")
	if err := os.WriteFile(bad, bytes.ReplaceAll(raw, []byte(cloudToken), []byte("not-the-token")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := cloudRun(t, "", "push", "--config", bad, "--all", "--json")
	if code != 1 || !strings.Contains(out, `"token_refused": true`) || !strings.Contains(errOut, "refused the token") || len(srv.counts()) != 0 {
		t.Errorf("push with a wrong token: exit %d\n%s\n%s", code, out, errOut)
	}

	start := time.Now()
	rep, code, out := cloudPush(t, cfg, "--all")
	t.Logf("first push: %d sessions, %d entries in %v", rep.Sessions, rep.EntriesSent, time.Since(start).Round(time.Millisecond))
	if code != 0 || len(rep.Errors) > 0 || rep.Refused > 0 || rep.Malformed > 0 || rep.Sessions != len(units) {
		t.Fatalf("first push: exit %d\n%s", code, out)
	}
	if rep.EntriesSent != sent || rep.Stored != entries || rep.Duplicates != dups {
		t.Errorf("first push: sent %d, stored %d, duplicates %d; want %d, %d, %d", rep.EntriesSent, rep.Stored, rep.Duplicates, sent, entries, dups)
	}
	counts := srv.counts()
	for _, e := range exps {
		checkOnServer(t, srv, e, counts)
	}

	rep, code, out = cloudPush(t, cfg, "--all")
	if code != 0 || len(rep.Errors) > 0 {
		t.Fatalf("second push: exit %d\n%s", code, out)
	}
	if rep.Stored != 0 || rep.Duplicates != sent || rep.EntriesSent != sent {
		t.Errorf("second push: sent %d, stored %d, duplicates %d; want %d, 0, %d", rep.EntriesSent, rep.Stored, rep.Duplicates, sent, sent)
	}
	// One session by id (a prefix), with batches of 7.
	rep, code, out = cloudPush(t, cfg, units[1].sid[:8], "--batch", "7")
	if code != 0 || rep.Sessions != 1 || rep.Stored != 0 || rep.EntriesSent != int64(exps[1].sent) {
		t.Errorf("push of one session by prefix: exit %d\n%s", code, out)
	}
	counts = srv.counts()
	for _, e := range exps {
		checkOnServer(t, srv, e, counts)
	}
}

// TestPushAfterKill9 kills, with SIGKILL, in the middle of a push, the
// server (then restarts it on the same data folder) or the push itself;
// the push run again leaves every entry on the server once, in order.
func TestPushAfterKill9(t *testing.T) {
	for _, victim := range []string{"server", "push"} {
		t.Run(victim, func(t *testing.T) {
			srv := startCloudServer(t)
			cfg, dir := cloudMachine(t, srv.url(), "jsonl/local")
			units := cloudPushUnits(t, 3)
			exps := layPushFolder(t, dir, units)
			total := 0
			for _, e := range exps {
				total += e.entries
			}

			// One entry a request, one session at a time: slow enough to
			// be caught in the middle.
			ctx, cancel := context.WithTimeout(context.Background(), cloudCmdTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, testenv.BuildScribe(t), "push", "--config", cfg, "--all", "--json", "--batch", "1", "--workers", "1")
			cmd.Env = cleanEnv()
			var out cloudBuffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pushed := make(chan error, 1)
			go func() { pushed <- cmd.Wait() }()

			stored := func() int {
				n := int64(0)
				for _, c := range srv.counts() {
					n += c
				}
				return int(n)
			}
			deadline := time.Now().Add(60 * time.Second)
			for {
				select {
				case err := <-pushed:
					t.Fatalf("the push ended before the kill (%v); make it slower\n%s", err, out.String())
				default:
				}
				n := stored()
				if n >= total/4 {
					t.Logf("kill -9 of the %s with %d of %d entries stored", victim, n, total)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the push stored only %d of %d entries in 60s\n%s", n, total, out.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if victim == "server" {
				srv.kill9()
				time.Sleep(300 * time.Millisecond)
				srv.start()
			} else {
				_ = cmd.Process.Signal(syscall.SIGKILL)
			}
			select {
			case err := <-pushed:
				t.Logf("the interrupted push ended: %v", err)
			case <-time.After(90 * time.Second):
				t.Fatalf("the interrupted push did not end within 90s\n%s", out.String())
			}

			rep, code, text := cloudPush(t, cfg, "--all")
			if code != 0 || len(rep.Errors) > 0 {
				t.Fatalf("push run again: exit %d\n%s", code, text)
			}
			t.Logf("push run again: %d sent, %d stored, %d duplicates", rep.EntriesSent, rep.Stored, rep.Duplicates)
			if victim == "push" && (rep.Stored == 0 || rep.Duplicates == 0) {
				t.Errorf("after a killed push, the next one should store the rest (stored %d) and skip what was there (duplicates %d)", rep.Stored, rep.Duplicates)
			}
			counts := srv.counts()
			for _, e := range exps {
				checkOnServer(t, srv, e, counts)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// A flaky network

// flakyProxy forwards loopback connections to target. Every dropEvery-th
// connection carries its request to the server and then is cut before the
// answer reaches the client (the server did the work; the client must
// retry without doubling it). The others are delayed up to maxDelay per
// chunk. Every connection is closed after its first answer (which says
// Connection: close), so each request needs a new one.
type flakyProxy struct {
	ln        net.Listener
	target    string
	dropEvery int64
	maxDelay  time.Duration

	conns, drops atomic.Int64
	wg           sync.WaitGroup
}

func startFlakyProxy(t *testing.T, target string, dropEvery int64, maxDelay time.Duration) *flakyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &flakyProxy{ln: ln, target: target, dropEvery: dropEvery, maxDelay: maxDelay}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := p.conns.Add(1)
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.handle(c, n%p.dropEvery == 0)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		done := make(chan struct{})
		go func() { p.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(40 * time.Second):
			t.Error("proxy connections still open 40s after the test")
		}
	})
	return p
}

func (p *flakyProxy) url() string { return "http://" + p.ln.Addr().String() }

func (p *flakyProxy) delay() {
	if p.maxDelay > 0 {
		time.Sleep(rand.N(p.maxDelay))
	}
}

func (p *flakyProxy) handle(c net.Conn, drop bool) {
	defer c.Close()
	s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	defer s.Close()
	deadline := time.Now().Add(30 * time.Second)
	_ = c.SetDeadline(deadline)
	_ = s.SetDeadline(deadline)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if !drop {
					p.delay()
				}
				if _, werr := s.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 256<<10)
	n, _ := s.Read(buf)
	if drop {
		p.drops.Add(1)
		return
	}
	if n > 0 {
		p.delay()
		_, _ = c.Write(closeAfter(buf[:n]))
	}
}

// closeAfter adds "Connection: close" to the head of an HTTP/1.1 answer, so
// that the client does not send its next request on a connection the proxy
// is about to close.
func closeAfter(b []byte) []byte {
	if !bytes.HasPrefix(b, []byte("HTTP/1.")) {
		return b
	}
	i := bytes.Index(b, []byte("\r\n"))
	if i < 0 {
		return b
	}
	out := append([]byte{}, b[:i+2]...)
	out = append(out, "Connection: close\r\n"...)
	return append(out, b[i+2:]...)
}

// recordHeld runs `scribe record --json` on input, keeping its stdin open
// (as a long-lived host would) until done reports true, polled every 50 ms
// for at most 90 s; then it closes stdin, so record makes its final flush
// and exits. A network sink that met a failure stops waiting in Flush and
// keeps its entries in its spool, still retrying in the background: the
// held stdin gives it the time to deliver them.
func recordHeld(t *testing.T, cfg, input string, done func() bool, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cloudCmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.BuildScribe(t), append([]string{"record", "--config", cfg, "--json"}, args...)...)
	cmd.Env = cleanEnv()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	var out cloudBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	_, werr := io.WriteString(stdin, input)
	deadline := time.Now().Add(90 * time.Second)
	for werr == nil && !done() {
		if time.Now().After(deadline) {
			werr = errors.New("the server did not get everything within 90s")
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stdin.Close()
	err = cmd.Wait()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v", cloudCmdTimeout)
	}
	return out.String(), errors.Join(werr, err)
}

// fileLines returns the lines of files, concatenated.
func fileLines(t *testing.T, files ...string) string {
	t.Helper()
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func TestCloudIngressThroughFlakyProxy(t *testing.T) {
	srv := startCloudServer(t)
	proxy := startFlakyProxy(t, srv.addr, 4, 8*time.Millisecond)
	cfg, _ := cloudMachine(t, proxy.url(), "jsonl/local", "ingress/team")
	var exps []cloudExpect
	for _, sid := range []string{cloudUnits[0], cloudUnits[2]} {
		u := cloudUnit(t, sid)
		files := []string{u.main.abs}
		for _, a := range u.agents {
			files = append(files, a.abs)
		}
		e := expectFiles(t, layOriginal(t, t.TempDir(), u), u.sid, true)
		exps = append(exps, e)
		start := time.Now()
		out, err := recordHeld(t, cfg, fileLines(t, files...), func() bool { return srv.counts()[u.sid] >= int64(e.entries) },
			"--session", u.sid)
		if err != nil {
			t.Fatalf("record %s through the proxy: %v\n%s", u.sid, err, out)
		}
		t.Logf("recorded %s (%d entries) through the proxy in %v", u.sid, e.entries, time.Since(start).Round(time.Millisecond))
	}
	dups := srv.metric("scribe_entries_duplicate_total")
	t.Logf("proxy: %d connections, %d answers lost; the server refused %d entries sent again", proxy.conns.Load(), proxy.drops.Load(), dups)
	if proxy.drops.Load() == 0 || dups <= 0 {
		t.Errorf("the proxy lost no answer, or no entry was sent again: the test did not test anything")
	}
	counts := srv.counts()
	for _, e := range exps {
		checkOnServer(t, srv, e, counts)
	}
}

// ---------------------------------------------------------------------------
// Two writers of one session

func cloudChainLine(sid, id, parent, text string) string {
	p := "null"
	if parent != "" {
		p = strconv.Quote(parent)
	}
	return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":"user","message":{"role":"user","content":%q},"uuid":%q,"timestamp":"2026-01-10T11:00:02.267Z","cwd":"/home/alice/src/storm","sessionId":%q}`,
		p, text, id, sid)
}

func TestCloudIngress409Storm(t *testing.T) {
	srv := startCloudServer(t)
	const sid = "5f0e0000-1111-4222-8333-444455556666"
	id := func(w string, i int) string { return fmt.Sprintf("5f0e%04x-0000-4000-8000-%012d", len(w), i) }
	var shared []string
	parent := ""
	for i := 0; i < 120; i++ {
		u := id("s", i)
		shared = append(shared, cloudChainLine(sid, u, parent, fmt.Sprintf("shared %d", i)))
		parent = u
	}
	inputs := map[string][]string{}
	for _, w := range []string{"aa", "bbb"} {
		lines := slices.Clone(shared)
		p := parent
		for i := 0; i < 60; i++ {
			u := id(w, i)
			lines = append(lines, cloudChainLine(sid, u, p, fmt.Sprintf("writer %s %d", w, i)))
			p = u
		}
		inputs[w] = lines
	}
	var wg sync.WaitGroup
	results := map[string]string{}
	var mu sync.Mutex
	for w, lines := range inputs {
		cfg, _ := cloudMachine(t, srv.url(), "jsonl/local", "ingress/team")
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each holds its stdin open until the server has both
			// writers' rows, so neither leaves rows in its spool.
			out, err := recordHeld(t, cfg, strings.Join(lines, "\n")+"\n", func() bool { return srv.counts()[sid] >= 240 })
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				results[w] = fmt.Sprintf("%v\n%s", err, out)
			}
		}()
	}
	wg.Wait()
	for w, r := range results {
		t.Fatalf("writer %s: %s", w, r)
	}
	got := srv.history(sid, "subagents=false")
	t.Logf("409 conflicts answered: %d; duplicates refused: %d", srv.metric("scribe_conflicts_total"), srv.metric("scribe_entries_duplicate_total"))
	if len(got) != 120+2*60 {
		t.Fatalf("History holds %d rows, want %d", len(got), 120+2*60)
	}
	pos := map[string]int{}
	for i, l := range got {
		if _, dup := pos[l]; dup {
			t.Fatalf("History holds row %d twice: %s", i, truncate(l, 120))
		}
		pos[l] = i
	}
	sameLines(t, "the shared rows", got[:120], shared)
	for w, lines := range inputs {
		last := -1
		for _, l := range lines {
			i, ok := pos[l]
			if !ok {
				t.Fatalf("writer %s: a row is missing: %s", w, truncate(l, 120))
			}
			if i < last {
				t.Fatalf("writer %s: row %d comes before an earlier row of the same writer", w, i)
			}
			last = i
		}
	}
	if n := srv.counts()[sid]; n != 240 {
		t.Errorf("/v1/sessions counts %d entries, want 240", n)
	}
}

// ---------------------------------------------------------------------------
// resume

func TestCloudResumeFallsBackToTheServer(t *testing.T) {
	srv := startCloudServer(t)
	cfg, dir := cloudMachine(t, srv.url(), "jsonl/local", "events/team")
	u := cloudUnit(t, cloudUnits[2])
	recordUnit(t, cloudRecorder(cfg), dir, u)
	type resumeJSON struct {
		ServedBy string `json:"served_by"`
		Misses   []struct {
			Loader, Error string
		} `json:"misses"`
		Conversation []json.RawMessage `json:"conversation"`
	}
	resumeOnce := func() resumeJSON {
		out, errOut, code := cloudRun(t, "", "resume", u.sid, "--config", cfg, "--json", "--dry-run")
		var r resumeJSON
		if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
			t.Fatalf("resume: exit %d, %v\n%s\n%s", code, err, out, errOut)
		}
		return r
	}
	local := resumeOnce()
	if local.ServedBy != "jsonl/local" || len(local.Conversation) == 0 {
		t.Fatalf("resume with the local file: served by %s, %d rows", local.ServedBy, len(local.Conversation))
	}
	proj, err := jsonl.Layout{ConfigDir: dir}.FindSession(u.sid, "")
	if err != nil || proj == "" {
		t.Fatalf("find %s: %q %v", u.sid, proj, err)
	}
	if err := os.Remove(jsonl.MainFile(proj, u.sid)); err != nil {
		t.Fatal(err)
	}
	cloud := resumeOnce()
	if cloud.ServedBy != "cloud/team" {
		t.Fatalf("resume without the local file: served by %q, want cloud/team", cloud.ServedBy)
	}
	if len(cloud.Misses) != 1 || cloud.Misses[0].Loader != "jsonl/local" || !strings.Contains(cloud.Misses[0].Error, "not found") {
		t.Errorf("resume without the local file: misses %+v, want jsonl/local saying the session was not found", cloud.Misses)
	}
	if len(cloud.Conversation) != len(local.Conversation) {
		t.Fatalf("the server's conversation has %d rows, the local one had %d", len(cloud.Conversation), len(local.Conversation))
	}
	for i := range local.Conversation {
		if !bytes.Equal(local.Conversation[i], cloud.Conversation[i]) {
			t.Errorf("conversation row %d differs:\n  local %s\n  cloud %s", i, truncate(string(local.Conversation[i]), 160), truncate(string(cloud.Conversation[i]), 160))
		}
	}
	// Human output says it too.
	out, _, code := cloudRun(t, "", "resume", u.sid, "--config", cfg, "--dry-run")
	if code != 0 || !strings.Contains(out, "served by cloud/team") || !strings.Contains(out, "jsonl/local missed") {
		t.Errorf("resume output (exit %d) does not say who served and who missed:\n%.1500s", code, out)
	}
}
