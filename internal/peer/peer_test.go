package peer_test

import (
	"path/filepath"
	"slices"
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
