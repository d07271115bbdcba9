package transcript

import (
	"fmt"
	"sort"

	"github.com/e0dc0000/scribe/core"
)

// The rules ValidateConversation checks. Each one is a 400 from the API.
const (
	// RuleFirstNotUser: the first message is not a user message.
	RuleFirstNotUser = "first_message_not_user"
	// RuleToolUseWithoutResult: a tool_use has no tool_result with its id in
	// the next message ("tool_use ids were found without tool_result blocks
	// immediately after").
	RuleToolUseWithoutResult = "tool_use_without_result"
	// RuleToolResultNotAfterToolUse: a tool_result answers a tool_use of an
	// earlier message than the one just before it.
	RuleToolResultNotAfterToolUse = "tool_result_not_after_tool_use"
	// RuleToolResultWithoutToolUse: a tool_result names no tool_use at all
	// ("unexpected tool_use_id found in tool_result blocks").
	RuleToolResultWithoutToolUse = "tool_result_without_tool_use"
	// RuleToolResultNotFirst: in the message after a tool_use, a tool_result
	// comes after other content ("Messages following tool_use blocks must
	// begin with a matching number of tool_result blocks").
	RuleToolResultNotFirst = "tool_result_not_first"
)

// vdMessage is one message as the API sees it: consecutive rows of the
// same role, combined.
type vdMessage struct {
	role   string
	first  int // the row it starts at
	blocks []vdBlock
}

type vdBlock struct {
	typ string
	id  string // tool_use id, or the tool_use_id a tool_result answers
	row int
}

// ValidateConversation checks the user and assistant rows a host would send
// to the model (conversation rows in chain order, root first) against the
// Messages API's rules, and returns every violation in row order.
//
// The messages are formed as the API forms them. System, progress and
// attachment rows are not sent, nor are API-error assistant rows (Claude
// Code's record of a failed call, not model output). Meta rows and compact
// summaries are user messages. Consecutive rows of the same role make one
// message: the API combines consecutive user turns and consecutive
// assistant turns, so a split assistant message (one row per block) and a
// run of tool_result rows each count as one.
func ValidateConversation(conv []core.Entry) []core.Violation {
	rows := decodeRecRows(conv)
	var msgs []vdMessage
	for i := range rows {
		r := &rows[i]
		if r.typ != core.TypeUser && r.typ != core.TypeAssistant || r.typ == core.TypeAssistant && r.apiError {
			continue
		}
		if n := len(msgs); n == 0 || msgs[n-1].role != r.typ {
			msgs = append(msgs, vdMessage{role: r.typ, first: i})
		}
		m := &msgs[len(msgs)-1]
		if len(r.blocks) == 0 {
			m.blocks = append(m.blocks, vdBlock{typ: "text", row: i})
			continue
		}
		for _, b := range r.blocks {
			ab := vdBlock{typ: b.typ, row: i}
			switch b.typ {
			case "tool_use":
				ab.id = b.id
			case "tool_result":
				ab.id = b.toolUseID
			}
			m.blocks = append(m.blocks, ab)
		}
	}

	var out []core.Violation
	add := func(row int, rule, detail string) {
		out = append(out, core.Violation{Index: row, UUID: conv[row].UUID, Rule: rule, Detail: detail})
	}
	if len(msgs) > 0 && msgs[0].role != core.TypeUser {
		add(msgs[0].first, RuleFirstNotUser, "the first message sent is an assistant message")
	}
	everUsed := make(map[string]bool) // tool_use ids of the messages so far
	for k := range msgs {
		m := &msgs[k]
		if m.role == core.TypeAssistant {
			answers := make(map[string]bool)
			if k+1 < len(msgs) {
				for _, b := range msgs[k+1].blocks {
					if b.typ == "tool_result" {
						answers[b.id] = true
					}
				}
			}
			for _, b := range m.blocks {
				if b.typ != "tool_use" {
					continue
				}
				if !answers[b.id] {
					add(b.row, RuleToolUseWithoutResult, fmt.Sprintf("tool_use %s has no tool_result in the next message", b.id))
				}
				everUsed[b.id] = true
			}
			continue
		}
		prev := make(map[string]bool) // tool_use ids of the message before
		if k > 0 {
			for _, b := range msgs[k-1].blocks {
				if b.typ == "tool_use" {
					prev[b.id] = true
				}
			}
		}
		other := false // content before a tool_result
		for _, b := range m.blocks {
			if b.typ != "tool_result" {
				other = true
				continue
			}
			switch {
			case prev[b.id]:
				if other {
					add(b.row, RuleToolResultNotFirst, fmt.Sprintf("tool_result for %s follows other content in its message", b.id))
				}
			case everUsed[b.id]:
				add(b.row, RuleToolResultNotAfterToolUse, fmt.Sprintf("tool_result for %s does not follow the message holding that tool_use", b.id))
			default:
				add(b.row, RuleToolResultWithoutToolUse, fmt.Sprintf("tool_result for %s answers no tool_use", b.id))
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}
