package listing

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// TestListMatchesSDKOnRandomSessions compares with the SDK on generated
// sessions that mix every feature the listing's read looks at, at random places
// and sizes (so that lines fall on both sides of, and across, the window
// edges).
func TestListMatchesSDKOnRandomSessions(t *testing.T) {
	p := peer.Find(t)
	root := t.TempDir()
	cfg := filepath.Join(root, "cfg")
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
	projA := filepath.Join(root, "proj-a")
	projB := filepath.Join(root, "proj", "a") // same folder name as proj-a
	for _, d := range []string{projA, projB} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	seed := uint64(20260301)
	if v := os.Getenv("LST_SEED"); v != "" {
		fmt.Sscan(v, &seed)
	}
	r := testRand(seed)
	ids, idDir := randomSessions(t, l, &r, projA, projB)
	qs := []sdkQuery{{Op: "list"}, {Op: "list", NoProgrammatic: true}, {Op: "list", Limit: 10, Offset: 7},
		{Op: "list", Dir: projA}, {Op: "list", Dir: projB}, {Op: "list", Dir: projB, Limit: 5, Offset: 3}}
	for _, id := range ids {
		qs = append(qs, sdkQuery{Op: "info", Session: id, Dir: idDir[id]})
	}
	all, err := l.List(context.Background(), sessions.ListOptions{IncludeProgrammatic: true})
	if err != nil {
		t.Fatal(err)
	}
	logCoverage(t, all, len(ids), idDir)
	compareWithSDK(t, p, cfg, qs)
}

// randomSessions writes 120 random sessions into projA and projB and
// returns their ids and the project of each.
func randomSessions(t *testing.T, l Layout, r *testRand, projA, projB string) (ids []string, idDir map[string]string) {
	prompts := []any{
		"plain prompt", "  padded\nmulti\nline  ", "<command-name>/review</command-name>\n<command-args>x</command-args>",
		"<bash-input>git log</bash-input>", "<system-reminder>hidden</system-reminder>", "[Request interrupted by user]",
		strings.Repeat("long ", 60), strings.Repeat("é", 199) + "😀tail", "emoji 😀 prompt", "",
		[]any{map[string]any{"type": "text", "text": "block prompt"}},
		[]any{map[string]any{"type": "image", "source": map[string]any{"type": "base64", "data": "AA=="}}},
		[]any{map[string]any{"type": "tool_result", "tool_use_id": "t", "content": "r"}},
		[]any{map[string]any{"type": "document", "source": map[string]any{"type": "text", "data": "d"}}, map[string]any{"type": "text", "text": "with doc"}},
	}
	metas := []func(s *jsonltest.Session){
		func(s *jsonltest.Session) { s.Meta("custom-title", "customTitle", fmt.Sprintf("Title %d", r.n(1000))) },
		func(s *jsonltest.Session) { s.Meta("ai-title", "aiTitle", fmt.Sprintf("AI %d", r.n(1000))) },
		func(s *jsonltest.Session) { s.Meta("tag", "tag", []string{"", "docs", "work"}[r.n(3)]) },
		func(s *jsonltest.Session) { s.Meta("last-prompt", "lastPrompt", fmt.Sprintf("Last %d", r.n(1000))) },
		func(s *jsonltest.Session) { s.Meta("summary", "summary", fmt.Sprintf("Summary %d", r.n(1000))) },
		func(s *jsonltest.Session) {
			s.Raw(`{"type":"relocated","relocatedCwd":` + jsonltest.JSONString([]string{projA, projB, "/gone"}[r.n(3)]) + `}`)
		},
		func(s *jsonltest.Session) { s.Raw(`{"type":"custom-title","customTitle":"glued`) }, // torn, then glued to the next row
		func(s *jsonltest.Session) { s.User("meta", `"isMeta":true,`) },
		func(s *jsonltest.Session) { s.User("summary of before", `"isCompactSummary":true,`) },
	}
	idDir = map[string]string{}
	var sessions []*jsonltest.Session
	for n := 0; n < 120; n++ {
		proj := []string{projA, projB}[r.n(2)]
		s := jsonltest.NewSession(proj)
		if r.n(10) == 0 {
			s.Entry = []string{"sdk-ts", "sdk-py", "cli"}[r.n(3)]
		}
		if r.n(15) == 0 {
			s.Branch = "feature/" + fmt.Sprint(r.n(9))
		}
		target := []int{0, 2 << 10, 60 << 10, 70 << 10, 130 << 10, 300 << 10}[r.n(6)]
		size := 0
		for size < target || len(s.Lines) < 2 {
			switch k := r.n(12); {
			case k < 4:
				s.User(prompts[r.n(len(prompts))], "")
			case k < 8:
				s.Assistant(strings.Repeat("word ", 10+r.n(3000)))
			default:
				metas[r.n(len(metas))](s)
			}
			size += len(s.Lines[len(s.Lines)-1]) + 1
			if r.n(4) == 0 {
				s.Branch = fmt.Sprint("b", r.n(5))
			}
		}
		for k := r.n(4); k > 0; k-- {
			metas[r.n(len(metas))](s)
		}
		text := s.Text()
		if r.n(10) == 0 {
			text = strings.TrimSuffix(text, "\n") // torn tail
		}
		if r.n(12) == 0 && len(sessions) > 0 {
			other := sessions[r.n(len(sessions))]
			text += `{"type":"continued-in","continuedInSessionId":"` + other.ID + "\"}\n"
		}
		dir := l.ProjectDir(proj)
		mt := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.n(1_000_000)) * time.Millisecond)
		jsonltest.WriteFile(t, dir, s.ID+".jsonl", text, mt)
		if r.n(8) == 0 {
			jsonltest.WriteFile(t, filepath.Join(dir, s.ID), "custom-title.json", `{"customTitle":"Side `+fmt.Sprint(r.n(99))+`"}`, mt)
		}
		if r.n(8) == 0 {
			at := time.Date(2026, 3, 1, 10, 0, r.n(120), 0, time.UTC).Format(time.RFC3339)
			jsonltest.WriteFile(t, filepath.Join(dir, s.ID), "archived.json", fmt.Sprintf(`{"archived":%v,"at":%q}`, r.n(4) > 0, at), mt)
		}
		ids = append(ids, s.ID)
		idDir[s.ID] = proj
		sessions = append(sessions, s)
	}
	return ids, idDir
}

// logCoverage logs how many of the listed sessions have each feature
// (so that a seed that exercises little shows).
func logCoverage(t *testing.T, all []sessions.Info, n int, idDir map[string]string) {
	var titled, tagged, archived, prompted, relocated int
	for _, si := range all {
		if si.CustomTitle != "" {
			titled++
		}
		if si.Tag != "" {
			tagged++
		}
		if si.Archived != nil {
			archived++
		}
		if si.FirstPrompt != "" {
			prompted++
		}
		if si.Cwd != idDir[si.SessionID] {
			relocated++
		}
	}
	t.Logf("%d of %d sessions listed: %d titled, %d tagged, %d with archived, %d with a first prompt, %d relocated",
		len(all), n, titled, tagged, archived, prompted, relocated)
}

// testRand is a small deterministic generator.
type testRand uint64

func (r *testRand) n(k int) int {
	*r = *r*6364136223846793005 + 1442695040888963407
	return int(uint64(*r)>>33) % k
}

// BenchmarkListBulk lists 2,000 sessions of 200 KB (the SDK needs about
// 2 s for this on two cores; see the timing in the package notes).
func BenchmarkListBulk(b *testing.B) {
	p := peer.Find(b)
	root := b.TempDir()
	cfg := filepath.Join(root, "cfg")
	cwd := filepath.Join(root, "proj")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		b.Fatal(err)
	}
	p.GenBulk(b, cfg, cwd, 2000, 200_000, 1)
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
	for _, opt := range []sessions.ListOptions{
		{Dir: cwd, IncludeWorktrees: true, IncludeProgrammatic: true},
		{IncludeProgrammatic: true},
		{Dir: cwd, Limit: 50, IncludeProgrammatic: true},
	} {
		b.Run(fmt.Sprintf("dir=%v,limit=%d", opt.Dir != "", opt.Limit), func(b *testing.B) {
			for b.Loop() {
				if _, err := l.List(context.Background(), opt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
