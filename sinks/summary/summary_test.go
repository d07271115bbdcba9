package summary

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
)

const sess = "0565a3a4-0000-4000-8000-000000000001"

// folder is a config folder's transcripts as the loader sees them: the
// local store's lookup (by cwd, else in every project folder) is the local
// store's to test; here a session is found in the project folder of its
// cwd or, without one, of the tests' working directory.
type folder string

func projectDir(dir, cwd string) string {
	return filepath.Join(dir, "projects", claudedir.SanitizePath(cwd))
}

func (f folder) OpenTranscript(id, cwd string) (*os.File, error) {
	if cwd == "" {
		cwd = "/home/alice/src/shop"
	}
	fh, err := os.Open(claudedir.MainFile(projectDir(string(f), cwd), id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no transcript: %w", core.ErrNotFound)
	}
	return fh, err
}

func write(t *testing.T, dir string, lines ...string) {
	t.Helper()
	p := claudedir.MainFile(projectDir(dir, "/home/alice/src/shop"), sess)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func boundary(uuid, logical string) string {
	return `{"parentUuid":null,"logicalParentUuid":"` + logical + `","isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","isMeta":false,"timestamp":"2026-01-10T12:00:00.000Z","uuid":"` + uuid + `","level":"info","compactMetadata":{"trigger":"manual","preTokens":48213},"cwd":"/home/alice/src/shop","sessionId":"` + sess + `"}`
}

func compactSummary(uuid, parent string) string {
	return `{"parentUuid":"` + parent + `","isSidechain":false,"type":"user","message":{"role":"user","content":"This session is being continued from a previous conversation..."},"isVisibleInTranscriptOnly":true,"isCompactSummary":true,"uuid":"` + uuid + `","timestamp":"2026-01-10T12:00:01.000Z","cwd":"/home/alice/src/shop","sessionId":"` + sess + `"}`
}

func TestServesFromTheLastCompactionMarkedPartial(t *testing.T) {
	dir := t.TempDir()
	write(t, dir,
		coretest.Line("user", sess, "u-1", ""),
		coretest.Line("assistant", sess, "a-1", "u-1"),
		`{"parentUuid":"a-1","type":"user","message":{"role":"user","content":"torn`, // damage before the boundary
		boundary("b-1", "a-1"),
		compactSummary("c-1", "b-1"),
		coretest.Line("user", sess, "u-2", "c-1"),
		coretest.Line("assistant", sess, "a-2", "u-2"),
	)
	tr, err := New(folder(dir), core.MustParseID("summary/default")).Load(context.Background(), core.SessionRef{SessionID: sess})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range tr.Entries {
		got = append(got, e.UUID)
	}
	if strings.Join(got, ",") != "b-1,c-1,u-2,a-2" || !tr.Partial {
		t.Fatalf("entries %v partial %v", got, tr.Partial)
	}
	if len(tr.Notes) != 2 || !strings.Contains(strings.Join(tr.Notes, ";"), "malformed") {
		t.Errorf("notes %q", tr.Notes)
	}
}

// A {"type":"summary"} line is a title Claude Code wrote for a leaf, not
// a compaction: a session with one and no compact boundary is a miss, with
// the reason, and nothing is invented (no compaction dated 1970).
func TestASummaryLineIsNotACompaction(t *testing.T) {
	dir := t.TempDir()
	write(t, dir,
		`{"type":"summary","summary":"Login bug fix in auth.ts","leafUuid":"a-1"}`,
		`{"parentUuid":"gone","type":"user","message":{"role":"user","content":"hi"},"uuid":"u-1","sessionId":"`+sess+`"}`,
	)
	tr, err := New(folder(dir), core.MustParseID("summary/default")).Load(context.Background(), core.SessionRef{SessionID: sess})
	if !errors.Is(err, core.ErrNotFound) || tr != nil {
		t.Fatalf("Load = %+v, %v; want a miss", tr, err)
	}
	if !strings.Contains(err.Error(), "no compaction") {
		t.Errorf("the miss gives no reason: %v", err)
	}
}

// A summary line after the last compact boundary is served as it is, as
// any other row there.
func TestASummaryLineAfterTheBoundaryIsKept(t *testing.T) {
	dir := t.TempDir()
	title := `{"type":"summary","summary":"Login bug fix in auth.ts","leafUuid":"u-2"}`
	write(t, dir,
		coretest.Line("user", sess, "u-1", ""),
		boundary("b-1", "u-1"),
		compactSummary("c-1", "b-1"),
		coretest.Line("user", sess, "u-2", "c-1"),
		title,
	)
	tr, err := New(folder(dir), core.MustParseID("summary/default")).Load(context.Background(), core.SessionRef{SessionID: sess})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Entries) != 4 || string(tr.Entries[3].Raw) != title {
		t.Fatalf("entries %d, last %s", len(tr.Entries), tr.Entries[len(tr.Entries)-1].Raw)
	}
	for _, e := range tr.Entries {
		if strings.HasPrefix(e.Timestamp, "1970") {
			t.Fatalf("an entry dated 1970: %s", e.Raw)
		}
	}
}

func TestNothingToSummarizeIsAMiss(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, coretest.Line("user", sess, "u-1", ""))
	_, err := New(folder(dir), core.MustParseID("summary/default")).Load(context.Background(), core.SessionRef{SessionID: sess})
	if !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("Load = %v", err)
	}
	_, err = New(folder(dir), core.MustParseID("summary/default")).Load(context.Background(), core.SessionRef{SessionID: "11111111-0000-4000-8000-000000000000"})
	if !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("missing session: %v", err)
	}
}

// The summary loader holds to the loader contract on compacted sessions
// (what it serves is from the last compact boundary on), and misses one
// never compacted.
func TestLoaderContract(t *testing.T) {
	coretest.RunLoaderContract(t, coretest.LoaderHarness{
		Compacted: true,
		New: func(t *testing.T, sessions []coretest.Session) core.Loader {
			dir := t.TempDir()
			for _, s := range sessions {
				p := claudedir.MainFile(projectDir(dir, s.Ref.CWD), s.Ref.SessionID)
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(strings.Join(s.Lines, "\n")+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			return New(folder(dir), core.MustParseID("summary/default"))
		},
	})
}
