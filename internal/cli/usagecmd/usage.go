package usagecmd

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/claudedir"
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
			"($XDG_CACHE_HOME/scribe/usage), so that the next report reads only what was appended since.\n\n" +
			"Every report takes ccusage's flags, long and short: -j/--json, -s/--since and -u/--until (YYYYMMDD or\n" +
			"YYYY-MM-DD, both kept), -z/--timezone, -b/--breakdown, -O/--offline (accepted: prices never come from the\n" +
			"network). session -i/--id ID reports one session (null when it has none). blocks keeps the blocks that\n" +
			"start on the days --since/--until keep, and takes -n/--session-length, -a/--active, -r/--recent,\n" +
			"-t/--token-limit and -o/--order (as daily, weekly and monthly do). --project P, scribe's own, keeps the\n" +
			"sessions of one project: its folder's name (as in projects/) or its path; the numbers are ccusage's for a\n" +
			"Claude folder holding that project alone. A bad date, time zone, session id or project exits 2.",
	}
	for _, kind := range []string{usage.Daily, usage.Weekly, usage.Monthly, usage.Session, usage.Blocks} {
		cmd.AddCommand(newUsageKindCmd(f, kind))
	}
	cmd.AddCommand(newUsageStatuslineCmd(f))
	return cmd
}

// usageFlags are a report's flags.
type usageFlags struct {
	asJSON, breakdown, verbose, noCache, active, recent, offline bool
	since, until, tz, from, tokenLimit, project, id, order       string
	sessionLength                                                float64
}

func newUsageKindCmd(f *cmdutil.Factory, kind string) *cobra.Command {
	uf := usageFlags{sessionLength: usage.BlockLength.Hours()}
	cmd := &cobra.Command{
		Use:   kind,
		Short: "Usage by " + map[string]string{usage.Daily: "day", usage.Weekly: "week (from Monday)", usage.Monthly: "month", usage.Session: "session", usage.Blocks: "5-hour billing window"}[kind],
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUsage(f, cmd, kind, uf)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&uf.asJSON, "json", "j", false, "print ccusage's JSON (what \"ccusage "+kind+" --offline --json\" prints)")
	fl.StringVar(&uf.from, "from", "", "read this store (a jsonl, postgres or s3 block, type/name) instead of the local files")
	fl.StringVar(&uf.project, "project", "", "only the sessions of this project: its folder's name (as in Claude's projects/), or its path (~ and relative paths allowed)")
	fl.BoolVar(&uf.verbose, "verbose", false, "say on stderr what the usage cache did (the text report says it in its last line)")
	fl.BoolVar(&uf.noCache, "no-cache", false, "read every transcript whole, without reading or writing the usage cache")
	fl.BoolVarP(&uf.offline, "offline", "O", false, "accepted as ccusage takes it: scribe always prices with its built-in table, never the network")
	fl.BoolVarP(&uf.breakdown, "breakdown", "b", false, "a row per model under each "+map[bool]string{true: "block", false: "period"}[kind == usage.Blocks]+" (the JSON has them always, or never for blocks, as ccusage's)")
	what := map[bool]string{true: "blocks that start on days", false: "days"}[kind == usage.Blocks]
	if kind == usage.Session {
		what = "sessions last active on days (in UTC; with --id: its messages on days)"
	}
	fl.StringVarP(&uf.since, "since", "s", "", "only "+what+" from this one (YYYYMMDD or YYYY-MM-DD, in the report's time zone)")
	fl.StringVarP(&uf.until, "until", "u", "", "only "+what+" up to this one (YYYYMMDD or YYYY-MM-DD)")
	fl.StringVarP(&uf.tz, "timezone", "z", "", "the time zone of the days (an IANA name, such as UTC or Asia/Tokyo; default: TZ, the local one)")
	switch kind {
	case usage.Blocks:
		fl.BoolVarP(&uf.active, "active", "a", false, "only the active block, with its burn rate and projection")
		fl.BoolVarP(&uf.recent, "recent", "r", false, "only the blocks that started in the last 3 days, and the active one")
		fl.StringVarP(&uf.tokenLimit, "token-limit", "t", "", "compare the active block's projected tokens with this many (or max: the most any other block shown used)")
		fl.Float64VarP(&uf.sessionLength, "session-length", "n", usage.BlockLength.Hours(), "the length of a block, in hours")
	case usage.Session:
		fl.StringVarP(&uf.id, "id", "i", "", "only this session (its id): its messages and totals, as ccusage's session --id prints them (null when it has none)")
	}
	if kind != usage.Session {
		fl.StringVarP(&uf.order, "order", "o", "asc", "asc (oldest first) or desc (newest first)")
	}
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
	in, err := readUsage(f, cmd, uf)
	if err != nil {
		return err
	}
	if uf.verbose {
		fmt.Fprintln(cmd.ErrOrStderr(), "scribe usage: "+cacheLine(in.scan.Cache, uf.noCache))
	}
	kept, dups := usage.Dedupe(in.rows, kind != usage.Session && kind != usage.Blocks)
	reportBadUsage(cmd.ErrOrStderr(), in.scan.Bad, dups)
	out := cmd.OutOrStdout()
	switch {
	case kind == usage.Blocks:
		return printBlocks(out, in, kept, opt, uf, limit)
	case uf.id != "":
		return printSession(out, in, kept, opt, uf)
	}
	periods, tot := usage.Build(kind, kept, in.pricer, opt)
	if uf.order == "desc" {
		slices.Reverse(periods)
	}
	if uf.asJSON {
		return cmdutil.WriteJSON(out, usageReportJSON(kind, periods, tot))
	}
	printUsageTable(out, kind, periods, tot, cmdutil.OutputWidth(os.Stdout), uf.breakdown)
	printUsageFooter(out, in, uf.noCache, "a row's costUSD when it has one", tot.UnpricedModels)
	return nil
}

// printBlocks prints the blocks report: the blocks cut from every row,
// those that start from --since to --until, then the recent or active
// ones, then the token limit, which "max" takes from the blocks kept.
func printBlocks(out io.Writer, in *usageInput, kept []*usage.Row, opt usage.Options, uf usageFlags, limit *usage.TokenLimit) error {
	now := time.Now()
	length := time.Duration(uf.sessionLength * float64(time.Hour))
	blocks := usage.BlocksWithin(usage.BuildBlocksOf(kept, in.pricer, now, length), opt.Since, opt.Until, opt.Loc)
	if uf.recent {
		blocks = usage.RecentBlocks(blocks, now)
	}
	if uf.active {
		blocks = usage.ActiveBlocks(blocks)
	}
	if limit != nil {
		usage.ApplyTokenLimit(blocks, *limit)
	}
	if uf.order == "desc" {
		slices.Reverse(blocks)
	}
	if uf.asJSON {
		return cmdutil.WriteJSON(out, map[string]any{"blocks": blocks})
	}
	printBlocksTable(out, blocks, uf.breakdown)
	printUsageFooter(out, in, uf.noCache, fmt.Sprintf("blocks start at the hour (UTC) of their first message and last %g hours", uf.sessionLength), nil)
	return nil
}

// printSession prints one session's report (session --id).
func printSession(out io.Writer, in *usageInput, kept []*usage.Row, opt usage.Options, uf usageFlags) error {
	s := usage.SessionOf(kept, in.pricer, uf.id, opt)
	if uf.asJSON {
		return cmdutil.WriteJSON(out, s)
	}
	if s == nil {
		fmt.Fprintf(out, "No usage for session %s.\n", uf.id)
		return nil
	}
	printSessionTable(out, s)
	printUsageFooter(out, in, uf.noCache, "a row's costUSD when it has one", nil)
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
			return opt, &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--timezone %q: not a time zone (want an IANA name such as UTC or Europe/Paris)", uf.tz)}
		}
	}
	return opt, checkUsageFlags(uf)
}

// checkUsageFlags checks the flags usageOptions does not read.
func checkUsageFlags(uf usageFlags) error {
	switch {
	case uf.id != "" && !claudedir.IsSessionID(uf.id):
		return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--id %q: not a session id (a uuid)", uf.id)}
	case uf.order != "" && uf.order != "asc" && uf.order != "desc":
		return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--order %q: want asc or desc", uf.order)}
	case uf.sessionLength <= 0 || uf.sessionLength > 24*365:
		return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--session-length %g: want a positive number of hours", uf.sessionLength)}
	}
	return nil
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
