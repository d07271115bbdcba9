package main_test

// The command line against a real `scribe serve` (the helpers of
// cloud_test.go):
//
//   - TestServeKill9AfterAcks: entries acknowledged by the server survive
//     kill -9 of scribe serve, with its sync policy reported in /metrics.
//   - TestLsRemoteAndServerPrefixes: ls --remote lists the server's sessions
//     with their titles, as ls would; pull and resume resolve a prefix on the server
//     when nothing local matches, and an ambiguous one lists the candidates.
//   - TestPushUnreachableFailsFast: a server that refuses connections ends
//     push after a few attempts, each retry said; no token is a clear error.
//   - TestPushPullSidecar: checkpoints and lifecycle records go up with push
//     and come down with pull into the sidecar, never into the transcript.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
)

// postBatch POSTs one events batch of entries to the server; it reports
// whether the server acknowledged it (200).
func postBatch(s *cloudServer, sid string, lines []string) bool {
	var b strings.Builder
	b.WriteString(`{"events":[`)
	for i, l := range lines {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"user","payload":%s}`, l)
	}
	b.WriteString(`]}`)
	req, err := http.NewRequest(http.MethodPost, s.url()+"/v1/code/sessions/"+sid+"/events", strings.NewReader(b.String()))
	if err != nil {
		return false
	}
	req.Header.Set("Authorization", "Bearer "+cloudToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Writers post batches as fast as the server answers; scribe serve is
// killed with SIGKILL right after an acknowledgement, while the others are
// in flight. After a restart every acknowledged entry is there, once.
func TestServeKill9AfterAcks(t *testing.T) {
	srv := startCloudServer(t)
	if got := srv.metric("scribe_jetstream_sync_always"); got != 1 {
		t.Fatalf("scribe_jetstream_sync_always = %d, want 1 (the default sync policy)", got)
	}
	const writers, batch = 3, 20
	var (
		mu     sync.Mutex
		acked  = map[string][]string{} // session → uuids acknowledged
		acks   atomic.Int64
		wg     sync.WaitGroup
		killed = make(chan struct{})
	)
	for w := 0; w < writers; w++ {
		sid := fmt.Sprintf("9a110000-0000-4000-8000-%012d", w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			parent := ""
			for n := 0; ; n++ {
				select {
				case <-killed:
					return
				default:
				}
				var lines, ids []string
				for i := 0; i < batch; i++ {
					id := fmt.Sprintf("%s-%04x-4000-8000-%012d", sid[:8], n, i)
					lines = append(lines, cloudChainLine(sid, id, parent, fmt.Sprintf("entry %d.%d", n, i)))
					ids, parent = append(ids, id), id
				}
				if !postBatch(srv, sid, lines) {
					return
				}
				mu.Lock()
				acked[sid] = append(acked[sid], ids...)
				mu.Unlock()
				if acks.Add(1) == 30 {
					srv.kill9()
					close(killed)
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-killed:
	default:
		t.Fatalf("the writers stopped after %d acknowledgements, before the kill:\n%s", acks.Load(), srv.log.String())
	}
	srv.start()
	for sid, ids := range acked {
		var got []string
		for _, p := range srv.history(sid, "subagents=false") {
			var e struct {
				UUID string `json:"uuid"`
			}
			if err := json.Unmarshal([]byte(p), &e); err != nil {
				t.Fatal(err)
			}
			got = append(got, e.UUID)
		}
		// Everything acknowledged, in order; at most the one batch in
		// flight at the kill may be there too.
		if len(got) < len(ids) || len(got) > len(ids)+batch {
			t.Errorf("session %s: %d entries after kill -9, %d were acknowledged", sid, len(got), len(ids))
			continue
		}
		for i := range ids {
			if got[i] != ids[i] {
				t.Errorf("session %s: entry %d is %s, want %s", sid, i, got[i], ids[i])
				break
			}
		}
	}
}

// A server configured with sync = "<interval>" reports it.
func TestServeSyncInterval(t *testing.T) {
	srv := startCloudServer(t)
	srv.stop()
	b, err := os.ReadFile(srv.cfg)
	if err != nil {
		t.Fatal(err)
	}
	hcl := strings.Replace(string(b), "server {", "server {\n  sync = \"250ms\"", 1)
	if err := os.WriteFile(srv.cfg, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.start()
	m := string(srv.get("/metrics"))
	if !strings.Contains(m, "scribe_jetstream_sync_always 0\n") || !strings.Contains(m, "scribe_jetstream_sync_interval_seconds 0.25\n") {
		t.Errorf("sync = 250ms: /metrics says\n%s", m)
	}
}

// remoteSession lays out a session of two chain lines and the given
// metadata lines in the project folder of /home/alice/src/storm.
func remoteSession(t *testing.T, configDir, sid string, meta ...string) {
	t.Helper()
	lines := []string{
		cloudChainLine(sid, sid[:8]+"-0000-4000-8000-000000000001", "", "first prompt of "+sid[:8]),
		cloudChainLine(sid, sid[:8]+"-0000-4000-8000-000000000002", sid[:8]+"-0000-4000-8000-000000000001", "second"),
	}
	lines = append(lines, meta...)
	dir := filepath.Join(configDir, "projects", "-home-alice-src-storm")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, sid+".jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLsRemoteAndServerPrefixes(t *testing.T) {
	srv := startCloudServer(t)
	cfgA, dirA := cloudMachine(t, srv.url(), "jsonl/local")
	titled := "7e1e0000-aaaa-4000-8000-000000000001"
	summarized := "7e1e0000-bbbb-4000-8000-000000000002"
	twinA := "7e2a0000-cccc-4000-8000-000000000003"
	twinB := "7e2a0000-dddd-4000-8000-000000000004"
	remoteSession(t, dirA, titled, `{"type":"custom-title","customTitle":"Fix the login bug","sessionId":"`+titled+`"}`)
	remoteSession(t, dirA, summarized, `{"type":"summary","summary":"Parser speed-up","leafUuid":"7e1e0000-bbbb-4000-8000-000000000009"}`)
	remoteSession(t, dirA, twinA)
	remoteSession(t, dirA, twinB)
	if rep, code, out := cloudPush(t, cfgA, "--all"); code != 0 || rep.Sessions != 4 {
		t.Fatalf("push: exit %d\n%s", code, out)
	}

	cfgB, dirB := cloudMachine(t, srv.url(), "jsonl/local")
	out, errOut, code := cloudRun(t, "", "ls", "--remote", "--config", cfgB)
	if code != 0 {
		t.Fatalf("ls --remote: exit %d\n%s", code, errOut)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^ID\s+MODIFIED\s+STATUS\s+STATE\s.*PROJECT\s+TITLE\s`),
		regexp.MustCompile(`(?m)^` + titled + `\s.*Fix the login bug\s`),
		regexp.MustCompile(`(?m)^` + summarized + `\s.*Parser speed-up\s`),
		regexp.MustCompile(`(?m)^` + twinA + `\s.*first prompt of 7e2a0000\s`),
	} {
		if !want.MatchString(out) {
			t.Errorf("ls --remote does not match %s:\n%s", want, out)
		}
	}
	out, errOut, code = cloudRun(t, "", "ls", "--remote", "--json", "--from", "cloud/team", "--config", cfgB)
	var list []struct {
		SessionID string `json:"sessionId"`
		Summary   string `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil {
		t.Fatalf("ls --remote --json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	titles := map[string]string{}
	for _, s := range list {
		titles[s.SessionID] = s.Summary
	}
	if len(list) != 4 || titles[titled] != "Fix the login bug" || titles[summarized] != "Parser speed-up" || titles[twinA] != "first prompt of 7e2a0000" {
		t.Errorf("ls --remote --json: %+v", list)
	}

	// Nothing local matches: the prefix is resolved on the server.
	out, errOut, code = cloudRun(t, "", "pull", "7e1e0000-a", "--config", cfgB, "--json")
	if code != 0 || !strings.Contains(out, `"session_id": "`+titled+`"`) || !strings.Contains(errOut, titled) {
		t.Fatalf("pull by a server prefix: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dirB, "projects", "-home-alice-src-storm", titled+".jsonl")); err != nil {
		t.Fatalf("pull by a server prefix wrote no transcript: %v", err)
	}
	// Ambiguous on the server: an error listing both, exit 2.
	_, errOut, code = cloudRun(t, "", "pull", "7e2a", "--config", cfgB)
	if code != 2 || !strings.Contains(errOut, twinA) || !strings.Contains(errOut, twinB) || !strings.Contains(errOut, "ambiguous") {
		t.Errorf("pull of an ambiguous server prefix: exit %d\n%s", code, errOut)
	}
	// On nowhere: exit 1 naming both places.
	_, errOut, code = cloudRun(t, "", "pull", "0bad", "--config", cfgB)
	if code != 1 || !strings.Contains(errOut, srv.url()) {
		t.Errorf("pull of an unknown prefix: exit %d\n%s", code, errOut)
	}
	// resume resolves on the server too (and the cloud loader serves it).
	out, errOut, code = cloudRun(t, "", "resume", "7e1e0000-b", "--config", cfgB, "--json", "--dry-run")
	if code != 0 || !strings.Contains(out, summarized) || !strings.Contains(out, "cloud/team") {
		t.Errorf("resume by a server prefix: exit %d\n%.2000s\n%s", code, out, errOut)
	}
	// A local match wins without asking the server.
	_, errOut, code = cloudRun(t, "", "pull", "7e1e0000-a", "--config", cfgB)
	if code != 0 || strings.Contains(errOut, "none here") {
		t.Errorf("pull of a prefix found locally: exit %d\n%s", code, errOut)
	}
}

// A server that refuses connections ends push in a few attempts with an
// error naming it, and every retry is said on stderr; a block without a
// token says how to give one.
func TestPushUnreachableFailsFast(t *testing.T) {
	addr := cloudFreeAddr(t) // nothing listens there
	cfg, dir := cloudMachine(t, "http://"+addr, "jsonl/local")
	remoteSession(t, dir, "0ff10000-0000-4000-8000-000000000001")
	out, errOut, code := cloudRun(t, "", "push", "--all", "--config", cfg)
	retries := regexp.MustCompile(`(?m)^scribe: push: attempt \d+ of 3 failed: .*connection refused; retrying in`).FindAllString(errOut, -1)
	if code != 1 || !strings.Contains(errOut, "cannot reach the server at http://"+addr) || !strings.Contains(errOut, "connection refused") ||
		len(retries) != 2 {
		t.Errorf("push to %s: exit %d, %d retry lines\nstdout:\n%s\nstderr:\n%s", addr, code, len(retries), out, errOut)
	}

	// No token: the built-in blocks have neither token nor token_file.
	empty := t.TempDir()
	_, errOut, code = cloudRun(t, "", "push", "--all", "--config-dir", empty)
	if code != 2 || !strings.Contains(errOut, "no bearer token") || !strings.Contains(errOut, "token_file") ||
		strings.Contains(errOut, "/etc/scribe/token") {
		t.Errorf("push with no token: exit %d\n%s", code, errOut)
	}
	_, errOut, code = cloudRun(t, "", "ls", "--remote", "--config-dir", empty)
	if code != 2 || !strings.Contains(errOut, `loader cloud/team: no bearer token`) {
		t.Errorf("ls --remote with no token: exit %d\n%s", code, errOut)
	}
}

// Checkpoints and lifecycle records travel with push and pull: on the
// other machine they are in the sidecar (scribe checkpoints lists them),
// and the transcript holds none of them. Both commands print progress
// lines, stderr not being a terminal.
func TestPushPullSidecar(t *testing.T) {
	srv := startCloudServer(t)
	cfgA, dirA := cloudMachine(t, srv.url(), "jsonl/local")
	const sid = "51de0000-0000-4000-8000-000000000001"
	start, err := core.LifecycleEntry(core.LifecycleMeta{SessionID: sid, CWD: "/home/alice/src/storm", At: time.Date(2026, 1, 10, 11, 0, 0, 0, time.UTC)},
		core.SessionStart{Model: "claude-sonnet-4-5", Tools: []string{"Bash"}, Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	input := string(start.Raw) + "\n" + cloudChainLine(sid, "51de0000-1111-4000-8000-000000000001", "", "hello") + "\n"
	if out, errOut, code := cloudRun(t, input, "record", "--config", cfgA); code != 0 {
		t.Fatalf("record: exit %d\n%s\n%s", code, out, errOut)
	}
	if out, errOut, code := cloudRun(t, "", "checkpoint", sid, "--label", "before the refactor", "--config", cfgA); code != 0 {
		t.Fatalf("checkpoint: exit %d\n%s\n%s", code, out, errOut)
	}
	rep, code, out := cloudPush(t, cfgA, sid)
	if code != 0 || rep.Files != 2 || rep.Stored != 3 {
		t.Fatalf("push: exit %d, %+v\n%s", code, rep, out)
	}
	if !regexp.MustCompile(`(?m)^scribe: push 100%  .* 1/1 sessions  3 entries$`).MatchString(out) {
		t.Errorf("push printed no final progress line:\n%s", out)
	}

	cfgB, dirB := cloudMachine(t, srv.url(), "jsonl/local")
	pout, errOut, code := cloudRun(t, "", "pull", sid, "--config", cfgB, "--json")
	if code != 0 {
		t.Fatalf("pull: exit %d\n%s\n%s", code, pout, errOut)
	}
	if !regexp.MustCompile(`(?m)^scribe: pull  \S+  3 entries$`).MatchString(errOut) {
		t.Errorf("pull printed no progress line:\n%s", errOut)
	}
	proj := filepath.Join(dirB, "projects", "-home-alice-src-storm")
	transcript, err := os.ReadFile(filepath.Join(proj, sid+".jsonl"))
	if err != nil || bytes.Contains(transcript, []byte(`"scribe-`)) || bytes.Count(transcript, []byte("\n")) != 1 {
		t.Fatalf("pulled transcript (%v):\n%s", err, transcript)
	}
	sideA, _ := os.ReadFile(filepath.Join(dirA, "projects", "-home-alice-src-storm", sid, "scribe-lifecycle.jsonl"))
	sideB, err := os.ReadFile(filepath.Join(proj, sid, "scribe-lifecycle.jsonl"))
	if err != nil || !bytes.Equal(sideA, sideB) {
		t.Fatalf("pulled sidecar (%v):\n%s\nwant:\n%s", err, sideB, sideA)
	}
	cps, errOut, code := cloudRun(t, "", "checkpoints", sid, "--config", cfgB)
	if code != 0 || !strings.Contains(cps, "before the refactor") {
		t.Errorf("checkpoints on the other machine: exit %d\n%s\n%s", code, cps, errOut)
	}
	// Pushed again, nothing is new.
	if rep, code, out := cloudPush(t, cfgA, sid); code != 0 || rep.Stored != 0 || rep.Duplicates != 3 {
		t.Errorf("second push: exit %d, %+v\n%s", code, rep, out)
	}
}
