package jsonl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/internal/testenv"
)

// The hand-made sessions of testdata/sdk-0.3.337 (see its README.md) carry
// every field and row that changed between SDK 0.3.332 and 0.3.337. Each
// test below lays them into fresh config folders and compares scribe's
// answers with the pinned SDK's: when the pin moves, what the next
// release changes shows up here as a failure.

// sdk337Cwd is the fixtures' project path.
const sdk337Cwd = "/home/alice/src/shop"

// sdk337Config copies the fixture tree into a new config folder.
func sdk337Config(t *testing.T) string {
	t.Helper()
	cfg := t.TempDir()
	forkCopyTree(t, filepath.Join(testenv.RepoRoot(t), "testdata", "sdk-0.3.337"), cfg)
	return cfg
}

// sdk337Sessions are the fixture's session ids (main transcripts and
// session folders), sorted.
func sdk337Sessions(t *testing.T, cfg string) []string {
	t.Helper()
	ents, err := os.ReadDir(Layout{ConfigDir: cfg}.ProjectDir(sdk337Cwd))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var ids []string
	for _, e := range ents {
		id := strings.TrimSuffix(e.Name(), ".jsonl")
		if claudedir.IsSessionID(id) && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	if len(ids) < 15 {
		t.Fatalf("testdata/sdk-0.3.337 has %d sessions, want 15", len(ids))
	}
	return ids
}

func TestSDK337FixturesListing(t *testing.T) {
	p := peer.Find(t)
	cfg := sdk337Config(t)
	ids := map[string]string{}
	for _, id := range sdk337Sessions(t, cfg) {
		ids[id] = sdk337Cwd
	}
	lstCompare(t, p, cfg, lstQueriesFor([]string{sdk337Cwd}, ids))

	// The rules themselves, so that a listing that agrees with the SDK for
	// another reason does not pass unnoticed.
	l := Layout{ConfigDir: cfg}
	infos, err := l.List(context.Background(), ListOptions{IncludeWorktrees: true})
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]SessionInfo{}
	for _, in := range infos {
		shown[in.SessionID] = in
	}
	// nestedSession after "userType": on the first and the last row: hidden.
	for _, id := range []string{"a3370004-0000-4000-8000-000000000004", "a3370013-0000-4000-8000-000000000013",
		"a3370015-0000-4000-8000-000000000015"} {
		if _, ok := shown[id]; ok {
			t.Errorf("nested session %s is listed with includeProgrammatic false", id)
		}
	}
	for _, id := range []string{"a3370005-0000-4000-8000-000000000005", "a3370006-0000-4000-8000-000000000006",
		"a3370007-0000-4000-8000-000000000007", "a3370014-0000-4000-8000-000000000014"} {
		if _, ok := shown[id]; !ok {
			t.Errorf("%s is hidden with includeProgrammatic false", id)
		}
	}
	for id, want := range map[string]string{
		"a3370008-0000-4000-8000-000000000008": "Family 👨\u200d👩\u200d👧 trip   plan",
		"a3370009-0000-4000-8000-000000000009": "می\u200cخواهم   بروم",
		"a3370010-0000-4000-8000-000000000010": strings.Repeat("x", 50),
	} {
		if got := shown[id].CustomTitle; got != want {
			t.Errorf("%s: sidecar title %q, want %q", id, got, want)
		}
	}
}

func TestSDK337FixturesMessages(t *testing.T) {
	p := peer.Find(t)
	cfg := sdk337Config(t)
	l := Layout{ConfigDir: cfg}
	ids := sdk337Sessions(t, cfg)
	var qs []sdkQuery
	for _, id := range ids {
		qs = append(qs, sdkQuery{Op: "messages", Session: id, System: true},
			sdkQuery{Op: "messages", Session: id, Dir: sdk337Cwd},
			sdkQuery{Op: "subagents", Session: id})
	}
	agents := map[string][]string{}
	for _, id := range ids {
		files, _ := walkAgents(context.Background(), nil, claudedir.MainFile(l.ProjectDir(sdk337Cwd), id), "")
		for _, a := range files {
			agents[id] = append(agents[id], a.id)
			qs = append(qs, sdkQuery{Op: "subagentMessages", Session: id, Agent: a.id})
		}
	}
	ans := sdkBatch(t, p, cfg, qs)
	msgs := 0
	for i, q := range qs {
		what := fmt.Sprintf("%s %s dir=%q system=%v", q.Op, q.Session, q.Dir, q.System)
		switch q.Op {
		case "messages":
			got, err := sdk337Messages(l, q)
			if err != nil {
				t.Errorf("%s: %v", what, err)
				continue
			}
			w := rawList(t, ans[i].OK)
			msgs += len(w)
			sameMessages(t, what, got, w)
		case "subagents":
			var w []string
			if err := json.Unmarshal(ans[i].OK, &w); err != nil {
				t.Fatal(err)
			}
			got, err := l.Subagents(context.Background(), q.Session, q.Dir)
			if err != nil {
				t.Errorf("%s: %v", what, err)
			}
			if len(got) != 0 || len(w) != 0 {
				if !reflect.DeepEqual(got, w) {
					t.Errorf("%s: %v, SDK %v", what, got, w)
				}
			}
		case "subagentMessages":
			got, _, err := l.SubagentMessages(context.Background(), q.Session, q.Agent, q.Dir, MessagesOptions{})
			if err != nil {
				t.Errorf("%s/%s: %v", what, q.Agent, err)
				continue
			}
			w := rawList(t, ans[i].OK)
			msgs += len(w)
			sameMessages(t, what+"/"+q.Agent, got, w)
		}
	}
	if msgs < 100 {
		t.Errorf("only %d SDK messages compared", msgs)
	}
	t.Logf("%d sessions, %d SDK messages compared", len(ids), msgs)
}

// sdk337Messages is scribe's getSessionMessages for a query.
func sdk337Messages(l Layout, q sdkQuery) ([]SessionMessage, error) {
	msgs, _, err := l.Messages(context.Background(), q.Session, q.Dir, MessagesOptions{IncludeSystem: q.System})
	return msgs, err
}

// TestSDK337SubagentOnlySession: a session id with only subagent files
// (no <id>.jsonl) reads as the SDK reads it: no messages, no subagents,
// and no "not found" error; an id with nothing at all stays not found.
func TestSDK337SubagentOnlySession(t *testing.T) {
	cfg := sdk337Config(t)
	l := Layout{ConfigDir: cfg}
	ctx := context.Background()
	const id = "a3370012-0000-4000-8000-000000000012"
	for _, dir := range []string{"", sdk337Cwd} {
		msgs, rep, err := l.Messages(ctx, id, dir, MessagesOptions{})
		if err != nil || len(msgs) != 0 {
			t.Errorf("Messages(dir=%q) = %d messages, %v; want none and no error", dir, len(msgs), err)
		}
		if rep == nil || rep.Path != "" {
			t.Errorf("Messages(dir=%q) report %+v, want no path", dir, rep)
		}
		if agents, err := l.Subagents(ctx, id, dir); err != nil || len(agents) != 0 {
			t.Errorf("Subagents(dir=%q) = %v, %v; want none", dir, agents, err)
		}
		if am, _, err := l.SubagentMessages(ctx, id, "f0f0f0", dir, MessagesOptions{}); err != nil || len(am) != 0 {
			t.Errorf("SubagentMessages(dir=%q) = %d, %v; want none", dir, len(am), err)
		}
	}
	if _, _, err := l.Messages(ctx, "a3370099-0000-4000-8000-000000000099", "", MessagesOptions{}); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("Messages(unknown) = %v, want not found", err)
	}
}

func TestSDK337FixturesFork(t *testing.T) {
	p := peer.Find(t)
	sdkCfg, ourCfg := sdk337Config(t), sdk337Config(t)
	var cases []*forkCase
	for _, id := range sdk337Sessions(t, ourCfg) {
		path := claudedir.MainFile(Layout{ConfigDir: ourCfg}.ProjectDir(sdk337Cwd), id)
		src, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // the subagent-only session: nothing to fork
		} else if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, &forkCase{name: id + "/whole", source: id},
			&forkCase{name: id + "/title", source: id, title: " Named "})
		// Cut at every row, so that every state:kept row comes after a cut.
		for _, u := range sdk337RowUUIDs(src) {
			cases = append(cases, &forkCase{name: id + "/cut-" + u, source: id, upTo: u})
		}
	}
	forkBatchCompare(t, p, sdkCfg, ourCfg, cases)
	t.Logf("%d SDK/scribe fork pairs compared", len(cases))
}

// sdk337RowUUIDs are the distinct uuids of a file's rows, in order.
func sdk337RowUUIDs(src []byte) []string {
	seen := map[string]bool{}
	var out []string
	for _, ln := range strings.Split(string(src), "\n") {
		var r struct {
			UUID string `json:"uuid"`
		}
		if json.Unmarshal([]byte(ln), &r) == nil && r.UUID != "" && !seen[r.UUID] {
			seen[r.UUID] = true
			out = append(out, r.UUID)
		}
	}
	return out
}

// TestIndexEqualsListOnSDK337Fixtures: the index keeps what the 0.3.337
// programmatic filter needs (the nested flag), so a listing from the index
// hides what List hides.
func TestIndexEqualsListOnSDK337Fixtures(t *testing.T) {
	ixNoRacy(t)
	ixCompare(t, Layout{ConfigDir: sdk337Config(t)}, ixQueries([]string{sdk337Cwd}))
}
