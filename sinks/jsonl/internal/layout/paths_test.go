package layout

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/claudedir"
)

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

func TestProjectFolder(t *testing.T) {
	if l := (Layout{ConfigDir: "c"}); l.ProjectFolder("-p") != filepath.Join("c", "projects", "-p") || l.ProjectFolder(claudedir.SanitizePath("/p")) != l.ProjectDir("/p") {
		t.Errorf("ProjectFolder = %s", l.ProjectFolder("-p"))
	}
}
