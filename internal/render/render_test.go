package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// show's text: prose as it is, a tool call as its name and sorted
// arguments, an Edit as a diff, a result by its text, media as a
// placeholder with its size, never base64.
func TestMessageParts(t *testing.T) {
	msg := `{"content":[{"type":"text","text":"hello"},
{"type":"tool_use","name":"Bash","input":{"command":"ls","description":"list"}},
{"type":"tool_use","name":"Edit","input":{"file_path":"/a.go","old_string":"x := 1\n","new_string":"x := 2\n"}},
{"type":"tool_result","content":"one\ntwo","is_error":true},
{"type":"image","source":{"type":"base64","media_type":"image/png","data":"aGVsbG8="}}]}`
	got := MessageParts(json.RawMessage(msg))
	want := []Part{
		{Text: "hello"},
		{Text: "→ Bash\n  command: ls\n  description: list", Code: true},
		{Text: "→ Edit /a.go\n- x := 1\n+ x := 2", Code: true},
		{Text: "← error:\none\ntwo", Code: true},
		{Text: "[image: image/png, 5 B]"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d parts %+v", len(got), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("part %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if s := MessageParts(json.RawMessage(`{"content":"plain"}`)); len(s) != 1 || s[0].Text != "plain" {
		t.Errorf("string content: %+v", s)
	}
}

// export's Markdown: the title, a turn, a tool call folded with its result.
func TestRenderMarkdown(t *testing.T) {
	doc := &Doc{
		Info: &jsonl.SessionInfo{SessionID: "s1", Summary: "A title"},
		Messages: []jsonl.SessionMessage{
			{Type: "user", Timestamp: json.RawMessage(`"2026-01-02T03:04:05Z"`), Message: json.RawMessage(`{"content":"hi <there>"}`)},
			{Type: "assistant", Message: json.RawMessage(`{"content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/x"}}]}`)},
			{Type: "user", Message: json.RawMessage(`{"content":[{"type":"tool_result","tool_use_id":"t1","content":"data"}]}`)},
		},
	}
	var b bytes.Buffer
	Render(doc, Markdown{W: &b})
	for _, want := range []string{"# A title\n", "- **session**: `s1`", "## Prompt\n\n*2026-01-02T03:04:05Z*\n\nhi <there>\n", "<details><summary>Tool call: Read</summary>", "> Result\n\n```\ndata\n```"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	Render(doc, HTML{W: &b})
	if !strings.Contains(b.String(), "hi &lt;there&gt;") || !strings.HasSuffix(b.String(), "</body></html>\n") {
		t.Errorf("html:\n%s", b.String())
	}
}
