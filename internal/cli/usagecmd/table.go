package usagecmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/e0dc0000/scribe/usage"
)

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
}

// printUsageFooter says where the prices came from (the built-in table's
// date, the overrides that priced rows), note, the models with no price,
// and what the cache did.
func printUsageFooter(w io.Writer, in *usageInput, noCache bool, note string, unpriced []string) {
	fmt.Fprintf(w, "Prices: the built-in table of %s (LiteLLM and models.dev, as ccusage 20.0.24 embeds them); %s.\n", usage.PriceTableDate, note)
	if used := in.pricer.OverridesUsed(); len(used) > 0 {
		fmt.Fprintf(w, "Price overrides from the configuration applied to: %s.\n", strings.Join(used, ", "))
	}
	if len(unpriced) > 0 {
		fmt.Fprintf(w, "* no known price, counted at $0: %s\n", strings.Join(unpriced, ", "))
	}
	line := cacheLine(in.scan.Cache, noCache)
	fmt.Fprintln(w, strings.ToUpper(line[:1])+line[1:]+".")
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

// printBlocksTable prints the 5-hour windows, a gap as one line; the
// active block is followed by its burn rate, its projection and how it
// stands against --token-limit.
func printBlocksTable(w io.Writer, blocks []usage.Block, breakdown bool) {
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
		if breakdown {
			for _, m := range b.Breakdown() {
				t := m.InputTokens + m.OutputTokens + m.CacheCreationTokens + m.CacheReadTokens
				fmt.Fprintf(w, "%-24s  %7s  %13s  %10s  %s\n", "  - "+strings.TrimPrefix(m.ModelName, "claude-"), "", commas(t), fmt.Sprintf("$%.2f", m.Cost), "")
			}
		}
		if br, pr := b.BurnRate, b.Projection; br != nil && pr != nil {
			fmt.Fprintf(w, "%-24s  burn rate %s tokens/min, $%.2f/h; by %s (%dh%02dm left): %s tokens, $%.2f\n", "",
				commas(int64(br.TokensPerMinute+0.5)), br.CostPerHour, b.EndTime, pr.RemainingMinutes/60, pr.RemainingMinutes%60, commas(pr.TotalTokens), pr.TotalCost)
		}
		if st := b.TokenLimitStatus; st != nil {
			fmt.Fprintf(w, "%-24s  token limit %s: %s\n", "", commas(st.Limit), st.Status)
		}
	}
	fmt.Fprintf(w, "%-24s  %7s  %13s  %10s\n", "Total", "", commas(tokens), fmt.Sprintf("$%.2f", cost))
}

// printSessionTable prints one session's messages and totals.
func printSessionTable(w io.Writer, s *usage.SessionUsage) {
	fmt.Fprintf(w, "Session %s\n", s.SessionID)
	fmt.Fprintf(w, "%-24s  %10s  %10s  %12s  %12s  %10s  %s\n", "Time (UTC)", "Input", "Output", "Cache create", "Cache read", "costUSD", "Model")
	for _, e := range s.Entries {
		fmt.Fprintf(w, "%-24s  %10s  %10s  %12s  %12s  %10s  %s\n", e.Timestamp, commas(e.InputTokens), commas(e.OutputTokens),
			commas(e.CacheCreationTokens), commas(e.CacheReadTokens), fmt.Sprintf("$%.2f", e.CostUSD), e.Model)
	}
	fmt.Fprintf(w, "Total: %s tokens in %d message(s), $%.2f\n", commas(s.TotalTokens), len(s.Entries), s.TotalCost)
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
