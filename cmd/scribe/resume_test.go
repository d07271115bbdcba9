package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

const resumeSession = "7e57a1b2-0000-4000-8000-00000000c0de"

type resumeOut struct {
	ServedBy string `json:"served_by"`
	Misses   []struct {
		Loader, Error string
	} `json:"misses"`
	Partial        bool   `json:"partial"`
	Classification string `json:"classification"`
	Repairs        []struct {
		Kind      string `json:"kind"`
		UUID      string `json:"uuid"`
		ToolUseID string `json:"tool_use_id"`
	} `json:"repairs"`
	Persisted    int               `json:"persisted"`
	Copied       int               `json:"copied"`
	Violations   []json.RawMessage `json:"violations"`
	Conversation []json.RawMessage `json:"conversation"`
}

// row builds a transcript line in Claude Code's key order.
func row(typ, uuid, parent string, message string, extra ...string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	x := ""
	for _, e := range extra {
		x += "," + e
	}
	return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":%q,"message":%s%s,"uuid":%q,"timestamp":"2026-01-10T11:00:0%dZ","userType":"external","cwd":"/home/alice/src/shop","sessionId":%q}`,
		p, typ, message, x, uuid, len(uuid)%10, resumeSession)
}

func userText(s string) string { return fmt.Sprintf(`{"role":"user","content":%q}`, s) }
func assistantText(s string) string {
	return fmt.Sprintf(`{"model":"m","id":"msg_%s","type":"message","role":"assistant","content":[{"type":"text","text":%q}],"stop_reason":"end_turn","stop_sequence":null}`, s[:3], s)
}
func assistantTools(ids ...string) string {
	var blocks []string
	for _, id := range ids {
		blocks = append(blocks, fmt.Sprintf(`{"type":"tool_use","id":%q,"name":"Bash","input":{"command":"ls"}}`, id))
	}
	return `{"model":"m","id":"msg_tools","type":"message","role":"assistant","content":[` + strings.Join(blocks, ",") + `],"stop_reason":"tool_use","stop_sequence":null}`
}
func toolResult(id string) string {
	return fmt.Sprintf(`{"role":"user","content":[{"tool_use_id":%q,"type":"tool_result","content":"ok"}]}`, id)
}

func writeSession(t *testing.T, dir string, lines ...string) string {
	t.Helper()
	p := filepath.Join(dir, "projects", "-home-alice-src-shop", resumeSession+".jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func resume(t *testing.T, dir string, args ...string) (resumeOut, string, int) {
	t.Helper()
	out, errs, code := runScribe(t, runOpts{env: []string{"SCRIBE_RESUME_MAX_AGE=0s"}},
		append([]string{"resume", "--config-dir", dir, "--json", resumeSession}, args...)...)
	var r resumeOut
	if len(out) > 0 {
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("resume printed %q: %v", out, err)
		}
	}
	return r, errs, code
}

func TestResumeClassifiesRepairsAndPersistsOnce(t *testing.T) {
	boundary := `{"parentUuid":null,"logicalParentUuid":"a-0","isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","isMeta":false,"timestamp":"2026-01-10T12:00:00.000Z","uuid":"b-1","level":"info","compactMetadata":{"trigger":"manual","preTokens":1000},"userType":"external","cwd":"/home/alice/src/shop","sessionId":"` + resumeSession + `"}`
	summaryRow := row("user", "c-1", "b-1", userText("This session is being continued from a previous conversation."), `"isVisibleInTranscriptOnly":true`, `"isCompactSummary":true`)
	for _, tc := range []struct {
		name    string
		lines   []string
		class   string
		repairs []string // kinds
	}{
		{"clean", []string{row("user", "u-1", "", userText("hi")), row("assistant", "a-1", "u-1", assistantText("hello there"))}, "none", nil},
		{"interrupted prompt", []string{row("user", "u-1", "", userText("hi")), row("assistant", "a-1", "u-1", assistantText("hello there")), row("user", "u-2", "a-1", userText("and now?"))}, "interrupted_prompt", nil},
		{"interrupted turn", []string{row("user", "u-1", "", userText("list files")), row("assistant", "a-1", "u-1", assistantTools("toolu_1")), row("user", "r-1", "a-1", toolResult("toolu_1"))}, "interrupted_turn", []string{"continue_prompt"}},
		{"orphaned tool call", []string{row("user", "u-1", "", userText("list files")), row("assistant", "a-1", "u-1", assistantTools("toolu_1"))}, "interrupted_turn", []string{"synthetic_tool_result", "continue_prompt"}},
		{"parallel orphans", []string{row("user", "u-1", "", userText("list files")), row("assistant", "a-1", "u-1", assistantTools("toolu_1", "toolu_2", "toolu_3")), row("user", "r-1", "a-1", toolResult("toolu_2"))}, "interrupted_turn", []string{"synthetic_tool_result", "synthetic_tool_result", "continue_prompt"}},
		{"compacted", []string{row("user", "u-0", "", userText("old")), row("assistant", "a-0", "u-0", assistantText("old reply")), boundary, summaryRow, row("user", "u-1", "c-1", userText("go on")), row("assistant", "a-1", "u-1", assistantTools("toolu_9"))}, "interrupted_turn", []string{"synthetic_tool_result", "continue_prompt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeSession(t, dir, tc.lines...)
			r, stderr, code := resume(t, dir, "--check")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var kinds []string
			for _, rp := range r.Repairs {
				kinds = append(kinds, rp.Kind)
			}
			if r.Classification != tc.class || strings.Join(kinds, ",") != strings.Join(tc.repairs, ",") || r.ServedBy != "jsonl/local" {
				t.Fatalf("class %s, repairs %v, served by %s", r.Classification, kinds, r.ServedBy)
			}
			if len(r.Violations) != 0 || r.Persisted != len(tc.repairs) {
				t.Fatalf("violations %s, persisted %d", r.Violations, r.Persisted)
			}
			data, _ := os.ReadFile(path)
			for _, rp := range r.Repairs {
				if !strings.Contains(string(data), rp.UUID) {
					t.Errorf("repair %s (%s) is not on disk", rp.Kind, rp.UUID)
				}
			}
			// Resuming again repairs nothing twice.
			again, _, code := resume(t, dir, "--check")
			if code != 0 || len(again.Repairs) != 0 || len(again.Violations) != 0 {
				t.Fatalf("second resume: exit %d, repairs %+v", code, again.Repairs)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(data, after) {
				t.Errorf("the second resume changed the file")
			}
		})
	}
}

func TestResumeDryRunWritesNothing(t *testing.T) {
	dir := t.TempDir()
	path := writeSession(t, dir, row("user", "u-1", "", userText("list files")), row("assistant", "a-1", "u-1", assistantTools("toolu_1")))
	before, _ := os.ReadFile(path)
	r, _, code := resume(t, dir, "--dry-run")
	if code != 0 || len(r.Repairs) != 2 || r.Persisted != 0 {
		t.Fatalf("exit %d %+v", code, r)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Fatal("--dry-run wrote to the transcript")
	}
}

func TestResumeFallsBackToTheSummaryWhenDamaged(t *testing.T) {
	dir := t.TempDir()
	boundary := `{"parentUuid":null,"logicalParentUuid":"a-0","isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","isMeta":false,"timestamp":"2026-01-10T12:00:00.000Z","uuid":"b-1","level":"info","compactMetadata":{"trigger":"manual","preTokens":1000},"userType":"external","cwd":"/home/alice/src/shop","sessionId":"` + resumeSession + `"}`
	// After the compaction, a row names a parent that was lost: the full
	// reader refuses the session, the summary loader serves what it can.
	writeSession(t, dir,
		row("user", "u-0", "", userText("old")),
		boundary,
		row("user", "c-1", "b-1", userText("This session is being continued from a previous conversation."), `"isVisibleInTranscriptOnly":true`, `"isCompactSummary":true`),
		row("user", "u-1", "c-1", userText("go on")),
		row("assistant", "a-1", "lost-row", assistantText("done it")),
	)
	r, stderr, code := resume(t, dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The built-in archive, asked after the local store, has no copy.
	if r.ServedBy != "summary/default" || !r.Partial || len(r.Misses) != 2 || r.Misses[0].Loader != "jsonl/local" || !strings.Contains(r.Misses[0].Error, "damaged") ||
		r.Misses[1].Loader != "jsonl/archive" || !strings.Contains(r.Misses[1].Error, "not found") {
		t.Fatalf("served by %s partial %v misses %+v", r.ServedBy, r.Partial, r.Misses)
	}
}

func TestResumeNothingAnywhereIsAClearError(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := resume(t, dir)
	if code == 0 || !strings.Contains(stderr, "not found by any loader") || !strings.Contains(stderr, "jsonl/local") || !strings.Contains(stderr, "summary/default") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	// An empty transcript is not a fresh session either.
	writeSession(t, dir, `{"type":"custom-title","customTitle":"x","sessionId":"`+resumeSession+`"}`)
	_, stderr, code = resume(t, dir)
	if code == 0 || !strings.Contains(stderr, "no conversation entries") {
		t.Fatalf("metadata-only session: exit %d, stderr %q", code, stderr)
	}
}

// Resume and record note what happened in the session's lifecycle records
// (the sidecar), never in the transcript.
func TestLifecycleRecordsOfResumeAndCompaction(t *testing.T) {
	dir := t.TempDir()
	path := writeSession(t, dir, row("user", "u-1", "", userText("list files")), row("assistant", "a-1", "u-1", assistantTools("toolu_1")))
	if _, stderr, code := resume(t, dir); code != 0 {
		t.Fatalf("resume: %d %s", code, stderr)
	}
	side := filepath.Join(strings.TrimSuffix(path, ".jsonl"), "scribe-lifecycle.jsonl")
	data, err := os.ReadFile(side)
	if err != nil || !strings.Contains(string(data), `"event":"interrupted_turn"`) || !strings.Contains(string(data), `"event":"resumed"`) {
		t.Fatalf("lifecycle sidecar after resume: %v\n%s", err, data)
	}
	if tr, _ := os.ReadFile(path); strings.Contains(string(tr), "scribe-lifecycle") {
		t.Fatal("a lifecycle record landed in the transcript")
	}

	// Recording a compaction adds one compaction record, once.
	other := t.TempDir()
	boundary := `{"parentUuid":null,"logicalParentUuid":"a-0","isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","isMeta":false,"timestamp":"2026-01-10T12:00:00.000Z","uuid":"b-1","level":"info","compactMetadata":{"trigger":"auto","preTokens":1000},"userType":"external","cwd":"/home/alice/src/shop","sessionId":"` + resumeSession + `"}`
	in := strings.Join([]string{row("user", "u-0", "", userText("old")), boundary, row("user", "u-1", "b-1", userText("go on"))}, "\n") + "\n"
	for range 2 {
		if r, _, code := runRecord(t, nil, in, "--config-dir", other); code != 0 {
			t.Fatalf("record: %d %+v", code, r)
		}
	}
	data, err = os.ReadFile(filepath.Join(other, "projects", "-home-alice-src-shop", resumeSession, "scribe-lifecycle.jsonl"))
	if err != nil || strings.Count(string(data), `"event":"compaction"`) != 1 || !strings.Contains(string(data), `"trigger":"auto"`) {
		t.Fatalf("compaction records: %v\n%s", err, data)
	}
}

// info judges the end of the conversation as resume does, on the whole
// rebuilt chain, and reports the index's status.
func TestInfoClassifiesLikeResume(t *testing.T) {
	dir := t.TempDir()
	writeSession(t, dir, row("user", "u-1", "", userText("list files")), row("assistant", "a-1", "u-1", assistantTools("toolu_1", "toolu_2")))
	var info struct {
		Interrupted string `json:"interrupted"`
		State       string `json:"state"`
		Status      string `json:"status"`
	}
	scribeJSON(t, runOpts{}, &info, "info", "--config-dir", dir, resumeSession, "--json")
	r, _, _ := resume(t, dir, "--dry-run")
	if info.Interrupted != r.Classification || info.Interrupted != "interrupted_turn" || info.Status != "interrupted" || info.State != "running" {
		t.Fatalf("info %+v, resume says %s", info, r.Classification)
	}
}

// On a machine with no local copy, a resume served by the team server
// persists the whole served transcript, in order and byte for byte, before
// its repairs: the local file is a complete chain, ls lists it, the SDK
// reads it as the original plus the repairs, and the next resume is served
// locally and repairs nothing.
func TestCloudResumeOnAFreshMachineStoresTheWholeSession(t *testing.T) {
	p := peer.Find(t)
	srv := startCloudServer(t)
	cfgA, dirA := cloudMachine(t, srv.url(), "jsonl/local", "events/team")
	// B mirrors to the server too: the copy must not add to what it holds.
	cfgB, dirB := cloudMachine(t, srv.url(), "jsonl/local", "events/team")
	in := strings.Join([]string{
		`{"type":"custom-title","customTitle":"fix the build","sessionId":"` + resumeSession + `"}`,
		row("user", "u-1", "", userText("list files")),
		row("assistant", "a-1", "u-1", assistantText("looking")),
		row("user", "u-2", "a-1", userText("and run the tests")),
		row("assistant", "a-2", "u-2", assistantTools("toolu_1", "toolu_2")),
		row("user", "r-1", "a-2", toolResult("toolu_1")),
	}, "\n") + "\n"
	if out, errOut, code := cloudRun(t, in, "record", "--config", cfgA, "--json"); code != 0 {
		t.Fatalf("record on A: exit %d\n%s\n%s", code, out, errOut)
	}
	served := srv.history(resumeSession, "subagents=false")
	if len(served) != 6 {
		t.Fatalf("the server holds %d rows of the session, want 6", len(served))
	}

	resumeB := func() resumeOut {
		t.Helper()
		out, errOut, code := cloudRun(t, "", "resume", resumeSession, "--config", cfgB, "--json")
		var r resumeOut
		if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
			t.Fatalf("resume on B: exit %d, %v\n%s\n%s", code, err, out, errOut)
		}
		return r
	}
	r := resumeB()
	// The open call gets a synthetic result (the session is too old for
	// the continue prompt under the default max_age).
	if r.ServedBy != "cloud/team" || len(r.Repairs) == 0 || r.Repairs[0].ToolUseID != "toolu_2" || r.Persisted != len(r.Repairs) || r.Copied != len(served) {
		t.Fatalf("resume on B: served by %s, repairs %+v, %d persisted, %d copied (want cloud/team, toolu_2 repaired, all persisted, %d copied)",
			r.ServedBy, r.Repairs, r.Persisted, r.Copied, len(served))
	}
	proj, err := jsonl.Layout{ConfigDir: dirB}.FindSession(resumeSession, "")
	if err != nil || proj == "" {
		t.Fatalf("no local copy on B after resume: %q %v", proj, err)
	}
	path := claudedir.MainFile(proj, resumeSession)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != len(served)+len(r.Repairs) {
		t.Fatalf("B's transcript has %d lines, want the %d served + %d repairs:\n%s", len(lines), len(served), len(r.Repairs), data)
	}
	for i, l := range served {
		if lines[i] != l {
			t.Errorf("B's line %d is not the served row byte for byte:\n  got  %s\n  want %s", i+1, truncate(lines[i], 200), truncate(l, 200))
		}
	}
	for i, rp := range r.Repairs {
		if !strings.Contains(lines[len(served)+i], `"uuid":"`+rp.UUID+`"`) {
			t.Errorf("B's line %d is not the repair %s (%s)", len(served)+i+1, rp.Kind, rp.UUID)
		}
	}
	// B mirrors to the server too: the copy adds nothing there (the
	// repairs and the resume's lifecycle records come after the rows).
	onServer := srv.history(resumeSession, "subagents=false")
	if len(onServer) < len(served)+len(r.Repairs) || !slices.Equal(onServer[:len(served)], served) {
		t.Errorf("the server's rows after the resume:\n%s", strings.Join(onServer, "\n"))
	}
	for i, l := range onServer {
		if slices.Contains(onServer[:i], l) {
			t.Errorf("the server holds a row twice: %s", truncate(l, 200))
		}
	}
	if srv.counts()[resumeSession] != int64(len(onServer)) {
		t.Errorf("the server counts %d entries, its history has %d", srv.counts()[resumeSession], len(onServer))
	}

	// ls lists it, with its title.
	var listed []struct {
		SessionID   string `json:"sessionId"`
		CustomTitle string `json:"customTitle"`
	}
	scribeJSON(t, runOpts{}, &listed, "ls", "--config", cfgB, "--all", "--json")
	if len(listed) != 1 || listed[0].SessionID != resumeSession || listed[0].CustomTitle != "fix the build" {
		t.Errorf("ls on B after the resume: %+v", listed)
	}

	// The SDK reads B's copy as A's original, then the repairs.
	origMsgs := p.Messages(t, dirA, resumeSession, "", false)
	copyMsgs := p.Messages(t, dirB, resumeSession, "", false)
	if len(copyMsgs) <= len(origMsgs) {
		t.Fatalf("the SDK reads %d messages on B, %d on A: the repairs are missing", len(copyMsgs), len(origMsgs))
	}
	compareMessages(t, "getSessionMessages B (before the repairs) vs A", origMsgs, copyMsgs[:len(origMsgs)])
	repaired := map[string]bool{}
	for _, rp := range r.Repairs {
		repaired[rp.UUID] = true
	}
	for _, u := range peer.UUIDs(copyMsgs[len(origMsgs):]) {
		if !repaired[u] {
			t.Errorf("the SDK reads a message %s on B that is neither A's nor a repair", u)
		}
	}
	infoA, infoB := p.Info(t, dirA, resumeSession, ""), p.Info(t, dirB, resumeSession, "")
	if infoA == nil || infoB == nil || infoA.CustomTitle != infoB.CustomTitle || infoA.FirstPrompt != infoB.FirstPrompt || infoA.CreatedAt != infoB.CreatedAt || infoA.Cwd != infoB.Cwd {
		t.Errorf("getSessionInfo: A %+v, B %+v", infoA, infoB)
	}

	// The next resume is served locally and repairs nothing.
	again := resumeB()
	if again.ServedBy != "jsonl/local" || len(again.Repairs) != 0 || again.Copied != 0 {
		t.Fatalf("second resume on B: served by %s, %d repairs, %d copied", again.ServedBy, len(again.Repairs), again.Copied)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, data) {
		t.Errorf("the second resume changed B's transcript")
	}
}

// A chain cut by a lost parent, with no compaction to fall back on: show
// reads it, and resume says what is damaged (exit 1), never "not found".
func TestResumeOfADamagedChainSaysWhatIsDamaged(t *testing.T) {
	dir := t.TempDir()
	writeSession(t, dir,
		row("user", "u-1", "", userText("hi")),
		row("assistant", "a-1", "u-1", assistantText("hello there")),
		row("user", "u-2", "lost-row", userText("and now?")),
		row("assistant", "a-2", "u-2", assistantText("done it")),
	)
	if out, _, code := runScribe(t, runOpts{combined: true}, "show", "--config-dir", dir, resumeSession); code != 0 {
		t.Fatalf("show of the damaged session: exit %d\n%s", code, out)
	}
	_, stderr, code := resume(t, dir)
	if code != 1 || strings.Contains(stderr, "not found by any loader") || !strings.Contains(stderr, "cannot be resumed") ||
		!strings.Contains(stderr, "damaged") || !strings.Contains(stderr, "lost-row") {
		t.Fatalf("resume of a damaged chain: exit %d, stderr:\n%s", code, stderr)
	}
}
