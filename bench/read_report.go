package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// The read benchmark's report: ratios against the SDK, the goals, the
// table printed and the markdown written to bench/results.

func readFind(r *readReport, name string) *readCase {
	for i := range r.Cases {
		if r.Cases[i].Name == name {
			return &r.Cases[i]
		}
	}
	return nil
}

// readGroupSDK is the SDK's case of a group, the one its cases are
// compared with.
func readGroupSDK(r *readReport, group string) *readCase {
	for i := range r.Cases {
		if c := &r.Cases[i]; c.Group == group && strings.HasPrefix(c.Name, readSDKPrefix) {
			return c
		}
	}
	return nil
}

// readTimes is how many times faster than the SDK a case is.
func readTimes(c, sdk *readCase) float64 {
	if c == nil || sdk == nil || c.Wall <= 0 {
		return 0
	}
	return float64(sdk.Wall) / float64(c.Wall)
}

func readRSSShare(c, sdk *readCase) float64 {
	if c == nil || sdk == nil || sdk.RSSKB <= 0 {
		return 0
	}
	return float64(c.RSSKB) / float64(sdk.RSSKB)
}

func readGoals(r *readReport) []readGoal {
	lsSDK, showSDK := readFind(r, readLsSDK), readFind(r, readShowSDK)
	var gs []readGoal
	timeGoal := func(name string, factor float64) {
		c := readFind(r, name)
		x := readTimes(c, lsSDK)
		gs = append(gs, readGoal{What: name + ": time", Got: fmt.Sprintf("1/%.0f of the SDK's (%s vs %s)", x, fmtDur(c.Wall), fmtDur(lsSDK.Wall)),
			Goal: fmt.Sprintf("≤ 1/%.0f", factor), Met: x >= factor})
	}
	rssGoal := func(name string, sdk *readCase) {
		c := readFind(r, name)
		s := readRSSShare(c, sdk)
		gs = append(gs, readGoal{What: name + ": peak memory", Got: fmt.Sprintf("%.3f of the SDK's (%.1f MB vs %.1f MB)", s, float64(c.RSSKB)/1024, float64(sdk.RSSKB)/1024),
			Goal: fmt.Sprintf("≤ 1/%d (%.3f)", readGoalLsRSS, 1.0/readGoalLsRSS), Met: s <= 1.0/readGoalLsRSS})
	}
	timeGoal(readLsNoIndex, readGoalLsNoIndex)
	timeGoal(readLsWarm, readGoalLsIndex)
	rssGoal(readLsNoIndex, lsSDK)
	rssGoal(readLsWarm, lsSDK)
	end, start, small := readFind(r, readShowEnd), readFind(r, readShowStart), readFind(r, readShowSmall)
	x := readTimes(end, showSDK)
	gs = append(gs, readGoal{What: readShowEnd + ": time", Got: fmt.Sprintf("1/%.0f of the SDK's (%s vs %s)", x, fmtDur(end.Wall), fmtDur(showSDK.Wall)),
		Goal: fmt.Sprintf("≤ 1/%d", readGoalShow), Met: x >= readGoalShow})
	// Memory against what comes before the boundary: the large and the
	// small file differ (almost) only there.
	pre := float64(r.Boundary-r.SmallBound) / (1 << 10)
	grow := float64(end.RSSKB - small.RSSKB)
	share := grow / pre
	gs = append(gs, readGoal{What: "scribe show: memory against the part before the boundary",
		Got: fmt.Sprintf("%+.1f MB of RSS for %+.1f MB more before the boundary (%.1f%%); same size with the boundary near the start: %.1f MB",
			grow/1024, pre/1024, 100*share, float64(start.RSSKB)/1024),
		Goal: fmt.Sprintf("grows by < %.0f%% of it", 100*readGoalShowGrowth), Met: share < readGoalShowGrowth})
	return append(gs, readNBGoals(r)...)
}

// readNBGoals are the goals of the sessions with no boundary: time and
// peak memory against the SDK on the same file.
func readNBGoals(r *readReport) []readGoal {
	var gs []readGoal
	for _, f := range r.NoBoundary {
		sdk := readGroupSDK(r, f.Group)
		var c *readCase
		for i := range r.Cases {
			if r.Cases[i].Group == f.Group && &r.Cases[i] != sdk {
				c = &r.Cases[i]
			}
		}
		if sdk == nil || c == nil {
			continue
		}
		x, s := readTimes(c, sdk), readRSSShare(c, sdk)
		gs = append(gs,
			readGoal{What: c.Name + ": time", Got: fmt.Sprintf("1/%.1f of the SDK's (%s vs %s)", x, fmtDur(c.Wall), fmtDur(sdk.Wall)),
				Goal: fmt.Sprintf("≤ 1/%d", readGoalNBShow), Met: x >= readGoalNBShow},
			readGoal{What: c.Name + ": peak memory", Got: fmt.Sprintf("%.3f of the SDK's (%.1f MB vs %.1f MB)", s, float64(c.RSSKB)/1024, float64(sdk.RSSKB)/1024),
				Goal: fmt.Sprintf("≤ 1/%d (%.3f)", readGoalNBRSS, 1.0/readGoalNBRSS), Met: s <= 1.0/readGoalNBRSS})
	}
	return gs
}

func readRows(r *readReport) [][]string {
	var rows [][]string
	for i := range r.Cases {
		c := &r.Cases[i]
		sdk := readGroupSDK(r, c.Group)
		ratio, mem := "–", "–"
		if c != sdk {
			ratio = fmt.Sprintf("%.1f×", readTimes(c, sdk))
			mem = fmt.Sprintf("%.3f", readRSSShare(c, sdk))
		}
		if c.Name == readFloor {
			ratio = "–"
		}
		rows = append(rows, []string{c.Name, fmtDur(c.Wall), fmtDur(c.WallMin) + "–" + fmtDur(c.WallMax), fmtDur(c.CPU),
			fmt.Sprintf("%.1f MB", float64(c.RSSKB)/1024), ratio, mem})
	}
	return rows
}

func printReadTable(w io.Writer, r *readReport) {
	fmt.Fprintf(w, "ls: %d sessions, %.1f MiB in one project; show: %.1f MB session, %d subagents, boundary at %.1f MB\n",
		r.LsSessions, float64(r.LsBytes)/(1<<20), float64(r.ShowFile)/1e6, r.Subagents, float64(r.Boundary)/1e6)
	fmt.Fprintf(w, "machine: %s, %d CPUs, %s, %s, SDK %s; %d warm-up round(s), median of %d runs, order rotated\n\n",
		r.OS, r.CPUs, r.Go, r.Node, r.SDK, r.Warmup, r.Runs)
	printAligned(w, readHeader, readRows(r))
	fmt.Fprintln(w)
	printGoals(w, r.Goals)
	fmt.Fprintln(w, "every run verified: scribe's JSON equals the SDK's (ls, show), the other files give their conversation")
}

// writeReadMarkdown writes the report to dir/<date>-read.md.
func writeReadMarkdown(dir string, r *readReport) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, r.Date+"-read.md")
	var b strings.Builder
	fmt.Fprintf(&b, "# scribe read benchmark — %s\n\n", r.Date)
	fmt.Fprintf(&b, "`%s`\n\n", r.Command)
	fmt.Fprintf(&b, "- machine: %s, %d CPUs, %s; %s; Claude Agent SDK %s; disk: the one under `%s`\n", r.OS, r.CPUs, r.Go, r.Node, r.SDK, r.Dir)
	fmt.Fprintf(&b, "- ls: %d sessions of about %d bytes (%.1f MiB) in one project, from `gen-corpus.mjs bulk` (seed 1)\n",
		r.LsSessions, *readBytes, float64(r.LsBytes)/(1<<20))
	fmt.Fprintf(&b, "- show: `internal/gen.LargeSession` (seed 1): %.1f MB, %d subagents, compact boundary at byte %d (%d bytes before the end); "+
		"the same generator without a boundary plus one after the first line: %.1f MB; a small one (%d progress rows): %.1f MB, boundary at byte %d\n",
		float64(r.ShowFile)/1e6, r.Subagents, r.Boundary, r.ShowFile-r.Boundary, float64(r.StartFile)/1e6, *readSmall, float64(r.SmallFile)/1e6, r.SmallBound)
	for _, f := range r.NoBoundary {
		fmt.Fprintf(&b, "- %s: the same generator with no compact boundary at all, %d progress rows, %d subagents: %.1f MB, all of it the conversation\n",
			f.Group, f.Progress, f.Subagents, float64(f.Bytes)/1e6)
	}
	fmt.Fprintf(&b, "- every case is a child process timed from start to exit; peak RSS is its rusage Maxrss; %d untimed warm-up round(s), then %d timed runs, order rotated; medians\n", r.Warmup, r.Runs)
	fmt.Fprintf(&b, "- `go build ./cmd/scribe` took %v (not timed)\n\n", r.Build.Round(time.Millisecond))
	tableMarkdown(&b, readHeader, readRows(r))
	goalsMarkdown(&b, r.Goals)
	if f := readFind(r, readFloor); f != nil {
		fmt.Fprintf(&b, "\nFor scale: `scribe version` alone peaks at %.1f MB (the binary links the server, plugins and their libraries), so a quarter of the SDK's listing memory (%.1f MB) leaves scribe's ls %.1f MB for its own work.\n",
			float64(f.RSSKB)/1024, float64(readFind(r, readLsSDK).RSSKB)/1024/readGoalLsRSS, float64(readFind(r, readLsSDK).RSSKB)/1024/readGoalLsRSS-float64(f.RSSKB)/1024)
	}
	casesMarkdown(&b, r.Cases)
	b.WriteString(`
## What was measured

- **SDK** cases: ` + "`node internal/peer/peer.mjs list|messages ... --compact`" + `, the pinned
  @anthropic-ai/claude-agent-sdk's listSessions and getSessionMessages in a
  fresh node process (importing the SDK is part of the time, as it is for
  any tool that shells out to it).
- **scribe ls**: ` + "`scribe ls --project <cwd> --json`" + `, with ` + "`--no-index`" + ` (every transcript's
  64 KiB head and tail read and parsed), with the sessions index warm (one
  lstat per transcript, the index's listing section read; a run that had to
  rewrite the index fails verification), and with the index deleted before
  each run (every transcript read, the index written: the first listing).
- **scribe show**: ` + "`scribe show <id> --json`" + `; for the file of the same size
  with the boundary near the start and for the small file only scribe runs:
  they show that its memory follows what comes after the last compact
  boundary, not the file's size.
- **no boundary**: ` + "`scribe show <id> --json`" + ` against the SDK's getSessionMessages
  on a session with no compact boundary, where both must rebuild the
  whole file.

Every output is verified: scribe's ls and show JSON equal the SDK's answer
on the same data (compared as JSON values), with and without a boundary; the boundary-near-the-start file
gives a conversation that starts at its summary.
`)
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

// printAligned prints a table, its columns aligned right.
func printAligned(w io.Writer, header []string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
}

// printGoals prints each goal, met or not.
func printGoals(w io.Writer, goals []readGoal) {
	for _, g := range goals {
		ok := "MET"
		if !g.Met {
			ok = "NOT MET"
		}
		fmt.Fprintf(w, "%-7s %s: %s (goal %s)\n", ok, g.What, g.Got, g.Goal)
	}
}

// tableMarkdown writes a markdown table, its first column aligned left.
func tableMarkdown(b *strings.Builder, header []string, rows [][]string) {
	b.WriteString("| " + strings.Join(header, " | ") + " |\n| --- |" + strings.Repeat(" ---: |", len(header)-1) + "\n")
	for _, row := range rows {
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
}

// goalsMarkdown writes the goals section.
func goalsMarkdown(b *strings.Builder, goals []readGoal) {
	b.WriteString("\n## Goals\n\n| | result | goal | |\n| --- | --- | --- | --- |\n")
	for _, g := range goals {
		ok := "met"
		if !g.Met {
			ok = "**not met**"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", g.What, g.Got, g.Goal, ok)
	}
}

// casesMarkdown writes the commands of the cases and every timed run.
func casesMarkdown(b *strings.Builder, cases []readCase) {
	b.WriteString("\n## Commands\n\n| case | command |\n| --- | --- |\n")
	for _, c := range cases {
		fmt.Fprintf(b, "| %s | `%s` |\n", c.Name, c.Command)
	}
	b.WriteString("\n## Runs\n\n| case | run | slot | wall | CPU | peak RSS |\n| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, c := range cases {
		for _, run := range c.Runs {
			fmt.Fprintf(b, "| %s | %d | %d | %s | %s | %.1f MB |\n", c.Name, run.Run, run.Slot, fmtDur(run.Wall), fmtDur(run.CPU), float64(run.RSSKB)/1024)
		}
	}
}

// writeTableAndGoals writes a Markdown table (the first column left, the
// others right aligned) and a "Goals" section.
func writeTableAndGoals(b *strings.Builder, header []string, rows [][]string, goals []readGoal) {
	tableMarkdown(b, header, rows)
	goalsMarkdown(b, goals)
}
