package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/transcript"
)

// From getSessionMessages' messages to what the templates show. Every
// string of a transcript stays a string here: the templates escape it for
// where it lands. Only Markdown (markdown.go) and highlighted code become
// template.HTML, and only image data checked to be base64 a template.URL.

// maxResult is how much of a tool's result is shown; the rest is counted.
const maxResult = 32 << 10

// msgView is one message as the templates show it.
type msgView struct {
	UUID  string
	Role  string // user, assistant, system
	Label string
	// Time is the timestamp as written, TimeShort for people.
	Time, TimeShort string
	// Class adds meta, compact, slim (only results shown with their call).
	Class  string
	Model  string
	Blocks []blockView
	// Folded: the whole message sits in a <details> (a compaction
	// summary).
	Folded bool
	Notes  []string
	// Fork offers a fork of the session up to this message (set where
	// the store can fork).
	Fork bool
}

// blockView is one content block.
type blockView struct {
	// Kind: text (plain), markdown, thinking, tool, result, image, raw,
	// note, command (a slash command the user ran), output (what a local
	// command printed).
	Kind      string
	Text      string
	HTML      template.HTML
	Tool      *toolView
	Result    *resultView
	Image     template.URL
	MediaType string
}

// toolView is a tool call with what it returned.
type toolView struct {
	ID, Name string
	// Summary says what the call did: the path, the command, the pattern.
	Summary string
	// Diffs are an Edit's, MultiEdit's or Write's changes; Input the
	// call's input otherwise (indented JSON).
	Diffs []diffView
	// Fields are the input's fields in order when it is an object, a
	// string as its text (a prompt's or a command's lines as lines);
	// Input is the input as indented JSON otherwise.
	Fields []fieldView
	Input  string
	Result *resultView
	Agent  *agentView
}

// diffView is one change to a file.
type diffView struct {
	Path  string
	Lines []diffLine
}

// resultView is a tool's result.
type resultView struct {
	Tool    string // the call's name, when the call is not shown with it
	Text    string
	More    int64 // bytes left out
	Error   bool
	Images  []blockView
	Missing bool
}

// agentView is a subagent's conversation under the call that started it.
type agentView struct {
	ID       string
	Messages []msgView
	// More counts the messages left out; Link is the agent's own page.
	More int
	Link string
	// Fetch, when set, is where the page fetches the messages once the
	// call is opened (Messages is then empty).
	Fetch string
}

// block is a content block as a transcript writes it.
type block = transcript.Block

// payload is a message's message field.
type payload struct {
	Model string `json:"model"`
}

// blocksOf is a message's content as blocks: a content that is neither a
// string nor an array of blocks is one raw block.
func blocksOf(m *sessions.Message) []block {
	bs, ok := transcript.ContentBlocks(m.Message)
	if !ok {
		return []block{{Raw: m.Message}}
	}
	return bs
}

// builder turns messages into views.
type builder struct {
	md *markdown
	// all is the whole conversation; results and calls index the tool
	// results (by call id) and the calls (by id) of all[lo:hi], grown
	// outward from the window shown only as far as a lookup needs: a
	// window of a 50 MB session's last messages no longer decodes every
	// message of it.
	all         []sessions.Message
	lo, hi      int
	results     map[string]block
	calls       map[string]string
	agent       func(toolUseID string) *agentView
	checkpoints map[string][]core.Checkpoint
	// fork: the store can fork, and each message offers it.
	fork bool
}

// newBuilder is a builder for windows of all, the whole conversation,
// whose lookups start around the window beginning at all[at] (at is a
// hint: a lookup finds what all holds wherever it starts).
func newBuilder(md *markdown, all []sessions.Message, at int) *builder {
	at = min(max(at, 0), len(all))
	return &builder{md: md, all: all, lo: at, hi: at, results: map[string]block{}, calls: map[string]string{}}
}

// index adds all[i]'s calls and results; a later message's result or
// call does not replace an earlier one's when indexing goes back.
func (b *builder) index(i int, back bool) {
	for _, bl := range blocksOf(&b.all[i]) {
		switch bl.Type {
		case "tool_result":
			if _, ok := b.results[bl.ToolUseID]; !ok || !back {
				b.results[bl.ToolUseID] = bl
			}
		case "tool_use":
			if _, ok := b.calls[bl.ID]; !ok || !back {
				b.calls[bl.ID] = bl.Name
			}
		}
	}
}

// grow indexes one more message, forward when it can and forward is
// asked, else backward; false when all is indexed.
func (b *builder) grow(forward bool) bool {
	switch {
	case forward && b.hi < len(b.all), !forward && b.lo == 0 && b.hi < len(b.all):
		b.index(b.hi, false)
		b.hi++
	case b.lo > 0:
		b.lo--
		b.index(b.lo, true)
	default:
		return false
	}
	return true
}

// resultOf is the result of call id: results come after their call, so
// the search grows forward first.
func (b *builder) resultOf(id string) (block, bool) {
	for {
		if r, ok := b.results[id]; ok {
			return r, true
		}
		if !b.grow(true) {
			return block{}, false
		}
	}
}

// callOf is the name of call id: calls come before their results, so the
// search grows backward first.
func (b *builder) callOf(id string) string {
	for {
		if n, ok := b.calls[id]; ok {
			return n
		}
		if !b.grow(false) {
			return ""
		}
	}
}

// views renders msgs (a window of the conversation, in order); next is
// the message after the window, if any (a compact boundary is told by
// the summary after it).
func (b *builder) views(msgs []sessions.Message, next *sessions.Message) []msgView {
	shown := map[string]bool{}
	for i := range msgs {
		for _, bl := range blocksOf(&msgs[i]) {
			if bl.Type == "tool_use" {
				shown[bl.ID] = true
			}
		}
	}
	out := make([]msgView, 0, len(msgs))
	for i := range msgs {
		n := next
		if i+1 < len(msgs) {
			n = &msgs[i+1]
		}
		out = append(out, b.view(&msgs[i], n, shown))
	}
	return out
}

// view renders one message.
func (b *builder) view(m *sessions.Message, next *sessions.Message, shown map[string]bool) msgView {
	v := msgView{UUID: m.UUID, Role: m.Type}
	var ts string
	_ = json.Unmarshal(m.Timestamp, &ts)
	v.Time, v.TimeShort = ts, shortTime(ts)
	var p payload
	_ = json.Unmarshal(m.Message, &p)
	v.Model = p.Model
	switch {
	case m.Type == "system" && next != nil && next.IsCompactSummary:
		v.Label, v.Class = "Conversation compacted", "compact"
	case m.Type == "system" && len(m.Message) == 0:
		// A system row the SDK gives without content (a turn's duration,
		// a hook's summary): its place and permalink, nothing to read.
		v.Class = "slim"
		return v
	case m.Type == "system":
		v.Label, v.Class = "System", "meta"
	case m.IsCompactSummary:
		v.Label, v.Class, v.Folded = "Compaction summary", "meta", true
	case m.Type == "assistant":
		v.Label = "Claude"
	default:
		v.Label = "User"
	}
	if m.IsMeta && !m.IsCompactSummary {
		v.Label += " (meta)"
		v.Class = "meta"
	}
	results := 0
	blocks := blocksOf(m)
	for _, bl := range blocks {
		if bl.Type == "tool_result" && shown[bl.ToolUseID] {
			results++
			continue
		}
		v.Blocks = append(v.Blocks, b.block(m, bl))
	}
	if results > 0 && results == len(blocks) {
		v.Class = "slim"
	}
	v.Fork = b.fork && v.Class != "slim" && (m.Type == "user" || m.Type == "assistant")
	if m.InterruptedByShutdown {
		v.Notes = append(v.Notes, "interrupted: Claude Code shut down during this turn")
	}
	for _, cp := range b.checkpoints[m.UUID] {
		note := fmt.Sprintf("checkpoint %q (%s)", cp.Label, cp.ID)
		if cp.Commit != "" {
			note += " at commit " + core.ShortCommit(cp.Commit)
		}
		v.Notes = append(v.Notes, note)
	}
	return v
}

// block renders one content block of m.
func (b *builder) block(m *sessions.Message, bl block) blockView {
	switch bl.Type {
	case "text":
		if m.Type == "assistant" {
			return blockView{Kind: "markdown", HTML: b.md.render(bl.Text)}
		}
		if v, ok := commandBlock(bl.Text); ok {
			return v
		}
		return blockView{Kind: "text", Text: bl.Text}
	case "thinking":
		return blockView{Kind: "thinking", HTML: b.md.render(bl.Thinking)}
	case "redacted_thinking":
		return blockView{Kind: "note", Text: "thinking (redacted)"}
	case "tool_use":
		return blockView{Kind: "tool", Tool: b.tool(bl)}
	case "tool_result":
		r := b.result(bl)
		r.Tool = b.callOf(bl.ToolUseID)
		return blockView{Kind: "result", Result: r}
	case "image":
		if img, ok := imageOf(bl); ok {
			return img
		}
		return blockView{Kind: "note", Text: "image (not embedded)"}
	}
	return blockView{Kind: "raw", Text: indentJSON(bl.Raw)}
}

// tool renders a call, with its result and the subagent it started.
func (b *builder) tool(bl block) *toolView {
	t := &toolView{ID: bl.ID, Name: bl.Name, Summary: toolSummary(bl.Name, bl.Input)}
	t.Diffs = toolDiffs(bl.Name, bl.Input)
	if t.Diffs == nil {
		if t.Fields = inputFields(bl.Input); t.Fields == nil {
			t.Input = indentJSON(bl.Input)
		}
	}
	if res, ok := b.resultOf(bl.ID); ok {
		t.Result = b.result(res)
	}
	if b.agent != nil {
		t.Agent = b.agent(bl.ID)
	}
	return t
}

// result renders a tool_result's content: its text (cut at maxResult)
// and its images.
func (b *builder) result(bl block) *resultView {
	r := &resultView{Error: bl.IsError}
	var s string
	if json.Unmarshal(bl.Content, &s) == nil {
		r.Text = s
	} else {
		var parts []block
		if json.Unmarshal(bl.Content, &parts) == nil {
			var texts []string
			for _, p := range parts {
				switch p.Type {
				case "text":
					texts = append(texts, p.Text)
				case "image":
					if img, ok := imageOf(p); ok {
						r.Images = append(r.Images, img)
					}
				}
			}
			r.Text = strings.Join(texts, "\n")
		} else if len(bl.Content) > 0 {
			r.Text = string(bl.Content)
		}
	}
	if len(r.Text) > maxResult {
		cut := maxResult
		for cut > 0 && !utf8Start(r.Text[cut]) {
			cut--
		}
		r.More = int64(len(r.Text) - cut)
		r.Text = r.Text[:cut]
	}
	return r
}

func utf8Start(c byte) bool { return c&0xC0 != 0x80 }

// imageMedia are the image types shown inline.
var imageMedia = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// base64Data is what a base64 image's data may hold.
var base64Data = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9+/]*={0,2}$`) })

// imageOf is a base64 image block as a data: address, when its type is
// a plain image one and its data base64 (nothing else can reach the
// address).
func imageOf(bl block) (blockView, bool) {
	s := bl.Source
	if s == nil || s.Type != "base64" || !imageMedia[s.MediaType] || !base64Data().MatchString(s.Data) {
		return blockView{}, false
	}
	return blockView{Kind: "image", MediaType: s.MediaType,
		Image: template.URL("data:" + s.MediaType + ";base64," + s.Data)}, true
}

// indentJSON is raw JSON indented, its strings as text (no \u003c for a
// '<': the page escapes what it shows); as it is when it does not parse.
func indentJSON(raw json.RawMessage) string {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// shortTime is a timestamp for people: the date and the time to the
// second, UTC.
func shortTime(ts string) string {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return ts
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// commandBlock is a user row Claude Code wrote for a slash command
// ("<command-name>/x</command-name> … <command-args>a</command-args>":
// the command line "/x a") or for what a local command printed
// ("<local-command-stdout>…</local-command-stdout>", or stderr): shown as
// the command and its output rather than as the tags.
func commandBlock(text string) (blockView, bool) {
	t := strings.TrimSpace(text)
	if name, ok := between(t, "<command-name>", "</command-name>"); ok && strings.HasPrefix(t, "<command-") {
		line := strings.TrimSpace(name)
		if args, ok := between(t, "<command-args>", "</command-args>"); ok && strings.TrimSpace(args) != "" {
			line += " " + strings.TrimSpace(args)
		}
		return blockView{Kind: "command", Text: line}, true
	}
	for _, tag := range []string{"local-command-stdout", "local-command-stderr"} {
		open, end := "<"+tag+">", "</"+tag+">"
		if strings.HasPrefix(t, open) && strings.HasSuffix(t, end) {
			return blockView{Kind: "output", Text: strings.TrimSpace(t[len(open) : len(t)-len(end)])}, true
		}
	}
	return blockView{}, false
}

// between is the text of s between the first open and the close after it.
func between(s, open, end string) (string, bool) {
	_, rest, ok := strings.Cut(s, open)
	if !ok {
		return "", false
	}
	in, _, ok := strings.Cut(rest, end)
	return in, ok
}

// fieldView is one field of a tool's input.
type fieldView struct{ Key, Text string }

// inputFields are the fields of an object input in their order: a
// string as its text, any other value as indented JSON (nil when the
// input is not an object).
func inputFields(raw json.RawMessage) []fieldView {
	d := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []fieldView
	for d.More() {
		tok, err := d.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return nil
		}
		var v json.RawMessage
		if d.Decode(&v) != nil {
			return nil
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			s = indentJSON(v)
		}
		out = append(out, fieldView{Key: key, Text: s})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
