package main_test

// The flags every usage report shares with ccusage (-s/-u/-z/-b/-j,
// blocks' -n/-o, session's -i), and scribe's own --project, against
// ccusage 20.0.24.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTwoProjects writes sessions of two projects, -home-u-alpha and
// -home-u-beta, whose messages cross midnight in UTC, Tokyo and Los
// Angeles, with gaps of more and less than a block between them; a
// message streamed into both projects counts in each.
func writeTwoProjects(t *testing.T, dir string) {
	t.Helper()
	const H, S = "claude-haiku-4-5-20251001", "claude-sonnet-4-20250514"
	row := func(ts, id string, model string, in, out int64) usageTrapRow {
		return usageTrapRow{ts: ts, id: id, req: "r" + id, model: model, in: in, out: out}
	}
	writeTrapSessionIn(t, dir, "-home-u-alpha", 301, []usageTrapRow{row("2025-09-03T14:30:00.000Z", "a1", H, 10, 5),
		row("2025-09-03T21:30:00.000Z", "a2", S, 2000, 50), row("2025-09-03T23:50:00.000Z", "a3", H, 20, 5),
		row("2025-09-04T01:10:00.000Z", "a4", S, 30000, 500), row("2025-09-04T06:30:00.000Z", "a5", H, 40, 5)}, nil)
	writeTrapSessionIn(t, dir, "-home-u-alpha", 302, []usageTrapRow{row("2025-09-05T23:30:00.000Z", "a6", H, 60, 5),
		row("2025-09-06T07:10:00.000Z", "shared", S, 700, 70)}, nil)
	writeTrapSessionIn(t, dir, "-home-u-beta", 303, []usageTrapRow{row("2025-09-04T09:00:00.000Z", "b1", S, 4000, 400),
		row("2025-09-05T02:00:00.000Z", "b2", H, 50, 5), row("2025-09-06T07:10:00.000Z", "shared", S, 700, 70)}, nil)
}

// onlyFolder copies project folder of the Claude folder dir into a new
// Claude folder, alone.
func onlyFolder(t *testing.T, dir, folder string) string {
	t.Helper()
	only := t.TempDir()
	err := filepath.Walk(filepath.Join(dir, "projects", folder), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		copyFile(t, p, filepath.Join(only, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return only
}

// TestUsageProjectMatchesCCUsage: `--project P` prints what ccusage prints
// for a Claude folder holding only P's folder, P named by its folder or
// its path, on generated sessions of two projects and on the corpus.
func TestUsageProjectMatchesCCUsage(t *testing.T) {
	findCCUsage(t)
	reports := []string{"daily", "weekly", "monthly", "session", "blocks"}
	dir := t.TempDir()
	writeTwoProjects(t, dir)
	for _, folder := range []string{"-home-u-alpha", "-home-u-beta"} {
		only := onlyFolder(t, dir, folder)
		compareUsageOf(t, only, dir, "Asia/Tokyo", nil, []string{"--project", folder}, reports...)
		compareUsageOf(t, only, dir, "UTC", []string{"-s", "20250904"}, []string{"--project", "/home/u/" + folder[len("-home-u-"):], "-s", "20250904"}, reports...)
	}

	c := loadCorpus(t)
	all, only := t.TempDir(), t.TempDir()
	var cwd string
	for _, u := range c.units {
		layOriginal(t, all, u)
		if cwd == "" && u.main != nil {
			cwd = u.cwd
		}
		if u.cwd == cwd {
			layOriginal(t, only, u)
		}
	}
	compareUsageOf(t, only, all, "UTC", nil, []string{"--project", cwd}, reports...)
}

// TestUsageProjectPaths: --project takes ~ and relative paths; a project
// no session is in exits 2 naming those there are, nothing on stdout.
func TestUsageProjectPaths(t *testing.T) {
	dir := t.TempDir()
	writeTwoProjects(t, dir)
	env := usageEnv(t, dir, "UTC")
	want, _, _ := runScribe(t, runOpts{base: env}, "usage", "daily", "--json", "--project", "-home-u-beta")
	for _, o := range []runOpts{{base: env, env: []string{"HOME=/home/u"}}, {base: env, dir: "/"}} {
		p := map[bool]string{true: "~/beta", false: "home/u/beta"}[o.dir == ""]
		got, errs, code := runScribe(t, o, "usage", "daily", "--json", "--project", p)
		if code != 0 || got != want || !strings.Contains(got, `"inputTokens": 4750`) {
			t.Fatalf("--project %s: exit %d, %s\n%s\nwant\n%s", p, code, errs, got, want)
		}
	}
	out, errs, code := runScribe(t, runOpts{base: env}, "usage", "session", "--project", "/home/u/gamma")
	if code != 2 || out != "" || !strings.Contains(errs, `--project "/home/u/gamma"`) || !strings.Contains(errs, "-home-u-alpha, -home-u-beta") {
		t.Fatalf("--project /home/u/gamma: exit %d, stdout %q, stderr %s", code, out, errs)
	}
}

// TestUsageBlocksFlagsMatchCCUsage: blocks' --since/--until (the blocks
// and gaps that start on those days in the time zone), --timezone,
// --session-length, --order and --breakdown, in ccusage's short forms too,
// across midnight in two time zones, on generated sessions and the corpus.
func TestUsageBlocksFlagsMatchCCUsage(t *testing.T) {
	findCCUsage(t)
	dir := t.TempDir()
	writeTwoProjects(t, dir)
	for _, tz := range []string{"Asia/Tokyo", "America/Los_Angeles"} {
		for _, flags := range [][]string{nil, {"--since", "20250904"}, {"-s", "2025-09-05"}, {"--until", "20250904"},
			{"-s", "20250904", "-u", "20250904"}, {"-z", "UTC", "-s", "20250904", "-u", "20250905"}, {"--timezone", "Asia/Tokyo", "--since", "20250904"},
			{"-n", "2"}, {"--session-length", "1.5", "--order", "desc"}, {"-o", "asc", "-b"}, {"-j", "-s", "20250906", "-t", "max"}} {
			compareUsage(t, dir, tz, flags, "blocks")
		}
	}
	corpus := t.TempDir()
	for _, u := range loadCorpus(t).units {
		layOriginal(t, corpus, u)
	}
	compareUsage(t, corpus, "Asia/Tokyo", []string{"-s", "20250101", "-o", "desc"}, "blocks")
	// The same flags for the other reports, in their short forms.
	compareUsage(t, dir, "Asia/Tokyo", []string{"-j", "-s", "20250904", "-u", "2025-09-05", "-z", "America/Los_Angeles"}, "daily", "weekly", "monthly", "session")
}

// TestUsageSessionIDMatchesCCUsage: session --id prints ccusage's report
// of one session (its messages in time order, deduplicated across
// sessions, on the days --since/--until keep in the time zone), and null
// for a session with none.
func TestUsageSessionIDMatchesCCUsage(t *testing.T) {
	findCCUsage(t)
	dir := t.TempDir()
	writeUsageTraps(t, dir)
	writeTwoProjects(t, dir)
	for _, k := range []int{1, 2, 3, 7, 8, 10, 11, 12, 13, 14, 15, 16, 19, 100, 200, 301, 303, 999} {
		id := fmt.Sprintf("%08d-1111-4111-8111-111111111111", k)
		compareUsage(t, dir, "UTC", []string{"--id", id}, "session")
		compareUsage(t, dir, "Asia/Tokyo", []string{"-i", id, "-s", "20250904", "-u", "20250905"}, "session")
	}
	for _, flags := range [][]string{{"-s", "20250905"}, {"-u", "20250904"}, {"-z", "America/Los_Angeles", "-u", "20250904"}, {"-z", "Asia/Tokyo", "-s", "20250906"}} {
		compareUsage(t, dir, "UTC", append([]string{"-i", "00000303-1111-4111-8111-111111111111"}, flags...), "session")
	}
	out, errs, code := runScribe(t, runOpts{base: usageEnv(t, dir, "UTC")}, "usage", "session", "-i", "00000303-1111-4111-8111-111111111111")
	if code != 0 || !strings.Contains(out, "2025-09-04T09:00:00.000Z") || !strings.Contains(out, "Total: 4,455 tokens in 2 message(s)") {
		t.Fatalf("session -i: exit %d\n%s%s", code, out, errs)
	}
}

// TestUsageBadFlags: a bad date, time zone, session id, order or block
// length exits 2 with a message naming it, and prints nothing on stdout.
func TestUsageBadFlags(t *testing.T) {
	env := usageEnv(t, t.TempDir(), "UTC")
	for _, c := range []struct{ args []string }{
		{[]string{"daily", "--since", "2025-13-01"}}, {[]string{"blocks", "-s", "yesterday"}}, {[]string{"session", "--until", "2025090"}},
		{[]string{"blocks", "-z", "Mars/Olympus"}}, {[]string{"weekly", "--timezone", "nowhere"}},
		{[]string{"session", "--id", "not-a-uuid"}}, {[]string{"blocks", "--order", "up"}},
		{[]string{"blocks", "-n", "0"}}, {[]string{"blocks", "--session-length", "-2"}},
	} {
		out, errs, code := runScribe(t, runOpts{base: env}, append([]string{"usage"}, c.args...)...)
		flag := strings.TrimLeft(c.args[1], "-")
		if code != 2 || out != "" || !strings.Contains(errs, flag) && !strings.Contains(errs, map[string]string{"s": "since", "z": "timezone", "n": "session-length"}[flag]) {
			t.Errorf("scribe usage %q: exit %d, want 2; stdout %q; stderr %q", c.args, code, out, errs)
		}
	}
}
