package search

import (
	"bytes"
	"encoding/json"
	"strings"
)

// The roles a document can have.
const (
	RoleUser      = "user"      // a prompt
	RoleAssistant = "assistant" // an answer, or its thinking
	RoleTool      = "tool"      // a tool call's input, or a tool's output
)

// Document is the text of one message for one role: what the index holds.
type Document struct {
	UUID, Role, Timestamp, Text string
}

type line struct {
	Type      string `json:"type"`
	UUID      string `json:"uuid"`
	Timestamp string `json:"timestamp"`
	Message   struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

type block struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Thinking string          `json:"thinking"`
	Name     string          `json:"name"`
	Input    json.RawMessage `json:"input"`
	Content  json.RawMessage `json:"content"`
}

// Documents returns the searchable documents of one transcript line: the
// text of a user or assistant message, split by role (tool inputs and
// outputs apart). Other lines (metadata, progress, system) give none.
func Documents(raw []byte) []Document {
	if !bytes.Contains(raw, []byte(`"message"`)) {
		return nil
	}
	var l line
	if json.Unmarshal(raw, &l) != nil || (l.Type != "user" && l.Type != "assistant") || l.UUID == "" {
		return nil
	}
	own := RoleUser
	if l.Type == "assistant" {
		own = RoleAssistant
	}
	texts := map[string][]string{}
	var s string
	if json.Unmarshal(l.Message.Content, &s) == nil {
		texts[own] = append(texts[own], s)
	} else {
		var blocks []block
		_ = json.Unmarshal(l.Message.Content, &blocks)
		for _, b := range blocks {
			switch b.Type {
			case "text":
				texts[own] = append(texts[own], b.Text)
			case "thinking":
				texts[RoleAssistant] = append(texts[RoleAssistant], b.Thinking)
			case "tool_use":
				texts[RoleTool] = append(texts[RoleTool], b.Name+" "+string(b.Input))
			case "tool_result":
				texts[RoleTool] = append(texts[RoleTool], contentText(b.Content))
			}
		}
	}
	var out []Document
	for _, role := range []string{RoleUser, RoleAssistant, RoleTool} {
		if t := strings.TrimSpace(strings.Join(texts[role], "\n")); t != "" {
			out = append(out, Document{UUID: l.UUID, Role: role, Timestamp: l.Timestamp, Text: t})
		}
	}
	return out
}

// contentText flattens a tool_result's content: a string, or the text of
// its text blocks.
func contentText(c json.RawMessage) string {
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s
	}
	var blocks []block
	if json.Unmarshal(c, &blocks) != nil {
		return ""
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}
