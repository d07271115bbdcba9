package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// targetPct is the goal: the scribe library at no less than this share of
// the plain append's throughput.
const targetPct = 70

type report struct {
	Date     string        `json:"date"`
	Command  string        `json:"command"`
	Go       string        `json:"go"`
	OS       string        `json:"os"`
	CPUs     int           `json:"cpus"`
	Dir      string        `json:"dir"`
	Runs     int           `json:"runs"`
	Warmup   int           `json:"warmup_rounds"`
	Fsync    string        `json:"library_fsync"`
	TargetPc float64       `json:"target_pct"`
	CLIBuild time.Duration `json:"cli_build_ns,omitempty"`
	Workload workloadInfo  `json:"workload"`
	Cases    []caseSummary `json:"cases"`
	Profile  *profileInfo  `json:"profile,omitempty"`
}

type workloadInfo struct {
	Generated    bool     `json:"generated"`
	Seed         uint64   `json:"seed,omitempty"`
	Inputs       []string `json:"inputs,omitempty"`
	Bytes        int64    `json:"bytes"`
	Lines        int      `json:"lines"`
	Entries      int      `json:"entries"`
	Accepted     int      `json:"accepted"`
	Duplicates   int      `json:"duplicates"`
	Malformed    int      `json:"malformed"`
	Sessions     int      `json:"sessions"`
	Files        int      `json:"transcript_files"`
	AvgLineBytes int64    `json:"avg_line_bytes"`
}

func (w *workloadInfo) fill(p *plan) {
	w.Bytes, w.Lines, w.Entries, w.Accepted = p.Bytes, p.Lines, p.Entries, p.Accepted
	w.Duplicates, w.Malformed, w.Sessions, w.Files = p.Duplicates, p.Malformed, p.Sessions, len(p.Files)
	if p.Lines > 0 {
		w.AvgLineBytes = p.Bytes / int64(p.Lines)
	}
}

type profileInfo struct {
	Files []string      `json:"files"`
	Wall  time.Duration `json:"wall_ns"`
	MiBps float64       `json:"mib_per_s"`
}

// caseSummary is one case over all its runs: medians, plus the range.
type caseSummary struct {
	Name string        `json:"name"`
	Wall time.Duration `json:"median_wall_ns"`
	CPU  time.Duration `json:"median_cpu_ns"`
	// OtherLoadPct is the median share of the machine (all CPUs) that other
	// processes used during the runs; -1 when unknown.
	OtherLoadPct  float64 `json:"median_other_load_pct"`
	MiBps         float64 `json:"mib_per_s"`
	MiBpsMin      float64 `json:"mib_per_s_min"`
	MiBpsMax      float64 `json:"mib_per_s_max"`
	EntriesPerSec float64 `json:"entries_per_s"`
	RatioPct      float64 `json:"ratio_vs_plain_pct"`
	// Latency: each percentile is the median of the runs' percentiles; Max
	// is the largest Submit of any run.
	Latency  *latencySummary `json:"submit_latency,omitempty"`
	Verified bool            `json:"verified"`
	Runs     []runResult     `json:"runs"`
}

func medianDur(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// otherLoad is the share of the machine other processes used, in percent.
func (r *runResult) otherLoad() float64 {
	if r.OtherCPU < 0 || r.Wall <= 0 {
		return -1
	}
	return 100 * r.OtherCPU.Seconds() / (r.Wall.Seconds() * float64(runtime.NumCPU()))
}

func fmtLoad(pct float64) string {
	if pct < 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f%%", pct)
}

// medianRun is the run whose wall time is the median (the lower one of
// the middle two for an even count).
func (c *caseSummary) medianRun() *runResult {
	if len(c.Runs) == 0 {
		return nil
	}
	idx := make([]int, len(c.Runs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return int(c.Runs[a].Wall - c.Runs[b].Wall) })
	return &c.Runs[idx[(len(idx)-1)/2]]
}

func summarizeCase(name string, p *plan, runs []runResult) caseSummary {
	cs := caseSummary{Name: name, Runs: runs, Verified: true}
	var walls, cpus []time.Duration
	var loads []float64
	var p50, p99, p999, means []time.Duration
	for _, r := range runs {
		walls = append(walls, r.Wall)
		cpus = append(cpus, r.CPU)
		loads = append(loads, r.otherLoad())
		cs.Verified = cs.Verified && r.Verified
		if l := r.Latency; l != nil {
			p50, p99, p999, means = append(p50, l.P50), append(p99, l.P99), append(p999, l.P999), append(means, l.Mean)
			if cs.Latency == nil {
				cs.Latency = &latencySummary{Count: l.Count}
			}
			cs.Latency.Max = max(cs.Latency.Max, l.Max)
		}
	}
	cs.Wall, cs.CPU = medianDur(walls), medianDur(cpus)
	slices.Sort(loads)
	cs.OtherLoadPct = loads[(len(loads)-1)/2]
	if loads[0] < 0 {
		cs.OtherLoadPct = -1
	}
	cs.MiBps = mibps(p.Bytes, cs.Wall)
	cs.MiBpsMin = mibps(p.Bytes, slices.Max(walls))
	cs.MiBpsMax = mibps(p.Bytes, slices.Min(walls))
	cs.EntriesPerSec = float64(p.Entries) / cs.Wall.Seconds()
	if cs.Latency != nil {
		cs.Latency.P50, cs.Latency.P99, cs.Latency.P999, cs.Latency.Mean = medianDur(p50), medianDur(p99), medianDur(p999), medianDur(means)
	}
	return cs
}

func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < 10*time.Microsecond:
		return fmt.Sprintf("%.2fµs", float64(d)/1e3)
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}

var tableHeader = []string{"case", "MiB/s", "MiB/s min–max", "entries/s", "wall", "CPU", "other load", "vs plain", "Submit p50", "p99", "p99.9", "max"}

func tableRows(r *report) [][]string {
	var rows [][]string
	for _, c := range r.Cases {
		row := []string{
			c.Name,
			fmt.Sprintf("%.1f", c.MiBps),
			fmt.Sprintf("%.1f–%.1f", c.MiBpsMin, c.MiBpsMax),
			fmt.Sprintf("%.0f", c.EntriesPerSec),
			fmtDur(c.Wall),
			fmtDur(c.CPU),
			fmtLoad(c.OtherLoadPct),
			fmt.Sprintf("%.0f%%", c.RatioPct),
		}
		if l := c.Latency; l != nil {
			row = append(row, fmtDur(l.P50), fmtDur(l.P99), fmtDur(l.P999), fmtDur(l.Max))
		} else {
			row = append(row, "–", "–", "–", "–")
		}
		rows = append(rows, row)
	}
	return rows
}

func library(r *report) *caseSummary {
	for i := range r.Cases {
		if strings.HasPrefix(r.Cases[i].Name, caseLibrary) {
			return &r.Cases[i]
		}
	}
	return nil
}

func verdict(r *report) string {
	lib := library(r)
	if lib == nil {
		return ""
	}
	ok := "meets"
	if lib.RatioPct < r.TargetPc {
		ok = "does NOT meet"
	}
	v := fmt.Sprintf("scribe library at %.0f%% of the plain append's throughput (median of %d runs): %s the %.0f%% target.",
		lib.RatioPct, r.Runs, ok, r.TargetPc)
	if r.Cases[0].Wall < 100*time.Millisecond {
		v += " (The plain append took under 100 ms: too short to measure anything; use a larger -mb.)"
	}
	return v
}

func printTable(w io.Writer, r *report) {
	wl := r.Workload
	fmt.Fprintf(w, "workload: %.1f MiB, %d lines (%d entries, avg %d B/line), %d sessions, %d transcript files\n",
		float64(wl.Bytes)/(1<<20), wl.Lines, wl.Entries, wl.AvgLineBytes, wl.Sessions, wl.Files)
	fmt.Fprintf(w, "machine:  %s, %d CPUs, %s, disk under %s; %d warm-up round(s), median of %d runs, order rotated\n\n", r.OS, r.CPUs, r.Go, r.Dir, r.Warmup, r.Runs)
	printAligned(w, tableHeader, tableRows(r))
	fmt.Fprintln(w)
	for _, c := range r.Cases {
		if m := c.medianRun(); m != nil && m.SinkCounters != nil {
			sc := m.SinkCounters
			fmt.Fprintf(w, "%s (median run, %d): wrote %.1f MiB (%+.1f%% vs input), %d write(2) calls, %d fsyncs, %d metadata re-appends, %d queue waits", c.Name,
				m.Run, float64(m.OutputBytes)/(1<<20), 100*float64(m.OutputBytes-wl.Bytes)/float64(wl.Bytes),
				sc["writes"], sc["fsyncs"], sc["metadata_reappends"], m.QueueWaits)
			if m.QueueWaitTime > 0 {
				fmt.Fprintf(w, " (Submit blocked %v in all)", m.QueueWaitTime.Round(time.Millisecond))
			}
			fmt.Fprintln(w)
		}
	}
	if v := verdict(r); v != "" {
		fmt.Fprintln(w, v)
	}
	fmt.Fprintln(w, "every scribe run verified: each transcript file holds the input's lines byte for byte, in order")
	if r.Profile != nil {
		fmt.Fprintf(w, "profiles of an extra library run (%.1f MiB/s, not in the table): %s\n", r.Profile.MiBps, strings.Join(r.Profile.Files, ", "))
	}
}

// writeMarkdown writes the report to dir/<date>-record.md.
func writeMarkdown(dir string, r *report) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, r.Date+"-record.md")
	var b strings.Builder
	wl := r.Workload
	fmt.Fprintf(&b, "# scribe record benchmark — %s\n\n", r.Date)
	fmt.Fprintf(&b, "`%s`\n\n", r.Command)
	fmt.Fprintf(&b, "- machine: %s, %d CPUs, %s; disk: the one under `%s`\n", r.OS, r.CPUs, r.Go, r.Dir)
	if wl.Generated {
		fmt.Fprintf(&b, "- workload: generated (seed %d): ", wl.Seed)
	} else {
		fmt.Fprintf(&b, "- workload: %s: ", strings.Join(wl.Inputs, ", "))
	}
	fmt.Fprintf(&b, "%.1f MiB, %d lines, %d entries (avg %d B/line), %d sessions interleaved, %d transcript files\n",
		float64(wl.Bytes)/(1<<20), wl.Lines, wl.Entries, wl.AvgLineBytes, wl.Sessions, wl.Files)
	fmt.Fprintf(&b, "- %d untimed warm-up round(s), then %d timed runs per case, order rotated each run; the table shows medians (MiB = 2^20 bytes of input)\n", r.Warmup, r.Runs)
	if r.CLIBuild > 0 {
		fmt.Fprintf(&b, "- `go build ./cmd/scribe` took %v (not timed)\n", r.CLIBuild.Round(time.Millisecond))
	}
	b.WriteString("\n| " + strings.Join(tableHeader, " | ") + " |\n|")
	for i := range tableHeader {
		if i == 0 {
			b.WriteString(" --- |")
		} else {
			b.WriteString(" ---: |")
		}
	}
	b.WriteString("\n")
	for _, row := range tableRows(r) {
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	if v := verdict(r); v != "" {
		fmt.Fprintf(&b, "\n**%s**\n", v)
	}
	b.WriteString("\nCPU: user+system time of the case (this process, or the CLI child). Other load: the share of all CPUs that other processes used meanwhile (from /proc/stat); when it is high, wall times and ratios are pessimistic for the CPU-heavier case.\n")
	b.WriteString("\nSubmit latency: each percentile is the median over runs of that run's percentile; max is the largest single Submit of any run.\n")
	b.WriteString("\n## Runs\n\n| case | run | slot | wall | MiB/s | CPU | other load | output lines | output MiB | write(2) | fsyncs | re-appends | queue waits | Submit blocked | verified |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, c := range r.Cases {
		for _, run := range c.Runs {
			sc := run.SinkCounters
			cnt := func(k string) string {
				if sc == nil {
					return "–"
				}
				return fmt.Sprint(sc[k])
			}
			qw, qt := "–", "–"
			if c.Name != casePlain {
				qw = fmt.Sprint(run.QueueWaits)
			}
			if run.Latency != nil {
				qt = fmtDur(run.QueueWaitTime)
			}
			lines := "–"
			if run.OutputLines > 0 {
				lines = fmt.Sprint(run.OutputLines)
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %s | %.1f | %s | %s | %s | %.1f | %s | %s | %s | %s | %s | %v |\n",
				c.Name, run.Run, run.Slot, fmtDur(run.Wall), mibps(wl.Bytes, run.Wall), fmtDur(run.CPU), fmtLoad(run.otherLoad()), lines, float64(run.OutputBytes)/(1<<20),
				cnt("writes"), cnt("fsyncs"), cnt("metadata_reappends"), qw, qt, run.Verified)
		}
	}
	b.WriteString(`
## What was measured

- **plain append** (the peer): the input lines appended, byte for byte, to one
  file per transcript at the paths scribe uses, through a 64 KiB buffered
  writer per file; one fsync per file and per created folder at the end. No
  parsing, routing or dedup (the routing was worked out before timing).
- **scribe library**: ` + "`core.NewPipeline`" + ` with the jsonl sink (defaults: fsync
  batch, 100 ms drain) as sink and seeder; the input read with
  ` + "`core.Intake`" + ` (regions of lines parsed in place on a worker per core,
  each entry leased: ` + "`Entry.Lease`" + `, its block reused once the sink wrote it)
  and submitted on another goroutine (each Submit timed), then Flush and
  Shutdown.
- **scribe CLI**: ` + "`scribe record --config-dir <tmp> --json <input>`" + ` end to end,
  process start to exit (default configuration: three guards, 1 s flush).

Every scribe run is verified: each transcript file holds exactly the input's
uuid lines, byte for byte and in order, at least the input's metadata lines,
and the pipeline's counters match the input. The plain append's files are
checked for size. Output lines exceed input lines by the metadata blocks the
jsonl sink appends again as files grow.
`)
	if r.Profile != nil {
		fmt.Fprintf(&b, "\nProfiles of one extra library run (%.1f MiB/s, not in the table): `%s`.\n", r.Profile.MiBps, strings.Join(r.Profile.Files, "`, `"))
	}
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}
