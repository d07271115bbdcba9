package transcript

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/core"
)

// vdRules renders violations as "row:rule" (1-based rows, as the fixture
// numbers them).
func vdRules(vs []core.Violation) string {
	var s []string
	for _, v := range vs {
		s = append(s, fmt.Sprintf("%d:%s", v.Index+1, v.Rule))
	}
	return strings.Join(s, ",")
}

func TestValidateConversation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(f *rcConvFixture)
		want  string
	}{
		{name: "empty", build: func(f *rcConvFixture) {}},
		{name: "clean tool loop", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).
				row(rcAttachment("environment")).
				row(rcAssistant("msg_1", "tool_use", rcTextBlock("reading"), rcUseBlock("toolu_a", "Read"), rcUseBlock("toolu_b", "Read"))).
				row(rcResults("toolu_a")).
				row(rcAttachment("total_tokens_reminder")).
				row(rcResults("toolu_b")).
				row(rcMetaPrompt("<system-reminder>x</system-reminder>")).
				row(rcAssistant("msg_2", "end_turn", rcTextBlock("done"))).
				row(rcSystemRow("stop_hook_summary")).
				row(rcPrompt("thanks"))
		}},
		{name: "split assistant rows", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).
				row(rcAssistant("msg_1", "tool_use", `{"type":"thinking","thinking":"…","signature":"s"}`)).
				row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Read"))).
				row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_b", "Read"))).
				row(rcResults("toolu_a")).row(rcResults("toolu_b")).
				row(rcAssistant("msg_2", "end_turn", rcTextBlock("done")))
		}},
		{name: "api error rows are not sent", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).
				rowWith(rcAssistant("msg_e", "stop_sequence", rcTextBlock("API Error")), `"isApiErrorMessage":true,`).
				row(rcPrompt("again")).
				row(rcAssistant("msg_1", "end_turn", rcTextBlock("hello")))
		}},
		{name: "first message from the assistant", build: func(f *rcConvFixture) {
			f.row(rcSystemRow("informational")).row(rcAssistant("msg_1", "end_turn", rcTextBlock("hello"))).row(rcPrompt("hi"))
		}, want: "2:first_message_not_user"},
		{name: "tool call without result at the end", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Read")))
		}, want: "2:tool_use_without_result"},
		{name: "parallel call half answered", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Read"), rcUseBlock("toolu_b", "Read"))).
				row(rcResults("toolu_a")).row(rcAssistant("msg_2", "end_turn", rcTextBlock("done")))
		}, want: "2:tool_use_without_result"},
		{name: "result one message too late", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Read"))).
				row(rcPrompt("hello?")).row(rcAssistant("msg_2", "end_turn", rcTextBlock("yes"))).
				row(rcResults("toolu_a"))
		}, want: "2:tool_use_without_result,5:tool_result_not_after_tool_use"},
		{name: "result for no call", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "end_turn", rcTextBlock("hello"))).row(rcResults("toolu_x"))
		}, want: "3:tool_result_without_tool_use"},
		{name: "result after text", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Read"))).
				row(rcPrompt("wait")).row(rcResults("toolu_a"))
		}, want: "4:tool_result_not_first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := rcNewConv(t)
			tc.build(f)
			conv := f.entries()
			vs := ValidateConversation(conv)
			if got := vdRules(vs); got != tc.want {
				t.Errorf("violations = %q, want %q\n%+v", got, tc.want, vs)
			}
			for _, v := range vs {
				if v.UUID != conv[v.Index].UUID || v.Detail == "" {
					t.Errorf("violation %+v: uuid or detail", v)
				}
			}
		})
	}
}

// TestRepairsMakeConversationValid: interrupted conversations fail
// validation, pass once their repairs are appended, and a second resume
// adds no tool result.
func TestRepairsMakeConversationValid(t *testing.T) {
	for _, tc := range []struct {
		name    string
		build   func(f *rcConvFixture)
		results int // synthetic results expected
	}{
		{name: "killed during a tool", build: func(f *rcConvFixture) {
			f.row(rcPrompt("run the tests")).row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Bash")))
		}, results: 1},
		{name: "parallel calls, one answered", build: func(f *rcConvFixture) {
			f.row(rcPrompt("look")).
				row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Read"), rcUseBlock("toolu_b", "Grep"))).
				row(rcResults("toolu_a")).row(rcAttachment("total_tokens_reminder"))
		}, results: 1},
		{name: "split rows, three calls, one answered", build: func(f *rcConvFixture) {
			f.row(rcPrompt("look")).
				row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_a", "Read"))).
				row(rcResults("toolu_a")).
				row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_b", "Read"))).
				row(rcAssistant("msg_1", "tool_use", rcUseBlock("toolu_c", "Read")))
		}, results: 2},
		{name: "after a finished turn", build: func(f *rcConvFixture) {
			f.row(rcPrompt("hi")).row(rcAssistant("msg_0", "end_turn", rcTextBlock("hello"))).
				row(rcPrompt("now edit")).
				row(rcAssistant("msg_1", "tool_use", rcTextBlock("editing"), rcUseBlock("toolu_a", "Edit"), rcUseBlock("toolu_b", "Edit")))
		}, results: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := rcNewConv(t)
			tc.build(f)
			conv := f.entries()
			if vs := ValidateConversation(conv); len(vs) == 0 {
				t.Fatal("the interrupted conversation passes validation")
			}
			rec := ClassifyAndRepair(conv, rcRecoveryOpts())
			n := 0
			for _, r := range rec.Repairs {
				if r.Kind == RepairToolResult {
					n++
				}
				conv = append(conv, r.Entry)
			}
			if n != tc.results {
				t.Errorf("%d synthetic results, want %d: %s", n, tc.results, rcKinds(rec.Repairs))
			}
			if vs := ValidateConversation(conv); len(vs) != 0 {
				t.Errorf("still invalid after repair: %s", vdRules(vs))
			}
			again := ClassifyAndRepair(conv, rcRecoveryOpts())
			if len(again.Repairs) != 0 {
				t.Errorf("second resume repairs again: %s", rcKinds(again.Repairs))
			}
		})
	}
}

// rcFileRows reads a transcript's main-chain rows in file order (for a
// linear session that is the chain order).
func rcFileRows(t *testing.T, path string) []core.Entry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("corpus: %v", err)
	}
	var conv []core.Entry
	for _, line := range bytes.Split(data, []byte("\n")) {
		e, err := core.ParseEntry(line)
		if err != nil || e.UUID == "" || e.IsSidechain || e.Type == core.TypeProgress || !e.IsChain() {
			continue
		}
		conv = append(conv, e)
	}
	return conv
}

// TestRealTranscriptPrefixes cuts a real Claude Code 2.1.258 session after
// every row: each prefix, repaired, passes validation, and a second resume
// adds nothing.
func TestRealTranscriptPrefixes(t *testing.T) {
	conv := rcFileRows(t, filepath.Join("..", "testdata", "corpus", "real", "kzahel__yepanywhere", "captured", "claude-basic-2026-09-12", "native.jsonl"))
	if vs := ValidateConversation(conv); len(vs) != 0 {
		t.Fatalf("the whole session is invalid: %s", vdRules(vs))
	}
	if rec := ClassifyAndRepair(conv, core.RecoveryOptions{}); rec.Class != core.InterruptionNone || len(rec.Repairs) != 0 {
		t.Fatalf("whole session: %s, %s (%s)", rec.Class, rcKinds(rec.Repairs), rec.Reason)
	}
	for k := 1; k <= len(conv); k++ {
		prefix := append([]core.Entry(nil), conv[:k]...)
		rec := ClassifyAndRepair(prefix, core.RecoveryOptions{})
		for _, r := range rec.Repairs {
			prefix = append(prefix, r.Entry)
		}
		if vs := ValidateConversation(prefix); len(vs) != 0 {
			t.Errorf("prefix %d (%s, %s): invalid after repair: %s", k, rec.Class, rcKinds(rec.Repairs), vdRules(vs))
		}
		if again := ClassifyAndRepair(prefix, core.RecoveryOptions{}); len(again.Repairs) != 0 {
			t.Errorf("prefix %d: second resume repairs %s", k, rcKinds(again.Repairs))
		}
	}
}

// TestCorpusResumeIsIdempotent: on every corpus file, repairs never name a
// call twice and a second resume adds no tool result.
func TestCorpusResumeIsIdempotent(t *testing.T) {
	var files []string
	_ = filepath.WalkDir(filepath.Join("..", "testdata", "corpus"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Skip("no corpus")
	}
	for _, p := range files {
		conv := rcFileRows(t, p)
		rec := ClassifyAndRepair(conv, core.RecoveryOptions{})
		t.Logf("%s: %s, %d repairs, %d unrepaired: %s", filepath.Base(p), rec.Class, len(rec.Repairs), len(rec.Unrepaired), rec.Reason)
		ids := map[string]bool{}
		for _, r := range rec.Repairs {
			if r.Kind == RepairToolResult && ids[r.ToolUseID] {
				t.Errorf("%s: %s repaired twice", p, r.ToolUseID)
			}
			ids[r.ToolUseID] = true
			conv = append(conv, r.Entry)
		}
		again := ClassifyAndRepair(conv, core.RecoveryOptions{})
		for _, r := range again.Repairs {
			if r.Kind == RepairToolResult {
				t.Errorf("%s: second resume repairs %s", p, r.ToolUseID)
			}
		}
		_ = StateFromTail(conv)
	}
}
