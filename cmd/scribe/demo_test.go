package main_test

import (
	"strings"
	"testing"
)

// The README's first command: the demo runs end to end with nothing to set
// up and shows each step working.
func TestDemoRunsEndToEnd(t *testing.T) {
	out, _, code := runScribe(t, runOpts{combined: true}, "demo")
	if code != 0 {
		t.Fatalf("scribe demo: exit %d\n%s", code, out)
	}
	for _, want := range []string{
		"recorded 8 entries",
		"duplicates skipped:  8",
		"Login bug in auth.ts",
		"Fix the login bug in auth.ts",
		"classification: none",
		"stored:         8 new",
		"pulled session 7b3c2a10-5d4e-4f6a-9b8c-1d2e3f4a5b6c",
		"subagents/agent-a1b2c3d4e5f6a7b8c.jsonl",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the demo does not say %q:\n%s", want, out)
		}
	}
	// The other machine lists the same title.
	if i := strings.LastIndex(string(out), "the other machine sees the same session"); i < 0 || !strings.Contains(string(out)[i:], "Login bug in auth.ts") {
		t.Errorf("the pulled session is not listed on the other machine:\n%s", out)
	}
}
