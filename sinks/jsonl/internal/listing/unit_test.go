package listing

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
)

func TestDateParse(t *testing.T) {
	for s, want := range map[string]int64{
		"2026-01-10T11:00:02.267Z":      1768042802267,
		"2026-01-10T11:00:02.2679999Z":  1768042802267,
		"2026-01-10T11:00:02.2Z":        1768042802200,
		"2026-01-10T11:00:02Z":          1768042802000,
		"2026-01-10T11:00Z":             1768042800000,
		"2026-01-10":                    1768003200000,
		"2026-01":                       1767225600000,
		"2026":                          1767225600000,
		"+002026-01-10T11:00:02Z":       1768042802000,
		"2026-01-10T11:00:02+05:30":     1768023002000,
		"2026-01-10T11:00:02+0530":      1768023002000,
		"2026-01-10T24:00:00Z":          1768089600000,
		"2026-02-30T00:00:00Z":          1772409600000,
		"2026-01-10t11:00:02z":          1768042802000,
		"1970-01-01T00:00:00.000Z":      0,
		"-000001-01-01T00:00:00Z":       -62198755200000,
		"2026-01-10 11:00:02Z":          1768042802000,
		"2026-01-10T11:00:02.123+05:30": 1768023002123,
	} {
		if got, ok := DateParse(s); !ok || got != want {
			t.Errorf("DateParse(%q) = %d, %v; want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "2026-01-10T25:00:00Z", "2026-01-10T24:30:00Z", "2026-01-32", "2026-13-01",
		"2026-01-10T11:00:60Z", "2026-01-10T11:00:02.Z", "2026-01-10T11Z", "2026-01-10T11:00:02+05",
		" 2026-01-10T11:00:02Z", "2026-01-10T11:00:02.267ZZ", "-000000-01-01T00:00:00Z"} {
		if got, ok := DateParse(s); ok {
			t.Errorf("DateParse(%q) = %d, want NaN", s, got)
		}
	}
}

func TestMillisRoundsLikeNode(t *testing.T) {
	for _, c := range []struct{ sec, nsec, want int64 }{
		{1700000000, 400000000, 1700000000400},
		{1700000000, 499999999, 1700000000500},
		{1700000000, 999500000, 1700000001000},
		{1700000000, 499999, 1700000000001}, // .499999 ms is .5 in float64
		{1700000000, 400000, 1700000000000},
	} {
		if got := millis(c.sec, c.nsec); got != c.want {
			t.Errorf("millis(%d, %d) = %d, want %d", c.sec, c.nsec, got, c.want)
		}
	}
}

func TestFirstPromptRules(t *testing.T) {
	line := func(content any, extra string) string {
		return fmt.Sprintf(`{%s"type":"user","message":{"role":"user","content":%s},"uuid":"u"}`, extra, jsonltest.JSONString(content))
	}
	for _, c := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"string", []string{line("hello", "")}, "hello"},
		{"trim and newlines", []string{line("\u00a0 a\nb\r\n ", "")}, "a b"},
		{"xml skipped", []string{line("<system-reminder>x</system-reminder>", ""), line("next", "")}, "next"},
		{"not a tag: capital", []string{line("<Foo> bar", "")}, "<Foo> bar"},
		{"not a tag: no close", []string{line("<foo", "")}, "<foo"},
		{"interrupt needs the bracket", []string{line("[Request interrupted by user", "")}, "[Request interrupted by user"},
		{"meta skipped", []string{line("m", `"isMeta":true,`), line("n", "")}, "n"},
		{"spaced meta skipped", []string{line("m", `"isMeta": true,`), line("n", "")}, "n"},
		{"tool_result anywhere skips the line", []string{line([]any{map[string]any{"type": "text", "text": "a"}, map[string]any{"type": "tool_result"}}, ""), line("b", "")}, "b"},
		{"command fallback is the first", []string{line("<command-name>/a</command-name>", ""), line("<command-name>/b</command-name>", "")}, "/a"},
		{"command name across a CR is no match, and looks like a tag", []string{line("<command-name>/a\r</command-name>", "")}, ""},
		{"command name across a CR, then text", []string{line("x <command-name>/a\r</command-name>", "")}, "x <command-name>/a\r</command-name>"},
		{"bash input trimmed", []string{line("<bash-input>  git status </bash-input>", "")}, "! git status"},
		{"bash input not truncated", []string{line("<bash-input>"+strings.Repeat("z", 300)+"</bash-input>", "")}, "! " + strings.Repeat("z", 300)},
		{"unparseable line skipped", []string{`{"type":"user","message":{"content":"broken"`, line("ok", "")}, "ok"},
		{"message null", []string{`{"type":"user","message":null}`, line("ok", "")}, "ok"},
		{"nothing", []string{`{"type":"assistant"}`}, ""},
	} {
		if got := firstPrompt([]byte(strings.Join(c.lines, "\n"))); got != c.want {
			t.Errorf("%s: firstPrompt = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestLastKeyed(t *testing.T) {
	idx := func(win []byte) *keyIndex {
		var x keyIndex
		x.reset(win)
		x.buildAll()
		return &x
	}
	win := []byte(strings.Join([]string{
		`{"type":"tag","tag":"one"}`,
		`{"type": "tag", "tag": "spaced"}`,
		`{"type":"tag","tag":7}`,
		`{"type":"tag","tag":"cut`,
	}, "\n"))
	if v, ok := idx(win).lastKeyed(lkTag, typeTag, true); !ok || v != "spaced" {
		t.Errorf("tag = %q, %v", v, ok)
	}
	if _, ok := idx(win).lastKeyed(lkCustomTitle, typeCustomTitle, true); ok {
		t.Errorf("custom-title found in a window without one")
	}
	// lastPrompt: any row type, but the key must be top-level.
	win = []byte(`{"type":"last-prompt","lastPrompt":"top"}` + "\n" + `{"type":"user","message":{"lastPrompt":"nested"}}`)
	if v, ok := idx(win).lastKeyed(lkLastPrompt, "", false); !ok || v != "top" {
		t.Errorf("lastPrompt = %q, %v", v, ok)
	}
}

func TestRawValues(t *testing.T) {
	win := []byte(`{"a":1,"gitBranch":"fe\"at\u00e9"}` + "\n" + `{"gitBranch": "second"}` + "\n" + `{"gitBranch":"cut`)
	if v, ok := firstValue(win, &keyGitBranch); !ok || v != `fe"até` {
		t.Errorf("first = %q, %v", v, ok)
	}
	var x keyIndex
	x.reset(win)
	x.buildAll()
	if v, ok := x.lastValue(lkGitBranch); !ok || v != "second" {
		t.Errorf("last = %q, %v", v, ok)
	}
	// An unclosed first match falls back to the spaced form.
	if v, ok := firstValue([]byte(`{"cwd": "/spaced"}`+"\n"+`{"cwd":"/cut`), &keyCwd); !ok || v != "/spaced" {
		t.Errorf("cwd = %q, %v", v, ok)
	}
}

func TestCollision(t *testing.T) {
	root := t.TempDir()
	a := filepath.Join(root, "x-y")
	b := filepath.Join(root, "x", "y")
	for _, d := range []string{a, b} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var cw Collision
	if !cw.Collides(b, a) || !cw.Collides(a, b) {
		t.Errorf("existing twins do not collide")
	}
	if cw.Collides(a, a) || cw.Collides(filepath.Join(root, "x_y"), a) || cw.Collides(filepath.Join(root, "other"), a) {
		t.Errorf("false collision")
	}
}

func TestOffsetFromEnd(t *testing.T) {
	ascii := bytes.Repeat([]byte("a"), 100)
	if got := offsetFromEnd(ascii, 10); got != 90 {
		t.Errorf("ascii: %d", got)
	}
	mixed := []byte("ab😀cdé") // a b (😀=2 units) c d é
	if got := offsetFromEnd(mixed, 3); got != len("ab😀") {
		t.Errorf("3 units: %d", got)
	}
	if got := offsetFromEnd(mixed, 4); got != len("ab😀") {
		t.Errorf("4 units (inside the pair): %d", got)
	}
	if got := offsetFromEnd(mixed, 5); got != len("ab") {
		t.Errorf("5 units: %d", got)
	}
}

func TestIsUUID(t *testing.T) {
	for _, s := range []string{"0565a1b2-c3d4-4e5f-8a9b-0c1d2e3f4a5b", "0565A1B2-C3D4-4E5F-8A9B-0C1D2E3F4A5B",
		"0565a1b2-c3d4-4e5f-8a9b-0c1d2e3f4a5", "0565a1b2c3d4-4e5f-8a9b-0c1d2e3f4a5b-", "agent-a1b2c3d4", "",
		"0565a1b2-c3d4-4e5f-8a9b-0c1d2e3f4a5g", "0565a1b2-c3d4-4e5f-8a9b_0c1d2e3f4a5b"} {
		if core.IsUUID(s) != claudedir.IsSessionID(s) {
			t.Errorf("core.IsUUID(%q) = %v, IsSessionID says %v", s, core.IsUUID(s), claudedir.IsSessionID(s))
		}
	}
}
