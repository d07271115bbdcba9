package transcript

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
)

// rcConvFixture builds a conversation row by row: each row gets the next
// uuid, the previous row as parent, a timestamp one second after the
// previous, and Claude Code's envelope.
type rcConvFixture struct {
	t    *testing.T
	conv []core.Entry
	base time.Time
	// tail is the envelope after the message keys.
	tail string
}

var rcFixtureBase = time.Date(2026, 1, 10, 11, 0, 0, 0, time.UTC)

func rcNewConv(t *testing.T) *rcConvFixture {
	t.Helper()
	return &rcConvFixture{t: t, base: rcFixtureBase,
		tail: `"userType":"external","entrypoint":"cli","cwd":"/home/alice/shop","sessionId":"0565aaaa-0000-4000-8000-000000000001","version":"2.1.332","gitBranch":"main"`}
}

func rcRowUUID(i int) string { return fmt.Sprintf("4f7e0000-0000-4000-8000-%012d", i) }

// row appends a row whose message keys are body.
func (f *rcConvFixture) row(body string) *rcConvFixture {
	f.t.Helper()
	return f.rowWith(body, "")
}

// rowWith appends a row with extra keys after uuid and timestamp.
func (f *rcConvFixture) rowWith(body, extra string) *rcConvFixture {
	f.t.Helper()
	n := len(f.conv)
	parent := "null"
	if n > 0 {
		parent = `"` + f.conv[n-1].UUID + `"`
	}
	ts := f.base.Add(time.Duration(n) * time.Second).Format(recTimestampLayout)
	line := fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,%s,"uuid":"%s","timestamp":"%s",%s%s}`,
		parent, body, rcRowUUID(n+1), ts, extra, f.tail)
	e, err := core.ParseEntry([]byte(line))
	if err != nil {
		f.t.Fatalf("fixture row %d: %v\n%s", n, err, line)
	}
	f.conv = append(f.conv, e)
	return f
}

func (f *rcConvFixture) entries() []core.Entry { return append([]core.Entry(nil), f.conv...) }

func rcJq(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func rcPrompt(text string) string {
	return `"type":"user","message":{"role":"user","content":` + rcJq(text) + `}`
}

func rcMetaPrompt(text string) string { return rcPrompt(text) + `,"isMeta":true` }

func rcTextBlock(s string) string { return `{"type":"text","text":` + rcJq(s) + `}` }

func rcUseBlock(id, name string) string {
	return `{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":{}}`
}

func rcAssistant(msgID, stop string, blocks ...string) string {
	return `"message":{"model":"claude-sonnet-4-5","id":"` + msgID + `","type":"message","role":"assistant","content":[` +
		strings.Join(blocks, ",") + `],"stop_reason":"` + stop + `","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}},"requestId":"req_1","type":"assistant"`
}

func rcResults(ids ...string) string {
	var bs []string
	for _, id := range ids {
		bs = append(bs, `{"tool_use_id":"`+id+`","type":"tool_result","content":"ok"}`)
	}
	return `"type":"user","message":{"role":"user","content":[` + strings.Join(bs, ",") + `]}`
}

func rcAttachment(typ string) string {
	return `"attachment":{"type":"` + typ + `"},"type":"attachment"`
}

func rcSystemRow(subtype string) string {
	return `"type":"system","subtype":"` + subtype + `","content":"x","isMeta":false`
}

func rcCounter(prefix string) func() string {
	n := 0
	return func() string {
		n++
		return fmt.Sprintf("%s-0000-4000-8000-%012d", prefix, n)
	}
}

func rcRecoveryOpts() core.RecoveryOptions {
	return core.RecoveryOptions{Now: rcFixtureBase.Add(time.Hour), NewUUID: rcCounter("9e9e9e9e")}
}

func rcKinds(rs []core.Repair) string {
	var k []string
	for _, r := range rs {
		k = append(k, r.Kind+":"+r.ToolUseID)
	}
	return strings.Join(k, ",")
}

// rcClassifyCase is a conversation, the options to classify it with, and
// what ClassifyAndRepair should make of it.
type rcClassifyCase struct {
	name  string
	build func(f *rcConvFixture)
	opt   func(o *core.RecoveryOptions)
	class core.Interruption
	// repairs is "kind:toolUseID,…".
	repairs    string
	promptRow  int // 1-based row of PromptUUID; -1 = the continue rcPrompt; 0 = none
	unrepaired string
}

// rcClassifyCases are TestClassifyAndRepair's cases, in order.
func rcClassifyCases() []rcClassifyCase {
	const (
		tr = RepairToolResult
		cp = RepairContinue
	)
	return []rcClassifyCase{
		{name: "empty", build: func(f *rcConvFixture) {}, class: core.InterruptionNone},
		{name: "finished turn", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "end_turn", rcTextBlock("hello")))
		}, class: core.InterruptionNone},
		{name: "unanswered rcPrompt", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "end_turn", rcTextBlock("hello"))).row(rcPrompt("again"))
		}, class: core.InterruptedPrompt, promptRow: 3},
		{name: "prompt then system and api error rows", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcSystemRow("api_error")).
				rowWith(rcAssistant("msg_e", "stop_sequence", rcTextBlock("API Error: 529")), `"isApiErrorMessage":true,`)
		}, class: core.InterruptedPrompt, promptRow: 1},
		{name: "prompt then attachments", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAttachment("environment")).row(rcAttachment("date"))
		}, class: core.InterruptedTurn, repairs: cp + ":", promptRow: -1},
		{name: "queued rcPrompt", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "end_turn", rcTextBlock("hello"))).row(rcAttachment("queued_command"))
		}, class: core.InterruptedPrompt, promptRow: 3},
		{name: "tool result last", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Bash"))).row(rcResults("toolu_a"))
		}, class: core.InterruptedTurn, repairs: cp + ":", promptRow: -1},
		{name: "tool result then meta and reminder", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Bash"))).row(rcResults("toolu_a")).
				row(rcMetaPrompt("<system-reminder>x</system-reminder>")).row(rcAttachment("total_tokens_reminder"))
		}, class: core.InterruptedTurn, repairs: cp + ":", promptRow: -1},
		{name: "tool call without result", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcTextBlock("let me look"), rcUseBlock("toolu_a", "Read")))
		}, class: core.InterruptedTurn, repairs: tr + ":toolu_a," + cp + ":", promptRow: -1},
		{name: "too old to continue", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Read")))
		}, opt: func(o *core.RecoveryOptions) { o.MaxAge = 30 * time.Minute },
			class: core.InterruptedTurn, repairs: tr + ":toolu_a"},
		{name: "within max age", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Read")))
		}, opt: func(o *core.RecoveryOptions) { o.MaxAge = 6 * time.Hour },
			class: core.InterruptedTurn, repairs: tr + ":toolu_a," + cp + ":", promptRow: -1},
		{name: "parallel calls, one answered", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Read"), rcUseBlock("toolu_b", "Grep"))).
				row(rcResults("toolu_a"))
		}, class: core.InterruptedTurn, repairs: tr + ":toolu_b," + cp + ":", promptRow: -1},
		{name: "split rcAssistant rows, parallel calls", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).
				row(rcAssistant("msg_1", "tool_use", rcTextBlock("two reads"))).
				row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Read"))).
				row(rcResults("toolu_a")).
				row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_b", "Read"))).
				row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_c", "Read")))
		}, class: core.InterruptedTurn, repairs: tr + ":toolu_b," + tr + ":toolu_c," + cp + ":", promptRow: -1},
		{name: "orphan in an earlier turn", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_old", "Bash"))).
				row(rcPrompt("never mind")).row(rcAssistant("msg_2", "end_turn", rcTextBlock("ok")))
		}, class: core.InterruptionNone, unrepaired: "toolu_old"},
		{name: "compact summary", build: func(f *rcConvFixture) {
			f.row(rcSystemRow("compact_boundary")).
				row(rcPrompt("This session is being continued…") + `,"isVisibleInTranscriptOnly":true,"isCompactSummary":true`)
		}, class: core.InterruptionNone},
		{name: "local command", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "end_turn", rcTextBlock("hello"))).
				row(rcMetaPrompt("<local-command-caveat>Caveat</local-command-caveat>")).
				row(rcPrompt("<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args></command-args>")).
				row(rcPrompt("<local-command-stdout>Set model to opus</local-command-stdout>"))
		}, class: core.InterruptionNone},
		{name: "local command output in blocks", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "end_turn", rcTextBlock("hello"))).
				row(`"type":"user","message":{"role":"user","content":[{"type":"image","source":{}},` + rcTextBlock("<local-command-stdout>ok</local-command-stdout>") + `]}`)
		}, class: core.InterruptionNone},
		{name: "prompt in blocks", build: func(f *rcConvFixture) {
			f.row(`"type":"user","message":{"role":"user","content":[` + rcTextBlock("look at this") + `,{"type":"image","source":{}}]}`)
		}, class: core.InterruptedPrompt, promptRow: 1},
		{name: "bash mode", build: func(f *rcConvFixture) {
			f.row(rcPrompt("<bash-input>ls</bash-input>")).row(rcPrompt("<bash-stdout>a b</bash-stdout><bash-stderr></bash-stderr>"))
		}, class: core.InterruptionNone},
		{name: "prompt command", build: func(f *rcConvFixture) {
			f.row(rcPrompt("<command-message>init is analyzing your codebase…</command-message>\n<command-name>/init</command-name>")).
				row(rcMetaPrompt("Please analyze this codebase"))
		}, class: core.InterruptedPrompt, promptRow: 1},
		{name: "user stopped the turn", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Bash"))).
				row(`"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"[Request interrupted by user for tool use]","is_error":true,"tool_use_id":"toolu_a"}]}`).
				row(`"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]}`)
		}, class: core.InterruptionNone},
		{name: "unanswered continue rcPrompt", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Bash"))).row(rcResults("toolu_a")).
				row(rcMetaPrompt(DefaultContinueText) + `,"rowSource":"harness"`)
		}, class: core.InterruptedPrompt, promptRow: 4},
		{name: "prompt after an orphan keeps its class", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Bash"))).row(rcPrompt("hello?"))
		}, class: core.InterruptedPrompt, repairs: tr + ":toolu_a", promptRow: 3},
	}
}

func TestClassifyAndRepair(t *testing.T) {
	for _, tc := range rcClassifyCases() {
		t.Run(tc.name, func(t *testing.T) { rcCheckClassification(t, tc) })
	}
}

// rcCheckClassification builds tc's conversation, classifies and repairs
// it, and checks the class, repairs, unrepaired calls, reason, prompt and
// the repairs' chain.
func rcCheckClassification(t *testing.T, tc rcClassifyCase) {
	f := rcNewConv(t)
	tc.build(f)
	opt := rcRecoveryOpts()
	if tc.opt != nil {
		tc.opt(&opt)
	}
	conv := f.entries()
	rec := ClassifyAndRepair(conv, opt)
	if rec.Class != tc.class {
		t.Errorf("Class = %s, want %s (reason %q)", rec.Class, tc.class, rec.Reason)
	}
	if got := rcKinds(rec.Repairs); got != tc.repairs {
		t.Errorf("repairs = %q, want %q (reason %q)", got, tc.repairs, rec.Reason)
	}
	if got := strings.Join(rec.Unrepaired, ","); got != tc.unrepaired {
		t.Errorf("Unrepaired = %q, want %q", got, tc.unrepaired)
	}
	if rec.Reason == "" {
		t.Error("no reason")
	}
	wantPrompt := ""
	switch {
	case tc.promptRow > 0:
		wantPrompt = rcRowUUID(tc.promptRow)
	case tc.promptRow < 0:
		wantPrompt = rec.Repairs[len(rec.Repairs)-1].Entry.UUID
	}
	if rec.PromptUUID != wantPrompt {
		t.Errorf("PromptUUID = %q, want %q", rec.PromptUUID, wantPrompt)
	}
	rcCheckRepairChain(t, conv, rec.Repairs, "")
}

// rcCheckRepairChain checks that the repairs hang from leaf (default the last
// row) and then from each other, carry the session's envelope, and are
// well-formed entries.
func rcCheckRepairChain(t *testing.T, conv []core.Entry, repairs []core.Repair, leaf string) {
	t.Helper()
	parent := leaf
	if parent == "" && len(conv) > 0 {
		parent = conv[len(conv)-1].UUID
	}
	seen := map[string]bool{}
	for _, e := range conv {
		seen[e.UUID] = true
	}
	for i, r := range repairs {
		e := r.Entry
		if e.Type != core.TypeUser || e.Role != "user" {
			t.Errorf("repair %d: type %q role %q", i, e.Type, e.Role)
		}
		if !e.ParentUUID.Valid() || e.ParentUUID.Value != parent {
			t.Errorf("repair %d: parentUuid %+v, want %q", i, e.ParentUUID, parent)
		}
		if e.UUID == "" || seen[e.UUID] {
			t.Errorf("repair %d: uuid %q not fresh", i, e.UUID)
		}
		seen[e.UUID] = true
		if len(conv) > 0 && (e.SessionID != conv[0].SessionID || e.CWD != conv[0].CWD) {
			t.Errorf("repair %d: session %q cwd %q", i, e.SessionID, e.CWD)
		}
		if e.IsMeta != (r.Kind == RepairContinue) {
			t.Errorf("repair %d (%s): isMeta %v", i, r.Kind, e.IsMeta)
		}
		if !core.ValidJSON(e.Raw) {
			t.Errorf("repair %d: invalid JSON %s", i, e.Raw)
		}
		parent = e.UUID
	}
}

func TestRepairLineShapes(t *testing.T) {
	f := rcNewConv(t)
	f.row(rcPrompt("Fix the login bug") + `,"promptId":"p-1"`)
	f.row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_01", "Bash")))
	conv := f.entries()
	opt := core.RecoveryOptions{Now: time.Date(2026, 1, 10, 11, 30, 0, 5e6, time.UTC), NewUUID: rcCounter("9e9e9e9e")}
	rec := ClassifyAndRepair(conv, opt)
	if len(rec.Repairs) != 2 {
		t.Fatalf("repairs = %s", rcKinds(rec.Repairs))
	}
	env := `"userType":"external","entrypoint":"cli","cwd":"/home/alice/shop","sessionId":"0565aaaa-0000-4000-8000-000000000001","version":"2.1.332","gitBranch":"main"`
	wantResult := `{"parentUuid":"` + rcRowUUID(2) + `","isSidechain":false,"promptId":"p-1","type":"user",` +
		`"message":{"role":"user","content":[{"type":"tool_result","content":` + rcJq(InterruptedToolText) + `,"is_error":true,"tool_use_id":"toolu_01"}]},` +
		`"uuid":"9e9e9e9e-0000-4000-8000-000000000001","timestamp":"2026-01-10T11:30:00.005Z",` +
		`"toolUseResult":` + rcJq("Error: "+InterruptedToolText) + `,"sourceToolAssistantUUID":"` + rcRowUUID(2) + `",` +
		`"toolDenialKind":"interrupted",` + env + `}`
	wantContinue := `{"parentUuid":"9e9e9e9e-0000-4000-8000-000000000001","isSidechain":false,"type":"user",` +
		`"message":{"role":"user","content":"Continue from where you left off."},"isMeta":true,"rowSource":"harness",` +
		`"uuid":"9e9e9e9e-0000-4000-8000-000000000002","timestamp":"2026-01-10T11:30:00.005Z",` + env + `}`
	if got := string(rec.Repairs[0].Entry.Raw); got != wantResult {
		t.Errorf("tool result line\n got %s\nwant %s", got, wantResult)
	}
	if got := string(rec.Repairs[1].Entry.Raw); got != wantContinue {
		t.Errorf("continue line\n got %s\nwant %s", got, wantContinue)
	}
	if e := rec.Repairs[1].Entry; e.Timestamp != "2026-01-10T11:30:00.005Z" || !e.IsMeta || e.SessionID == "" {
		t.Errorf("parsed continue entry: %+v", e)
	}
}

func TestRepairOptions(t *testing.T) {
	f := rcNewConv(t)
	f.tail = `"userType":"external","entrypoint":"sdk-ts","cwd":"/a","sessionId":"s-1","version":"2.1.258","gitBranch":"HEAD"`
	f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Bash")))
	f.tail = `"cwd":"/a","sessionId":"s-1"` // a last row without the version fields
	f.row(rcSystemRow("informational"))
	conv := f.entries()
	rec := ClassifyAndRepair(conv, core.RecoveryOptions{
		Now: rcFixtureBase.Add(time.Minute), ContinueText: "Go on.", SessionID: "s-2", CWD: "/b",
		Leaf: rcRowUUID(2), NewUUID: rcCounter("abababab"),
	})
	if len(rec.Repairs) != 2 {
		t.Fatalf("repairs = %s", rcKinds(rec.Repairs))
	}
	rcCheckRepairChainFrom(t, rec.Repairs, rcRowUUID(2))
	for _, r := range rec.Repairs {
		s := string(r.Entry.Raw)
		for _, want := range []string{`"cwd":"/b","sessionId":"s-2","version":"2.1.258","gitBranch":"HEAD"}`, `"entrypoint":"sdk-ts"`} {
			if !strings.Contains(s, want) {
				t.Errorf("%s lacks %s", s, want)
			}
		}
	}
	if !strings.Contains(string(rec.Repairs[1].Entry.Raw), `"content":"Go on."`) {
		t.Errorf("continue text: %s", rec.Repairs[1].Entry.Raw)
	}
}

func rcCheckRepairChainFrom(t *testing.T, repairs []core.Repair, leaf string) {
	t.Helper()
	parent := leaf
	for i, r := range repairs {
		if r.Entry.ParentUUID.Value != parent {
			t.Errorf("repair %d: parent %q, want %q", i, r.Entry.ParentUUID.Value, parent)
		}
		parent = r.Entry.UUID
	}
}

func TestRepairSidechain(t *testing.T) {
	f := rcNewConv(t)
	f.tail = `"agentId":"a1b2c3","userType":"external","cwd":"/a","sessionId":"s-1"`
	f.row(rcPrompt("search")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Grep")))
	conv := f.entries()
	for i := range conv {
		// The fixture writes isSidechain:false; make it a sidechain row.
		line := strings.Replace(string(conv[i].Raw), `"isSidechain":false`, `"isSidechain":true`, 1)
		e, err := core.ParseEntry([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		conv[i] = e
	}
	rec := ClassifyAndRepair(conv, rcRecoveryOpts())
	for _, r := range rec.Repairs {
		if !r.Entry.IsSidechain || r.Entry.AgentID != "a1b2c3" {
			t.Errorf("repair not on the sidechain: %s", r.Entry.Raw)
		}
		if !strings.HasPrefix(string(r.Entry.Raw), `{"parentUuid":"`) || !strings.Contains(string(r.Entry.Raw), `"isSidechain":true,`) {
			t.Errorf("key order: %s", r.Entry.Raw)
		}
	}
}

// TestResumeTwice: a conversation with its repairs appended classifies
// without new tool rcResults, and without a second continue rcPrompt.
func TestResumeTwice(t *testing.T) {
	for _, tc := range []struct {
		name   string
		build  func(f *rcConvFixture)
		maxAge time.Duration
		// second is the class of the second classification.
		second core.Interruption
	}{
		{name: "interrupted turn", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Read"), rcUseBlock("toolu_b", "Grep"))).
				row(rcResults("toolu_a"))
		}, second: core.InterruptedPrompt},
		{name: "too old", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Read")))
		}, maxAge: time.Minute, second: core.InterruptedTurn},
		{name: "stopped by the user", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Read"))).
				row(rcPrompt("[Request interrupted by user]"))
		}, second: core.InterruptionNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := rcNewConv(t)
			tc.build(f)
			opt := rcRecoveryOpts()
			opt.MaxAge = tc.maxAge
			conv := f.entries()
			first := ClassifyAndRepair(conv, opt)
			if len(first.Repairs) == 0 {
				t.Fatalf("first pass repaired nothing: %s", first.Reason)
			}
			for _, r := range first.Repairs {
				conv = append(conv, r.Entry)
			}
			again := ClassifyAndRepair(conv, opt)
			for _, r := range again.Repairs {
				if r.Kind == RepairToolResult {
					t.Errorf("second pass repairs %s again", r.ToolUseID)
				}
			}
			if again.Class != tc.second {
				t.Errorf("second class = %s, want %s (%s)", again.Class, tc.second, again.Reason)
			}
			if tc.second == core.InterruptedPrompt && again.PromptUUID != conv[len(conv)-1].UUID {
				t.Errorf("second PromptUUID = %q, want the continue rcPrompt", again.PromptUUID)
			}
			if len(again.Repairs) != 0 {
				t.Errorf("second pass repairs: %s", rcKinds(again.Repairs))
			}
		})
	}
}

// TestResumeAfterPartialAppend: the synthetic rcResults were written but the
// continue rcPrompt was not; the next resume adds only the rcPrompt.
func TestResumeAfterPartialAppend(t *testing.T) {
	f := rcNewConv(t)
	f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Read")))
	conv := f.entries()
	first := ClassifyAndRepair(conv, rcRecoveryOpts())
	conv = append(conv, first.Repairs[0].Entry)
	again := ClassifyAndRepair(conv, rcRecoveryOpts())
	if again.Class != core.InterruptedTurn || rcKinds(again.Repairs) != RepairContinue+":" {
		t.Errorf("class %s repairs %q (%s)", again.Class, rcKinds(again.Repairs), again.Reason)
	}
}

func TestRandomUUIDs(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		u := recRandomUUID()
		if len(u) != 36 || u[14] != '4' || !strings.ContainsRune("89ab", rune(u[19])) || seen[u] {
			t.Fatalf("bad uuid %q", u)
		}
		seen[u] = true
	}
	f := rcNewConv(t)
	f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Read")))
	rec := ClassifyAndRepair(f.entries(), core.RecoveryOptions{})
	if len(rec.Repairs) != 2 || rec.Repairs[0].Entry.UUID == rec.Repairs[1].Entry.UUID {
		t.Errorf("default options: %s", rcKinds(rec.Repairs))
	}
}

func TestStateFromTail(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(f *rcConvFixture)
		want  core.State
	}{
		{"empty", func(f *rcConvFixture) {}, core.StateIdle},
		{"finished turn", func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "end_turn", rcTextBlock("hello"))).row(rcSystemRow("stop_hook_summary"))
		}, core.StateIdle},
		{"prompt in flight", func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAttachment("date"))
		}, core.StateRunning},
		{"tool result in flight", func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Read"))).row(rcResults("toolu_a"))
		}, core.StateRunning},
		{"tool working", func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Bash")))
		}, core.StateRunning},
		{"question to the user", func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcTextBlock("which?"), rcUseBlock("toolu_q", "AskUserQuestion")))
		}, core.StateRequiresAction},
		{"plan for approval", func(f *rcConvFixture) {
			f.row(rcPrompt("plan it")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_p", "ExitPlanMode")))
		}, core.StateRequiresAction},
		{"question answered", func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_q", "AskUserQuestion"))).
				row(rcResults("toolu_q")).row(rcAssistant("msg_2", "end_turn", rcTextBlock("ok")))
		}, core.StateIdle},
		{"stopped by the user", func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Bash"))).
				row(`"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"[Request interrupted by user for tool use]","is_error":true,"tool_use_id":"toolu_a"}]}`).
				row(rcPrompt("[Request interrupted by user for tool use]"))
		}, core.StateIdle},
		{"local command", func(f *rcConvFixture) {
			f.row(rcPrompt("<command-name>/clear</command-name>")).row(rcPrompt("<local-command-stdout></local-command-stdout>"))
		}, core.StateIdle},
		{"continue prompt pending", func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Bash"))).row(rcResults("toolu_a")).
				row(rcMetaPrompt(DefaultContinueText) + `,"rowSource":"harness"`)
		}, core.StateRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := rcNewConv(t)
			tc.build(f)
			if got := StateFromTail(f.entries()); got != tc.want {
				t.Errorf("StateFromTail = %s, want %s", got, tc.want)
			}
		})
	}
	// Repaired but too old to continue: the session rests.
	f := rcNewConv(t)
	f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Bash")))
	conv := f.entries()
	opt := rcRecoveryOpts()
	opt.MaxAge = time.Minute
	for _, r := range ClassifyAndRepair(conv, opt).Repairs {
		conv = append(conv, r.Entry)
	}
	if got := StateFromTail(conv); got != core.StateIdle {
		t.Errorf("repaired, not continued: %s, want idle", got)
	}
}
