package cmdutil

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// An ExitError keeps its status through wrapping, and says its cause.
func TestExitErrorCode(t *testing.T) {
	cause := errors.New("bad flag")
	err := fmt.Errorf("ls: %w", &ExitError{Code: 2, Err: cause})
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 2 {
		t.Fatalf("errors.As(%v) = %v, want code 2", err, ee)
	}
	if !errors.Is(err, cause) || err.Error() != "ls: bad flag" {
		t.Fatalf("the cause is lost: %v", err)
	}
}

// WriteJSON indents by two blanks and leaves <, > and & as they are.
func TestWriteJSON(t *testing.T) {
	io, _, out, _ := Test()
	if err := WriteJSON(io.Out, map[string]any{"title": "a <b> & c", "n": 1}); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"n\": 1,\n  \"title\": \"a <b> & c\"\n}\n"
	if out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
}

func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "30d": 30 * 24 * time.Hour, "2w": 14 * 24 * time.Hour, "1.5d": 36 * time.Hour, "12h": 12 * time.Hour} {
		if got, err := ParseAge("--older-than", in); err != nil || got != want {
			t.Errorf("ParseAge(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"-1d", "0h", "soon", "d"} {
		_, err := ParseAge("--older-than", in)
		var ee *ExitError
		if !errors.As(err, &ee) || ee.Code != 2 || !strings.Contains(err.Error(), "--older-than") {
			t.Errorf("ParseAge(%q): %v, want a usage error naming the flag", in, err)
		}
	}
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.Local)
	day := time.Date(2026, 1, 2, 0, 0, 0, 0, time.Local)
	for _, c := range []struct {
		in   string
		end  bool
		want time.Time
	}{
		{"", false, time.Time{}},
		{"2026-01-02", false, day},
		{"2026-01-02", true, day.AddDate(0, 0, 1)}, // --until: the whole day counts
		{"2026-01-02T15:04", false, time.Date(2026, 1, 2, 15, 4, 0, 0, time.Local)},
		{"2026-01-02T15:04:05Z", false, time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)},
		{"7d", false, now.Add(-7 * 24 * time.Hour)},
		{"12h", true, now.Add(-12 * time.Hour)},
	} {
		got, err := ParseWhen("--since", c.in, c.end, now)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("ParseWhen(%q, end %v) = %v, %v; want %v", c.in, c.end, got, err, c.want)
		}
	}
	_, err := ParseWhen("--until", "yesterday", true, now)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 2 || !strings.Contains(err.Error(), `--until "yesterday"`) {
		t.Fatalf("ParseWhen(yesterday): %v, want a usage error", err)
	}
}

// Confirm asks only on a terminal, reads the answer from the command's
// standard input, and a "no" changes nothing.
func TestConfirm(t *testing.T) {
	for _, c := range []struct {
		tty, yes bool
		answer   string
		ok       bool
		asked    bool
	}{
		{tty: false, ok: true},
		{tty: true, yes: true, ok: true},
		{tty: true, answer: "y\n", ok: true, asked: true},
		{tty: true, answer: "YES\n", ok: true, asked: true},
		{tty: true, answer: "n\n", asked: true},
		{tty: true, answer: "", asked: true},
	} {
		streams, in, _, errOut := Test()
		streams.SetStdinTTY(c.tty)
		in.WriteString(c.answer)
		cmd := &cobra.Command{}
		cmd.SetIn(streams.In)
		cmd.SetErr(streams.ErrOut)
		err := (&Factory{IOStreams: streams}).Confirm(cmd, c.yes, "go on?")
		if (err == nil) != c.ok || (errOut.Len() > 0) != c.asked {
			t.Errorf("%+v: err %v, asked %q", c, err, errOut.String())
		}
	}
}

// Off a terminal, a progress counter says nothing of work shorter than a
// progress interval; on one, it redraws its line.
func TestProgressCounter(t *testing.T) {
	streams, _, _, errOut := Test()
	count := streams.ProgressCounter(errOut, "gc")
	count(1, 2)
	count(2, 2)
	if errOut.Len() != 0 {
		t.Fatalf("off a terminal: %q", errOut.String())
	}
	streams.SetStderrTTY(true)
	count = streams.ProgressCounter(errOut, "gc")
	count(2, 2)
	if got, want := errOut.String(), "\rgc 2/2 sessions\x1b[K\n"; got != want {
		t.Fatalf("on a terminal: %q, want %q", got, want)
	}
}

func TestHumanBytesAndClip(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1536: "1.5K", 3 << 20: "3.0M", 5 << 30: "5.0G"} {
		if got := HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
	if got := Clip("a  long\ntitle here", 8); got != "a long …" {
		t.Errorf("Clip: %q", got)
	}
	if got := ShellQuote("it's"); got != `'it'\''s'` {
		t.Errorf("ShellQuote: %q", got)
	}
}
