package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/internal/testenv"
)

// The core's promises at the edges, through the scribe binary: a poison
// entry, a bad session id, acknowledgements of held lines, a dead sink,
// ten thousand sessions under a low descriptor limit, several input files,
// signals.

func sidechainLine(i int, agent string) string {
	return fmt.Sprintf(`{"parentUuid":%q,"isSidechain":true,"agentId":%q,"type":"user","message":{"role":"user","content":"side %d"},"uuid":"5a5a0000-0000-4000-8000-%012d","timestamp":"2026-01-10T11:00:02.267Z","cwd":%q,"sessionId":%q}`,
		uuidFor(i), agent, i, i, testCWD, testSession)
}

func TestRecordPoisonEntriesLeaveEveryValidLineOnceAndTheRestGoesOn(t *testing.T) {
	dir := t.TempDir()
	const n = 10000
	var in strings.Builder
	for i := range n {
		switch i {
		case 5000:
			in.WriteString(sidechainLine(i, "a/b") + "\n")
		case 7000:
			in.WriteString(strings.Replace(entryLine(i), testSession, "../../x", 1) + "\n")
		}
		in.WriteString(entryLine(i) + "\n")
	}
	r, stderr, code := runRecord(t, nil, in.String(), "--config-dir", dir, "--shutdown-timeout", "20s")
	if code != 0 {
		t.Fatalf("exit %d, error %q, stderr %.2000s", code, r.Error, stderr)
	}
	if r.Accepted != n {
		t.Fatalf("accepted %d, want %d", r.Accepted, n)
	}
	data, err := os.ReadFile(sessionFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	have := uuidsIn(t, data, false)
	for i := range n {
		if c := have[uuidFor(i)]; c != 1 {
			t.Fatalf("line of entry %d is in the file %d times, want once", i, c)
		}
	}
	if len(have) != n {
		t.Fatalf("the file holds %d uuids, want %d", len(have), n)
	}
	var rep struct {
		RejectedCount int64 `json:"rejected_count"`
		Rejected      []struct {
			Line  int64  `json:"line"`
			Error string `json:"error"`
		} `json:"rejected"`
	}
	out, _, _ := runRecordRaw(t, nil, in.String(), "--config-dir", t.TempDir())
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.RejectedCount != 2 || rep.Rejected[0].Line != 5001 || !strings.Contains(rep.Rejected[0].Error, `"a/b"`) ||
		rep.Rejected[1].Line != 7002 || !strings.Contains(rep.Rejected[1].Error, `"../../x"`) {
		t.Fatalf("rejected lines reported as %+v, want lines 5001 (agentId a/b) and 7002 (sessionId ../../x)", rep)
	}
	// No subagent folder was made for the poison entry, nothing outside.
	if _, err := os.Stat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
		t.Fatalf("something was written outside the store: %v", err)
	}
}

// runRecordRaw runs `scribe record --json` and returns stdout as is.
func runRecordRaw(t *testing.T, env []string, stdin string, args ...string) ([]byte, string, int) {
	t.Helper()
	out, stderr, code := runScribe(t, runOpts{env: env, stdin: stdin}, append([]string{"record", "--json"}, args...)...)
	return []byte(out), stderr, code
}

func TestRecordAckNeverCoversHeldLines(t *testing.T) {
	dir := t.TempDir()
	title := `{"type":"custom-title","customTitle":"Early","sessionId":"` + testSession + `"}`
	summary := `{"type":"summary","summary":"s","leafUuid":"x","sessionId":"` + testSession + `"}`
	bin := testenv.BuildScribe(t)
	cmd := exec.Command(bin, "record", "--config-dir", dir, "--ack", "--flush-interval", "5ms")
	cmd.Env = cleanEnv()
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// Two held lines, then a user line of another session: that one is
	// durable, but the ack must stay below the held lines.
	other := strings.ReplaceAll(entryLine(0), testSession, "7b7b7b7b-3f4e-4b6a-8c2d-0e1f2a3b4c5d")
	if _, err := io.WriteString(stdin, title+"\n"+summary+"\n"+other+"\n"); err != nil {
		t.Fatal(err)
	}
	// Then the held session's first message: now all four are durable.
	time.AfterFunc(300*time.Millisecond, func() { _, _ = io.WriteString(stdin, entryLine(0)+"\n") })
	sc := bufio.NewScanner(stdout)
	var acks []int64
	for sc.Scan() {
		var a struct {
			Acked int64 `json:"acked_lines"`
		}
		if json.Unmarshal(sc.Bytes(), &a) == nil && a.Acked > 0 {
			acks = append(acks, a.Acked)
			if a.Acked >= 4 {
				break
			}
		}
	}
	if len(acks) == 0 || acks[0] != 4 {
		t.Fatalf("acks %v: the first ack must be 4 (lines 1-2 are held until line 4 arrives)", acks)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	data, err := os.ReadFile(sessionFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"customTitle":"Early"`) || !strings.Contains(string(data), `"summary":"s"`) {
		t.Fatalf("acknowledged held lines are not on disk after kill -9: %s", data)
	}

	// Held lines alone are never acknowledged, and the report says so.
	out, _, code := runRecordRaw(t, nil, title+"\n"+summary+"\n", "--config-dir", t.TempDir(), "--ack")
	var rep struct {
		Accepted   int64 `json:"accepted"`
		AckedLines int64 `json:"acked_lines"`
		Held       int64 `json:"held"`
	}
	if i := bytes.IndexByte(out, '{'); i >= 0 {
		_ = json.Unmarshal(out[i:], &rep)
	}
	if code != 0 || rep.Accepted != 2 || bytes.Contains(out, []byte(`"acked_lines":2}`)) || rep.AckedLines != 0 || rep.Held != 2 {
		t.Fatalf("exit %d, output %s", code, out)
	}
}

// deadSinkConfig has the local store and a second store whose folder
// cannot be created (its parent is a file): every write to it fails.
func deadSinkConfig(t *testing.T) string {
	blocker := filepath.Join(t.TempDir(), "not-a-folder")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return writeConfig(t, fmt.Sprintf(`
pipeline {
  sinks  = ["jsonl/local", "jsonl/dead"]
  guards = ["env/default", "flag/default", "config/default"]
  queue_size = 256
}
sink "jsonl" "local" {}
sink "jsonl" "dead" { dir = %q }
guard "env" "default" {}
guard "flag" "default" {}
guard "config" "default" {}
`, filepath.Join(blocker, "archive")))
}

func TestRecordDeadSinkNeverStallsTheHealthyOne(t *testing.T) {
	dir := t.TempDir()
	cfg := deadSinkConfig(t)
	const n = 100000
	r, stderr, code := runRecord(t, nil, lines(n), "--config", cfg, "--config-dir", dir, "--shutdown-timeout", "2s")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (a sink lost entries); error %q", code, r.Error)
	}
	data, err := os.ReadFile(sessionFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	have := uuidsIn(t, data, false)
	if len(have) != n {
		t.Fatalf("the healthy store holds %d entries, want %d (stderr %.1500s)", len(have), n, stderr)
	}
	var dead *struct {
		ID       string           `json:"id"`
		Written  int64            `json:"written"`
		Counters map[string]int64 `json:"counters"`
	}
	for i := range r.Sinks {
		if r.Sinks[i].ID == "jsonl/dead" {
			dead = &r.Sinks[i]
		}
	}
	if dead == nil || dead.Written != 0 {
		t.Fatalf("dead sink stats %+v", dead)
	}
	if !strings.Contains(r.Error, "did not reach every sink") {
		t.Fatalf("error %q does not say entries were lost", r.Error)
	}
	out, _, _ := runRecordRaw(t, nil, lines(10), "--config", cfg, "--config-dir", t.TempDir(), "--shutdown-timeout", "1s")
	var rep struct {
		Lost  int64 `json:"lost"`
		Sinks []struct {
			ID          string           `json:"id"`
			Dropped     int64            `json:"dropped"`
			DropReasons map[string]int64 `json:"drop_reasons"`
		} `json:"sinks"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Lost != 10 {
		t.Fatalf("lost %d, want 10: %s", rep.Lost, out)
	}
}

func TestRecordTenThousandSessionsUnderALowDescriptorLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := t.TempDir()
	const sessions = 10000
	in := filepath.Join(t.TempDir(), "in.jsonl")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for s := range sessions {
		id := fmt.Sprintf("%08x-3f4e-4b6a-8c2d-0e1f2a3b4c5d", s)
		for i := range 2 {
			w.WriteString(strings.ReplaceAll(entryLine(i), testSession, id) + "\n")
		}
	}
	w.Flush()
	f.Close()
	bin := testenv.BuildScribe(t)
	// A hard limit: the process cannot raise it.
	cmd := exec.Command("bash", "-c", `ulimit -n 256 && exec "$0" record --json --config-dir "$1" "$2"`, bin, dir, in)
	cmd.Env = cleanEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if err != nil {
		t.Fatalf("record under ulimit -n 256: %v\n%.3000s", err, errb.String())
	}
	var r report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Accepted != 2*sessions {
		t.Fatalf("accepted %d, want %d", r.Accepted, 2*sessions)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "projects", "-home-alice-src-shop", "*.jsonl"))
	if len(files) != sessions {
		t.Fatalf("%d session files, want %d", len(files), sessions)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if c := bytes.Count(b, []byte("\n")); c != 2 {
			t.Fatalf("%s holds %d lines, want 2", p, c)
		}
	}
	if c := r.Sinks[0].Counters; c["locks_released"] == 0 || c["files_closed"] == 0 {
		t.Fatalf("counters %v: the store never gave up a lock or a descriptor, so the test proves nothing", c)
	}
}

func TestRecordSeveralFilesKeepTheirLinesApart(t *testing.T) {
	dir := t.TempDir()
	tmp := t.TempDir()
	// A file of another tool: lines with no sessionId at all.
	a := filepath.Join(tmp, "codex.jsonl")
	var foreign strings.Builder
	for i := range 58 {
		fmt.Fprintf(&foreign, `{"type":"response_item","payload":{"n":%d},"timestamp":"2025-10-01T00:00:00Z"}`+"\n", i)
	}
	if err := os.WriteFile(a, []byte(foreign.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(tmp, "claude.jsonl")
	if err := os.WriteFile(b, []byte(lines(4)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runRecordRaw(t, nil, "", "--config-dir", dir, a, b)
	var rep struct {
		Accepted   int64 `json:"accepted"`
		Unroutable int64 `json:"unroutable"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v: %s %s", err, out, stderr)
	}
	if code != 0 || rep.Accepted != 4 || rep.Unroutable != 58 {
		t.Fatalf("exit %d, report %s", code, out)
	}
	data, _ := os.ReadFile(sessionFile(dir))
	if string(data) != lines(4) {
		t.Fatalf("the Claude transcript holds foreign lines:\n%.600s", data)
	}
}

func TestRecordSIGTERMMakesDurableWhatWasReadThenExits(t *testing.T) {
	dir := t.TempDir()
	bin := testenv.BuildScribe(t)
	cmd := exec.Command(bin, "record", "--json", "--config-dir", dir, "--ack", "--flush-interval", "5ms")
	cmd.Env = cleanEnv()
	stdin, _ := cmd.StdinPipe()
	var out bytes.Buffer
	pr, pw := io.Pipe()
	cmd.Stdout = io.MultiWriter(&out, pw)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, lines(100)); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"acked_lines":100`) {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	// stdin stays open: only the signal ends the run.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	pw.Close()
	if err != nil {
		t.Fatalf("after SIGTERM with everything durable: %v (want exit 0)", err)
	}
	s := out.String()
	i := strings.Index(s, "{\n")
	var rep struct {
		Interrupted bool  `json:"interrupted"`
		AckedLines  int64 `json:"acked_lines"`
	}
	if i < 0 || json.Unmarshal([]byte(s[i:]), &rep) != nil || !rep.Interrupted || rep.AckedLines != 100 {
		t.Fatalf("report after SIGTERM: %s", s)
	}

	// With a sink that cannot make anything durable, SIGTERM waits for
	// --shutdown-timeout; a second signal exits at once, non-zero.
	dirDead := t.TempDir()
	cmd = exec.Command(bin, "record", "--config", deadSinkConfig(t), "--config-dir", dirDead, "--shutdown-timeout", "10m")
	cmd.Env = cleanEnv()
	stdin, _ = cmd.StdinPipe()
	var errb syncBuffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, lines(10)); err != nil {
		t.Fatal(err)
	}
	// The healthy store has the lines: the process is past its start.
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(sessionFile(dirDead)); bytes.Count(b, []byte("\n")) == 10 {
			break
		}
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(errb.String(), "stopping intake") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 130 || !strings.Contains(errb.String(), "second") {
			t.Fatalf("after a second SIGTERM: %v, stderr %s", err, errb.String())
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("a second SIGTERM did not end the process")
	}
}

// syncBuffer is a bytes.Buffer safe to read while a process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestContendedStartsAlwaysNameTheHolder(t *testing.T) {
	dir := t.TempDir()
	bin := testenv.BuildScribe(t)
	type proc struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   syncBuffer
	}
	start := func(line string) *proc {
		p := &proc{}
		p.cmd = exec.Command(bin, "record", "--config-dir", dir)
		p.cmd.Env = cleanEnv()
		p.stdin, _ = p.cmd.StdinPipe()
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(p.stdin, line+"\n") // stdin stays open: the winner keeps the lock
		return p
	}
	const locked = "being written by another process"
	for round := range 23 {
		// Two writers of one session start at the same moment; one wins,
		// the other refuses its line naming the winner.
		a, b := start(entryLine(2*round)), start(entryLine(2*round+1))
		deadline := time.Now().Add(time.Minute)
		var loser, winner *proc
		for loser == nil && time.Now().Before(deadline) {
			switch {
			case strings.Contains(a.out.String(), locked):
				loser, winner = a, b
			case strings.Contains(b.out.String(), locked):
				loser, winner = b, a
			default:
				time.Sleep(5 * time.Millisecond)
			}
		}
		a.stdin.Close()
		b.stdin.Close()
		errA, errB := a.cmd.Wait(), b.cmd.Wait()
		if loser == nil {
			t.Fatalf("round %d: neither writer was refused the session (%v, %v)", round, errA, errB)
		}
		want := fmt.Sprintf("pid %d", winner.cmd.Process.Pid)
		if got := loser.out.String(); !strings.Contains(got, want) {
			t.Fatalf("round %d: the second writer said %q; want the holder named (%s)", round, got, want)
		}
		if loser.cmd.ProcessState.ExitCode() != 1 {
			t.Fatalf("round %d: the refused writer exited %d, want 1", round, loser.cmd.ProcessState.ExitCode())
		}
	}
}

// A full disk: the store keeps retrying until --shutdown-timeout, then says
// how many lines it could not write; nothing unwritten is acknowledged.
func TestRecordDiskFullIsReportedAndNeverAcknowledged(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", mnt).Run() })
	dir := filepath.Join(mnt, "cc")
	out, stderr, code := runRecordRaw(t, nil, lines(8000), "--config-dir", dir, "--ack", "--shutdown-timeout", "1s")
	if code != 1 {
		t.Fatalf("exit %d on a full disk, want 1; stderr %.1000s", code, stderr)
	}
	i := bytes.Index(out, []byte("{\n  \"config_dir\""))
	var rep struct {
		Lost       int64  `json:"lost"`
		AckedLines int64  `json:"acked_lines"`
		Error      string `json:"error"`
	}
	if i < 0 || json.Unmarshal(out[i:], &rep) != nil {
		t.Fatalf("report: %s", out)
	}
	if rep.Lost == 0 || !strings.Contains(rep.Error, "no space left on device") {
		t.Fatalf("report %+v: want the lines not written counted and the cause named", rep)
	}
	data, _ := os.ReadFile(sessionFile(dir))
	have := uuidsIn(t, data, true)
	for n := range rep.AckedLines {
		if have[uuidFor(int(n))] != 1 {
			t.Fatalf("line %d acknowledged (acked_lines=%d) but not on disk", n+1, rep.AckedLines)
		}
	}
	if int64(len(have)) >= 8000 {
		t.Fatal("everything fit: the disk was not full, the test proves nothing")
	}
	// What a write cut short left of a line is cut off: the file holds
	// whole lines only, so the next run appends after the last of them.
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatalf("the transcript ends in a partial line: %q", data[max(0, len(data)-80):])
	}
	for i, l := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		if !json.Valid(l) {
			t.Fatalf("line %d of the transcript is not JSON: %.80q", i+1, l)
		}
	}
	// The text report does not headline "recorded" what was not written.
	text, _, code := runScribe(t, runOpts{stdin: lines(8000)}, "record", "--config-dir", filepath.Join(mnt, "cc2"), "--shutdown-timeout", "1s")
	if code != 1 || strings.HasPrefix(text, "recorded ") || !strings.Contains(strings.SplitN(text, "\n", 2)[0], "did not reach every sink") {
		t.Fatalf("text report on a full disk (exit %d):\n%.600s", code, text)
	}
}

// The local store having an entry says nothing of the server: a replay of
// input the local store already holds (a run killed before its upload, a
// mirror added later) still reaches the team server, once.
func TestReplayReachesTheServerTheLocalStoreAlreadyHad(t *testing.T) {
	srv := startCloudServer(t)
	localOnly, dir := cloudMachine(t, srv.url(), "jsonl/local")
	in := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(in, []byte(lines(20)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errs, code := cloudRun(t, "", "record", "--config", localOnly, in); code != 0 {
		t.Fatalf("record locally: exit %d\n%s%s", code, out, errs)
	}
	// The server is new: it has never seen the session.
	// The same folder, now with the team mirror.
	both := strings.Replace(string(mustRead(t, localOnly)), `sinks  = ["jsonl/local"]`, `sinks  = ["jsonl/local", "events/team"]`, 1)
	if err := os.WriteFile(localOnly, []byte(both), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(sessionFile(dir))
	if out, errs, code := cloudRun(t, "", "record", "--config", localOnly, in); code != 0 {
		t.Fatalf("record with the mirror: exit %d\n%s%s", code, out, errs)
	}
	if after, _ := os.ReadFile(sessionFile(dir)); !bytes.Equal(before, after) {
		t.Fatal("the replay changed the local transcript")
	}
	got := srv.get("/v1/session_ingress/session/" + testSession)
	for i := range 20 {
		if c := bytes.Count(got, []byte(uuidFor(i))); c == 0 {
			t.Fatalf("entry %d did not reach the server on the replay", i)
		}
	}
	// A third run sends them again; the server still holds each once.
	if _, errs, code := cloudRun(t, "", "record", "--config", localOnly, in); code != 0 {
		t.Fatal(errs)
	}
	again := srv.get("/v1/session_ingress/session/" + testSession)
	if bytes.Count(again, []byte(`"uuid":"`+uuidFor(3)+`"`)) != 1 {
		t.Fatalf("the server holds entry 3 %d times", bytes.Count(again, []byte(`"uuid":"`+uuidFor(3)+`"`)))
	}
}

// doctor says which archive holds each session Claude Code's retention
// sweep is about to delete, and warns about those no archive holds.
func TestDoctorNamesTheArchiveOfEverySessionAboutToGo(t *testing.T) {
	dir, archive := t.TempDir(), t.TempDir()
	old := time.Now().Add(-100 * 24 * time.Hour)
	write := func(root, id string) {
		p := filepath.Join(root, "projects", "-home-alice-src-shop", id+".jsonl")
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(entryLine(0), testSession, id)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_ = os.Chtimes(p, old, old)
	}
	kept, lost := "11111111-3f4e-4b6a-8c2d-0e1f2a3b4c5d", "22222222-3f4e-4b6a-8c2d-0e1f2a3b4c5d"
	write(dir, kept)
	write(dir, lost)
	write(archive, kept)
	cfg := writeConfig(t, fmt.Sprintf("sink \"jsonl\" \"archive\" {\n  dir = %q\n}\n", archive))
	out, stderr, code := cpScribe(t, "", "doctor", "--json", "--config", cfg, "--config-dir", dir)
	if code != 0 {
		t.Fatalf("doctor: exit %d %s", code, stderr)
	}
	var rep struct {
		WouldDelete []struct {
			SessionID  string   `json:"sessionId"`
			ArchivedIn []string `json:"archivedIn"`
		} `json:"wouldDelete"`
		Unarchived int `json:"unarchived"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	in := map[string][]string{}
	for _, v := range rep.WouldDelete {
		in[v.SessionID] = v.ArchivedIn
	}
	if len(in) != 2 || len(in[kept]) != 1 || in[kept][0] != "jsonl/archive" || len(in[lost]) != 0 || rep.Unarchived != 1 {
		t.Fatalf("doctor: %s", out)
	}
	_, stderr, _ = cpScribe(t, "", "doctor", "--config", cfg, "--config-dir", dir)
	if !strings.Contains(stderr, "1 of them are in no archive") {
		t.Fatalf("doctor gave no warning: %s", stderr)
	}
}

// The periodic flush that the end of the input cuts short is not a
// failure: no error is logged and flush_errors stays 0 (it was counted
// in three runs of five with a short interval).
func TestRecordEndOfInputIsNoFlushError(t *testing.T) {
	in := lines(20000)
	for run := range 4 {
		dir := t.TempDir()
		out, stderr, code := runRecordRaw(t, nil, in, "--config-dir", dir, "--flush-interval", "1ms")
		if code != 0 {
			t.Fatalf("run %d: exit %d: %s", run, code, stderr)
		}
		var rep struct {
			Accepted    int64 `json:"accepted"`
			FlushErrors int64 `json:"flush_errors"`
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("run %d: report: %v\n%s", run, err, out)
		}
		if rep.Accepted != 20000 || rep.FlushErrors != 0 || strings.Contains(stderr, "flush failed") {
			t.Fatalf("run %d: accepted %d, flush_errors %d; stderr:\n%.2000s", run, rep.Accepted, rep.FlushErrors, stderr)
		}
	}
}
