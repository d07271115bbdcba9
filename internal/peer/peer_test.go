package peer_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/internal/peer"
)

// TestPeerSDKWorks checks that the pinned SDK runs and reads gen-corpus.mjs's
// fixture the way the reference describes.
func TestPeerSDKWorks(t *testing.T) {
	p := peer.Find(t)
	cfg := t.TempDir()
	const cwd = "/home/alice/src/shop"
	ids := p.GenFixture(t, cfg, cwd)
	if got, want := ids["projectDir"], filepath.Join("projects", "-home-alice-src-shop"); got != want {
		t.Errorf("fixture projectDir = %q, want %q", got, want)
	}

	list := p.List(t, cfg, "")
	var titles []string
	for _, s := range list {
		titles = append(titles, s.Summary)
	}
	want := []string{"Pick a color", "Run the migrations", "Refactor the payment module", "README work", "Login bug fix in auth.ts"}
	if !slices.Equal(titles, want) {
		t.Fatalf("listSessions summaries = %q, want %q", titles, want)
	}
	for _, s := range list {
		if s.SessionID == ids["withCustomTitleTag"] {
			if s.CustomTitle != "README work" || s.Tag != "docs" || s.GitBranch != "feature/x" {
				t.Errorf("README session = %+v, want customTitle README work, tag docs, gitBranch feature/x", s)
			}
		}
		if s.Raw["sessionId"] != s.SessionID {
			t.Errorf("Raw map does not mirror the decoded fields: %v", s.Raw)
		}
	}

	if got := p.Sanitize(t, cwd); !slices.Equal(got, []string{"-home-alice-src-shop"}) {
		t.Errorf("Sanitize(%q) = %q, want [-home-alice-src-shop]", cwd, got)
	}
}

// TestPeerServerKeepsFoldersApart: the long-lived peer.mjs servers answer
// every call from the config folder it names, one after the other and
// side by side, and a failed command fails only its own call.
func TestPeerServerKeepsFoldersApart(t *testing.T) {
	p := peer.Find(t)
	full, empty := t.TempDir(), t.TempDir()
	p.GenFixture(t, full, "/home/alice/src/shop")
	for range 3 {
		if n := len(p.List(t, full, "")); n != 5 {
			t.Fatalf("listSessions of the fixture: %d sessions, want 5", n)
		}
		if n := len(p.List(t, empty, "")); n != 0 {
			t.Fatalf("listSessions of an empty folder after the fixture's: %d sessions, want 0", n)
		}
	}
	t.Run("side by side", func(t *testing.T) {
		for i := range 4 {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				dir, want := full, 5
				if i%2 == 1 {
					dir, want = empty, 0
				}
				if n := len(p.List(t, dir, "")); n != want {
					t.Errorf("listSessions: %d sessions, want %d", n, want)
				}
			})
		}
	})
	// A command the SDK throws on fails its test (seen here through a
	// recorder), and the next call is answered.
	rec := &fatalRecorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		p.Fork(rec, full, "00000000-0000-4000-8000-000000000000", "", "", "")
	}()
	if !strings.Contains(rec.msg, "peer: node peer.mjs fork") {
		t.Fatalf("a fork of a missing session: %q, want a failure naming the command", rec.msg)
	}
	if n := len(p.List(t, full, "")); n != 5 {
		t.Fatalf("listSessions after a failed call: %d sessions, want 5", n)
	}
}

// fatalRecorder records a Fatalf and stops the call with a panic.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(r)
}

func (r *fatalRecorder) Helper() {}
