// Package sessionstest is the behaviour every session store must show:
// RunStoreContract, run by each implementation of sessions.Store with the
// same sessions, judged against the local store's reader over the same
// lines in plain files (the reader the Agent SDK's answers are checked
// against in sinks/jsonl's own tests).
package sessionstest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/transcript/fork"
)

// Seed is one session to put into a store: its working directory, its
// id, its main transcript's lines, its subagents' lines, and scribe's
// lifecycle records of it.
type Seed struct {
	Cwd, ID   string
	Main      []string
	Agents    map[string][]string
	Lifecycle []string
}

// Fixture is a store under test.
type Fixture struct {
	// New makes an empty store, puts the seeds into it (through its own
	// write path) and returns a function that opens it: each call a fresh
	// Store over the same data, as the next command would open it.
	New func(t *testing.T, seeds []Seed) (open func() sessions.Store)
}

// The seeded sessions: two share an id prefix (aaaa), so that a prefix can
// be ambiguous; one has a subagent, one lifecycle records, one a custom
// title.
const (
	IDOne   = "aaaa1111-1111-4111-8111-111111111111"
	IDTwo   = "aaaa2222-2222-4222-8222-222222222222"
	IDThree = "bbbb3333-3333-4333-8333-333333333333"
	agentID = "a0123456789abcdef"
)

// Seeds are the sessions RunStoreContract puts into every store.
func Seeds() []Seed {
	row := func(typ, uuid, parent, sid, cwd, ts, content string, extra string) string {
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		msg := `{"role":"user","content":` + content + `}`
		if typ == "assistant" {
			msg = `{"id":"msg_` + uuid[:8] + `","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":` + content + `,"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":5}}`
		}
		return `{"parentUuid":` + p + `,"isSidechain":false,"userType":"external","cwd":"` + cwd + `","sessionId":"` + sid +
			`","version":"2.1.0","gitBranch":"main","type":"` + typ + `","message":` + msg + `,"uuid":"` + uuid + `","timestamp":"` + ts + `"` + extra + `}`
	}
	const cwdA, cwdB = "/work/alpha", "/work/beta"
	one := Seed{Cwd: cwdA, ID: IDOne, Main: []string{
		row("user", "11111111-0000-4000-8000-000000000001", "", IDOne, cwdA, "2026-03-01T10:00:00.000Z", `"first question about alpha"`, ""),
		row("assistant", "11111111-0000-4000-8000-000000000002", "11111111-0000-4000-8000-000000000001", IDOne, cwdA, "2026-03-01T10:00:05.000Z", `[{"type":"text","text":"an answer"}]`, ""),
		`{"type":"custom-title","customTitle":"alpha work","sessionId":"` + IDOne + `"}`,
	}}
	two := Seed{Cwd: cwdA, ID: IDTwo, Main: []string{
		row("user", "22222222-0000-4000-8000-000000000001", "", IDTwo, cwdA, "2026-03-02T10:00:00.000Z", `"second session, with a subagent"`, ""),
		row("assistant", "22222222-0000-4000-8000-000000000002", "22222222-0000-4000-8000-000000000001", IDTwo, cwdA, "2026-03-02T10:00:05.000Z",
			`[{"type":"tool_use","id":"toolu_01","name":"Task","input":{"prompt":"look around"}}]`, ""),
	}, Agents: map[string][]string{agentID: {
		`{"parentUuid":null,"isSidechain":true,"agentId":"` + agentID + `","userType":"external","cwd":"` + cwdA + `","sessionId":"` + IDTwo +
			`","type":"user","message":{"role":"user","content":"look around"},"uuid":"22222222-0000-4000-8000-0000000000a1","timestamp":"2026-03-02T10:00:01.000Z"}`,
		`{"parentUuid":"22222222-0000-4000-8000-0000000000a1","isSidechain":true,"agentId":"` + agentID + `","userType":"external","cwd":"` + cwdA + `","sessionId":"` + IDTwo +
			`","type":"assistant","message":{"id":"msg_a1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"looked"}],"usage":{"input_tokens":3,"output_tokens":2}},"uuid":"22222222-0000-4000-8000-0000000000a2","timestamp":"2026-03-02T10:00:02.000Z"}`,
	}}}
	three := Seed{Cwd: cwdB, ID: IDThree, Main: []string{
		row("user", "33333333-0000-4000-8000-000000000001", "", IDThree, cwdB, "2026-03-03T10:00:00.000Z", `"beta question"`, ""),
		row("assistant", "33333333-0000-4000-8000-000000000002", "33333333-0000-4000-8000-000000000001", IDThree, cwdB, "2026-03-03T10:00:05.000Z", `[{"type":"text","text":"beta answer"}]`, ""),
	}, Lifecycle: []string{
		`{"type":"scribe-lifecycle","event":"session_start","sessionId":"` + IDThree + `","uuid":"33333333-0000-4000-8000-0000000000f1","timestamp":"2026-03-03T10:00:00.000Z"}`,
	}}
	return []Seed{one, two, three}
}

// WriteFiles lays seeds out as Claude Code lays out its folder, under
// configDir: the local store's own write, and the oracle's.
func WriteFiles(t testing.TB, configDir string, seeds []Seed) {
	t.Helper()
	l := jsonl.Layout{ConfigDir: configDir}
	write := func(path string, lines []string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range seeds {
		dir := l.ProjectDir(s.Cwd)
		write(claudedir.MainFile(dir, s.ID), s.Main)
		for a, lines := range s.Agents {
			write(claudedir.AgentFile(dir, s.ID, a), lines)
		}
		if len(s.Lifecycle) > 0 {
			write(claudedir.SidecarFile(dir, s.ID), s.Lifecycle)
		}
	}
}

// Entries is every line of the seeds as entries, in order: what a store
// is given through its sink.
func Entries(t testing.TB, seeds []Seed) []core.Entry {
	t.Helper()
	var out []core.Entry
	add := func(line string) {
		e, err := core.ParseEntry([]byte(line))
		if err != nil {
			t.Fatalf("seed line %s: %v", line, err)
		}
		out = append(out, e)
	}
	for _, s := range seeds {
		for _, l := range s.Main {
			add(l)
		}
		for _, a := range slices.Sorted(mapKeys(s.Agents)) {
			for _, l := range s.Agents[a] {
				add(l)
			}
		}
		for _, l := range s.Lifecycle {
			add(l)
		}
	}
	return out
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// RunStoreContract checks a store against the contract: reading (list,
// resolve, info, messages, subagents, transcript, lifecycle) gives the
// local reader's answers for the same lines; each capability the store
// has does what it says, as the next opening of the store shows.
func RunStoreContract(t *testing.T, f Fixture) {
	seeds := Seeds()
	oracle := jsonl.Layout{ConfigDir: t.TempDir()}
	WriteFiles(t, oracle.ConfigDir, seeds)
	ctx := context.Background()
	t.Run("read", func(t *testing.T) {
		open := f.New(t, seeds)
		st := open()
		defer st.Close(ctx)
		checkList(t, st, oracle)
		checkResolve(t, st)
		for _, s := range seeds {
			checkSession(t, st, oracle, s)
		}
		if _, _, err := st.Messages(ctx, "cccc4444-4444-4444-8444-444444444444", sessions.MessagesOptions{}); !errors.Is(err, sessions.ErrNotFound) {
			t.Errorf("Messages of an unknown session: %v, want ErrNotFound", err)
		}
	})
	t.Run("capabilities", func(t *testing.T) {
		open := f.New(t, seeds)
		checkManager(t, open)
		checkForker(t, open)
		checkTrasher(t, open)
	})
}

// listed is what a listing says of a session, without what depends on
// where it is kept (mtime, path).
type listed struct {
	ID, Summary, CustomTitle, FirstPrompt, GitBranch, Cwd, Tag string
	Size                                                       int64
}

func summarize(infos []sessions.Info) []listed {
	out := make([]listed, 0, len(infos))
	for _, i := range infos {
		out = append(out, listed{i.SessionID, i.Summary, i.CustomTitle, i.FirstPrompt, i.GitBranch, i.Cwd, i.Tag, i.FileSize})
	}
	slices.SortFunc(out, func(a, b listed) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func checkList(t *testing.T, st sessions.Store, oracle jsonl.Layout) {
	ctx := context.Background()
	all := sessions.ListOptions{IncludeProgrammatic: true, IncludeWorktrees: true}
	want, err := oracle.List(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.List(ctx, all)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if g, w := summarize(got), summarize(want); !reflect.DeepEqual(g, w) {
		t.Errorf("List:\n got %+v\nwant %+v", g, w)
	}
	recs, err := st.Records(ctx, all)
	if err != nil || len(recs) != len(want) {
		t.Errorf("Records: %d records, %v; want %d", len(recs), err, len(want))
	}
	one := all
	one.Dir = "/work/beta"
	got, err = st.List(ctx, one)
	if err != nil || len(got) != 1 || got[0].SessionID != IDThree {
		t.Errorf("List of project /work/beta: %+v, %v; want only %s", summarize(got), err, IDThree)
	}
}

func checkResolve(t *testing.T, st sessions.Store) {
	ctx := context.Background()
	if id, err := st.Resolve(ctx, "bbbb"); err != nil || id != IDThree {
		t.Errorf("Resolve(bbbb) = %q, %v; want %s", id, err, IDThree)
	}
	if id, err := st.Resolve(ctx, strings.ToUpper(IDOne)); err != nil || id != IDOne {
		t.Errorf("Resolve(full id in upper case) = %q, %v", id, err)
	}
	if _, err := st.Resolve(ctx, "aaaa"); !errors.Is(err, sessions.ErrAmbiguous) || !strings.Contains(err.Error(), IDOne) || !strings.Contains(err.Error(), IDTwo) {
		t.Errorf("Resolve(aaaa) = %v; want ErrAmbiguous naming both", err)
	}
	if _, err := st.Resolve(ctx, "cccc"); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Resolve(cccc) = %v; want ErrNotFound", err)
	}
	if _, err := st.Resolve(ctx, "../x"); err == nil {
		t.Error("Resolve(../x) is no error")
	}
}

func asJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func checkSession(t *testing.T, st sessions.Store, oracle jsonl.Layout, s Seed) {
	ctx := context.Background()
	want, _, err := oracle.Messages(ctx, s.ID, "", sessions.MessagesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, rep, err := st.Messages(ctx, s.ID, sessions.MessagesOptions{})
	if err != nil {
		t.Fatalf("Messages(%s): %v", s.ID, err)
	}
	if asJSON(t, got) != asJSON(t, want) {
		t.Errorf("Messages(%s):\n got %s\nwant %s", s.ID, asJSON(t, got), asJSON(t, want))
	}
	if rep == nil || len(rep.Malformed) != 0 || rep.Torn {
		t.Errorf("Messages(%s) report: %+v", s.ID, rep)
	}
	wi, _ := oracle.Info(ctx, s.ID, "")
	gi, err := st.Info(ctx, s.ID)
	if err != nil || gi == nil || wi == nil || summarize([]sessions.Info{*gi})[0] != summarize([]sessions.Info{*wi})[0] {
		t.Errorf("Info(%s) = %+v, %v; want %+v", s.ID, gi, err, wi)
	}
	agents, err := st.Subagents(ctx, s.ID)
	if err != nil || len(agents) != len(s.Agents) {
		t.Errorf("Subagents(%s) = %v, %v; want %d", s.ID, agents, err, len(s.Agents))
	}
	var parents map[string]string
	if sp, ok := st.(sessions.SubagentParents); ok {
		if parents, err = sp.SubagentParents(ctx, s.ID); err != nil {
			t.Errorf("SubagentParents(%s): %v", s.ID, err)
		}
	}
	for a, lines := range s.Agents {
		at, err := st.AgentTranscript(ctx, s.ID, a)
		if err != nil || len(at.Entries) != len(lines) || at.Entries[0].AgentID != a {
			t.Errorf("AgentTranscript(%s, %s): %v; want %d entries", s.ID, a, err, len(lines))
		}
		if _, err := st.AgentTranscript(ctx, s.ID, "nosuchagent"); !errors.Is(err, sessions.ErrNotFound) {
			t.Errorf("AgentTranscript of an unknown agent: %v, want ErrNotFound", err)
		}
		wm, _, _ := oracle.SubagentMessages(ctx, s.ID, a, "", sessions.MessagesOptions{})
		gm, _, err := st.SubagentMessages(ctx, s.ID, a, sessions.MessagesOptions{})
		if err != nil || asJSON(t, gm) != asJSON(t, wm) || len(gm) == 0 {
			t.Errorf("SubagentMessages(%s, %s) = %s, %v; want %s", s.ID, a, asJSON(t, gm), err, asJSON(t, wm))
		}
		if parents != nil && len(gm) > 0 {
			want := ""
			if gm[0].ParentToolUseID != nil {
				want = *gm[0].ParentToolUseID
			}
			if parents[a] != want {
				t.Errorf("SubagentParents(%s)[%s] = %q; its messages' parent_tool_use_id is %q", s.ID, a, parents[a], want)
			}
		}
	}
	tr, err := st.Transcript(ctx, s.ID)
	if err != nil || len(tr.Entries) != len(s.Main) || tr.Bytes == 0 {
		t.Errorf("Transcript(%s): %v; want %d entries", s.ID, err, len(s.Main))
	} else if tr.Entries[0].UUID == "" || tr.Entries[0].SessionID != s.ID {
		t.Errorf("Transcript(%s): first entry %s", s.ID, tr.Entries[0].Raw)
	}
	life, err := st.Lifecycle(ctx, s.ID)
	if err != nil || len(life) != len(s.Lifecycle) {
		t.Errorf("Lifecycle(%s) = %d records, %v; want %d", s.ID, len(life), err, len(s.Lifecycle))
	}
}

// brief is what a listing says of a session, or nil.
func brief(i *sessions.Info) any {
	if i == nil {
		return nil
	}
	return summarize([]sessions.Info{*i})[0]
}

// infoOf is a session's listing entry in a fresh opening of the store.
func infoOf(t *testing.T, open func() sessions.Store, id string) *sessions.Info {
	t.Helper()
	st := open()
	defer st.Close(context.Background())
	infos, err := st.List(context.Background(), sessions.ListOptions{IncludeProgrammatic: true})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for i := range infos {
		if infos[i].SessionID == id {
			return &infos[i]
		}
	}
	return nil
}

func checkManager(t *testing.T, open func() sessions.Store) {
	st := open()
	defer st.Close(context.Background())
	m, ok := st.(sessions.Manager)
	if !ok {
		t.Logf("%s has no Manager: %v", st.Name(), sessions.Capabilities(st))
		return
	}
	ctx := context.Background()
	if _, err := m.Rename(ctx, IDThree, "  renamed beta  ", sessions.ManageOptions{}); err != nil {
		t.Fatalf("Rename: %v", err)
	}
	if _, err := m.Tag(ctx, IDThree, "urgent", false, sessions.ManageOptions{}); err != nil {
		t.Fatalf("Tag: %v", err)
	}
	if _, err := m.Rename(ctx, "cccc4444-4444-4444-8444-444444444444", "x", sessions.ManageOptions{}); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Rename of an unknown session: %v, want ErrNotFound", err)
	}
	if _, err := m.Rename(ctx, IDThree, "   ", sessions.ManageOptions{}); err == nil {
		t.Error("Rename to an empty title is no error")
	}
	info := infoOf(t, open, IDThree)
	if info == nil || info.CustomTitle != "renamed beta" || info.Summary != "renamed beta" || info.Tag != "urgent" {
		t.Errorf("after Rename and Tag, the next listing says %+v", brief(info))
	}
	if _, err := m.Tag(ctx, IDThree, "", true, sessions.ManageOptions{}); err != nil {
		t.Fatalf("Tag clear: %v", err)
	}
	if info := infoOf(t, open, IDThree); info == nil || info.Tag != "" {
		t.Errorf("after clearing the tag, the next listing says %+v", brief(info))
	}
}

func checkForker(t *testing.T, open func() sessions.Store) {
	st := open()
	defer st.Close(context.Background())
	fk, ok := st.(sessions.Forker)
	if !ok {
		t.Logf("%s has no Forker", st.Name())
		return
	}
	ctx := context.Background()
	const newID = "dddd5555-5555-4555-8555-555555555555"
	id, _, err := fk.Fork(ctx, IDOne, fork.Options{NewSessionID: newID})
	if err != nil || id != newID {
		t.Fatalf("Fork = %q, %v", id, err)
	}
	st2 := open()
	defer st2.Close(ctx)
	msgs, _, err := st2.Messages(ctx, newID, sessions.MessagesOptions{})
	if err != nil || len(msgs) != 2 {
		t.Errorf("the fork's messages in the next opening: %d, %v; want 2", len(msgs), err)
	}
}

func checkTrasher(t *testing.T, open func() sessions.Store) {
	st := open()
	defer st.Close(context.Background())
	tr, ok := st.(sessions.Trasher)
	if !ok {
		t.Logf("%s has no Trasher", st.Name())
		return
	}
	ctx := context.Background()
	before, _, err := st.Messages(ctx, IDTwo, sessions.MessagesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dry, err := tr.Trash(ctx, IDTwo, sessions.TrashOptions{Reason: "rm", DryRun: true})
	if err != nil || len(dry) != 1 || infoOf(t, open, IDTwo) == nil {
		t.Fatalf("Trash --dry-run: %d items, %v, or the session went", len(dry), err)
	}
	items, err := tr.Trash(ctx, IDTwo, sessions.TrashOptions{Reason: "rm"})
	if err != nil || len(items) != 1 {
		t.Fatalf("Trash: %d items, %v", len(items), err)
	}
	if infoOf(t, open, IDTwo) != nil {
		t.Error("the trashed session is still listed")
	}
	st2 := open()
	defer st2.Close(ctx)
	listed, _, err := st2.(sessions.Trasher).TrashItems(ctx)
	if err != nil || len(listed) != 1 || listed[0].SessionID != IDTwo {
		t.Fatalf("TrashItems = %+v, %v", listed, err)
	}
	if _, err := st2.(sessions.Trasher).Restore(ctx, listed[0].ID, sessions.RestoreOptions{}); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	st3 := open()
	defer st3.Close(ctx)
	after, _, err := st3.Messages(ctx, IDTwo, sessions.MessagesOptions{})
	if err != nil || asJSON(t, after) != asJSON(t, before) {
		t.Errorf("after Restore: %v\n got %s\nwant %s", err, asJSON(t, after), asJSON(t, before))
	}
	if agents, err := st3.Subagents(ctx, IDTwo); err != nil || len(agents) != 1 {
		t.Errorf("after Restore, subagents %v, %v", agents, err)
	}
	if left, _, _ := st3.(sessions.Trasher).TrashItems(ctx); len(left) != 0 {
		t.Errorf("after Restore the trash still holds %d items", len(left))
	}
	// Empty: trash again, then empty the trash.
	if _, err := st3.(sessions.Trasher).Trash(ctx, IDTwo, sessions.TrashOptions{Reason: "rm"}); err != nil {
		t.Fatal(err)
	}
	gone, err := st3.(sessions.Trasher).EmptyTrash(ctx, 0, false, time.Now())
	if err != nil || len(gone) != 1 {
		t.Errorf("EmptyTrash: %d, %v", len(gone), err)
	}
}
