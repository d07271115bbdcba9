// Package listing is ls's listing, shared by ls, ls --remote and the MCP
// server: the sessions of a store filtered and paged (Sessions), their
// JSON (WriteInfosJSON), and the table fitted to the terminal, one row per
// session with its project, marks and live state (PrintTable).
package listing

import (
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/text/width"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// liveWindow is how recent a session's last activity (the last timestamp
// of its transcript) must be for ls to show the state its tail implies
// (running, requires_action); a session a live writer holds (status
// active) shows it whatever its age. Past the window the session is idle:
// nothing is working on it any more, whatever its last turn left open
// (STATUS says interrupted when that turn did not finish).
const liveWindow = 15 * time.Minute

// LiveState is the state ls and info print: the tail's state while the
// session is live, else idle.
func LiveState(state core.State, status jsonl.SessionStatus, last, now time.Time) core.State {
	if state == core.StateIdle || status == jsonl.StatusActive || now.Sub(last) <= liveWindow {
		return state
	}
	return core.StateIdle
}

// ANSI styles.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiCyan   = "\x1b[36m"
)

// cell is one table cell: its text and the style it is printed in.
type cell struct {
	text, style string
}

// dispWidth is the number of terminal columns s takes (East Asian wide
// and full-width characters take two).
func dispWidth(s string) int {
	n := 0
	for _, r := range s {
		switch width.LookupRune(r).Kind() {
		case width.EastAsianWide, width.EastAsianFullwidth:
			n += 2
		default:
			n++
		}
	}
	return n
}

// fitRight cuts s to at most n columns, ending in … when cut.
func fitRight(s string, n int) string {
	if dispWidth(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	var b strings.Builder
	w := 0
	for _, r := range s {
		rw := dispWidth(string(r))
		if w+rw > n-1 {
			break
		}
		b.WriteRune(r)
		w += rw
	}
	return b.String() + "…"
}

// fitLeft cuts s to at most n columns from the left, starting with … when
// cut (a path keeps its last folders).
func fitLeft(s string, n int) string {
	if dispWidth(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	w := 0
	i := len(r)
	for i > 0 {
		rw := dispWidth(string(r[i-1]))
		if w+rw > n-1 {
			break
		}
		w += rw
		i--
	}
	return "…" + string(r[i:])
}

// shortIDs is the shortest prefix of each id, at least 8 characters, that
// no other id of the list shares.
func shortIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		n := min(8, len(id))
		for j, other := range ids {
			if j == i || other == id {
				continue
			}
			for n < len(id) && strings.HasPrefix(other, id[:n]) {
				n++
			}
		}
		out[i] = id[:n]
	}
	return out
}

// projectLabel is a session's project as a person reads it: its working
// directory with the home folder written ~, else its project folder.
func projectLabel(s *jsonl.SessionInfo, home string) string {
	p := s.Cwd
	if p == "" {
		if s.ProjectDir == "" {
			return "-"
		}
		return s.ProjectDir[strings.LastIndexAny(s.ProjectDir, `/\`)+1:]
	}
	if home != "" && home != "/" {
		if p == home {
			return "~"
		}
		if rest, ok := strings.CutPrefix(p, home+"/"); ok {
			return "~/" + rest
		}
	}
	return p
}

// sessionMarks are the marks before a session's title: [fork],
// [archived], #tag.
func sessionMarks(s *jsonl.SessionInfo) string {
	var m []string
	if s.Forked {
		m = append(m, "[fork]")
	}
	if s.Archived != nil && *s.Archived {
		m = append(m, "[archived]")
	}
	if s.Tag != "" {
		m = append(m, "#"+strings.Join(strings.Fields(s.Tag), "-"))
	}
	return strings.Join(m, " ")
}

// statusCell is the STATUS column: active, interrupted or completed.
func statusCell(r *jsonl.SessionRecord) cell {
	switch r.Status {
	case jsonl.StatusActive:
		return cell{string(r.Status), ansiGreen}
	case jsonl.StatusInterrupted:
		return cell{string(r.Status), ansiYellow}
	}
	return cell{string(r.Status), ""}
}

// modifiedText is the MODIFIED column: the full date and time, or, in a
// table fitted to a width, "Jan 02 15:04" this year and "Jan 02  2025"
// before it.
func modifiedText(ms int64, fitted bool, now time.Time) string {
	t := time.UnixMilli(ms).Local()
	switch {
	case !fitted:
		return t.Format("2006-01-02 15:04")
	case t.Year() == now.Year():
		return t.Format("Jan 02 15:04")
	}
	return t.Format("Jan 02  2006")
}

// lsColumn is one column of ls's table.
type lsColumn struct {
	head string
	// flex columns share what the others leave; optional ones are left
	// out, last first, when the title would get too narrow.
	flex, optional, left bool
	cells                []cell
}

// minTitle is the narrowest the title column gets before optional columns
// are left out.
const minTitle = 24

// Table is how ls prints its table: in colour or not, the live state
// judged at now.
type Table struct {
	Colored bool
	Now     time.Time
}

// PrintTable prints the sessions fitted to width columns (0: no limit,
// full ids), in colour when color is set.
func PrintTable(w io.Writer, recs []jsonl.SessionRecord, width int, color bool, now time.Time) {
	home, _ := os.UserHomeDir()
	ids := make([]string, len(recs))
	for i := range recs {
		ids[i] = recs[i].Info.SessionID
	}
	if width > 0 {
		ids = shortIDs(ids)
	}
	cols := []*lsColumn{
		{head: "ID"}, {head: "MODIFIED"}, {head: "STATUS"}, {head: "STATE"},
		{head: "SIZE", optional: true}, {head: "BRANCH", optional: true},
		{head: "PROJECT", flex: true, left: true}, {head: "TITLE", flex: true},
	}
	for i := range recs {
		r := &recs[i]
		s := &r.Info
		st := LiveState(r.State, r.Status, r.UpdatedAt, now)
		stStyle := ""
		if st != core.StateIdle {
			stStyle = ansiBold + ansiGreen
			if st == core.StateRequiresAction {
				stStyle = ansiBold + ansiRed
			}
		}
		title := strings.Join(strings.Fields(s.Summary), " ")
		if m := sessionMarks(s); m != "" {
			title = m + " " + title
		}
		branch := s.GitBranch
		if branch == "" {
			branch = "-"
		}
		row := []cell{
			{ids[i], ansiDim},
			{modifiedText(s.LastModified, width > 0, now), ""},
			statusCell(r),
			{string(st), stStyle},
			{cmdutil.HumanBytes(s.FileSize), ""},
			{branch, ""},
			{projectLabel(s, home), ansiCyan},
			{title, ""},
		}
		for c := range cols {
			cols[c].cells = append(cols[c].cells, row[c])
		}
	}
	widths := make([]int, len(cols))
	for c, col := range cols {
		widths[c] = dispWidth(col.head)
		for _, x := range col.cells {
			widths[c] = max(widths[c], dispWidth(x.text))
		}
	}
	const gap = 2
	if width > 0 {
		fitColumns(cols, widths, width, gap)
	}
	line := func(texts []cell) {
		var b strings.Builder
		last := -1
		for c := range cols {
			if widths[c] > 0 {
				last = c
			}
		}
		for c := range cols {
			if widths[c] == 0 {
				continue
			}
			t := texts[c].text
			if cols[c].left {
				t = fitLeft(t, widths[c])
			} else {
				t = fitRight(t, widths[c])
			}
			pad := widths[c] - dispWidth(t)
			if color && texts[c].style != "" && t != "" {
				t = texts[c].style + t + ansiReset
			}
			b.WriteString(t)
			if c != last {
				b.WriteString(strings.Repeat(" ", pad+gap))
			}
		}
		b.WriteByte('\n')
		io.WriteString(w, b.String())
	}
	head := make([]cell, len(cols))
	for c, col := range cols {
		head[c] = cell{col.head, ansiBold}
	}
	line(head)
	for i := range recs {
		row := make([]cell, len(cols))
		for c := range cols {
			row[c] = cols[c].cells[i]
		}
		line(row)
	}
}

// fitColumns narrows widths so that a line takes at most total columns:
// optional columns go first (last listed first) while the title would be
// narrower than minTitle, then the flex columns share what is left (the
// project, the first flex column, at most a third of it; the title, the
// second, the rest).
func fitColumns(cols []*lsColumn, widths []int, total, gap int) {
	proj, title := -1, -1
	for c, col := range cols {
		if col.flex && proj < 0 {
			proj = c
		} else if col.flex {
			title = c
		}
	}
	fixed := func() (n, flex int) {
		for c, col := range cols {
			if widths[c] == 0 {
				continue
			}
			n += gap
			if col.flex {
				flex += widths[c]
			} else {
				n += widths[c]
			}
		}
		return n - gap, flex
	}
	for c := len(cols) - 1; c >= 0; c-- {
		n, flex := fixed()
		if n+flex <= total {
			return
		}
		if cols[c].optional && total-n < minTitle+min(widths[proj], 12) {
			widths[c] = 0
		}
	}
	n, flex := fixed()
	if n+flex <= total {
		return
	}
	room := max(total-n, 2)
	pw := min(widths[proj], max(room/3, 1))
	widths[proj] = pw
	widths[title] = max(room-pw, 1)
}
