package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestUsageStatusline: scribe usage statusline reads Claude Code's
// statusLine JSON and prints one line whose session, today and block
// costs and burn rate are ccusage's (its session, daily and blocks
// reports for the same folder); a second call reads only what was
// appended; bad input is a message on stderr and exit 1, never a panic.
func TestUsageStatusline(t *testing.T) {
	node, cli := findCCUsage(t)
	dir := t.TempDir()
	now := time.Now()
	writeActiveBlock(t, dir, now)
	env := append(usageEnv(t, dir, "UTC"), "XDG_CACHE_HOME="+t.TempDir())
	const sid = "00000002-1111-4111-8111-111111111111"
	input := fmt.Sprintf(`{"hook_event_name":"Status","session_id":%q,"transcript_path":%q,"cwd":"/home/u/proj",`+
		`"model":{"id":"claude-sonnet-4-20250514","display_name":"Sonnet"},"workspace":{"current_dir":"/home/u/proj","project_dir":"/home/u/proj"},`+
		`"version":"2.0.14","output_style":{"name":"default"},"cost":{"total_cost_usd":0.01,"total_duration_ms":45000}}`,
		sid, filepath.Join(dir, "projects", "-home-u-proj", sid+".jsonl"))
	ccusage := func(args ...string) map[string]any {
		out, errs, code := runScribe(t, runOpts{bin: node, base: env}, append([]string{cli}, append(args, "--offline", "--json")...)...)
		if code != 0 {
			t.Fatalf("ccusage %q: exit %d\n%s", args, code, errs)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	// want is the line ccusage's reports give, up to the time left in
	// the block, and after it.
	want := func() (string, string) {
		var session, today, block, rate float64
		for _, s := range ccusage("session")["session"].([]any) {
			if s := s.(map[string]any); s["period"] == sid {
				session = s["totalCost"].(float64)
			}
		}
		day := time.Now().UTC().Format("2006-01-02")
		for _, d := range ccusage("daily")["daily"].([]any) {
			if d := d.(map[string]any); d["period"] == day {
				today = d["totalCost"].(float64)
			}
		}
		for _, b := range ccusage("blocks", "--active")["blocks"].([]any) {
			b := b.(map[string]any)
			block, rate = b["costUSD"].(float64), b["burnRate"].(map[string]any)["costPerHour"].(float64)
		}
		return fmt.Sprintf("Sonnet | $%.2f session / $%.2f today | $%.2f block (", session, today, block), fmt.Sprintf("m left) | $%.2f/h\n", rate)
	}
	check := func(step, verbose string) {
		t.Helper()
		out, errs, code := runScribe(t, runOpts{base: env, stdin: input}, "usage", "statusline", "--verbose")
		head, tail := want()
		if code != 0 || !strings.HasPrefix(out, head) || !strings.HasSuffix(out, tail) || strings.Count(out, "\n") != 1 {
			t.Fatalf("%s: scribe usage statusline: exit %d\n%s%s\nwant %s...%s", step, code, out, errs, head, tail)
		}
		if !strings.Contains(errs, verbose) {
			t.Fatalf("%s: --verbose says %q, want %q", step, errs, verbose)
		}
	}
	check("cold", "0 unchanged, 0 grown (only the new lines read), 4 read whole")
	check("warm", "4 unchanged, 0 grown (only the new lines read), 0 read whole")
	f, err := os.OpenFile(filepath.Join(dir, "projects", "-home-u-proj", sid+".jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	row := usageTrapRow{ts: now.Add(-time.Minute).UTC().Format("2006-01-02T15:04:05.000Z"), id: "a9", req: "a9", model: "claude-opus-4-1-20250805", in: 5000, out: 30000}
	if _, err := f.Write(append(row.line(sid, 99), '\n')); err != nil {
		t.Fatal(err)
	}
	f.Close()
	check("appended", "3 unchanged, 1 grown (only the new lines read), 0 read whole")

	// A session with no rows yet; then a folder with no active block.
	out, errs, code := runScribe(t, runOpts{base: env, stdin: `{"session_id":"00000009-1111-4111-8111-111111111111"}`}, "usage", "statusline")
	if code != 0 || !strings.HasPrefix(out, "$0.00 session / ") {
		t.Fatalf("a session with no rows: exit %d\n%s%s", code, out, errs)
	}
	old := t.TempDir()
	writeTrapSession(t, old, 1, []usageTrapRow{{ts: "2025-09-03T10:00:00.000Z", id: "m1", req: "r1", model: "claude-sonnet-4-20250514", in: 1000, out: 2000}}, nil)
	out, errs, code = runScribe(t, runOpts{base: usageEnv(t, old, "UTC"), stdin: `{"session_id":"00000001-1111-4111-8111-111111111111","model":{"id":"claude-x"}}`}, "usage", "statusline")
	if code != 0 || out != "claude-x | $0.03 session / $0.00 today | no active block\n" {
		t.Fatalf("no active block: exit %d\n%q%s", code, out, errs)
	}

	for name, bad := range map[string]string{
		"empty": "", "blank": " \n\t", "not JSON": "session?", "cut short": `{"session_id":"x"`, "an array": `["x"]`,
		"a number for session_id": `{"session_id":7}`, "no session_id": `{"model":{"id":"x"}}`, "two values": `{"session_id":"x"} {}`,
		"null": "null", "too long": `{"session_id":"x","pad":"` + strings.Repeat("a", 2<<20) + `"}`, "binary": "\x00\xff\xfe",
	} {
		out, errs, code := runScribe(t, runOpts{base: env, stdin: bad}, "usage", "statusline")
		if code != 1 || out != "" || !strings.Contains(errs, "usage statusline: ") || strings.Contains(errs, "panic") || strings.Contains(errs, "goroutine") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1 and a message", name, code, out, errs)
		}
	}
}

// TestUsageStatuslineCheckpoint: statusline through its checkpoint (made
// on the first call, used by the next) prints the line --no-cache works
// out from every row, with messages whose rows straddle the checkpoint's
// cut (today's start less 5 hours); a damaged checkpoint is said in
// --verbose and made again, as it is for other prices.
func TestUsageStatuslineCheckpoint(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	writeActiveBlock(t, dir, now)
	y, m, d := now.UTC().Date()
	cut := time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Add(-5 * time.Hour)
	at := func(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
	const S = "claude-sonnet-4-20250514"
	writeTrapSession(t, dir, 4, []usageTrapRow{
		{ts: at(cut.Add(-10 * time.Minute)), id: "c1", req: "c1", model: S, in: 300000, out: 10},
		{ts: at(cut.Add(-9 * time.Minute)), id: "c2", req: "c2", model: S, in: 10, out: 10},
		{ts: at(now.Add(-3 * time.Minute)), id: "c1", req: "c1", model: S, in: 300000, out: 500},
		{ts: at(now.Add(-2 * time.Minute)), id: "c2", req: "c2", model: S, in: 10, out: 10, cost: 0.5},
		{ts: at(now.Add(-time.Minute)), id: "c3", req: "c3", model: "<synthetic>", in: 10, out: 10},
	}, nil)
	cache := t.TempDir()
	env := append(usageEnv(t, dir, "UTC"), "XDG_CACHE_HOME="+cache)
	cfg := filepath.Join(t.TempDir(), "scribe.hcl")
	writeFile(t, cfg, "usage {\n  price \""+S+"\" {\n    input = 2\n    output = 10\n    cache_write = 4\n    cache_read = 0.5\n  }\n}\n")
	left := regexp.MustCompile(`\(\d+h\d\dm left\)`)
	run := func(sid string, args ...string) (string, string) {
		t.Helper()
		out, errs, code := runScribe(t, runOpts{base: env, stdin: fmt.Sprintf(`{"session_id":"0000000%d-1111-4111-8111-111111111111"}`, sid[0]-'0')},
			append([]string{"usage", "statusline", "--verbose"}, args...)...)
		if code != 0 {
			t.Fatalf("usage statusline %v: exit %d\n%s%s", args, code, out, errs)
		}
		return left.ReplaceAllString(out, "(left)"), errs
	}
	check := func(step, sid, verbose string, args ...string) {
		t.Helper()
		want, _ := run(sid, append(args, "--no-cache")...)
		got, errs := run(sid, args...)
		if got != want || !strings.Contains(errs, verbose) {
			t.Fatalf("%s, session %s: through the checkpoint %q, from every row %q; --verbose %q, want %q", step, sid, got, want, errs, verbose)
		}
	}
	check("cold", "4", "status checkpoint made (none yet;")
	check("warm", "4", "status checkpoint used: the rows of ")
	check("warm", "1", "status checkpoint used")
	check("warm", "2", "status checkpoint used")

	f, err := os.OpenFile(filepath.Join(dir, "projects", "-home-u-proj", "00000004-1111-4111-8111-111111111111.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	row := usageTrapRow{ts: at(now), id: "c1", req: "c1", model: S, in: 300000, out: 900}
	if _, err := f.Write(append(row.line("00000004-1111-4111-8111-111111111111", 9), '\n')); err != nil {
		t.Fatal(err)
	}
	f.Close()
	check("an old message's row appended", "4", "status checkpoint made (the rows before the cut changed;")
	check("then", "4", "status checkpoint used")

	paths, _ := filepath.Glob(filepath.Join(cache, "scribe", "usage", "*", "status.bin"))
	if len(paths) != 1 {
		t.Fatalf("status checkpoints: %v", paths)
	}
	data, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, paths[0], string(data[:len(data)/2]))
	check("cut short", "4", "status checkpoint made (its file discarded: status.bin: ")
	check("other prices", "4", "status checkpoint made (made with other prices;", "--config", cfg)
	check("then", "1", "status checkpoint used", "--config", cfg)

	// Once the folders have been still for a second, the listing is kept
	// and used; a session added is listed again and counted.
	time.Sleep(1100 * time.Millisecond)
	check("folders still", "4", "; transcripts ") // listed, or from a snapshot kept already
	check("listing kept", "4", "; transcripts from the listing's snapshot;")
	writeTrapSession(t, dir, 5, []usageTrapRow{{ts: at(now.Add(-time.Minute)), id: "n1", req: "n1", model: S, in: 100, out: 2000}}, nil)
	check("a session added", "5", "; transcripts listed;")
}
