package usagecmd

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/usage"
)

// usageReportJSON is `scribe usage <kind> --json`: ccusage's JSON (20.0.24,
// --offline), keyed by the report's kind, with its totals.
func usageReportJSON(kind string, periods []*usage.Period, tot usage.Totals) map[string]any {
	if periods == nil {
		periods = []*usage.Period{}
	}
	return map[string]any{kind: periods, "totals": tot}
}

// NewCmdUsage is scribe usage: its reports and the status line.
func NewCmdUsage(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "usage daily|weekly|monthly|session|blocks|statusline",
		Short: "Tokens and cost of the stored sessions, counted as ccusage counts them",
		Long: "Sums the token usage of every assistant message of the store's transcripts (subagents included) by\n" +
			"day, week, month or session, and prices it with the built-in table (LiteLLM's and models.dev's prices as\n" +
			"ccusage 20.0.24 embeds them) or the configuration's usage { price \"model\" { ... } } overrides. --json\n" +
			"prints what `ccusage <report> --offline --json` prints for the same folder. A message streamed over\n" +
			"several rows counts once; a row's costUSD is used when it has one. Rows with missing, negative or\n" +
			"non-integer token counts are left out and counted on stderr. What was read is kept in a cache\n" +
			"($XDG_CACHE_HOME/scribe/usage), so that the next report reads only what was appended since.",
	}
	for _, kind := range []string{usage.Daily, usage.Weekly, usage.Monthly, usage.Session, usage.Blocks} {
		cmd.AddCommand(newUsageKindCmd(f, kind))
	}
	cmd.AddCommand(newUsageStatuslineCmd(f))
	return cmd
}

// usageFlags are a report's flags.
type usageFlags struct {
	asJSON, breakdown, verbose, noCache, active, recent bool
	since, until, tz, from, tokenLimit                  string
}

func newUsageKindCmd(f *cmdutil.Factory, kind string) *cobra.Command {
	var uf usageFlags
	cmd := &cobra.Command{
		Use:   kind,
		Short: "Usage by " + map[string]string{usage.Daily: "day", usage.Weekly: "week (from Monday)", usage.Monthly: "month", usage.Session: "session", usage.Blocks: "5-hour billing window"}[kind],
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUsage(f, cmd, kind, uf)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&uf.asJSON, "json", false, "print ccusage's JSON (what \"ccusage "+kind+" --offline --json\" prints)")
	fl.StringVar(&uf.from, "from", "", "read this store (a jsonl, postgres or s3 block, type/name) instead of the local files")
	fl.BoolVar(&uf.verbose, "verbose", false, "say on stderr what the usage cache did (the text report says it in its last line)")
	fl.BoolVar(&uf.noCache, "no-cache", false, "read every transcript whole, without reading or writing the usage cache")
	if kind == usage.Blocks {
		fl.BoolVar(&uf.active, "active", false, "only the active block, with its burn rate and projection")
		fl.BoolVar(&uf.recent, "recent", false, "only the blocks that started in the last 3 days, and the active one")
		fl.StringVar(&uf.tokenLimit, "token-limit", "", "compare the active block's projected tokens with this many (or max: the most any earlier block used)")
		return cmd
	}
	fl.BoolVar(&uf.breakdown, "breakdown", false, "a row per model under each period (the JSON always has them)")
	fl.StringVar(&uf.since, "since", "", "only days from this one (YYYYMMDD or YYYY-MM-DD, in the report's time zone)")
	fl.StringVar(&uf.until, "until", "", "only days up to this one (YYYYMMDD or YYYY-MM-DD)")
	fl.StringVar(&uf.tz, "timezone", "", "the time zone of days and months (an IANA name; default: TZ, the local one)")
	return cmd
}

// runUsage makes one report.
func runUsage(f *cmdutil.Factory, cmd *cobra.Command, kind string, uf usageFlags) error {
	opt, err := usageOptions(uf)
	if err != nil {
		return err
	}
	var limit *usage.TokenLimit
	if cmd.Flags().Changed("token-limit") {
		lim, err := usage.ParseTokenLimit(uf.tokenLimit)
		if err != nil {
			return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--token-limit: %w", err)}
		}
		limit = &lim
	}
	in, err := readUsage(f, cmd, uf.from, uf.noCache)
	if err != nil {
		return err
	}
	if uf.verbose {
		fmt.Fprintln(cmd.ErrOrStderr(), "scribe usage: "+cacheLine(in.scan.Cache, uf.noCache))
	}
	kept, dups := usage.Dedupe(in.scan.Rows(), kind != usage.Session && kind != usage.Blocks)
	reportBadUsage(cmd.ErrOrStderr(), in.scan.Bad, dups)
	out := cmd.OutOrStdout()
	if kind == usage.Blocks {
		now := time.Now()
		blocks := usage.BuildBlocks(kept, in.pricer, now)
		if limit != nil {
			usage.ApplyTokenLimit(blocks, *limit)
		}
		if uf.recent {
			blocks = usage.RecentBlocks(blocks, now)
		}
		if uf.active {
			blocks = usage.ActiveBlocks(blocks)
		}
		if uf.asJSON {
			return cmdutil.WriteJSON(out, map[string]any{"blocks": blocks})
		}
		printBlocksTable(out, blocks)
		printUsageFooter(out, in, uf.noCache, "blocks start at the hour (UTC) of their first message and last 5 hours", nil)
		return nil
	}
	periods, tot := usage.Build(kind, kept, in.pricer, opt)
	if uf.asJSON {
		return cmdutil.WriteJSON(out, usageReportJSON(kind, periods, tot))
	}
	printUsageTable(out, kind, periods, tot, cmdutil.OutputWidth(os.Stdout), uf.breakdown)
	printUsageFooter(out, in, uf.noCache, "a row's costUSD when it has one", tot.UnpricedModels)
	return nil
}

// usageOptions reads the flags that choose a report's days.
func usageOptions(uf usageFlags) (usage.Options, error) {
	opt := usage.Options{Loc: time.Local}
	var err error
	if opt.Since, err = usageDate("--since", uf.since); err != nil {
		return opt, err
	}
	if opt.Until, err = usageDate("--until", uf.until); err != nil {
		return opt, err
	}
	if uf.tz != "" {
		if opt.Loc, err = time.LoadLocation(uf.tz); err != nil {
			return opt, &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--timezone %q: %w", uf.tz, err)}
		}
	}
	return opt, nil
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
