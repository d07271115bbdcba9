package cmdutil

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/e0dc0000/scribe/sinks/events"
)

// IOStreams are a command's standard streams and what is known of them.
// A command that prints reads cobra's streams (cmd.OutOrStdout(), ...),
// which are these in the binary; whether a stream is a terminal (to ask a
// question, to redraw a progress line) is asked here, so that a test can
// say so without one (Test).
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// stdinTTY and stderrTTY, when set, say whether In and ErrOut are
	// terminals instead of asking them (tests).
	stdinTTY, stderrTTY *bool
}

// System is the process's own streams.
func System() *IOStreams {
	return &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}

// Test is streams in memory, for in-process tests: standard input reads
// in, what is printed goes to out and errOut. Neither is a terminal
// unless SetStdinTTY or SetStderrTTY says so.
func Test() (s *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// SetStdinTTY says whether standard input is a terminal.
func (s *IOStreams) SetStdinTTY(tty bool) { s.stdinTTY = &tty }

// SetStderrTTY says whether standard error is a terminal.
func (s *IOStreams) SetStderrTTY(tty bool) { s.stderrTTY = &tty }

// IsStdinTTY reports whether standard input is a terminal (a character
// device): a question is asked only then.
func (s *IOStreams) IsStdinTTY() bool {
	if s.stdinTTY != nil {
		return *s.stdinTTY
	}
	f, ok := s.In.(*os.File)
	return ok && IsCharDevice(f)
}

// IsStderrTTY reports whether standard error is a terminal (a character
// device): progress is redrawn in place only then.
func (s *IOStreams) IsStderrTTY() bool {
	if s.stderrTTY != nil {
		return *s.stderrTTY
	}
	return IsTerminal(s.ErrOut)
}

// IsCharDevice reports whether f is a character device (a terminal).
func IsCharDevice(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// IsTerminal reports whether w is a file that is a character device.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && IsCharDevice(f)
}

// OutputWidth is the width a table must fit: $COLUMNS when it is a
// positive number, else the terminal's when f is one; 0 (no limit) off a
// terminal.
func OutputWidth(f *os.File) int {
	if n, err := strconv.Atoi(strings.TrimSpace(os.Getenv("COLUMNS"))); err == nil && n > 0 {
		return n
	}
	if f != nil && term.IsTerminal(int(f.Fd())) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return 0
}

// UseColor is --color: auto (on a terminal), always, never. NO_COLOR (set
// and not empty) turns colour off whatever the flag says.
func UseColor(mode string, f *os.File) (bool, error) {
	switch mode {
	case "auto", "always", "never":
	default:
		return false, &ExitError{Code: 2, Err: fmt.Errorf("--color %q: want auto, always or never", mode)}
	}
	if os.Getenv("NO_COLOR") != "" || mode == "never" {
		return false, nil
	}
	if mode == "always" {
		return true, nil
	}
	return f != nil && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb", nil
}

// StdoutFile is w as a file, when it is one.
func StdoutFile(w io.Writer) *os.File {
	f, _ := w.(*os.File)
	return f
}

// unreachableAttempts is how many attempts an interactive command makes to
// reach a server that refuses connections (or has no route, or no address)
// before it gives up.
const unreachableAttempts = 3

// Interactive sets a team server's client up for a command a person waits
// for: a server that cannot be reached ends it after unreachableAttempts
// attempts with an error naming the address, and every retry is printed on
// stderr (what names the command).
func Interactive(c *events.Client, stderr io.Writer, what string) {
	c.Unreachable = unreachableAttempts
	c.OnRetry = func(attempt, attempts int, wait time.Duration, err error) {
		fmt.Fprintf(stderr, "scribe: %s: attempt %d of %d failed: %v; retrying in %v\n",
			what, attempt, attempts, err, wait.Round(time.Millisecond))
	}
}
