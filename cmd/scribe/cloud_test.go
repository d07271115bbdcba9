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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
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
	"syscall"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/internal/testenv"
	"github.com/e0dc0000/scribe/server/wire"
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
	// The server's own Claude folder (where a redact block keeps its key):
	// never the home folder's.
	cmd.Env = append(cleanEnv(), "CLAUDE_CONFIG_DIR="+filepath.Join(s.dataDir, "claude"))
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
		var p wire.HistoryPage
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
	var l wire.SessionList
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
	return runScribe(t, runOpts{stdin: stdin, timeout: cloudCmdTimeout}, args...)
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
	if _, err := os.Stat(claudedir.MainFile(projDir, sid)); err == nil {
		files = append(files, file{path: claudedir.MainFile(projDir, sid)})
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
			units := cloudRecordAll(t, srv, cfgA, dirA)
			if t.Failed() {
				t.FailNow()
			}
			cloudPullAllIntoEmpty(t, units, cfgB)
			checkModes(t, "machine B", dirB)
			cloudCheckSDKSeesTheSame(t, p, dirA, dirB, units)
			if sink != "events/team" {
				return
			}
			cloudCheckPullAgain(t, units[len(units)-1], cfgB, dirB)
		})
	}
}

// cloudRecordAll records every cloud unit on machine A (config cfgA,
// folder dirA) and wants the sink to have stored every entry once, in
// order.
func cloudRecordAll(t *testing.T, srv *cloudServer, cfgA, dirA string) []*unit {
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
	return units
}

// cloudPullAllIntoEmpty pulls every unit onto machine B (config cfgB),
// whose folder is empty, and wants each file created and no backups.
func cloudPullAllIntoEmpty(t *testing.T, units []*unit, cfgB string) {
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
}

// cloudCheckSDKSeesTheSame wants the SDK to list and read every unit the
// same in folder dirA, where it was recorded, and dirB, where it was
// pulled: listing fields, messages, subagents and their messages.
func cloudCheckSDKSeesTheSame(t *testing.T, p *peer.Peer, dirA, dirB string, units []*unit) {
	var sids []string
	for _, u := range units {
		sids = append(sids, u.sid)
	}
	vs := p.Views(t, []peer.ViewGroup{{Dirs: []string{dirA, dirB}, Sids: sids}})
	viewA, viewB := viewOf(t, vs[0][0]), viewOf(t, vs[0][1])
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
		compareMessages(t, u.sid+" getSessionMessages", viewA.messages[u.sid], viewB.messages[u.sid])
		if len(viewA.subagents[u.sid]) != len(u.agents) || !slices.Equal(viewA.subagents[u.sid], viewB.subagents[u.sid]) {
			t.Errorf("session %s: listSubagents: A %q, B %q (the corpus has %d)", u.sid, viewA.subagents[u.sid], viewB.subagents[u.sid], len(u.agents))
		}
		for _, a := range viewA.subagents[u.sid] {
			compareMessages(t, u.sid+" getSubagentMessages "+a, viewA.subMsgs[u.sid][a], viewB.subMsgs[u.sid][a])
		}
	}
}

// cloudCheckPullAgain pulls u onto machine B (config cfgB, folder dirB)
// again: that changes nothing; then a local change is replaced by the
// server's copy, and kept as a backup.
func cloudCheckPullAgain(t *testing.T, u *unit, cfgB, dirB string) {
	out, _, code := cloudRun(t, "", "pull", u.sid, "--config", cfgB, "--json")
	if code != 0 || strings.Contains(out, `"created"`) || strings.Contains(out, `"replaced"`) || !strings.Contains(out, `"backups": 0`) {
		t.Errorf("second pull changed something (exit %d):\n%s", code, out)
	}
	proj, err := jsonl.Layout{ConfigDir: dirB}.FindSession(u.sid, "")
	if err != nil || proj == "" {
		t.Fatalf("find %s on B: %q %v", u.sid, proj, err)
	}
	mainB := claudedir.MainFile(proj, u.sid)
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
}
