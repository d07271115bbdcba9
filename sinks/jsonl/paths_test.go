package jsonl

import (
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
