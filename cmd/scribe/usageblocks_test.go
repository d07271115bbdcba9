package main_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// writeActiveBlock writes sessions whose last rows are inside the current
// 5-hour block (times relative to now): a block 4 days ago and one 2 days
// ago (for --recent), one that ended 20 hours ago (the most tokens of any
// finished block, for --token-limit max), then the active block's rows
// over the last two hours, in two sessions and a subagent, one with
// costUSD, one streamed over two rows.
func writeActiveBlock(t *testing.T, dir string, now time.Time) {
	t.Helper()
	at := func(ago time.Duration) string { return now.Add(-ago).UTC().Format("2006-01-02T15:04:05.000Z") }
	const S, H, O = "claude-sonnet-4-20250514", "claude-haiku-4-5-20251001", "claude-opus-4-1-20250805"
	writeTrapSession(t, dir, 1, []usageTrapRow{
		{ts: at(96 * time.Hour), id: "o1", req: "o1", model: S, in: 100, out: 100},
		{ts: at(48 * time.Hour), id: "o2", req: "o2", model: S, in: 200, out: 300},
		{ts: at(21 * time.Hour), id: "o3", req: "o3", model: O, in: 40000, out: 2000, cr: 30000},
		{ts: at(20 * time.Hour), id: "o4", req: "o4", model: O, in: 1000, out: 9000},
	}, nil)
	writeTrapSession(t, dir, 2, []usageTrapRow{
		{ts: at(130 * time.Minute), id: "a1", req: "a1", model: S, in: 1000, out: 2000, cc: 300, cr: 4000},
		{ts: at(95 * time.Minute), id: "a2", req: "a2", model: S, in: 500, out: 700, cr: 10000},
		{ts: at(95*time.Minute - time.Second), id: "a2", req: "a2", model: S, in: 500, out: 900, cr: 10000},
		{ts: at(40 * time.Minute), id: "a3", req: "a3", model: H, in: 2000, out: 100, cc: 50, cr: 20000, cost: 0.5},
	}, []usageTrapRow{
		{ts: at(30 * time.Minute), id: "a4", req: "a4", model: H, in: 333, out: 444, cc: 555, cr: 666, sidechain: true},
	})
	writeTrapSession(t, dir, 3, []usageTrapRow{
		{ts: at(7 * time.Minute), id: "b1", req: "b1", model: O, in: 12, out: 3456, cr: 78901},
	}, nil)
}

// TestUsageActiveBlockMatchesCCUsage: the active block's burn rate,
// projection and token limit status, and --active, --recent and
// --token-limit, as ccusage computes them. Both depend on the minute the
// tools run in, so ccusage runs before and after scribe; when the two
// ccusage answers differ (a minute turned in between) the three run
// again.
func TestUsageActiveBlockMatchesCCUsage(t *testing.T) {
	node, cli := findCCUsage(t)
	dir := t.TempDir()
	writeActiveBlock(t, dir, time.Now())
	env := usageEnv(t, dir, "UTC")
	ccusage := func(flags []string) any {
		out, errs, code := runScribe(t, runOpts{bin: node, base: env, }, append([]string{cli, "blocks", "--offline", "--json"}, flags...)...)
		if code != 0 {
			t.Fatalf("ccusage blocks %q: exit %d\n%s", flags, code, errs)
		}
		return decodeUsage(t, out)
	}
	// Limits the projection uses about 90% of (a warning) and 65% of (ok).
	var projected float64
	for _, b := range ccusage([]string{"--active"}).(map[string]any)["blocks"].([]any) {
		projected, _ = b.(map[string]any)["projection"].(map[string]any)["totalTokens"].(json.Number).Float64()
	}
	if projected < 100000 {
		t.Fatalf("the active block projects %v tokens", projected)
	}
	warning, ok := fmt.Sprint(int64(projected/0.9)), fmt.Sprint(int64(projected/0.65))
	for _, flags := range [][]string{nil, {"--active"}, {"--recent"}, {"--token-limit", "max"}, {"--token-limit", "50000"},
		{"--token-limit", "1000", "--active"}, {"--token-limit", "10000000", "--recent"}, {"--token-limit", warning}, {"--token-limit", ok}} {
		for try := 1; ; try++ {
			before := ccusage(flags)
			out, errs, code := runScribe(t, runOpts{base: env, }, append([]string{"usage", "blocks", "--json"}, flags...)...)
			if code != 0 {
				t.Fatalf("scribe usage blocks %q: exit %d\n%s", flags, code, errs)
			}
			after := ccusage(flags)
			if usageDiff(before, after, "blocks") != "" && try < 3 {
				continue // a minute turned while they ran
			}
			if diff := usageDiff(before, decodeUsage(t, out), "blocks"); diff != "" {
				t.Fatalf("scribe usage blocks --json %q differs from ccusage's: %s\n%s", flags, diff, out)
			}
			break
		}
	}
	out, errs, code := runScribe(t, runOpts{base: env, }, "usage", "blocks", "--active", "--token-limit", "1000")
	if code != 0 || !strings.Contains(out, "(active)") || !strings.Contains(out, "burn rate") || !strings.Contains(out, "token limit 1,000: exceeds") ||
		strings.Count(out, "(active)") != 1 || strings.Contains(out, "no activity") {
		t.Fatalf("scribe usage blocks --active --token-limit 1000: exit %d\n%s%s", code, out, errs)
	}
	for _, bad := range []string{"lots", "-5", "1.5", "+3"} {
		if _, errs, code := runScribe(t, runOpts{base: env, }, "usage", "blocks", "--token-limit="+bad); code != 2 || !strings.Contains(errs, "--token-limit") {
			t.Errorf("--token-limit=%s: exit %d, want 2: %s", bad, code, errs)
		}
	}
}
