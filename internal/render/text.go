package render

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// A message's content as show's text prints it: prose as it is, tool calls
// as a line naming the tool and its arguments, Edit, MultiEdit and Write as
// diffs, tool results as their text, images and documents as a placeholder
// with their media type and size. Never a content block's JSON, never
// base64.

// Limits of what show prints of one block.
const (
	showResultLines = 40  // lines of a tool result
	showWriteLines  = 10  // lines of a Write's new content
	showDiffLines   = 60  // lines of an Edit's diff
	showArgChars    = 200 // characters of one tool argument
	showDiffCells   = 1 << 20
)

// Part is a piece of a message as show prints it: Code is a tool call or
// result, printed as code.
type Part struct {
	Text string
	Code bool
}

// MessageParts turns a message's content into printable parts.
func MessageParts(raw json.RawMessage) []Part {
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
		return nil
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []Part{{Text: s}}
	}
	var blocks []rBlock
	if json.Unmarshal(m.Content, &blocks) != nil {
		return []Part{{Text: fmt.Sprintf("[content scribe cannot read, %s]", sizeText(len(m.Content)))}}
	}
	var out []Part
	for _, b := range blocks {
		switch b.Type {
		case "text":
			out = append(out, Part{Text: b.Text})
		case "thinking":
			out = append(out, Part{Text: "(thinking) " + Clip(b.Thinking, 200)})
		case "redacted_thinking":
			out = append(out, Part{Text: "(thinking, redacted)"})
		case "tool_use", "server_tool_use":
			out = append(out, Part{Text: toolCallText(b.Name, b.Input), Code: true})
		case "tool_result":
			label := "← result"
			if b.IsError {
				label = "← error"
			}
			text := resultBody(b.Content)
			if strings.Contains(text, "\n") {
				out = append(out, Part{Text: label + ":\n" + text, Code: true})
			} else {
				out = append(out, Part{Text: label + ": " + text, Code: true})
			}
		default:
			out = append(out, Part{Text: placeholder(b)})
		}
	}
	return out
}

// placeholder stands for a block show does not print: an image or a
// document with its media type and size, anything else with its type.
func placeholder(b rBlock) string {
	if b.Source == nil {
		return "[" + b.Type + "]"
	}
	what := b.Type
	if b.Source.MediaType != "" {
		what += ": " + b.Source.MediaType
	}
	switch {
	case b.Source.Type == "base64":
		what += ", " + sizeText(base64.StdEncoding.DecodedLen(len(b.Source.Data))-strings.Count(b.Source.Data[max(len(b.Source.Data)-2, 0):], "="))
	case b.Source.URL != "":
		what += ", " + b.Source.URL
	case b.Source.Type == "text":
		what += ", " + sizeText(len(b.Source.Data))
	}
	return "[" + what + "]"
}

// sizeText is a size as 12.3 KiB.
func sizeText(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// resultBody is a tool_result's content as text: a string as it is, text
// blocks joined, other blocks as placeholders; cut after showResultLines.
func resultBody(c json.RawMessage) string {
	var text string
	if len(c) == 0 || string(c) == "null" {
		return ""
	}
	if json.Unmarshal(c, &text) != nil {
		var blocks []rBlock
		if json.Unmarshal(c, &blocks) != nil {
			return fmt.Sprintf("[result scribe cannot read, %s]", sizeText(len(c)))
		}
		var parts []string
		for _, b := range blocks {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			} else {
				parts = append(parts, placeholder(b))
			}
		}
		text = strings.Join(parts, "\n")
	}
	return firstLines(strings.TrimRight(text, "\n"), showResultLines)
}

// firstLines keeps the first n lines of s and says how many it left out.
func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n… %d more lines", len(lines)-n)
}

// toolCallText is a tool call: "→ Name" and its arguments, or, for Edit,
// MultiEdit and Write, the file and a diff of the change.
func toolCallText(name string, input json.RawMessage) string {
	var args map[string]json.RawMessage
	if json.Unmarshal(input, &args) != nil {
		return "→ " + name
	}
	str := func(k string) string {
		var s string
		_ = json.Unmarshal(args[k], &s)
		return s
	}
	file := str("file_path")
	switch {
	case name == "Edit" && file != "":
		head := "→ Edit " + file
		if all := string(args["replace_all"]); all == "true" {
			head += " (every occurrence)"
		}
		return head + "\n" + lineDiff(str("old_string"), str("new_string"))
	case name == "MultiEdit" && file != "":
		var edits []struct {
			Old        string `json:"old_string"`
			New        string `json:"new_string"`
			ReplaceAll bool   `json:"replace_all"`
		}
		_ = json.Unmarshal(args["edits"], &edits)
		var b strings.Builder
		fmt.Fprintf(&b, "→ MultiEdit %s (%d edits)", file, len(edits))
		for i, e := range edits {
			fmt.Fprintf(&b, "\n@@ edit %d", i+1)
			if e.ReplaceAll {
				b.WriteString(" (every occurrence)")
			}
			b.WriteString("\n" + lineDiff(e.Old, e.New))
		}
		return b.String()
	case name == "Write" && file != "":
		content := strings.TrimRight(str("content"), "\n")
		lines := strings.Split(content, "\n")
		if content == "" {
			lines = nil
		}
		var b strings.Builder
		fmt.Fprintf(&b, "→ Write %s (%d lines, %s)", file, len(lines), sizeText(len(str("content"))))
		for i, l := range lines {
			if i == showWriteLines {
				fmt.Fprintf(&b, "\n… %d more lines", len(lines)-i)
				break
			}
			b.WriteString("\n+ " + l)
		}
		return b.String()
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("→ " + name)
	for _, k := range keys {
		v := args[k]
		var s string
		if json.Unmarshal(v, &s) != nil {
			s = string(v)
		}
		fmt.Fprintf(&b, "\n  %s: %s", k, Clip(s, showArgChars))
	}
	return b.String()
}

// lineDiff is a compact unified diff of old → new by lines: lines kept
// start with two spaces, removed ones "- ", added ones "+ "; long runs of
// kept lines are shortened to their first and last two.
func lineDiff(old, new string) string {
	a := strings.Split(strings.TrimRight(old, "\n"), "\n")
	b := strings.Split(strings.TrimRight(new, "\n"), "\n")
	if old == "" {
		a = nil
	}
	if new == "" {
		b = nil
	}
	var out []string
	emit := func(prefix string, lines []string) {
		for _, l := range lines {
			out = append(out, prefix+l)
		}
	}
	keep := func(lines []string) {
		if len(lines) > 5 {
			emit("  ", lines[:2])
			out = append(out, fmt.Sprintf("  … %d lines", len(lines)-4))
			emit("  ", lines[len(lines)-2:])
			return
		}
		emit("  ", lines)
	}
	// Common head and tail, then the middle by longest common subsequence
	// (all removed, then all added, when it is too large to compare).
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	keep(a[:p])
	ma, mb := a[p:len(a)-s], b[p:len(b)-s]
	if len(ma)*len(mb) > showDiffCells {
		emit("- ", ma)
		emit("+ ", mb)
	} else {
		diffLCS(ma, mb, emit, keep)
	}
	keep(a[len(a)-s:])
	if len(out) > showDiffLines {
		n := len(out) - showDiffLines
		out = append(out[:showDiffLines], fmt.Sprintf("… %d more lines", n))
	}
	return strings.Join(out, "\n")
}

// diffLCS emits the edit script of a → b by a longest common subsequence.
func diffLCS(a, b []string, emit func(string, []string), keep func([]string)) {
	// l[i][j]: the LCS length of a[i:] and b[j:].
	l := make([][]int, len(a)+1)
	for i := range l {
		l[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	i, j := 0, 0
	var same []string
	flush := func() {
		if len(same) > 0 {
			keep(same)
			same = nil
		}
	}
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			same = append(same, a[i])
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || l[i+1][j] >= l[i][j+1]):
			flush()
			emit("- ", a[i:i+1])
			i++
		default:
			flush()
			emit("+ ", b[j:j+1])
			j++
		}
	}
	flush()
}

// Clip is s on one line (its runs of white space one blank), cut to n
// characters ending in … when longer.
func Clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
