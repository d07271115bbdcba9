package main_test

// Golden outputs: the read, resume and fork commands over the whole corpus,
// recorded as sha256 hashes in testdata/golden-outputs.txt so that a change
// meant to move code without changing behaviour (issue 11) can prove it:
// every output stays byte-identical. Run with -update to rewrite the file
// after a deliberate change of output.
//
// The corpus is laid out once, as Claude Code lays it out (layOriginal), in a
// temporary config folder whose files all carry one fixed modification time
// (listings report it). Every output is normalised in two ways only: the
// temporary config folder is written $CONFIG, and a fork's fresh uuids (those
// absent from the corpus, like a resume's synthetic rows') are numbered in
// order of appearance; the time of the run (a fork stamps its last copied row
// and its metadata rows with it; the binary has no clock flag) is written $NOW
// when it falls within the command's run, and resume's "interrupted 5h ago"
// is written "interrupted $AGO ago".

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

var updateGolden = flag.Bool("update", false, "rewrite cmd/scribe/testdata/golden-outputs.txt")

const goldenFile = "testdata/golden-outputs.txt"

// goldenOutputsFile holds what the outputs were, so that a failing run
// shows where the first differing output differs, not only that its hash
// does: gzipped JSON lines of {"key": "cmd id", "out": the output} for an
// output up to goldenWhole bytes, else {"key", "blocks": the first 8 hex
// digits of the sha256 of each goldenBlock bytes} (the corpus's outputs
// are 40 MB in all; this file stays near 100 KB).
const goldenOutputsFile = "testdata/golden-outputs.jsonl.gz"

const (
	goldenWhole = 16 << 10
	goldenBlock = 4 << 10
)

// goldenRecord is one line of goldenOutputsFile.
type goldenRecord struct {
	Key    string   `json:"key"`
	Out    string   `json:"out,omitempty"`
	Blocks []string `json:"blocks,omitempty"`
}

// blockHashes cuts out into goldenBlock-byte blocks and hashes each.
func blockHashes(out string) []string {
	var hs []string
	for i := 0; i < len(out); i += goldenBlock {
		sum := sha256.Sum256([]byte(out[i:min(i+goldenBlock, len(out))]))
		hs = append(hs, hex.EncodeToString(sum[:4]))
	}
	return hs
}

// goldenParallel bounds the scribe runs in flight.
const goldenParallel = 4

var (
	anyUUID  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	isoStamp = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"`)
	// agoText is resume's age of an interruption, which grows with the clock.
	agoText = regexp.MustCompile(`interrupted [0-9hms.]+ ago`)
)

// goldenRun is one command's outcome: its normalised output and exit code.
type goldenRun struct {
	cmd, id string
	out     string
	code    int
}

func (g goldenRun) line() string {
	sum := sha256.Sum256([]byte(g.out))
	return fmt.Sprintf("%s %s %s %d", g.cmd, g.id, hex.EncodeToString(sum[:]), g.code)
}

// goldenStage lays the corpus out in a fresh config folder with fixed file
// times and returns the folder, the session ids and every uuid of the corpus.
func goldenStage(t *testing.T) (dir string, ids []string, known map[string]bool) {
	t.Helper()
	c := loadCorpus(t)
	dir = t.TempDir()
	known = map[string]bool{}
	for _, u := range c.units {
		layOriginal(t, dir, u)
		ids = append(ids, u.sid)
	}
	stamp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range anyUUID.FindAllString(string(data), -1) {
			known[m] = true
		}
		return os.Chtimes(p, stamp, stamp)
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(ids)
	return dir, ids, known
}

// goldenEnv is a clean environment whose home is empty, so no user
// configuration reaches the binary.
func goldenEnv(t *testing.T, dir string) []string {
	home := t.TempDir()
	return append(cleanEnv(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "CLAUDE_CONFIG_DIR="+dir, "TZ=UTC")
}

// runGolden runs one command and normalises its output.
func runGolden(t *testing.T, env []string, dir string, known map[string]bool, name, id string, args ...string) goldenRun {
	start := time.Now().Add(-time.Second)
	stdout, stderr, code := runScribe(t, runOpts{base: env}, args...)
	out := normalise(stdout+"\x00stderr\x00"+stderr, dir, known, start, time.Now().Add(time.Second))
	return goldenRun{cmd: name, id: id, out: out, code: code}
}

// runFork forks id and returns the command's output followed by the written
// file.
func runFork(t *testing.T, env []string, dir, id string, known map[string]bool) goldenRun {
	start := time.Now().Add(-time.Second)
	stdout, stderr, code := runScribe(t, runOpts{base: env}, "fork", id)
	end := time.Now().Add(time.Second)
	written := ""
	if code == 0 {
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		path := strings.TrimSpace(lines[len(lines)-1])
		data, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("fork %s: %v", id, err)
		}
		written = string(data)
	}
	all := stdout + "\x00stderr\x00" + stderr + "\x00file\x00" + written
	return goldenRun{cmd: "fork", id: id, out: normalise(all, dir, known, start, end), code: code}
}

// normalise writes the config folder $CONFIG, numbers the uuids absent from
// the corpus (a fork's, a resume's synthetic rows') in order of appearance
// and writes $NOW for the timestamps that fall within the run [start, end].
func normalise(out, dir string, known map[string]bool, start, end time.Time) string {
	fresh := map[string]string{}
	out = anyUUID.ReplaceAllStringFunc(out, func(u string) string {
		if known[u] {
			return u
		}
		if fresh[u] == "" {
			fresh[u] = fmt.Sprintf("new-%d", len(fresh))
		}
		return fresh[u]
	})
	out = isoStamp.ReplaceAllStringFunc(out, func(s string) string {
		at, err := time.Parse(time.RFC3339Nano, strings.Trim(s, `"`))
		if err == nil && at.After(start) && at.Before(end) {
			return `"$NOW"`
		}
		return s
	})
	out = agoText.ReplaceAllString(out, "interrupted $$AGO ago")
	return strings.ReplaceAll(out, dir, "$CONFIG")
}

// goldenOutputs runs every command once over a fresh staging of the corpus.
func goldenOutputs(t *testing.T) []goldenRun {
	dir, ids, known := goldenStage(t)
	env := goldenEnv(t, dir)
	runs := []goldenRun{runGolden(t, env, dir, known, "ls", "-", "ls", "--all", "--json")}
	per := make([][]goldenRun, len(ids))
	parallel(len(ids), func(i int) {
		id := ids[i]
		per[i] = []goldenRun{
			runGolden(t, env, dir, known, "show", id, "show", "--json", id),
			runGolden(t, env, dir, known, "show-system", id, "show", "--json", "--system", id),
			runGolden(t, env, dir, known, "info", id, "info", "--json", id),
			runGolden(t, env, dir, known, "resume", id, "resume", "--json", "--dry-run", id),
		}
	})
	// Forks add sessions to the folder: they run after every read.
	forks := make([]goldenRun, len(ids))
	parallel(len(ids), func(i int) { forks[i] = runFork(t, env, dir, ids[i], known) })
	for i := range ids {
		runs = append(runs, per[i]...)
		runs = append(runs, forks[i])
	}
	return runs
}

// writeGoldenOutputs records the outputs themselves beside their hashes.
func writeGoldenOutputs(runs []goldenRun) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	enc := json.NewEncoder(zw)
	for _, r := range runs {
		rec := goldenRecord{Key: r.cmd + " " + r.id, Out: r.out}
		if len(r.out) > goldenWhole {
			rec.Out, rec.Blocks = "", blockHashes(r.out)
		}
		if err := enc.Encode(rec); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(goldenOutputsFile, buf.Bytes(), 0o644)
}

// recordedOutput is the record of cmd id (false when none).
func recordedOutput(key string) (goldenRecord, bool) {
	f, err := os.Open(goldenOutputsFile)
	if err != nil {
		return goldenRecord{}, false
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return goldenRecord{}, false
	}
	dec := json.NewDecoder(zr)
	for {
		var rec goldenRecord
		if dec.Decode(&rec) != nil {
			return goldenRecord{}, false
		}
		if rec.Key == key {
			return rec, true
		}
	}
}

// describeDifference says where got departs from the record.
func describeDifference(got string, rec goldenRecord) string {
	if rec.Blocks == nil {
		return firstDifference(got, rec.Out)
	}
	hs := blockHashes(got)
	i := 0
	for i < len(hs) && i < len(rec.Blocks) && hs[i] == rec.Blocks[i] {
		i++
	}
	from := i * goldenBlock
	return fmt.Sprintf("first difference within bytes %d..%d (of %d now; recorded as %d blocks of %d bytes, so only what is there now can be shown):\n%.4096s",
		from, from+goldenBlock, len(got), len(rec.Blocks), goldenBlock, got[min(from, len(got)):])
}

// firstDifference shows where got first departs from want: the line
// number and a few lines of each around it.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	window := func(lines []string) string {
		lo, hi := max(i-2, 0), min(i+3, len(lines))
		var b strings.Builder
		for j := lo; j < hi; j++ {
			mark := "  "
			if j == i {
				mark = "> "
			}
			fmt.Fprintf(&b, "%s%4d  %.300s\n", mark, j+1, lines[j])
		}
		return b.String()
	}
	return fmt.Sprintf("first difference at line %d:\n got:\n%s want:\n%s", i+1, window(g), window(w))
}

// parallel calls fn(0..n-1) on goldenParallel goroutines.
func parallel(n int, fn func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range goldenParallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

func TestGoldenOutputs(t *testing.T) {
	t.Parallel() // a long, self-contained run: it overlaps the others
	runs := goldenOutputs(t)
	got := make([]string, len(runs))
	for i, r := range runs {
		got[i] = r.line()
	}
	if *updateGolden {
		body := "# cmd id sha256 exit-code: go test ./cmd/scribe -run TestGoldenOutputs -update\n" + strings.Join(got, "\n") + "\n"
		if err := os.WriteFile(goldenFile, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := writeGoldenOutputs(runs); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(goldenFile)
	if err != nil {
		t.Fatalf("%v (run with -update to record it)", err)
	}
	defer f.Close()
	var want []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			want = append(want, l)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d outputs, golden file has %d", len(got), len(want))
	}
	shown := false
	for i := 0; i < len(got) && i < len(want); i++ {
		if got[i] == want[i] {
			continue
		}
		t.Errorf("output differs from the golden file:\n got %s\nwant %s", got[i], want[i])
		if shown {
			continue
		}
		// The first differing output, shown against the recorded one.
		shown = true
		key := runs[i].cmd + " " + runs[i].id
		if rec, ok := recordedOutput(key); ok {
			t.Errorf("%s: %s", key, describeDifference(runs[i].out, rec))
		} else {
			t.Errorf("%s (no recorded output to compare; its output now):\n%.4000s", key, runs[i].out)
		}
	}
}

// TestGoldenShowsTheFirstDifference: a failing golden run points at the
// first line that differs (an output recorded whole) or the first block
// (one recorded as block hashes), showing what is there now.
func TestGoldenShowsTheFirstDifference(t *testing.T) {
	want := "a\nb\nc\nd\n"
	got := "a\nb\nX\nd\n"
	msg := describeDifference(got, goldenRecord{Out: want})
	if !strings.Contains(msg, "line 3") || !strings.Contains(msg, ">    3  X") || !strings.Contains(msg, ">    3  c") {
		t.Errorf("a whole record: %s", msg)
	}
	long := strings.Repeat("x", 3*goldenBlock)
	changed := long[:goldenBlock+10] + "CHANGED" + long[goldenBlock+17:]
	msg = describeDifference(changed, goldenRecord{Blocks: blockHashes(long)})
	if !strings.Contains(msg, fmt.Sprintf("bytes %d..%d", goldenBlock, 2*goldenBlock)) || !strings.Contains(msg, "CHANGED") {
		t.Errorf("a block record: %.300s", msg)
	}
}
