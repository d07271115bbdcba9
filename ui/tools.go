package ui

import (
	"encoding/json"
	"strconv"
	"strings"
)

// What a tool call did, in one line, and an edit's changes as diffs.

// maxSummary is the longest summary shown (runes).
const maxSummary = 160

// toolInput holds the inputs of Claude Code's tools that a summary or a
// diff needs.
type toolInput struct {
	FilePath     string `json:"file_path"`
	NotebookPath string `json:"notebook_path"`
	Path         string `json:"path"`
	Command      string `json:"command"`
	Pattern      string `json:"pattern"`
	Description  string `json:"description"`
	SubagentType string `json:"subagent_type"`
	URL          string `json:"url"`
	Query        string `json:"query"`
	Prompt       string `json:"prompt"`
	Skill        string `json:"skill"`
	OldString    string `json:"old_string"`
	NewString    string `json:"new_string"`
	Content      string `json:"content"`
	Edits        []struct {
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
	} `json:"edits"`
	Todos []json.RawMessage `json:"todos"`
	// The task list's and the teammates' tools.
	Subject string `json:"subject"`
	TaskID  string `json:"taskId"`
	Status  string `json:"status"`
	Owner   string `json:"owner"`
	To      string `json:"to"`
	Summary string `json:"summary"`
}

// toolSummary says what a call did: the path read or written, the command
// run, the pattern searched ("" when nothing fits).
func toolSummary(name string, raw json.RawMessage) string {
	var in toolInput
	if json.Unmarshal(raw, &in) != nil {
		return ""
	}
	var s string
	switch name {
	case "Read", "Edit", "MultiEdit", "Write":
		s = in.FilePath
	case "NotebookEdit", "NotebookRead":
		s = in.NotebookPath
	case "Bash", "BashOutput", "PowerShell":
		s = in.Command
	case "Grep", "Glob":
		s = in.Pattern
		if in.Path != "" {
			s += " in " + in.Path
		}
	case "Task", "Agent":
		s = in.Description
		if in.SubagentType != "" {
			s = in.SubagentType + ": " + s
		}
	case "WebFetch":
		s = in.URL
	case "WebSearch":
		s = in.Query
	case "Skill":
		s = in.Skill
	case "TodoWrite":
		s = strconv.Itoa(len(in.Todos)) + " todos"
	case "TaskCreate":
		s = in.Subject
	case "TaskUpdate", "TaskGet":
		s = joinSet("task "+in.TaskID, in.Status, in.Owner)
	case "SendMessage":
		s = joinSet("to "+in.To, in.Summary)
	default:
		s = firstString(in)
	}
	return clip(oneLine(s), maxSummary)
}

// firstString is the first of the common inputs an unknown tool has.
func firstString(in toolInput) string {
	for _, s := range []string{in.FilePath, in.Path, in.Command, in.Pattern, in.URL, in.Query, in.Description, in.Prompt} {
		if s != "" {
			return s
		}
	}
	return ""
}

// toolDiffs are the changes an Edit, MultiEdit or Write call makes (nil
// for any other call, or an input that is not one).
func toolDiffs(name string, raw json.RawMessage) []diffView {
	var in toolInput
	if json.Unmarshal(raw, &in) != nil || in.FilePath == "" {
		return nil
	}
	switch name {
	case "Edit":
		return []diffView{{Path: in.FilePath, Lines: chunks(lineDiff(in.OldString, in.NewString))}}
	case "MultiEdit":
		var out []diffView
		for _, e := range in.Edits {
			out = append(out, diffView{Path: in.FilePath, Lines: chunks(lineDiff(e.OldString, e.NewString))})
		}
		return out
	case "Write":
		return []diffView{{Path: in.FilePath, Lines: chunks(lineDiff("", in.Content))}}
	}
	return nil
}

// oneLine is s's first line, with " …" when there were more.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i]) + " …"
	}
	return s
}

// clip cuts s to n runes, with "…".
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// chunks joins the runs of lines of one kind, each line marked with its
// sign, so that a diff costs the page an element per run, not per line.
func chunks(lines []diffLine) []diffLine {
	var out []diffLine
	var b strings.Builder
	for i, l := range lines {
		b.WriteString(l.Op + " " + l.Text + "\n")
		if i+1 == len(lines) || lines[i+1].Op != l.Op {
			out = append(out, diffLine{Op: l.Op, Text: b.String()})
			b.Reset()
		}
	}
	return out
}

// joinSet is first and the parts that are set, joined with ": " and ", ".
func joinSet(first string, parts ...string) string {
	var set []string
	for _, p := range parts {
		if p != "" {
			set = append(set, p)
		}
	}
	if len(set) == 0 {
		return first
	}
	return first + ": " + strings.Join(set, ", ")
}
