package jsonl

import (
	"regexp"
	"strings"
	"testing"
)

func TestSanitizePath(t *testing.T) {
	long := "/home/alice/" + strings.Repeat("très-long-dossier/", 14) + "😀end"
	for _, tc := range []struct{ in, want string }{
		{"/home/alice/src/shop", "-home-alice-src-shop"},
		{"/a/b.c", "-a-b-c"},
		{"/Users/dain/workspace/danieldemmel.me-next", "-Users-dain-workspace-danieldemmel-me-next"},
		{"/x/😀", "-x---"},
		{"/x/é", "-x--"},
		// The SDK's own answer (peer.mjs sanitize) for this path.
		{long, "-home-alice" + strings.Repeat("-tr-s-long-dossier", 10) + "-tr-s-lon-kvkmau"},
	} {
		if got := SanitizePath(tc.in); got != tc.want {
			t.Errorf("SanitizePath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	got := SanitizePath(long)
	if len(got) <= 201 || got[200] != '-' {
		t.Errorf("long path: %q", got)
	}
}

func TestIsSessionID(t *testing.T) {
	if !IsSessionID("0565a3a4-1b2c-4d5e-8f90-0123456789ab") || IsSessionID("agent-c63fe96c") || IsSessionID("../x") {
		t.Error("IsSessionID")
	}
}

// safeName is the hand-written form of one regular expression; they agree.
func TestSafeNameAgreesWithItsRegexp(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)
	cases := []string{"", "a", "A9", "_a", "a_b.c-d", ".", "..", "a/b", "a b", "é", strings.Repeat("a", 128), strings.Repeat("a", 129), "-x", "x-", "9d1c7a52-3f4e-4b6a-8c2d-0e1f2a3b4c5d"}
	for _, c := range cases {
		if got, want := safeName(c), re.MatchString(c); got != want {
			t.Errorf("safeName(%q) = %v, the regexp says %v", c, got, want)
		}
	}
}
