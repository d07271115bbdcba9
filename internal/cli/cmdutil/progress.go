package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// The progress of push and pull on stderr.

// isCharDevice reports whether f is a character device (a terminal).
func isCharDevice(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progressBar shows the progress of long network work on stderr. On a
// terminal it draws one line, redrawn in place every 100 ms:
//
//	push  42% [████████░░░░░░░░░░░░] 1.2 MiB/3.0 MiB  3/10 sessions  1234 entries
//
// Elsewhere (lines) it prints that line, without the bar, every
// progressLineEvery when something moved, and once at the end. A total
// below 0 is unknown (pull): then only the bytes and entries are shown.
type progressBar struct {
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

// progressLineEvery paces the progress lines when stderr is not a terminal.
const progressLineEvery = 2 * time.Second

func newProgressBar(w io.Writer, label string, lines bool) *progressBar {
	return &progressBar{w: w, label: label, lines: lines}
}

func (b *progressBar) start(total int64, sessions int, read *atomic.Int64) {
	b.total, b.sessions, b.read = total, int64(sessions), read
	b.stop, b.stopped = make(chan struct{}), make(chan struct{})
	every := 100 * time.Millisecond
	if b.lines {
		every = progressLineEvery
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

func (b *progressBar) sessionDone()    { b.done.Add(1) }
func (b *progressBar) entries(n int64) { b.sent.Add(n) }

func (b *progressBar) finish() {
	close(b.stop)
	<-b.stopped
	b.draw()
	if !b.lines {
		fmt.Fprintln(b.w)
	}
}

func (b *progressBar) fraction() float64 { return frac(b.read.Load(), b.total) }

func frac(n, total int64) float64 {
	if total <= 0 {
		return 1
	}
	return min(float64(n)/float64(total), 1)
}

func (b *progressBar) draw() {
	read := b.read.Load()
	var line string
	switch {
	case b.total < 0:
		line = fmt.Sprintf("%s  %s  %d entries", b.label, humanBytes(read), b.sent.Load())
	case b.lines:
		line = fmt.Sprintf("%s %3.0f%%  %s/%s  %d/%d sessions  %d entries", b.label, 100*b.fraction(),
			humanBytes(min(read, b.total)), humanBytes(b.total), b.done.Load(), b.sessions, b.sent.Load())
	default:
		const width = 24
		f := b.fraction()
		full := int(f * width)
		bar := strings.Repeat("█", full) + strings.Repeat("░", width-full)
		line = fmt.Sprintf("%s %3.0f%% [%s] %s/%s  %d/%d sessions  %d entries", b.label, 100*f, bar,
			humanBytes(min(read, b.total)), humanBytes(b.total), b.done.Load(), b.sessions, b.sent.Load())
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
