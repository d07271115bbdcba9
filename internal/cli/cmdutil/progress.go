package cmdutil

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"
)

// The progress of long work on stderr: push, pull, copy and ls --remote
// (ProgressBar), gc, du, relocate and search (ProgressCounter).

// ProgressBar shows the progress of long network work on stderr. On a
// terminal it draws one line, redrawn in place every 100 ms:
//
//	push  42% [████████░░░░░░░░░░░░] 1.2 MiB/3.0 MiB  3/10 sessions  1234 entries
//
// Elsewhere (lines) it prints that line, without the bar, every
// progressLineEvery when something moved, and once at the end. A total
// below 0 is unknown (pull): then only the bytes and entries are shown.
type ProgressBar struct {
	w     io.Writer
	label string
	lines bool

	total, sessions int64
	read            *atomic.Int64
	done, sent      atomic.Int64
	last            string // the last line printed, in lines mode
	stop            chan struct{}
	stopped         chan struct{}
}

// ProgressLineEvery paces the progress lines when stderr is not a terminal.
const ProgressLineEvery = 2 * time.Second

// NewProgressBar is a bar labelled label on w: redrawn in place, or (lines)
// a line at a time.
func NewProgressBar(w io.Writer, label string, lines bool) *ProgressBar {
	return &ProgressBar{w: w, label: label, lines: lines}
}

// Start shows the bar until Finish: total bytes (below 0: unknown) in
// sessions sessions, read counting the bytes read so far.
func (b *ProgressBar) Start(total int64, sessions int, read *atomic.Int64) {
	b.total, b.sessions, b.read = total, int64(sessions), read
	b.stop, b.stopped = make(chan struct{}), make(chan struct{})
	every := 100 * time.Millisecond
	if b.lines {
		every = ProgressLineEvery
	}
	go func() {
		defer close(b.stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if !b.lines {
				b.draw()
			}
			select {
			case <-t.C:
				if b.lines {
					b.draw()
				}
			case <-b.stop:
				return
			}
		}
	}()
}

// SessionDone counts a session done.
func (b *ProgressBar) SessionDone() { b.done.Add(1) }

// Entries counts n entries sent.
func (b *ProgressBar) Entries(n int64) { b.sent.Add(n) }

// Finish stops the bar and draws its last state.
func (b *ProgressBar) Finish() {
	close(b.stop)
	<-b.stopped
	b.draw()
	if !b.lines {
		fmt.Fprintln(b.w)
	}
}

func (b *ProgressBar) fraction() float64 { return frac(b.read.Load(), b.total) }

func frac(n, total int64) float64 {
	if total <= 0 {
		return 1
	}
	return min(float64(n)/float64(total), 1)
}

func (b *ProgressBar) draw() {
	read := b.read.Load()
	var line string
	switch {
	case b.total < 0:
		line = fmt.Sprintf("%s  %s  %d entries", b.label, HumanBytes(read), b.sent.Load())
	case b.lines:
		line = fmt.Sprintf("%s %3.0f%%  %s/%s  %d/%d sessions  %d entries", b.label, 100*b.fraction(),
			HumanBytes(min(read, b.total)), HumanBytes(b.total), b.done.Load(), b.sessions, b.sent.Load())
	default:
		const width = 24
		f := b.fraction()
		full := int(f * width)
		bar := strings.Repeat("█", full) + strings.Repeat("░", width-full)
		line = fmt.Sprintf("%s %3.0f%% [%s] %s/%s  %d/%d sessions  %d entries", b.label, 100*f, bar,
			HumanBytes(min(read, b.total)), HumanBytes(b.total), b.done.Load(), b.sessions, b.sent.Load())
	}
	if !b.lines {
		fmt.Fprintf(b.w, "\r%s\x1b[K", line)
		return
	}
	if line != b.last {
		fmt.Fprintf(b.w, "scribe: %s\n", line)
		b.last = line
	}
}

// ProgressCounter reports done/total sessions on w: a line redrawn in
// place when standard error is a terminal, else a line every
// ProgressLineEvery.
func (s *IOStreams) ProgressCounter(w io.Writer, label string) func(done, total int) {
	term := s.IsStderrTTY()
	last, printed := time.Now(), false
	return func(done, total int) {
		switch {
		case term:
			fmt.Fprintf(w, "\r%s %d/%d sessions\x1b[K", label, done, total)
			if done == total {
				fmt.Fprintln(w)
			}
		case time.Since(last) >= ProgressLineEvery || (done == total && printed):
			// Work shorter than a progress interval prints nothing.
			last, printed = time.Now(), true
			fmt.Fprintf(w, "scribe: %s %d/%d sessions\n", label, done, total)
		}
	}
}
