// Package usagecmd is scribe usage: tokens and cost of the stored sessions,
// counted as ccusage counts them.
package usagecmd

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/usage"
)

// usageReport is `scribe usage <kind> --json`: ccusage's JSON (20.0.24,
// --offline), keyed by the report's kind, with its totals.
func usageReportJSON(kind string, periods []*usage.Period, tot usage.Totals) map[string]any {
	if periods == nil {
		periods = []*usage.Period{}
	}
	return map[string]any{kind: periods, "totals": tot}
}

func NewCmdUsage(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "usage daily|weekly|monthly|session|blocks",
		Short: "Tokens and cost of the stored sessions, counted as ccusage counts them",
		Long: "Sums the token usage of every assistant message of the store's transcripts (subagents included) by\n" +
			"day, week, month or session, and prices it with the built-in table (LiteLLM's and models.dev's prices as\n" +
			"ccusage 20.0.24 embeds them). --json prints what `ccusage <report> --offline --json` prints for the\n" +
			"same folder. A message streamed over several rows counts once; a row's costUSD is used when it has\n" +
			"one. Rows with missing, negative or non-integer token counts are left out and counted on stderr.",
	}
	for _, kind := range []string{usage.Daily, usage.Weekly, usage.Monthly, usage.Session, usage.Blocks} {
		cmd.AddCommand(newUsageKindCmd(f, kind))
	}
	return cmd
}

func newUsageKindCmd(f *cmdutil.Factory, kind string) *cobra.Command {
	var asJSON, breakdown bool
	var since, until, tz, from string
	cmd := &cobra.Command{
		Use:   kind,
		Short: "Usage by " + map[string]string{usage.Daily: "day", usage.Weekly: "week (from Monday)", usage.Monthly: "month", usage.Session: "session", usage.Blocks: "5-hour billing window"}[kind],
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opt := usage.Options{Loc: time.Local}
			var err error
			if opt.Since, err = usageDate("--since", since); err != nil {
				return err
			}
			if opt.Until, err = usageDate("--until", until); err != nil {
				return err
			}
			if tz != "" {
				if opt.Loc, err = time.LoadLocation(tz); err != nil {
					return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--timezone %q: %w", tz, err)}
				}
			}
			l, done, err := usageLayout(f, cmd, from)
			if err != nil {
				return err
			}
			defer done()
			rows, bad, err := usageRows(l)
			if err != nil {
				return err
			}
			kept, dups := usage.Dedupe(rows, kind != usage.Session && kind != usage.Blocks)
			reportBadUsage(cmd.ErrOrStderr(), bad, dups)
			if kind == usage.Blocks {
				blocks := usage.BuildBlocks(kept, usage.NewPricer(), time.Now())
				if asJSON {
					return cmdutil.WriteJSON(cmd.OutOrStdout(), map[string]any{"blocks": blocks})
				}
				printBlocksTable(cmd.OutOrStdout(), blocks)
				return nil
			}
			periods, tot := usage.Build(kind, kept, usage.NewPricer(), opt)
			if asJSON {
				return cmdutil.WriteJSON(cmd.OutOrStdout(), usageReportJSON(kind, periods, tot))
			}
			printUsageTable(cmd.OutOrStdout(), kind, periods, tot, cmdutil.OutputWidth(os.Stdout), breakdown)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&asJSON, "json", false, "print ccusage's JSON (as `ccusage "+kind+" --offline --json`)")
	fl.StringVar(&from, "from", "", "read this store (a jsonl, postgres or s3 block, type/name) instead of the local files")
	if kind == usage.Blocks {
		return cmd
	}
	fl.BoolVar(&breakdown, "breakdown", false, "a row per model under each period (the JSON always has them)")
	fl.StringVar(&since, "since", "", "only days from this one (YYYYMMDD or YYYY-MM-DD, in the report's time zone)")
	fl.StringVar(&until, "until", "", "only days up to this one (YYYYMMDD or YYYY-MM-DD)")
	fl.StringVar(&tz, "timezone", "", "the time zone of days and months (an IANA name; default: TZ, the local one)")
	return cmd
}

// usageDate reads --since/--until as YYYYMMDD.
func usageDate(flag, v string) (string, error) {
	if v == "" {
		return "", nil
	}
	d := strings.ReplaceAll(v, "-", "")
	if _, err := time.Parse("20060102", d); err != nil || len(d) != 8 {
		return "", &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("%s %q: want YYYYMMDD or YYYY-MM-DD", flag, v)}
	}
	return d, nil
}

// usageLayout is the folder whose sessions are counted: Claude's, a jsonl
// store's (--from), or another store's sessions materialized.
func usageLayout(f *cmdutil.Factory, cmd *cobra.Command, from string) (jsonl.Layout, func(), error) {
	l, cfg, err := f.LocalLayout(cmd)
	if err != nil || from == "" {
		return l, func() {}, err
	}
	if id, err := core.ParseID(from); err == nil && id.Type == "jsonl" {
		return l, func() {}, nil
	}
	fl, _, done, err := f.FromLayout(cmd, cfg, from, "", "")
	return fl, done, err
}

// usageRows reads the usage rows of every session of l (its main file and
// its subagents', in path order) and counts the bad ones by reason.
func usageRows(l jsonl.Layout) ([]usage.Row, map[string]int, error) {
	stored, err := l.StoredSessions()
	if err != nil {
		return nil, nil, fmt.Errorf("list sessions: %w", err)
	}
	type file struct{ path, session string }
	var files []file
	for _, s := range stored {
		tf, _ := jsonl.TranscriptFiles(s.ProjectDir, s.ID)
		for _, f := range tf {
			if !f.Sidecar {
				files = append(files, file{f.Path, s.ID})
			}
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	bad := map[string]int{}
	var rows []usage.Row
	for _, f := range files {
		if err := usageFileRows(f.path, f.session, &rows, bad); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // removed since the listing
			}
			return nil, nil, err
		}
	}
	return rows, bad, nil
}

func usageFileRows(path, session string, rows *[]usage.Row, bad map[string]int) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	br := bufio.NewReaderSize(fh, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			r, ok, reason := usage.ParseLine(session, line)
			switch {
			case ok:
				*rows = append(*rows, r)
				if r.Absurd() {
					bad[usage.Absurd]++
				}
			case reason != "":
				bad[reason]++
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
	}
}

// reportBadUsage says on stderr which rows were left out, and how many
// streamed rows were folded into their message.
func reportBadUsage(w io.Writer, bad map[string]int, dups int) {
	reasons := make([]string, 0, len(bad))
	for r := range bad {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		fmt.Fprintf(w, "scribe usage: %d row(s) with usage: %s\n", bad[r], r)
	}
	if dups > 0 {
		fmt.Fprintf(w, "scribe usage: %d streamed row(s) folded into their message (counted once)\n", dups)
	}
}

// printUsageTable prints the report as a table with totals; narrower than
// the full table's width, the cache and model columns go and session ids
// are cut to 8 characters.
func printUsageTable(w io.Writer, kind string, periods []*usage.Period, tot usage.Totals, width int, breakdown bool) {
	head := map[string]string{usage.Daily: "Date", usage.Weekly: "Week", usage.Monthly: "Month", usage.Session: "Session"}[kind]
	full := [][]string{{head, "Input", "Output", "Cache create", "Cache read", "Total tokens", "Cost (USD)", "Models"}}
	for _, p := range periods {
		var models []string
		for _, m := range p.ModelBreakdowns {
			n := strings.TrimPrefix(m.ModelName, "claude-")
			if m.MissingPricing {
				n += "*"
			}
			models = append(models, n)
		}
		full = append(full, usageCells(p.Period, p.InputTokens, p.OutputTokens, p.CacheCreationTokens, p.CacheReadTokens, p.TotalTokens, p.TotalCost, strings.Join(models, ",")))
		if breakdown {
			for i, m := range p.ModelBreakdowns {
				t := m.InputTokens + m.OutputTokens + m.CacheCreationTokens + m.CacheReadTokens
				full = append(full, usageCells("  - "+models[i], m.InputTokens, m.OutputTokens, m.CacheCreationTokens, m.CacheReadTokens, t, m.Cost, ""))
			}
		}
	}
	full = append(full, usageCells("Total", tot.InputTokens, tot.OutputTokens, tot.CacheCreationTokens, tot.CacheReadTokens, tot.TotalTokens, tot.TotalCost, ""))
	table := full
	if width > 0 && tableWidth(full) > width {
		table = nil
		for _, r := range full {
			name := r[0]
			if kind == usage.Session && len(name) > 8 && r[0] != head {
				name = name[:8]
			}
			table = append(table, []string{name, r[1], r[2], r[5], r[6]})
		}
	}
	widths := make([]int, len(table[0]))
	for _, r := range table {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	for _, r := range table {
		var b strings.Builder
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			if i == 0 || i == 7 {
				fmt.Fprintf(&b, "%-*s", widths[i], c)
			} else {
				fmt.Fprintf(&b, "%*s", widths[i], c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	fmt.Fprintf(w, "Prices: the built-in table of %s (LiteLLM and models.dev, as ccusage 20.0.24 embeds them); a row's costUSD when it has one.\n", usage.PriceTableDate)
	if len(tot.UnpricedModels) > 0 {
		fmt.Fprintf(w, "* no known price, counted at $0: %s\n", strings.Join(tot.UnpricedModels, ", "))
	}
}

func usageCells(name string, in, out, cc, cr, total int64, cost float64, models string) []string {
	return []string{name, commas(in), commas(out), commas(cc), commas(cr), commas(total), fmt.Sprintf("$%.2f", cost), models}
}

// tableWidth is the width of the widest line of t.
func tableWidth(t [][]string) int {
	widths := make([]int, len(t[0]))
	for _, r := range t {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	n := 2 * (len(widths) - 1)
	for _, w := range widths {
		n += w
	}
	return n
}

// printBlocksTable prints the 5-hour windows, a gap as one line.
func printBlocksTable(w io.Writer, blocks []usage.Block) {
	fmt.Fprintf(w, "%-24s  %7s  %13s  %10s  %s\n", "Block start (UTC)", "Entries", "Total tokens", "Cost (USD)", "Models")
	var tokens int64
	var cost float64
	for _, b := range blocks {
		if b.IsGap {
			fmt.Fprintf(w, "%-24s  (no activity until %s)\n", b.StartTime, b.EndTime)
			continue
		}
		mark := ""
		if b.IsActive {
			mark = " (active)"
		}
		fmt.Fprintf(w, "%-24s  %7d  %13s  %10s  %s%s\n", b.StartTime, b.Entries, commas(b.TotalTokens), fmt.Sprintf("$%.2f", b.CostUSD), strings.Join(b.Models, ","), mark)
		tokens += b.TotalTokens
		cost += b.CostUSD
	}
	fmt.Fprintf(w, "%-24s  %7s  %13s  %10s\n", "Total", "", commas(tokens), fmt.Sprintf("$%.2f", cost))
	fmt.Fprintf(w, "Prices: the built-in table of %s; blocks start at the hour (UTC) of their first message and last 5 hours.\n", usage.PriceTableDate)
}

// commas writes n with thousands separators.
func commas(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
