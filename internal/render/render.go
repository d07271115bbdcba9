// Package render turns a session's messages into what a person reads:
// show's text (MessageParts: prose, tool calls and their diffs, results,
// placeholders for media), and the Markdown document (Render with
// Markdown) that export --format md and show --format md both print.
package render

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/transcript"
)

// Rendering a session as Markdown, for export and show (the HTML export is
// the web viewer's page: package ui). Prompts and answers in order; each tool call folded with its
// result (and, for a Task call, the subagent's conversation inline);
// thinking folded; images inline as data URIs; checkpoints after the
// message they follow.

// Doc is what Render renders.
type Doc struct {
	Info     *jsonl.SessionInfo
	Messages []jsonl.SessionMessage
	// Agents are subagent conversations by the tool_use id that started
	// them; Orphans those no tool call names.
	Agents  map[string][]jsonl.SessionMessage
	Orphans map[string][]jsonl.SessionMessage
	// ByAgent is every subagent conversation by agent id.
	ByAgent     map[string][]jsonl.SessionMessage
	Checkpoints map[string][]core.Checkpoint
}

// rBlock is a content block (of a message or a tool_result), for export
// and show.
type rBlock = transcript.Block

// blocksOf is a message's content as blocks (a string is one text block).
func blocksOf(m jsonl.SessionMessage) []rBlock {
	bs, _ := transcript.ContentBlocks(m.Message)
	return bs
}

// resultText flattens a tool_result's content.
func resultText(c json.RawMessage) (string, []rBlock) {
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s, nil
	}
	var bs []rBlock
	if json.Unmarshal(c, &bs) != nil {
		return string(c), nil
	}
	var texts []string
	var media []rBlock
	for _, b := range bs {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		} else {
			media = append(media, b)
		}
	}
	return strings.Join(texts, "\n"), media
}

// Renderer emits one format (Markdown).
type Renderer interface {
	header(title string, facts [][2]string)
	turn(role, ts string)
	text(s string)
	fold(summary string, body func())
	code(s string)
	image(mediaType, data string)
	note(s string)
	footer()
}

// Render writes doc with r.
func Render(doc *Doc, r Renderer) {
	title := "Session"
	var facts [][2]string
	if doc.Info != nil {
		title = doc.Info.Summary
		facts = append(facts, [2]string{"session", doc.Info.SessionID})
		if doc.Info.Cwd != "" {
			facts = append(facts, [2]string{"cwd", doc.Info.Cwd})
		}
		if doc.Info.GitBranch != "" {
			facts = append(facts, [2]string{"branch", doc.Info.GitBranch})
		}
		if doc.Info.Tag != "" {
			facts = append(facts, [2]string{"tag", doc.Info.Tag})
		}
	}
	r.header(title, facts)
	results := map[string]rBlock{}
	for _, m := range doc.Messages {
		for _, b := range blocksOf(m) {
			if b.Type == "tool_result" {
				results[b.ToolUseID] = b
			}
		}
	}
	renderMessages(doc, r, doc.Messages, results)
	for id, msgs := range doc.Orphans {
		r.fold("Subagent "+id, func() { renderMessages(doc, r, msgs, resultsOf(msgs)) })
	}
	r.footer()
}

func resultsOf(msgs []jsonl.SessionMessage) map[string]rBlock {
	out := map[string]rBlock{}
	for _, m := range msgs {
		for _, b := range blocksOf(m) {
			if b.Type == "tool_result" {
				out[b.ToolUseID] = b
			}
		}
	}
	return out
}

func renderMessages(doc *Doc, r Renderer, msgs []jsonl.SessionMessage, results map[string]rBlock) {
	calls := map[string]bool{}
	for _, m := range msgs {
		for _, b := range blocksOf(m) {
			if b.Type == "tool_use" {
				calls[b.ID] = true
			}
		}
	}
	for _, m := range msgs {
		blocks := blocksOf(m)
		var ts string
		_ = json.Unmarshal(m.Timestamp, &ts)
		shown := false
		show := func() {
			if !shown {
				role := map[string]string{"user": "Prompt", "assistant": "Answer", "system": "System"}[m.Type]
				if m.IsCompactSummary {
					role = "Compaction summary"
				} else if m.IsMeta {
					role += " (meta)"
				}
				r.turn(role, ts)
				shown = true
			}
		}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				show()
				r.text(b.Text)
			case "thinking":
				show()
				r.fold("Thinking", func() { r.text(b.Thinking) })
			case "tool_use":
				show()
				res, ok := results[b.ID]
				label := "Tool call: " + b.Name
				if ok && res.IsError {
					label += " (error)"
				}
				r.fold(label, func() {
					in, _ := json.MarshalIndent(json.RawMessage(b.Input), "", "  ")
					r.code(string(in))
					if ok {
						text, media := resultText(res.Content)
						r.note("Result")
						r.code(text)
						for _, mb := range media {
							if mb.Source != nil && mb.Source.Type == "base64" {
								r.image(mb.Source.MediaType, mb.Source.Data)
							}
						}
					}
					if agent := doc.Agents[b.ID]; agent != nil {
						r.fold("Subagent conversation", func() { renderMessages(doc, r, agent, resultsOf(agent)) })
					}
				})
			case "tool_result":
				if !calls[b.ToolUseID] {
					show()
					text, _ := resultText(b.Content)
					r.fold("Tool result", func() { r.code(text) })
				}
			case "image":
				show()
				if b.Source != nil && b.Source.Type == "base64" {
					r.image(b.Source.MediaType, b.Source.Data)
				} else {
					r.note("[image]")
				}
			default:
				show()
				r.note("[" + b.Type + "]")
			}
		}
		for _, cp := range doc.Checkpoints[m.UUID] {
			note := fmt.Sprintf("Checkpoint %q (%s)", cp.Label, cp.ID)
			if cp.Commit != "" {
				note += " at commit " + core.ShortCommit(cp.Commit)
			}
			r.note(note)
		}
	}
}

// Markdown writes Markdown (folds are <details>, which GitHub renders).
type Markdown struct{ W io.Writer }

func (m Markdown) header(title string, facts [][2]string) {
	fmt.Fprintf(m.W, "# %s\n\n", title)
	for _, f := range facts {
		fmt.Fprintf(m.W, "- **%s**: `%s`\n", f[0], f[1])
	}
	fmt.Fprintln(m.W)
}
func (m Markdown) turn(role, ts string) { fmt.Fprintf(m.W, "## %s\n\n*%s*\n\n", role, ts) }
func (m Markdown) text(s string)        { fmt.Fprintf(m.W, "%s\n\n", s) }
func (m Markdown) fold(summary string, body func()) {
	fmt.Fprintf(m.W, "<details><summary>%s</summary>\n\n", html.EscapeString(summary))
	body()
	fmt.Fprint(m.W, "</details>\n\n")
}
func (m Markdown) code(s string) {
	fence := "```"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	fmt.Fprintf(m.W, "%s\n%s\n%s\n\n", fence, strings.TrimRight(s, "\n"), fence)
}
func (m Markdown) image(mt, data string) {
	fmt.Fprintf(m.W, "![image](data:%s;base64,%s)\n\n", mt, data)
}
func (m Markdown) note(s string) { fmt.Fprintf(m.W, "> %s\n\n", s) }
func (m Markdown) footer()       {}
