package usagecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/stores"
	"github.com/e0dc0000/scribe/usage"
)

// maxStatusInput bounds what statusline reads of its standard input.
const maxStatusInput = 1 << 20

// statusInput is what statusline reads of the JSON Claude Code gives a
// status line command on its standard input.
type statusInput struct {
	SessionID string `json:"session_id"`
	Model     struct {
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
	} `json:"model"`
}

func newUsageStatuslineCmd(f *cmdutil.Factory) *cobra.Command {
	var noCache, verbose bool
	var tz string
	cmd := &cobra.Command{
		Use:   "statusline",
		Short: "One line for Claude Code's statusLine: this session's cost, today's, the 5-hour block's and its burn rate",
		Long: "Reads the JSON Claude Code gives a status line command on its standard input (session_id, model, ...)\n" +
			"and prints one line: the model, this session's cost, today's cost, the active 5-hour block's cost with\n" +
			"the time left in it, and its burn rate, each as `scribe usage session|daily|blocks` count them. Wire\n" +
			"it in ~/.claude/settings.json:\n\n" +
			"  \"statusLine\": {\"type\": \"command\", \"command\": \"scribe usage statusline\"}\n\n" +
			"It reads through the usage cache, so a call parses only what was appended since the last one, and\n" +
			"through a checkpoint of what came before today (made on the day's first call), so that it decodes\n" +
			"only the transcripts written since.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStatusline(f, cmd, tz, noCache, verbose)
		},
	}
	cmd.Flags().BoolVar(&noCache, "no-cache", false, "read every transcript whole, without the usage cache")
	cmd.Flags().StringVar(&tz, "timezone", "", "the time zone of today (an IANA name; default: TZ, the local one)")
	cmd.Flags().BoolVar(&verbose, "verbose", false, "say on stderr what the usage cache did")
	return cmd
}

func runStatusline(f *cmdutil.Factory, cmd *cobra.Command, tz string, noCache, verbose bool) error {
	loc := time.Local
	if tz != "" {
		var err error
		if loc, err = time.LoadLocation(tz); err != nil {
			return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--timezone %q: %w", tz, err)}
		}
	}
	raw, in, err := readStatusInput(cmd.InOrStdin())
	if err != nil {
		return &cmdutil.ExitError{Code: 1, Err: fmt.Errorf("usage statusline: %w", err)}
	}
	// A configuration only the full build holds hands the command over,
	// with the input already read.
	cfg, err := f.LoadConfigAfter(cmd, raw)
	if err != nil {
		return &cmdutil.ExitError{Code: 2, Err: err}
	}
	st, listed, err := readStatus(f, cmd, cfg, in.SessionID, loc, noCache)
	if err != nil {
		return err
	}
	if verbose {
		fmt.Fprintln(cmd.ErrOrStderr(), "scribe usage: "+cacheLine(st.Cache, noCache)+listed+checkpointLine(st))
	}
	fmt.Fprintln(cmd.OutOrStdout(), statusLine(in, st.Status))
	return nil
}

// readStatus works the status line's figures out: for a local folder
// through the usage cache and its status checkpoint (only the transcripts
// with rows since the start of today less 5 hours decoded), else from
// every row. listed says how the transcripts were listed ("" when not
// through the usage cache).
func readStatus(f *cmdutil.Factory, cmd *cobra.Command, cfg *config.Config, session string, loc *time.Location, noCache bool) (_ *usage.StatusRead, listed string, _ error) {
	lessGC()
	st, done, err := f.OpenStoreWith(cmd, cfg)
	if err != nil {
		return nil, "", err
	}
	defer done(nil)
	pricer, now := usagePricer(cfg), time.Now()
	if local, ok := st.(*stores.Local); ok && !noCache {
		l := local.Layout()
		if cacheDir, err := usageCacheDir(l); err == nil {
			return localStatus(cmd.Context(), l, cacheDir, pricer, session, now, loc)
		}
	}
	sc, err := Scan(cmd.Context(), st, noCache)
	if err != nil {
		return nil, "", err
	}
	return &usage.StatusRead{Status: usage.StatusOf(sc.Rows(), pricer, session, now, loc), Cache: sc.Cache, Checkpoint: "none"}, "", nil
}

// localStatus is readStatus for the local folder of l through the usage
// cache in cacheDir, the transcripts taken from the listing's snapshot
// while none of the folders they were found in changed.
func localStatus(ctx context.Context, l jsonl.Layout, cacheDir string, p *usage.Pricer, session string, now time.Time, loc *time.Location) (*usage.StatusRead, string, error) {
	listed := "; transcripts listed"
	list := func() ([]usage.File, error) {
		files, used, err := usage.CachedListing(ctx, cacheDir, func() (usage.Listing, error) { return usageListing(l) })
		if used {
			listed = "; transcripts from the listing's snapshot"
		}
		return files, err
	}
	st, err := usage.ReadStatus(ctx, list, cacheDir, p, session, now, loc)
	return st, listed, err
}

// checkpointLine says how the status checkpoint was used, and why it was
// made again.
func checkpointLine(st *usage.StatusRead) string {
	switch st.Checkpoint {
	case "used":
		return fmt.Sprintf("; status checkpoint used: the rows of %d of %d transcript(s) decoded", st.Decoded, st.Cache.Files)
	case "made":
		s := "; status checkpoint made (" + st.Why
		if st.Discarded != "" {
			s += ": " + st.Discarded
		}
		s += "; every transcript's rows decoded)"
		if st.SaveError != "" {
			s += ", not saved: " + st.SaveError
		}
		return s
	}
	return ""
}

// readStatusInput reads and checks statusline's input: a JSON object with
// a session_id.
func readStatusInput(r io.Reader) ([]byte, statusInput, error) {
	var in statusInput
	raw, err := io.ReadAll(io.LimitReader(r, maxStatusInput+1))
	switch {
	case err != nil:
		return nil, in, fmt.Errorf("read the standard input: %w", err)
	case len(raw) > maxStatusInput:
		return nil, in, fmt.Errorf("the standard input is over %d bytes: want the JSON Claude Code gives a status line command", maxStatusInput)
	case len(bytes.TrimSpace(raw)) == 0:
		return nil, in, errors.New("nothing on the standard input: Claude Code gives a status line command its session's JSON there (statusLine in settings.json)")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&in); err != nil {
		return nil, in, fmt.Errorf("the standard input is not the JSON object Claude Code gives a status line command: %v", err)
	}
	if dec.More() {
		return nil, in, errors.New("the standard input holds more than one JSON value")
	}
	if strings.TrimSpace(in.SessionID) == "" {
		return nil, in, errors.New("the standard input's JSON has no session_id")
	}
	return raw, in, nil
}

// statusLine is the line: the model, the costs, the block.
func statusLine(in statusInput, st usage.Status) string {
	var parts []string
	if m := in.Model.DisplayName; m != "" {
		parts = append(parts, m)
	} else if in.Model.ID != "" {
		parts = append(parts, in.Model.ID)
	}
	parts = append(parts, fmt.Sprintf("$%.2f session / $%.2f today", st.SessionCost, st.TodayCost))
	b := st.Block
	if b == nil {
		return strings.Join(append(parts, "no active block"), " | ")
	}
	block := fmt.Sprintf("$%.2f block", b.CostUSD)
	if left := time.Until(b.End()).Round(time.Minute); left > 0 {
		block += fmt.Sprintf(" (%dh%02dm left)", int(left.Hours()), int(left.Minutes())%60)
	}
	parts = append(parts, block)
	if br := b.BurnRate; br != nil {
		parts = append(parts, fmt.Sprintf("$%.2f/h", br.CostPerHour))
	}
	return strings.Join(parts, " | ")
}
