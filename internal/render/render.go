// Package render turns a session's messages into what a person reads:
// show's text (MessageParts: prose, tool calls and their diffs, results,
// placeholders for media), and export's Markdown and self-contained HTML
// (Render with Markdown or HTML).
package render

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// Rendering a session for export: Markdown, or one self-contained HTML
// file. Prompts and answers in order; each tool call folded with its
// result (and, for a Task call, the subagent's conversation inline);
// thinking folded; images inline as data URIs; checkpoints after the
// message they follow.

// Doc is what an export renders.
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
type rBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Name      string          `json:"name"`
	ID        string          `json:"id"`
	ToolUseID string          `json:"tool_use_id"`
	Input     json.RawMessage `json:"input"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Source    *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	} `json:"source"`
}

// blocksOf is a message's content as blocks (a string is one text block).
func blocksOf(m jsonl.SessionMessage) []rBlock {
	var msg struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(m.Message, &msg) != nil {
		return nil
	}
	var s string
	if json.Unmarshal(msg.Content, &s) == nil {
		return []rBlock{{Type: "text", Text: s}}
	}
	var bs []rBlock
	_ = json.Unmarshal(msg.Content, &bs)
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

// Renderer emits one format (Markdown, HTML).
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

// HTML writes one self-contained HTML page.
type HTML struct{ W io.Writer }

const htmlStyle = `body{font:15px/1.5 system-ui,sans-serif;max-width:56em;margin:2em auto;padding:0 1em;color:#222}
h2{font-size:1em;margin:1.5em 0 .3em;color:#555}h2 small{font-weight:normal;color:#999;margin-left:.5em}
.text{white-space:pre-wrap}details{border:1px solid #ddd;border-radius:4px;margin:.4em 0;padding:.2em .6em}
summary{cursor:pointer;color:#357}pre{background:#f6f6f6;padding:.5em;overflow:auto;white-space:pre-wrap}
.note{color:#777;font-style:italic}img{max-width:100%}dl{display:grid;grid-template-columns:max-content auto;gap:0 1em}`

func (h HTML) header(title string, facts [][2]string) {
	e := html.EscapeString
	fmt.Fprintf(h.W, "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>%s</title><style>%s</style></head><body>\n<h1>%s</h1>\n<dl>", e(title), htmlStyle, e(title))
	for _, f := range facts {
		fmt.Fprintf(h.W, "<dt>%s</dt><dd><code>%s</code></dd>", e(f[0]), e(f[1]))
	}
	fmt.Fprintln(h.W, "</dl>")
}
func (h HTML) turn(role, ts string) {
	fmt.Fprintf(h.W, "<h2>%s<small>%s</small></h2>\n", html.EscapeString(role), html.EscapeString(ts))
}
func (h HTML) text(s string) {
	fmt.Fprintf(h.W, "<div class=\"text\">%s</div>\n", html.EscapeString(s))
}
func (h HTML) fold(summary string, body func()) {
	fmt.Fprintf(h.W, "<details><summary>%s</summary>\n", html.EscapeString(summary))
	body()
	fmt.Fprintln(h.W, "</details>")
}
func (h HTML) code(s string) { fmt.Fprintf(h.W, "<pre>%s</pre>\n", html.EscapeString(s)) }
func (h HTML) image(mt, data string) {
	fmt.Fprintf(h.W, "<img alt=\"image\" src=\"data:%s;base64,%s\">\n", html.EscapeString(mt), html.EscapeString(data))
}
func (h HTML) note(s string) {
	fmt.Fprintf(h.W, "<p class=\"note\">%s</p>\n", html.EscapeString(s))
}
func (h HTML) footer() { fmt.Fprintln(h.W, "</body></html>") }
