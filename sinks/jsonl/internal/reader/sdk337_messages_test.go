package reader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/transcript"
)

// See sinks/jsonl/internal/listing/sdk337_test.go.

func TestSDK337FixturesMessages(t *testing.T) {
	p := peer.Find(t)
	cfg := jsonltest.SDK337Config(t)
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
	ids := jsonltest.SDK337Sessions(t, cfg)
	var qs []sdkQuery
	for _, id := range ids {
		qs = append(qs, sdkQuery{Op: "messages", Session: id, System: true},
			sdkQuery{Op: "messages", Session: id, Dir: jsonltest.SDK337Cwd},
			sdkQuery{Op: "subagents", Session: id})
	}
	agents := map[string][]string{}
	for _, id := range ids {
		files, _ := WalkAgents(context.Background(), nil, claudedir.MainFile(l.ProjectDir(jsonltest.SDK337Cwd), id), "")
		for _, a := range files {
			agents[id] = append(agents[id], a.ID)
			qs = append(qs, sdkQuery{Op: "subagentMessages", Session: id, Agent: a.ID})
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
			got, _, err := l.SubagentMessages(context.Background(), q.Session, q.Agent, q.Dir, sessions.MessagesOptions{})
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
func sdk337Messages(l Layout, q sdkQuery) ([]transcript.SessionMessage, error) {
	msgs, _, err := l.Messages(context.Background(), q.Session, q.Dir, sessions.MessagesOptions{IncludeSystem: q.System})
	return msgs, err
}

// TestSDK337SubagentOnlySession: a session id with only subagent files
// (no <id>.jsonl) reads as the SDK reads it: no messages, no subagents,
// and no "not found" error; an id with nothing at all stays not found.
func TestSDK337SubagentOnlySession(t *testing.T) {
	cfg := jsonltest.SDK337Config(t)
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
	ctx := context.Background()
	const id = "a3370012-0000-4000-8000-000000000012"
	for _, dir := range []string{"", jsonltest.SDK337Cwd} {
		msgs, rep, err := l.Messages(ctx, id, dir, sessions.MessagesOptions{})
		if err != nil || len(msgs) != 0 {
			t.Errorf("Messages(dir=%q) = %d messages, %v; want none and no error", dir, len(msgs), err)
		}
		if rep == nil || rep.Path != "" {
			t.Errorf("Messages(dir=%q) report %+v, want no path", dir, rep)
		}
		if agents, err := l.Subagents(ctx, id, dir); err != nil || len(agents) != 0 {
			t.Errorf("Subagents(dir=%q) = %v, %v; want none", dir, agents, err)
		}
		if am, _, err := l.SubagentMessages(ctx, id, "f0f0f0", dir, sessions.MessagesOptions{}); err != nil || len(am) != 0 {
			t.Errorf("SubagentMessages(dir=%q) = %d, %v; want none", dir, len(am), err)
		}
	}
	if _, _, err := l.Messages(ctx, "a3370099-0000-4000-8000-000000000099", "", sessions.MessagesOptions{}); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("Messages(unknown) = %v, want not found", err)
	}
}
