package cmdutil

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/claudedir"
)

// Confirm asks on a terminal whether to go on; off a terminal, or with
// yes, it goes on. A "no" is an error saying nothing was done.
func (f *Factory) Confirm(cmd *cobra.Command, yes bool, question string) error {
	if yes || !f.IOStreams.IsStdinTTY() {
		return nil
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s [y/N] ", question)
	line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read the answer: %w", err)
	}
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return errors.New("cancelled: nothing changed")
	}
	return nil
}

// ParseAge reads a duration with day and week units as well as Go's
// ("30d", "2w", "36h").
func ParseAge(flag, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	for suffix, unit := range map[string]time.Duration{"d": 24 * time.Hour, "w": 7 * 24 * time.Hour} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			if v, err := strconv.ParseFloat(n, 64); err == nil && v > 0 {
				return time.Duration(v * float64(unit)), nil
			}
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, &ExitError{Code: 2, Err: fmt.Errorf("%s %q: want a positive duration such as 30d, 2w or 12h", flag, s)}
	}
	return d, nil
}

// ParseWhen reads --since/--until: a date (local time; with end, the end
// of that day), a local date and time, an RFC 3339 time, or a duration
// ago (7d, 2w, 12h).
func ParseWhen(flag, s string, end bool, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		if end {
			t = t.AddDate(0, 0, 1)
		}
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := ParseAge(flag, s)
	if err != nil {
		return time.Time{}, &ExitError{Code: 2, Err: fmt.Errorf("%s %q: want a date (2026-01-02), a time (2026-01-02T15:04) or a duration ago (7d, 2w, 12h)", flag, s)}
	}
	return now.Add(-d), nil
}

// ParseSince reads search's --since as ls reads its own (ParseWhen): a
// date (local time), a time, or an age.
func ParseSince(s string) (time.Time, error) {
	return ParseWhen("--since", s, false, time.Now())
}

// ProjectFolder turns --project PATH into its project folder name.
func ProjectFolder(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("--project %s: %w", path, err)
	}
	return claudedir.SanitizePath(abs), nil
}

// AddStoreFlag gives a command --from STORE.
func AddStoreFlag(c *cobra.Command, usage string) {
	c.Flags().String("from", "", usage)
}
