package main_test

// scribe usage against the judge: ccusage 20.0.24 (npm, with its native
// @ccusage/ccusage-linux-x64), installed test-only in
// internal/ccusage/node_modules by scripts/test. For the same Claude folder,
// `scribe usage <report> --json` must print what `ccusage <report> --offline
// --json` prints, field for field: tokens exactly, costs within 1e-6.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/internal/testenv"
)

// requireCCUsageEnv turns a missing ccusage from a skip into a failure
// (scripts/test sets it to 1).
const requireCCUsageEnv = "SCRIBE_REQUIRE_CCUSAGE"

// findCCUsage is node and ccusage's cli.js, or skips (fails when required).
func findCCUsage(t *testing.T) (node, cli string) {
	t.Helper()
	root := testenv.RepoRoot(t)
	cli = filepath.Join(root, "internal", "ccusage", "node_modules", "ccusage", "src", "cli.js")
	native := filepath.Join(root, "internal", "ccusage", "node_modules", "@ccusage", "ccusage-linux-x64", "bin", "ccusage")
	node, err := exec.LookPath("node")
	for _, p := range []string{cli, native} {
		if err == nil {
			_, err = os.Stat(p)
		}
	}
	if err != nil {
		msg := fmt.Sprintf("ccusage 20.0.24 unavailable (%v); run `scripts/test` (it installs internal/ccusage/package-lock.json)", err)
		if os.Getenv(requireCCUsageEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return node, cli
}

// usageEnv is a clean environment over the Claude folder dir, with an empty
// home (ccusage looks for other agents' folders there) and time zone tz.
func usageEnv(t *testing.T, dir, tz string) []string {
	home := t.TempDir()
	return append(cleanEnv(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"CLAUDE_CONFIG_DIR="+dir, "TZ="+tz, "COLUMNS=", "NO_COLOR=")
}

// compareUsage runs both tools on each report (with flags) and fails on the
// first difference.
func compareUsage(t *testing.T, dir, tz string, flags []string, reports ...string) {
	t.Helper()
	compareUsageOf(t, dir, dir, tz, flags, flags, reports...)
}

// compareUsageOf runs ccusage on the Claude folder ccDir with ccFlags and
// scribe on scribeDir with scribeFlags, on each report, and fails on the
// first difference.
func compareUsageOf(t *testing.T, ccDir, scribeDir, tz string, ccFlags, scribeFlags []string, reports ...string) {
	t.Helper()
	node, cli := findCCUsage(t)
	ccEnv, env := usageEnv(t, ccDir, tz), usageEnv(t, scribeDir, tz)
	flags := scribeFlags
	for _, r := range reports {
		want, errs, code := runScribe(t, runOpts{bin: node, base: ccEnv}, append([]string{cli, r, "--offline", "--json"}, ccFlags...)...)
		if code != 0 {
			t.Fatalf("ccusage %s: exit %d\n%s", r, code, errs)
		}
		got, errs, code := runScribe(t, runOpts{base: env}, append([]string{"usage", r, "--json"}, flags...)...)
		if code != 0 {
			t.Fatalf("scribe usage %s: exit %d\n%s", r, code, errs)
		}
		if diff := usageDiff(decodeUsage(t, want), decodeUsage(t, got), r); diff != "" {
			t.Fatalf("TZ=%s scribe usage %s --json %q differs from ccusage's: %s\n%s", tz, r, flags, diff, brief(decodeUsage(t, want).(map[string]any)["totals"]))
		}
	}
}

func decodeUsage(t *testing.T, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return v
}

// usageDiff is the first difference between ccusage's JSON (want) and
// scribe's (got), "" when none: integers must be equal, other numbers within
// 1e-6, every key on both sides, arrays in the same order.
func usageDiff(want, got any, path string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want an object, got %v", path, got)
		}
		keys := map[string]bool{}
		for k := range w {
			keys[k] = true
		}
		for k := range g {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			wv, wok := w[k]
			gv, gok := g[k]
			if wok != gok {
				return fmt.Sprintf("%s.%s: ccusage has it: %v, scribe has it: %v (%v / %v)", path, k, wok, gok, wv, gv)
			}
			if d := usageDiff(wv, gv, path+"."+k); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: want %d items %s, got %s", path, len(w), brief(w), brief(got))
		}
		for i := range w {
			if d := usageDiff(w[i], g[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
		return ""
	case json.Number:
		g, ok := got.(json.Number)
		if !ok {
			return fmt.Sprintf("%s: want %s, got %v", path, w, got)
		}
		wi, werr := w.Int64()
		gi, gerr := g.Int64()
		if werr == nil && gerr == nil {
			if wi != gi {
				return fmt.Sprintf("%s: want %d, got %d", path, wi, gi)
			}
			return ""
		}
		wf, _ := w.Float64()
		gf, _ := g.Float64()
		if math.Abs(wf-gf) > 1e-6 {
			return fmt.Sprintf("%s: want %s, got %s", path, w, g)
		}
		return ""
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return fmt.Sprintf("%s: want %v, got %v", path, want, got)
		}
		return ""
	}
}

// brief shows an array of periods by their names, anything else as JSON.
func brief(v any) string {
	if items, ok := v.([]any); ok && len(items) > 0 {
		if _, ok := items[0].(map[string]any)["period"]; ok {
			var names []string
			for _, it := range items {
				names = append(names, fmt.Sprint(it.(map[string]any)["period"]))
			}
			return strings.Join(names, " ")
		}
	}
	b, _ := json.Marshal(v)
	if len(b) > 400 {
		b = append(b[:400], "..."...)
	}
	return string(b)
}

// TestUsageMatchesCCUsageOnCorpus lays out the real corpus as Claude Code
// keeps it and compares the daily, weekly, monthly, session and blocks reports, in UTC and
// in a zone that moves days.
func TestUsageMatchesCCUsageOnCorpus(t *testing.T) {
	findCCUsage(t)
	c := loadCorpus(t)
	dir := t.TempDir()
	for _, u := range c.units {
		layOriginal(t, dir, u)
	}
	compareUsage(t, dir, "UTC", nil, "daily", "weekly", "monthly", "session", "blocks")
	compareUsage(t, dir, "Asia/Tokyo", nil, "daily", "weekly", "monthly", "session", "blocks")
}

// usageTrapRow is one assistant row of a generated session.
type usageTrapRow struct {
	ts, id, req, model string
	noModel            bool
	in, out, cc, cr    int64
	usage              map[string]any // replaces the counts when set
	cost               any            // costUSD when not nil
	sidechain          bool
	noReq, noID        bool
	rowType            string
}

func (r usageTrapRow) line(session string, n int) []byte {
	u := r.usage
	if u == nil {
		u = map[string]any{"input_tokens": r.in, "output_tokens": r.out,
			"cache_creation_input_tokens": r.cc, "cache_read_input_tokens": r.cr}
	}
	msg := map[string]any{"type": "message", "role": "assistant", "usage": u,
		"content": []any{map[string]any{"type": "text", "text": "x"}}}
	if !r.noModel {
		msg["model"] = r.model
	}
	if !r.noID {
		msg["id"] = r.id
	}
	typ := r.rowType
	if typ == "" {
		typ = "assistant"
	}
	row := map[string]any{"parentUuid": nil, "isSidechain": r.sidechain, "userType": "external",
		"cwd": "/home/u/proj", "sessionId": session, "version": "2.0.14", "message": msg,
		"type": typ, "uuid": fmt.Sprintf("u-%s-%d", session[:8], n), "timestamp": r.ts}
	if !r.noReq {
		row["requestId"] = r.req
	}
	if r.cost != nil {
		row["costUSD"] = r.cost
	}
	b, err := json.Marshal(row)
	if err != nil {
		panic(err)
	}
	return b
}

// writeTrapSession writes a session's main file (and a subagent's file when
// sub has rows) into dir's project folder.
func writeTrapSession(t *testing.T, dir string, k int, main, sub []usageTrapRow) {
	t.Helper()
	writeTrapSessionIn(t, dir, "-home-u-proj", k, main, sub)
}

// writeTrapSessionIn is writeTrapSession into the project folder named
// folder.
func writeTrapSessionIn(t *testing.T, dir, folder string, k int, main, sub []usageTrapRow) {
	t.Helper()
	sid := fmt.Sprintf("%08d-1111-4111-8111-111111111111", k)
	proj := filepath.Join(dir, "projects", folder)
	write := func(path string, rows []usageTrapRow) {
		var b bytes.Buffer
		for i, r := range rows {
			b.Write(r.line(sid, i))
			b.WriteByte('\n')
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(proj, sid+".jsonl"), main)
	if len(sub) > 0 {
		write(filepath.Join(proj, sid, "subagents", "agent-a1b2c3.jsonl"), sub)
	}
}

// TestUsageMatchesCCUsageOnTraps compares the reports on generated sessions
// that hold every counting trap: streamed rows (the biggest counts, across
// sessions too), replayed sidechain copies in a subagent's file, rows
// without a request id or a message id, <synthetic> and model-less rows,
// costUSD (also on an unpriced model, also 0, also on one of two equal
// streamed rows), the tiers above 200k tokens, unpriced and prefixed
// models, fast mode, cache writes for an hour, usage not written as
// Claude Code writes it, a day that moves with the time zone, and malformed
// usage (negative, string, float, null, missing counts; a null model; a bad
// timestamp), which must be left out and reported.
func TestUsageMatchesCCUsageOnTraps(t *testing.T) {
	findCCUsage(t)
	dir := t.TempDir()
	writeUsageTraps(t, dir)
	compareUsage(t, dir, "UTC", nil, "daily", "weekly", "monthly", "session", "blocks")
	compareUsage(t, dir, "Asia/Tokyo", nil, "daily", "weekly", "monthly", "session", "blocks")
	// --since and --until: days in the time zone; the session report keeps
	// the sessions whose last activity (in UTC) is from --since and before
	// --until.
	for _, flags := range [][]string{{"--since", "20250904"}, {"--until", "2025-09-03"}, {"--until", "20250904"},
		{"--since", "20250903", "--until", "20250903", "--timezone", "America/Los_Angeles"}} {
		compareUsage(t, dir, "Asia/Tokyo", flags, "daily", "weekly", "monthly", "session")
	}

	// The malformed rows are reported, not silently dropped.
	_, errs, code := runScribe(t, runOpts{base: usageEnv(t, dir, "UTC")}, "usage", "daily", "--json")
	if code != 0 || !strings.Contains(errs, "7 row(s) with usage: missing, negative or non-integer token count") ||
		!strings.Contains(errs, "1 row(s) with usage: bad timestamp") || !strings.Contains(errs, "1 row(s) with usage: model not a string") || !strings.Contains(errs, "1 row(s) with usage: usage not written") {
		t.Fatalf("scribe usage daily: exit %d, stderr:\n%s", code, errs)
	}
}

// writeUsageTraps writes the generated sessions holding every counting trap
// into the Claude folder dir.
func writeUsageTraps(t *testing.T, dir string) {
	t.Helper()
	const H, S, O = "claude-haiku-4-5-20251001", "claude-sonnet-4-20250514", "claude-opus-4-1-20250805"
	at := func(hms string) string { return "2025-09-04T" + hms + ".000Z" }
	traps := [][]usageTrapRow{
		{{ts: "2025-09-03T23:30:00.000Z", id: "m1", req: "r1", model: H, in: 10, out: 5}, {ts: "2025-09-03T23:30:01.000Z", id: "m1", req: "r1", model: H, in: 10, out: 50}},
		{{ts: at("01:00:00"), id: "a1", req: "r1", model: H, in: 100, out: 5}, {ts: at("01:00:01"), id: "a1", req: "r1", model: H, in: 10, out: 50}},
		{{ts: at("01:00:00"), id: "m1", req: "r1", model: H, in: 10, out: 50}}, // a copy of session 1's message
		{{ts: at("01:00:00"), id: "m2", req: "r2", model: S, in: 250000, out: 100, cc: 1000, cr: 2000}},
		{{ts: at("01:00:00"), id: "m3", req: "r3", model: S, in: 150000, out: 1, cr: 100000}},
		{{ts: at("01:00:00"), id: "m4", req: "r4", model: S, in: 250000, out: 250000, cc: 250000, cr: 250000}},
		{{ts: at("02:00:00"), id: "m5", req: "r5", model: O, in: 1, out: 2, cc: 3, cr: 4, cost: 1.5}},
		{{ts: at("02:00:00"), id: "m6", req: "r6", model: "claude-unknown-9", in: 5000, cost: 0.25}, {ts: at("02:00:00"), id: "m6b", req: "r6b", model: "claude-unknown-9", in: 7, out: 8}},
		{{ts: at("02:00:00"), id: "m7", req: "r7", model: H, in: 6000, cost: 0}},
		{{ts: at("03:00:00"), id: "m8", req: "r8", model: "<synthetic>", in: 300}, {ts: at("03:00:00"), id: "m8b", req: "r8b", noModel: true, in: 1100}},
		{{ts: at("04:00:00"), id: "m9", req: "r9", model: H, in: 2000, noReq: true}, {ts: at("04:00:00"), id: "m9", req: "r9", model: H, in: 2000, noReq: true}},
		{{ts: at("04:00:00"), req: "r10", model: H, in: 100, noID: true}, {ts: at("04:00:00"), req: "r10", model: H, in: 100, noID: true}},
		{{ts: at("05:00:00"), id: "m11", req: "r11", model: "claude-3-5-haiku-20241022", in: 1000000},
			{ts: at("05:00:00"), id: "m11b", req: "r11b", model: "claude-sonnet-4-5", in: 1000000},
			{ts: at("05:00:00"), id: "m11c", req: "r11c", model: "anthropic/claude-sonnet-4-5", in: 1000000}},
		{{ts: at("06:00:00"), id: "m12", req: "r12", model: H, usage: map[string]any{"input_tokens": 100, "output_tokens": 0, "speed": "fast"}},
			{ts: at("06:00:00"), id: "m12b", req: "r12b", model: "claude-opus-4-6", usage: map[string]any{"input_tokens": 100, "output_tokens": 0, "speed": "fast"}}},
		{{ts: at("07:00:00"), id: "m13", req: "r13", model: H, in: 1000}, {ts: at("07:00:00"), id: "m13", req: "r13", model: H, in: 1000, cost: 3.0}},
		{{ts: at("07:00:00"), id: "m14", req: "r14", model: H, in: 500, usage: map[string]any{"input_tokens": 500, "output_tokens": 0, "cache_creation_input_tokens": 10}, rowType: "user"}},
		{{ts: "2025-09-04T01:00:00+09:00", id: "m15", req: "r15", model: H, in: 900}},
		// Cache writes for an hour cost more than those for 5 minutes, also
		// above 200k tokens.
		{{ts: at("07:30:00"), id: "m16", req: "r16", model: "claude-opus-4-6", usage: map[string]any{"input_tokens": 3, "output_tokens": 12,
			"cache_creation_input_tokens": 5376, "cache_read_input_tokens": 21440,
			"cache_creation": map[string]any{"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 5376}}},
			{ts: at("07:30:00"), id: "m16b", req: "r16b", model: S, usage: map[string]any{"input_tokens": 10, "output_tokens": 0,
				"cache_creation_input_tokens": 300000, "cache_creation": map[string]any{"ephemeral_5m_input_tokens": 50000, "ephemeral_1h_input_tokens": 250000}}}},
		// Malformed usage: each row is left out.
		{{ts: at("08:00:00"), id: "b1", req: "b1", model: H, in: -3000, out: 7},
			{ts: at("08:00:00"), id: "b2", req: "b2", model: H, usage: map[string]any{"input_tokens": "4000", "output_tokens": 9}},
			{ts: at("08:00:00"), id: "b3", req: "b3", model: H, usage: map[string]any{"output_tokens": 11}},
			{ts: at("08:00:00"), id: "b4", req: "b4", model: H, usage: map[string]any{"input_tokens": nil, "output_tokens": 3}},
			{ts: at("08:00:00"), id: "b5", req: "b5", model: H, usage: map[string]any{"input_tokens": 1.5, "output_tokens": 3}},
			{ts: at("08:00:00"), id: "b6", req: "b6", model: H, usage: map[string]any{"input_tokens": 3, "output_tokens": 0, "cache_read_input_tokens": -5}},
			{ts: at("08:00:00"), id: "b7", req: "b7", model: H, usage: map[string]any{"input_tokens": 3, "output_tokens": 0, "cache_read_input_tokens": "7"}},
			{ts: "not-a-time", id: "b8", req: "b8", model: H, in: 100},
			{ts: at("08:00:00"), id: "b9", req: "b9", model: H, in: 3, out: 1}},
	}
	for i, rows := range traps {
		writeTrapSession(t, dir, i+1, rows, nil)
	}
	// A subagent's file replays its parent's sidechain row, and adds one.
	side := usageTrapRow{ts: at("09:00:00"), id: "s1", req: "s1", model: S, in: 7, out: 8, sidechain: true}
	writeTrapSession(t, dir, 100, []usageTrapRow{{ts: at("08:59:00"), id: "s0", req: "s0", model: S, in: 1, out: 1}, side},
		[]usageTrapRow{side, {ts: at("09:30:00"), id: "s2", req: "s2", model: S, in: 70, out: 80, sidechain: true}})
	// A row in a null-model message.
	nullModel := usageTrapRow{ts: at("10:00:00"), id: "n1", req: "n1", model: H, in: 400}
	line := bytes.Replace(nullModel.line("00000200-1111-4111-8111-111111111111", 0), []byte(`"model":"`+H+`"`), []byte(`"model":null`), 1)
	// A row whose usage is not written as Claude Code writes it (ccusage
	// skips it).
	spaced := usageTrapRow{ts: at("10:00:00"), id: "n2", req: "n2", model: H, in: 800}
	line = append(append(line, '\n'), bytes.Replace(spaced.line("00000200-1111-4111-8111-111111111111", 1), []byte(`"usage":{`), []byte(`"usage": {`), 1)...)
	proj := filepath.Join(dir, "projects", "-home-u-proj")
	if err := os.WriteFile(filepath.Join(proj, "00000200-1111-4111-8111-111111111111.jsonl"), append(line, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestUsageTable prints the text report: a row per day and the totals,
// the price table's date, and the unpriced models marked.
func TestUsageTable(t *testing.T) {
	dir := t.TempDir()
	writeTrapSession(t, dir, 1, []usageTrapRow{
		{ts: "2025-09-03T10:00:00.000Z", id: "m1", req: "r1", model: "claude-sonnet-4-20250514", in: 1000, out: 2000},
		{ts: "2025-09-04T10:00:00.000Z", id: "m2", req: "r2", model: "claude-unknown-9", in: 5, out: 5},
	}, nil)
	out, errs, code := runScribe(t, runOpts{base: usageEnv(t, dir, "UTC")}, "usage", "daily")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"2025-09-03", "2025-09-04", "Total", "1,000", "$0.03", "unknown-9*", "2026-09-22", "no known price, counted at $0: claude-unknown-9"} {
		if !strings.Contains(out, want) {
			t.Fatalf("scribe usage daily lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = runScribe(t, runOpts{base: usageEnv(t, dir, "UTC"), env: []string{"COLUMNS=60"}}, "usage", "session")
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n")[:3] {
		if len(line) > 60 {
			t.Fatalf("COLUMNS=60: the table is wider:\n%s", out)
		}
	}
	out, _, _ = runScribe(t, runOpts{base: usageEnv(t, dir, "UTC")}, "usage", "monthly", "--breakdown")
	if !strings.Contains(out, "  - sonnet-4-20250514") || !strings.Contains(out, "  - unknown-9*") {
		t.Fatalf("scribe usage monthly --breakdown has no row per model:\n%s", out)
	}
	out, _, _ = runScribe(t, runOpts{base: usageEnv(t, dir, "UTC")}, "usage", "blocks")
	for _, want := range []string{"2025-09-03T10:00:00.000Z", "(no activity until 2025-09-04T10:00:00.000Z)", "Total", "3,000"} {
		if !strings.Contains(out, want) {
			t.Fatalf("scribe usage blocks lacks %q:\n%s", want, out)
		}
	}
	if _, errs, code := runScribe(t, runOpts{base: usageEnv(t, dir, "UTC")}, "usage", "daily", "--since", "2025-13-01"); code != 2 {
		t.Fatalf("--since 2025-13-01: exit %d, want 2: %s", code, errs)
	}
}

// TestUsageFromArchiveAfterDeletion: the sessions copied into a jsonl
// archive, then deleted from the Claude folder, `scribe usage --from
// jsonl/archive --json` prints what ccusage printed before the deletion.
func TestUsageFromArchiveAfterDeletion(t *testing.T) {
	node, cli := findCCUsage(t)
	root := t.TempDir()
	claude, store, cfg := filepath.Join(root, "claude"), filepath.Join(root, "store"), filepath.Join(root, "scribe.hcl")
	writeUsageTraps(t, claude)
	writeFile(t, cfg, fmt.Sprintf("sink \"jsonl\" \"archive\" {\n  dir = %q\n}\n", store))
	env := usageEnv(t, claude, "UTC")
	before := map[string]string{}
	for _, r := range []string{"daily", "session"} {
		out, errs, code := runScribe(t, runOpts{bin: node, base: env}, cli, r, "--offline", "--json")
		if code != 0 {
			t.Fatalf("ccusage %s: exit %d\n%s", r, code, errs)
		}
		before[r] = out
	}
	if out, errs, code := runScribe(t, runOpts{base: env}, "copy", "--from", "jsonl/local", "--to", "jsonl/archive", "--all", "--config", cfg); code != 0 {
		t.Fatalf("copy: exit %d\n%s%s", code, out, errs)
	}
	if err := os.RemoveAll(filepath.Join(claude, "projects")); err != nil {
		t.Fatal(err)
	}
	for r, want := range before {
		got, errs, code := runScribe(t, runOpts{base: env}, "usage", r, "--json", "--from", "jsonl/archive", "--config", cfg)
		if code != 0 {
			t.Fatalf("usage %s --from jsonl/archive: exit %d\n%s", r, code, errs)
		}
		if diff := usageDiff(decodeUsage(t, want), decodeUsage(t, got), r); diff != "" {
			t.Fatalf("scribe usage %s --from jsonl/archive differs from ccusage's before the deletion: %s", r, diff)
		}
	}
}
