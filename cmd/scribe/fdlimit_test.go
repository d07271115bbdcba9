package main_test

// `scribe record` under a small descriptor limit (ulimit -n 64),
// many sessions interleaved, each with subagent (sidechain) rows. The jsonl
// store then keeps only 8 session locks and gives them up and takes them
// back all the time (makeRoom). Seeding a new subagent file (the pipeline,
// from Submit) and routing the session's main rows (the sink runner, from
// Write) both take the session's lock in touch(); makeRoom drops s.mu while
// it drains, and touch does not look at ss.lock again afterwards, so both
// open the lock file: the second flock(2) fails against the process's own
// lock and the line is refused as "being written by another process: held
// by pid <ourselves>". Lines are lost, acks stall, exit 1.
//
// touch now looks at ss.lock again after makeRoom; this test failed before
// (a hostile pass found it: 5–67 lines refused, 10–49 lost in every run).

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/internal/testenv"
)

func TestRecordUnderSmallFDLimitNeverLocksItselfOut(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	bin := testenv.BuildScribe(t)
	const sessions, rounds = 24, 20
	sid := func(i int) string { return fmt.Sprintf("%08d-0000-4000-8000-000000000000", i) }
	var in strings.Builder
	var want []string // every line, all distinct uuids
	n := 0
	row := func(s, agent string) {
		n++
		side := ""
		if agent != "" {
			side = fmt.Sprintf(`,"isSidechain":true,"agentId":%q`, agent)
		} else {
			side = `,"isSidechain":false`
		}
		l := fmt.Sprintf(`{"type":"user","uuid":"u-%d","parentUuid":null,"sessionId":%q,"cwd":"/tmp/fdlimit/p"%s,"message":{"role":"user","content":%q}}`,
			n, s, side, strings.Repeat("x", 100))
		in.WriteString(l + "\n")
		want = append(want, l)
	}
	for r := range rounds {
		for i := range sessions {
			row(sid(i), "")
			row(sid(i), fmt.Sprintf("ag%d", r)) // a new subagent file: a Seed
		}
	}
	inPath := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(inPath, []byte(in.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for attempt := range 3 {
		dir := t.TempDir()
		cmd := exec.Command("sh", "-c", `ulimit -n 64 && exec "$0" "$@"`, bin, "record", "--json", "--config-dir", dir, inPath)
		cmd.Env = append(cleanEnv(), "GOMAXPROCS=2")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var r struct {
			Accepted      int64 `json:"accepted"`
			RejectedCount int64 `json:"rejected_count"`
			Lost          int64 `json:"lost"`
			AckedLines    int64 `json:"acked_lines"`
		}
		if jerr := json.Unmarshal(out, &r); jerr != nil {
			t.Fatalf("attempt %d: record printed %q: %v (exit %v)\n%s", attempt, out, jerr, err, stderr.String())
		}
		if err != nil || r.RejectedCount != 0 || r.Lost != 0 || r.Accepted != int64(len(want)) || r.AckedLines != int64(len(want)) {
			first := ""
			for _, l := range strings.Split(stderr.String(), "\n") {
				if strings.Contains(l, "another process") {
					first = l
					break
				}
			}
			t.Fatalf("attempt %d: exit %v, accepted %d of %d, rejected %d, lost %d, acked %d; first lock error:\n%s",
				attempt, err, r.Accepted, len(want), r.RejectedCount, r.Lost, r.AckedLines, first)
		}
		// Every line on disk once.
		var got strings.Builder
		_ = filepath.Walk(filepath.Join(dir, "projects"), func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() && strings.HasSuffix(p, ".jsonl") {
				b, _ := os.ReadFile(p)
				got.Write(b)
			}
			return nil
		})
		have := map[string]int{}
		for _, l := range strings.Split(got.String(), "\n") {
			have[l]++
		}
		for _, l := range want {
			if have[l] != 1 {
				t.Fatalf("attempt %d: line on disk %d times: %s", attempt, have[l], l)
			}
		}
	}
}
