package reader

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

func TestMessagesMatchSDKOnRandomTranscripts(t *testing.T) {
	p := peer.Find(t)
	cfg := t.TempDir()
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
	const n = 400
	proj := filepath.Join(cfg, "projects", "-rand")
	var qs []sdkQuery
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%08x-1111-4111-8111-111111111111", i)
		writeFile(t, filepath.Join(proj, id+".jsonl"), jsonltest.RandomTranscript(uint64(i), false))
		writeFile(t, filepath.Join(proj, id, "subagents", "agent-a1.jsonl"), jsonltest.RandomTranscript(uint64(i+n), i%2 == 0))
		writeFile(t, filepath.Join(proj, id, "subagents", "agent-a1.meta.json"),
			[]byte(fmt.Sprintf(`{"toolUseId":"toolu_%d","parentAgentId":%q}`, i, []string{"p1", "bad id", ""}[i%3])))
		qs = append(qs, sdkQuery{Op: "messages", Session: id, System: true},
			sdkQuery{Op: "subagentMessages", Session: id, Agent: "a1"})
	}
	ans := sdkBatch(t, p, cfg, qs)
	total := 0
	for i, q := range qs {
		w := rawList(t, ans[i].OK)
		total += len(w)
		if q.Op == "messages" {
			got, _ := messagesOrEmpty(t, l, q.Session, "", sessions.MessagesOptions{IncludeSystem: true})
			sameMessages(t, q.Session+" system=true", got, w)
			got, _ = messagesOrEmpty(t, l, q.Session, "", sessions.MessagesOptions{})
			sameMessages(t, q.Session+" system=false", got, jsonltest.WithoutSystem(t, w))
		} else {
			sameMessages(t, q.Session+"/a1", subagentMessagesOrEmpty(t, l, q.Session, "a1", ""), w)
		}
		if t.Failed() {
			t.Logf("file: %s", filepath.Join(proj, q.Session+".jsonl"))
			return
		}
	}
	t.Logf("%d random transcripts, %d SDK messages compared", 2*n, total)
}
