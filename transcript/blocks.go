package transcript

import "encoding/json"

// Block is one content block of a message as a transcript writes it
// (text, thinking, tool_use, tool_result, image, ...), with the fields
// the front ends show; Raw is the block as written.
type Block struct {
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
	Raw json.RawMessage `json:"-"`
}

// ContentBlocks is the content of a message field (a SessionMessage's
// Message) as blocks: a string is one text block, an array one block an
// element (of an element that is not an object, a block of no type). ok is
// false when the message has a content that is neither (or the message
// does not parse); nil, true when it has none.
func ContentBlocks(message json.RawMessage) (blocks []Block, ok bool) {
	if len(message) == 0 || string(message) == "null" {
		return nil, true
	}
	var msg struct {
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(message, &msg) != nil {
		return nil, false
	}
	if len(msg.Content) == 0 || string(msg.Content) == "null" {
		return nil, true
	}
	var s string
	if json.Unmarshal(msg.Content, &s) == nil {
		return []Block{{Type: "text", Text: s}}, true
	}
	var raws []json.RawMessage
	if json.Unmarshal(msg.Content, &raws) != nil {
		return nil, false
	}
	out := make([]Block, 0, len(raws))
	for _, r := range raws {
		var b Block
		_ = json.Unmarshal(r, &b) // what parses of a block of odd fields is kept
		b.Raw = r
		out = append(out, b)
	}
	return out, true
}
