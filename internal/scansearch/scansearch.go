// Package scansearch searches a store that has no full-text index (a
// backend, the team server) by reading its sessions' messages: scribe mcp
// and the web viewer use it where package search's index is not there.
package scansearch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/search"
	"github.com/e0dc0000/scribe/sessions"
)

// Search is a search of a store without a full-text index: every listed
// session's messages (and its subagents'), newest session first, are
// scanned for the query's terms, case folded; a message matches when it
// holds every term, and its hit's snippet is the text around the first
// one, the terms between q's marks ([brackets] by default) as the index's
// snippets mark them. project is a project path ("" for all).
func Search(ctx context.Context, st sessions.Store, q search.Query, project string) ([]search.Hit, error) {
	terms, _ := search.Terms(q.Text)
	if len(terms) == 0 {
		return nil, fmt.Errorf("%w: no words to look for", search.ErrBadQuery)
	}
	for i := range terms {
		terms[i] = strings.ToLower(strings.Join(strings.Fields(terms[i]), " "))
	}
	infos, err := st.List(ctx, sessions.ListOptions{Dir: project, IncludeProgrammatic: true, IncludeWorktrees: true, SkipLastEntryTail: true})
	if err != nil {
		return nil, err
	}
	var hits []search.Hit
	add := func(info sessions.Info, agent string, msgs []sessions.Message) {
		for _, m := range msgs {
			if len(hits) >= q.Limit {
				return
			}
			if h, ok := scanMessage(m, terms, q); ok {
				h.SessionID, h.AgentID, h.Project = info.SessionID, agent, info.Cwd
				hits = append(hits, h)
			}
		}
	}
	for _, info := range infos {
		if len(hits) >= q.Limit || ctx.Err() != nil {
			break
		}
		msgs, _, err := st.Messages(ctx, info.SessionID, sessions.MessagesOptions{})
		if err != nil {
			return nil, err
		}
		add(info, "", msgs)
		agents, err := st.Subagents(ctx, info.SessionID)
		if err != nil {
			return nil, err
		}
		for _, a := range agents {
			am, _, err := st.SubagentMessages(ctx, info.SessionID, a, sessions.MessagesOptions{})
			if err != nil {
				return nil, err
			}
			add(info, a, am)
		}
	}
	return hits, ctx.Err()
}

// scanMessage matches one message: its text of the asked role holds every
// term.
func scanMessage(m sessions.Message, terms []string, q search.Query) (search.Hit, bool) {
	var ts string
	_ = json.Unmarshal(m.Timestamp, &ts)
	if !q.Since.IsZero() {
		if at, err := time.Parse(time.RFC3339Nano, ts); err == nil && at.Before(q.Since) {
			return search.Hit{}, false
		}
	}
	for _, p := range messageTexts(m) {
		if q.Role != "" && p.role != q.Role {
			continue
		}
		lower := strings.ToLower(p.text)
		first := -1
		for _, t := range terms {
			i := strings.Index(lower, t)
			if i < 0 {
				first = -2
				break
			}
			if first < 0 || i < first {
				first = i
			}
		}
		if first < 0 {
			continue
		}
		h := search.Hit{UUID: m.UUID, Role: p.role, Timestamp: ts, Snippet: snippetAround(p.text, lower, first, terms, &q)}
		if q.WithText {
			h.Text = p.text
		}
		return h, true
	}
	return search.Hit{}, false
}

// roleText is one role's text of a message.
type roleText struct{ role, text string }

// messageTexts splits a message's content by role as the index does:
// prompts are user, answers and thinking assistant, tool inputs and
// outputs tool.
func messageTexts(m sessions.Message) []roleText {
	var msg struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(m.Message, &msg) != nil {
		return nil
	}
	role := search.RoleUser
	if m.Type == "assistant" {
		role = search.RoleAssistant
	}
	var s string
	if json.Unmarshal(msg.Content, &s) == nil {
		return []roleText{{role, s}}
	}
	var blocks []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking string          `json:"thinking"`
		Input    json.RawMessage `json:"input"`
		Content  json.RawMessage `json:"content"`
	}
	if json.Unmarshal(msg.Content, &blocks) != nil {
		return nil
	}
	var out []roleText
	for _, b := range blocks {
		switch b.Type {
		case "text":
			out = append(out, roleText{role, b.Text})
		case "thinking":
			out = append(out, roleText{search.RoleAssistant, b.Thinking})
		case "tool_use", "server_tool_use":
			out = append(out, roleText{search.RoleTool, string(b.Input)})
		case "tool_result":
			var body string
			if json.Unmarshal(b.Content, &body) != nil {
				body = string(b.Content)
			}
			out = append(out, roleText{search.RoleTool, body})
		}
	}
	return out
}

// snippetAround is about 160 characters of text around byte at, each term
// marked with q's marks.
func snippetAround(text, lower string, at int, terms []string, q *search.Query) string {
	if len(lower) != len(text) {
		// Case folding changed a character's length: show the folded text,
		// whose offsets these are.
		text = lower
	}
	from, to := max(at-60, 0), min(at+100, len(text))
	for from > 0 && !utf8Start(text[from]) {
		from--
	}
	for to < len(text) && !utf8Start(text[to]) {
		to++
	}
	var b strings.Builder
	if from > 0 {
		b.WriteString("…")
	}
	seg, low := text[from:to], lower[from:to]
	for i := 0; i < len(seg); {
		hit := ""
		for _, t := range terms {
			if strings.HasPrefix(low[i:], t) {
				hit = seg[i : i+len(t)]
				break
			}
		}
		if hit != "" {
			b.WriteString(q.Mark(hit))
			i += len(hit)
			continue
		}
		b.WriteByte(seg[i])
		i++
	}
	if to < len(text) {
		b.WriteString("…")
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

func utf8Start(c byte) bool { return c&0xC0 != 0x80 }
