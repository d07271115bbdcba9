package reader

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// writeSessions lays sessions out as Claude Code does: each main
// transcript in its cwd's project folder, each sidechain under it.
func writeSessions(t *testing.T, dir string, sessions []coretest.Session) {
	t.Helper()
	l := Layout{Layout: layout.Layout{ConfigDir: dir}}
	for _, s := range sessions {
		p := claudedir.MainFile(l.ProjectDir(s.Ref.CWD), s.Ref.SessionID)
		if s.Ref.AgentID != "" {
			p = claudedir.AgentFile(l.ProjectDir(s.Ref.CWD), s.Ref.SessionID, s.Ref.AgentID)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Join(s.Lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// The local store's loader holds to the loader contract.
func TestLoaderContract(t *testing.T) {
	coretest.RunLoaderContract(t, coretest.LoaderHarness{
		Sidechains: true,
		New: func(t *testing.T, sessions []coretest.Session) core.Loader {
			dir := t.TempDir()
			writeSessions(t, dir, sessions)
			return NewLoader(Layout{Layout: layout.Layout{ConfigDir: dir}})
		},
	})
}
