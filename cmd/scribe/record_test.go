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
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/internal/testenv"
)

const (
	testSession = "9d1c7a52-3f4e-4b6a-8c2d-0e1f2a3b4c5d"
	testCWD     = "/home/alice/src/shop"
)

// report is the part of `scribe record --json` the tests read.
type report struct {
	Lines          int64             `json:"lines"`
	Accepted       int64             `json:"accepted"`
	Duplicates     int64             `json:"duplicates"`
	Refused        map[string]int64  `json:"refused"`
	RefusedReasons map[string]string `json:"refused_reasons"`
	MalformedCount int64             `json:"malformed_count"`
	Malformed      []struct {
		File  string `json:"file"`
		Line  int64  `json:"line"`
		Error string `json:"error"`
	} `json:"malformed"`
	Sinks []struct {
		ID       string           `json:"id"`
		Written  int64            `json:"written"`
		Counters map[string]int64 `json:"counters"`
	} `json:"sinks"`
	Error string `json:"error"`
}

func entryLine(i int) string {
	parent := "null"
	if i > 0 {
		parent = fmt.Sprintf("%q", uuidFor(i-1))
	}
	typ, role := "user", "user"
	if i%2 == 1 {
		typ, role = "assistant", "assistant"
	}
	return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":%q,"message":{"role":%q,"content":"message number %d %s"},"uuid":%q,"timestamp":"2026-01-10T11:00:02.267Z","userType":"external","cwd":%q,"sessionId":%q}`,
		parent, typ, role, i, strings.Repeat("x", 200), uuidFor(i), testCWD, testSession)
}

func uuidFor(i int) string { return fmt.Sprintf("4f7e0000-0000-4000-8000-%012d", i) }

func sessionFile(dir string) string {
	return filepath.Join(dir, "projects", "-home-alice-src-shop", testSession+".jsonl")
}

// runRecord runs `scribe record --json` with the given stdin and returns the
// report, stderr and the exit code.
func runRecord(t *testing.T, env []string, stdin string, args ...string) (report, string, int) {
	t.Helper()
	out, stderr, code := runRecordRaw(t, env, stdin, args...)
	var r report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("record --json printed %q (stderr %s): %v", out, stderr, err)
	}
	return r, stderr, code
}

// cleanEnv is the environment without anything that would turn persistence
// off or point scribe elsewhere, with HOME a folder of this test process's
// own and no XDG folders set (they follow HOME): a binary a test runs never
// reaches the real home folder. A test that needs its own HOME appends it
// (the last value wins).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "NODE_ENV", k == "CLAUDE_CODE_SKIP_PROMPT_HISTORY", k == "CLAUDE_CONFIG_DIR", strings.HasPrefix(k, "SCRIBE_"),
			strings.HasPrefix(k, "XDG_") && strings.HasSuffix(k, "_HOME"), k == "HOME":
			continue
		}
		env = append(env, kv)
	}
	// The binaries never see the real home folder: what the built-in
	// configuration puts there (the archive under ~/.local/share, a
	// configuration file in ~/.config, ~/.claude) is this test process's
	// own. A test that gives a HOME of its own after these wins.
	return append(env, "HOME="+testHome())
}

// testHome is the home folder of the binaries the tests run (cleanEnv),
// one per test process, removed by TestMain.
var testHome = sync.OnceValue(func() string {
	dir, err := os.MkdirTemp("", "scribe-cmd-home-")
	if err != nil {
		panic(err)
	}
	return dir
})

// removeTestHome removes testHome's folder, if a test made it.
func removeTestHome() {
	dir := testHome()
	_ = os.RemoveAll(dir)
}

func lines(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(entryLine(i))
		b.WriteByte('\n')
	}
	return b.String()
}

func TestRecordGuardsWriteNothingAndSayWhy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   []string
		args  []string
		guard string
		why   string
	}{
		{"NODE_ENV=test", []string{"NODE_ENV=test"}, nil, "env/default", "NODE_ENV=test"},
		{"skip prompt history", []string{"CLAUDE_CODE_SKIP_PROMPT_HISTORY=1"}, nil, "env/default", "CLAUDE_CODE_SKIP_PROMPT_HISTORY"},
		{"flag", nil, []string{"--no-session-persistence"}, "flag/default", "--no-session-persistence"},
		{"cleanup_period_days=0", []string{"SCRIBE_CLEANUP_PERIOD_DAYS=0"}, nil, "config/default", "cleanup_period_days = 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r, _, code := runRecord(t, tc.env, lines(5), append([]string{"--config-dir", dir}, tc.args...)...)
			if code != 0 || r.Accepted != 0 || r.Refused[tc.guard] != 5 || !strings.Contains(r.RefusedReasons[tc.guard], tc.why) {
				t.Fatalf("exit %d, report %+v", code, r)
			}
			if _, err := os.Stat(filepath.Join(dir, "projects")); !os.IsNotExist(err) {
				t.Fatalf("something was written: %v", err)
			}
		})
	}
	// The human report says it too.
	out, _, code := runScribe(t, runOpts{env: []string{"NODE_ENV=test"}, stdin: lines(2), combined: true}, "record", "--config-dir", t.TempDir())
	if code != 0 || !strings.Contains(out, "nothing recorded") || !strings.Contains(out, "NODE_ENV=test") {
		t.Fatalf("NODE_ENV=test scribe record said %q (exit %d)", out, code)
	}
}

func TestRecordMalformedLinesAreReportedAndTheRestRecorded(t *testing.T) {
	dir := t.TempDir()
	in := entryLine(0) + "\n// a comment\n" + entryLine(1) + "\n" + `{"parentUuid":"x","type":"user","message":` + "\n\n" + entryLine(2) + "\n"
	r, _, code := runRecord(t, nil, in, "--config-dir", dir)
	if code != 0 || r.Accepted != 3 || r.MalformedCount != 2 {
		t.Fatalf("exit %d, report %+v", code, r)
	}
	if r.Malformed[0].Line != 2 || r.Malformed[1].Line != 4 || r.Malformed[0].File != "<stdin>" {
		t.Errorf("malformed lines reported as %+v, want lines 2 and 4", r.Malformed)
	}
	got, _ := os.ReadFile(sessionFile(dir))
	if want := entryLine(0) + "\n" + entryLine(1) + "\n" + entryLine(2) + "\n"; string(got) != want {
		t.Errorf("file:\n%s\nwant:\n%s", got, want)
	}
}

func TestRecordSameInputTwiceAddsNothing(t *testing.T) {
	dir := t.TempDir()
	in := `{"type":"summary","summary":"Early summary","leafUuid":"x"}` + "\n" + lines(50) +
		`{"type":"custom-title","customTitle":"A title","sessionId":"` + testSession + `"}` + "\n"
	if r, _, code := runRecord(t, nil, in, "--config-dir", dir); code != 0 || r.Accepted != 52 {
		t.Fatalf("first run: exit %d, %+v", code, r)
	}
	before, _ := os.ReadFile(sessionFile(dir))
	r, _, code := runRecord(t, nil, in, "--config-dir", dir)
	if code != 0 || r.Accepted != 0 || r.Duplicates != 52 {
		t.Fatalf("second run: exit %d, %+v", code, r)
	}
	after, _ := os.ReadFile(sessionFile(dir))
	if !bytes.Equal(before, after) {
		t.Fatalf("the second run changed the file: %d bytes before, %d after", len(before), len(after))
	}
	// New entries after a replayed prefix are recorded.
	r, _, _ = runRecord(t, nil, in+entryLine(50)+"\n", "--config-dir", dir)
	if r.Accepted != 1 || r.Duplicates != 52 {
		t.Fatalf("replay plus one: %+v", r)
	}
}

func TestRecordMetadataWaitsForTheFirstMessage(t *testing.T) {
	dir := t.TempDir()
	title := `{"type":"custom-title","customTitle":"Early","sessionId":"` + testSession + `"}`
	r, _, code := runRecord(t, nil, title+"\n", "--config-dir", dir)
	if code != 0 || r.Sinks[0].Counters["held"] != 1 {
		t.Fatalf("exit %d, report %+v", code, r)
	}
	if _, err := os.Stat(sessionFile(dir)); !os.IsNotExist(err) {
		t.Fatalf("a file was created for a session with no message: %v", err)
	}
}

func TestSecondWriterGetsAClearError(t *testing.T) {
	dir := t.TempDir()
	bin := testenv.BuildScribe(t)
	first := exec.Command(bin, "record", "--config-dir", dir, "--ack", "--flush-interval", "10ms")
	first.Env = cleanEnv()
	stdin, _ := first.StdinPipe()
	stdout, _ := first.StdoutPipe()
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Process.Kill(); _ = first.Wait() }()
	if _, err := io.WriteString(stdin, entryLine(0)+"\n"); err != nil {
		t.Fatal(err)
	}
	// Wait for the first writer to acknowledge: it holds the session now.
	if !bufio.NewScanner(stdout).Scan() {
		t.Fatal("first writer printed no ack")
	}
	r, stderr, code := runRecord(t, nil, entryLine(1)+"\n", "--config-dir", dir)
	want := fmt.Sprintf("pid %d", first.Process.Pid)
	if code == 0 || !strings.Contains(r.Error+stderr, "being written by another process") || !strings.Contains(r.Error+stderr, want) {
		t.Fatalf("second writer: exit %d, error %q, stderr %q; want a lock error naming %s", code, r.Error, stderr, want)
	}
	// Asked to wait, the second writer goes through once the first is done.
	go func() {
		time.Sleep(200 * time.Millisecond)
		stdin.Close()
	}()
	if r, _, code := runRecord(t, nil, entryLine(1)+"\n", "--config-dir", dir, "--lock-wait", "1m"); code != 0 || r.Accepted != 1 {
		t.Fatalf("waiting second writer: exit %d %+v", code, r)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("first writer: %v", err)
	}
}

// TestKill9KeepsEverythingAcknowledged kills `scribe record` mid-stream and
// checks that every line it acknowledged as flushed is in the file, that the
// file reads, and that the next run seals a torn tail and adds no duplicate.
func TestKill9KeepsEverythingAcknowledged(t *testing.T) {
	dir := t.TempDir()
	bin := testenv.BuildScribe(t)
	cmd := exec.Command(bin, "record", "--config-dir", dir, "--ack", "--flush-interval", "5ms")
	cmd.Env = cleanEnv()
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	const total = 200000
	go func() {
		w := bufio.NewWriter(stdin)
		for i := range total {
			if _, err := w.WriteString(entryLine(i) + "\n"); err != nil {
				return // killed
			}
		}
		w.Flush()
		stdin.Close()
	}()
	var acked, acks int64
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var a struct {
			Acked int64 `json:"acked_lines"`
		}
		if json.Unmarshal(sc.Bytes(), &a) == nil && a.Acked > 0 {
			acked = a.Acked
			acks++
			if acks >= 5 && acked >= 1000 {
				break
			}
		}
	}
	if acked == 0 {
		t.Fatal("scribe record acknowledged nothing")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if acked >= total {
		t.Fatalf("the whole input was acknowledged before the kill; the test proves nothing")
	}

	data, err := os.ReadFile(sessionFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	have := uuidsIn(t, data, true)
	for i := range acked {
		if have[uuidFor(int(i))] != 1 {
			t.Fatalf("line %d was acknowledged (acked_lines=%d) but is not in the file once (count %d)", i+1, acked, have[uuidFor(int(i))])
		}
	}
	t.Logf("acknowledged %d lines in %d acks; %d entries in the file after kill -9", acked, acks, len(have))

	// A crash mid-write leaves a torn line: the next run seals it. The
	// kill may have left one already (a write it cut short); else one is
	// made here.
	killTorn := ""
	if i := strings.LastIndexByte(string(data), '\n'); i < len(data)-1 {
		killTorn = string(data[i+1:])
	} else {
		f, err := os.OpenFile(sessionFile(dir), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(`{"parentUuid":"4f7e","isSidechain":false,"type":"assis`); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	next := int(acked) + 5000
	r, _, code := runRecord(t, nil, lines(next), "--config-dir", dir)
	if code != 0 || r.Sinks[0].Counters["torn_tails_sealed"] != 1 {
		t.Fatalf("rerun: exit %d, report %+v", code, r)
	}
	if r.Accepted+r.Duplicates != int64(next) {
		t.Fatalf("rerun: accepted %d + duplicates %d != %d", r.Accepted, r.Duplicates, next)
	}
	data, _ = os.ReadFile(sessionFile(dir))
	have = uuidsIn(t, data, false, killTorn)
	for i := range next {
		if have[uuidFor(i)] != 1 {
			t.Fatalf("after the rerun, entry %d is in the file %d times", i, have[uuidFor(i)])
		}
	}
}

// uuidsIn counts the uuids of the file's lines. Every line must be JSON,
// except the torn fragment the test wrote (a line of its own once sealed)
// and, when torn is true, a last line without a newline.
func uuidsIn(t *testing.T, data []byte, torn bool, sealed ...string) map[string]int {
	t.Helper()
	got := map[string]int{}
	rows := strings.Split(string(data), "\n")
	if rows[len(rows)-1] == "" {
		rows = rows[:len(rows)-1]
	} else if !torn {
		t.Fatalf("file does not end with a newline")
	}
	for i, l := range rows {
		var e struct {
			UUID string `json:"uuid"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			if strings.HasPrefix(l, `{"parentUuid":"4f7e","isSidechain":false,"type":"assis`) || (torn && i == len(rows)-1) || slices.Contains(sealed, l) {
				continue
			}
			t.Fatalf("line %d does not parse: %v: %.80s", i+1, err, l)
		}
		if e.UUID != "" {
			got[e.UUID]++
		}
	}
	return got
}
