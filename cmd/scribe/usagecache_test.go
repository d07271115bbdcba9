package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageCacheWarmEqualsCold runs scribe usage through its cache as a
// user would: cold, then warm after rows were appended to a session and a
// session was added, after a transcript was cut short, and with a damaged
// cache file. Every warm report equals the report read whole (--no-cache)
// and ccusage's, --verbose says what the cache did, and the cache lives
// under $XDG_CACHE_HOME, never in Claude's folder.
func TestUsageCacheWarmEqualsCold(t *testing.T) {
	node, cli := findCCUsage(t)
	dir := t.TempDir()
	writeUsageTraps(t, dir)
	env := usageEnv(t, dir, "UTC")
	cacheHome := t.TempDir()
	env = append(env, "XDG_CACHE_HOME="+cacheHome)
	reports := []string{"daily", "session", "blocks"}
	// same runs every report warm, read whole and by ccusage; the first
	// warm run's stderr must hold each of want.
	same := func(step string, want ...string) {
		t.Helper()
		for i, r := range reports {
			warm, errs, code := runScribe(t, runOpts{base: env, }, "usage", r, "--json", "--verbose")
			if code != 0 {
				t.Fatalf("%s: usage %s: exit %d\n%s", step, r, code, errs)
			}
			for _, w := range want {
				if i == 0 && !strings.Contains(errs, w) {
					t.Fatalf("%s: usage %s --verbose says\n%s\nwant %q", step, r, errs, w)
				}
			}
			cold, errs, code := runScribe(t, runOpts{base: env, }, "usage", r, "--json", "--no-cache", "--verbose")
			if code != 0 || !strings.Contains(errs, "no cache (--no-cache)") {
				t.Fatalf("%s: usage %s --no-cache: exit %d\n%s", step, r, code, errs)
			}
			cc, errs, code := runScribe(t, runOpts{bin: node, base: env, }, cli, r, "--offline", "--json")
			if code != 0 {
				t.Fatalf("ccusage %s: exit %d\n%s", r, code, errs)
			}
			if diff := usageDiff(decodeUsage(t, cold), decodeUsage(t, warm), r); diff != "" {
				t.Fatalf("%s: usage %s warm differs from cold: %s", step, r, diff)
			}
			if diff := usageDiff(decodeUsage(t, cc), decodeUsage(t, warm), r); diff != "" {
				t.Fatalf("%s: usage %s warm differs from ccusage: %s", step, r, diff)
			}
		}
	}
	same("cold", "0 unchanged, 0 grown (only the new lines read), 22 read whole")
	same("warm", "22 unchanged, 0 grown (only the new lines read), 0 read whole")

	proj := filepath.Join(dir, "projects", "-home-u-proj")
	main := filepath.Join(proj, "00000012-1111-4111-8111-111111111111.jsonl")
	f, err := os.OpenFile(main, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range []usageTrapRow{
		{ts: "2025-09-05T01:00:00.000Z", id: "x1", req: "x1", model: "claude-sonnet-4-20250514", in: 1234, out: 5678},
		{ts: "2025-09-05T01:00:01.000Z", id: "x1", req: "x1", model: "claude-sonnet-4-20250514", in: 1234, out: 9999},
		{ts: "2025-09-06T01:00:00.000Z", id: "m1", req: "r1", model: "claude-haiku-4-5-20251001", in: 10, out: 500}, // a bigger copy of session 1's message
		{ts: "2025-09-06T02:00:00.000Z", req: "x2", model: "claude-haiku-4-5-20251001", in: 70, out: 80, noID: true},
	} {
		if _, err := f.Write(append(r.line("00000012-1111-4111-8111-111111111111", 100+i), '\n')); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	writeTrapSession(t, dir, 300, []usageTrapRow{{ts: "2025-09-07T01:00:00.000Z", id: "y1", req: "y1", model: "claude-opus-4-1-20250805", in: 10, out: 20}}, nil)
	same("appended", "21 unchanged, 1 grown (only the new lines read), 1 read whole")

	data, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(main, data[:len(data)/3], 0o600); err != nil {
		t.Fatal(err)
	}
	same("cut short", "22 unchanged, 0 grown (only the new lines read), 1 read whole")

	buckets, _ := filepath.Glob(filepath.Join(cacheHome, "scribe", "usage", "*", "usage-*.bin"))
	if len(buckets) == 0 {
		t.Fatalf("no cache under %s", cacheHome)
	}
	for _, b := range buckets {
		if err := os.WriteFile(b, []byte("damaged"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	same("damaged cache", "0 unchanged, 0 grown (only the new lines read), 23 read whole", "rebuilt usage-", "not a usage cache file")
	same("rebuilt", "23 unchanged")

	out, _, _ := runScribe(t, runOpts{base: env, }, "usage", "monthly")
	if !strings.Contains(out, "Cache: 23 transcript(s): 23 unchanged") {
		t.Fatalf("the text report does not say what the cache did:\n%s", out)
	}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(p, ".jsonl") {
			t.Errorf("scribe usage wrote %s into Claude's folder", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
