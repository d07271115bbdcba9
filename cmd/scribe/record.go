package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// maxMalformedListed bounds how many malformed lines are listed one by one;
// all of them are counted.
const maxMalformedListed = 1000

type badLine struct {
	File  string `json:"file"`
	Line  int64  `json:"line"`
	Error string `json:"error"`
}

// recordReport is what `scribe record` prints at the end (--json prints it
// as is).
type recordReport struct {
	ConfigDir      string            `json:"config_dir"`
	Lines          int64             `json:"lines"`
	Accepted       int64             `json:"accepted"`
	Duplicates     int64             `json:"duplicates"`
	Refused        map[string]int64  `json:"refused"`
	RefusedReasons map[string]string `json:"refused_reasons,omitempty"`
	MalformedCount int64             `json:"malformed_count"`
	Malformed      []badLine         `json:"malformed"`
	BlankLines     int64             `json:"blank_lines"`
	Unroutable     int64             `json:"unroutable"`
	Sessions       []string          `json:"sessions"`
	QueueWaits     int64             `json:"queue_waits"`
	Sinks          []core.SinkStats  `json:"sinks"`
	Error          string            `json:"error,omitempty"`
}

type recordOpts struct {
	session       string
	cwd           string
	json          bool
	ack           bool
	events        bool
	flushInterval time.Duration
	lockWait      time.Duration
}

func newRecordCmd() *cobra.Command {
	var o recordOpts
	c := &cobra.Command{
		Use:   "record [FILE...]",
		Short: "Record JSONL transcript entries (stdin, or files) through the guards and dedup into every sink",
		Long: `Record reads Claude Code transcript entries, one JSON object a line, from the
files given or from standard input, and submits each to the pipeline: the guards
decide whether persistence is on, dedup drops entries already stored, and every
sink gets the rest. By default each entry goes to the session its own sessionId
names, in the project folder of the session's first cwd; metadata lines without
a sessionId belong to the session of the lines around them.

At the end it prints what happened: accepted, duplicates skipped, refused by
which guard, malformed lines with their line numbers (the rest is still
recorded).

--events writes an event stream in the Claude Agent SDK's style on standard
output, one JSON object a line: each session first announces itself with
{"type":"system","subtype":"init","session_id":...} (cwd, model, permission
mode and Claude Code version when the transcript tells them, null otherwise),
then every accepted entry follows as one event, in order: user and assistant
rows as the SDK's user and assistant messages, state changes ("scribe-state"
entries) as system/session_state_changed, anything else as
{"type":"scribe_entry","entry":...}. Duplicates and refused entries give no
event. The report then goes to standard error (as JSON with --json), and
--ack lines become {"type":"scribe_ack","acked_lines":N} events in the stream.
A session's leading lines outside the chain (a title, a queue operation) wait
for its first chain row, whose cwd the announcement carries, or for the next
flush. If standard output cannot be written, record stops, after making
durable what it accepted.`,
		RunE: func(cmd *cobra.Command, args []string) error { return runRecord(cmd, args, o) },
	}
	f := c.Flags()
	f.StringVar(&o.session, "session", "", "record every entry into this session id")
	f.StringVar(&o.cwd, "cwd", "", "the project folder is this path's, whatever the entries' cwd says")
	f.Bool("no-session-persistence", false, "record nothing (the flag guard refuses every entry)")
	f.BoolVar(&o.json, "json", false, "print the report as JSON")
	f.BoolVar(&o.ack, "ack", false, `after each flush, print {"acked_lines":N} on stdout: the first N input lines are durable`)
	f.BoolVar(&o.events, "events", false, `write the SDK-style event stream (NDJSON) on stdout; the report goes to stderr`)
	f.DurationVar(&o.flushInterval, "flush-interval", time.Second, "how often to flush (make durable) what was recorded")
	f.DurationVar(&o.lockWait, "lock-wait", 0, "wait this long for another process writing the same session (default: the store's lock_wait, 0s)")
	return c
}

// input is one parsed line on its way from the reader to the pipeline.
type input struct {
	entry core.Entry
	file  string
	line  int64
}

func runRecord(cmd *cobra.Command, args []string, o recordOpts) error {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if o.session != "" && !jsonl.IsSessionID(o.session) {
		return &exitError{code: 2, err: fmt.Errorf("--session %q is not a session id (a UUID)", o.session)}
	}
	log := newLogger(cfg, "scribe")
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	rt, err := build(ctx, cfg, log, os.Args[1:], buildOpts{lockWait: o.lockWait})
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if err := rt.pipeline.Start(ctx); err != nil {
		return err
	}
	rep := &recordReport{ConfigDir: rt.host.ConfigDir}
	out, repOut := cmd.OutOrStdout(), cmd.OutOrStdout()
	// With --events, stdout carries the stream (buffered, written out
	// whenever the input pauses and at every flush) and nothing else.
	var stream *core.EventStream
	var events *bufio.Writer
	if o.events {
		events = bufio.NewWriterSize(out, 64<<10)
		stream = core.NewEventStream(events)
		repOut = cmd.ErrOrStderr()
	}

	lines := make(chan input, 1024)
	readErr := make(chan error, 1)
	go func() { readErr <- readInputs(ctx, args, cmd.InOrStdin(), lines, rep) }()

	sessions := map[string]bool{}
	var submitted, acked int64
	flush := func() error {
		fctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := rt.pipeline.Flush(fctx); err != nil {
			return err
		}
		if stream != nil {
			// Sessions still waiting for a chain row are announced, so
			// every event of the lines acknowledged precedes the ack.
			if err := stream.Flush(); err != nil {
				return fmt.Errorf("write events: %w", err)
			}
		}
		if o.ack && submitted > acked {
			acked = submitted
			if stream == nil {
				fmt.Fprintf(out, "{\"acked_lines\":%d}\n", acked)
			} else if err := stream.Write(core.Event{Type: core.EventScribeAck, AckedLines: acked}); err != nil {
				return fmt.Errorf("write events: %w", err)
			} else if err := events.Flush(); err != nil {
				return fmt.Errorf("write events: %w", err)
			}
		}
		return nil
	}
	tick := time.NewTicker(o.flushInterval)
	defer tick.Stop()

	var runErr error
	// pre holds leading lines without a sessionId until one is known.
	var pre []input
	current := map[string]string{} // file -> session of the lines so far
	submit := func(in input) error {
		res, err := rt.pipeline.Submit(ctx, in.entry)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", in.file, in.line, err)
		}
		if res.Status == core.Accepted {
			sessions[in.entry.SessionID] = true
			if stream != nil {
				if err := stream.Entry(in.entry); err != nil {
					return fmt.Errorf("write events: %w", err)
				}
			}
			if in.entry.Subtype == "compact_boundary" {
				// The compaction goes to the session's lifecycle records too.
				if _, err := rt.pipeline.SubmitLifecycle(ctx, compactionMeta(in.entry), compactionOf(in.entry)); err != nil {
					log.Warn("could not record the compaction in the session's lifecycle", "uuid", in.entry.UUID, "error", err)
				}
			}
		}
		return nil
	}
loop:
	for {
		select {
		case in, ok := <-lines:
			if !ok {
				break loop
			}
			e := &in.entry
			switch {
			case o.session != "":
				e.SessionID = o.session
			case e.SessionID == "":
				e.SessionID = current[in.file]
			default:
				current[in.file] = e.SessionID
			}
			if o.cwd != "" {
				e.CWD = o.cwd
			}
			if e.SessionID == "" {
				pre = append(pre, in)
				continue
			}
			for _, p := range pre {
				p.entry.SessionID = e.SessionID
				if runErr = submit(p); runErr != nil {
					break loop
				}
			}
			pre = nil
			if runErr = submit(in); runErr != nil {
				break loop
			}
			submitted = in.line
			if events != nil && len(lines) == 0 && events.Buffered() > 0 {
				if err := events.Flush(); err != nil {
					runErr = fmt.Errorf("write events: %w", err)
					break loop
				}
			}
		case <-tick.C:
			if submitted > acked {
				if runErr = flush(); runErr != nil {
					break loop
				}
			}
		case <-ctx.Done():
			runErr = ctx.Err()
			break loop
		}
	}
	if runErr == nil {
		runErr = <-readErr
	}
	rep.Unroutable += int64(len(pre))
	for _, p := range pre {
		log.Error("entry has no sessionId and none came before it; not recorded (use --session)", "file", p.file, "line", p.line)
	}
	// Whatever happened, make durable what was accepted.
	if err := flush(); err != nil && !sameStreamError(stream, runErr, err) {
		runErr = errors.Join(runErr, err)
	}
	if stream != nil && stream.Err() == nil {
		// flush stops at a pipeline error; the events still go out.
		if err := stream.Flush(); err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("write events: %w", err))
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := rt.pipeline.Shutdown(sctx); err != nil {
		runErr = errors.Join(runErr, err)
	}

	st := rt.pipeline.Stats()
	rep.Accepted, rep.Duplicates = st.Accepted, st.Duplicates
	rep.Refused, rep.RefusedReasons = st.Refused, st.Reasons
	rep.QueueWaits, rep.Sinks = st.QueueWaits, st.Sinks
	for s := range sessions {
		rep.Sessions = append(rep.Sessions, s)
	}
	sort.Strings(rep.Sessions)
	if rep.Sessions == nil {
		rep.Sessions = []string{}
	}
	if rep.Malformed == nil {
		rep.Malformed = []badLine{}
	}
	if runErr != nil {
		rep.Error = runErr.Error()
	}
	if o.json {
		enc := json.NewEncoder(repOut)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printRecordReport(repOut, rep)
	}
	if runErr != nil {
		return runErr
	}
	return nil
}

// sameStreamError reports whether err is the event stream's error that
// runErr already holds (a broken stdout is reported once).
func sameStreamError(stream *core.EventStream, runErr, err error) bool {
	if stream == nil || runErr == nil {
		return false
	}
	se := stream.Err()
	return se != nil && errors.Is(err, se) && errors.Is(runErr, se)
}

// readInputs parses every line of the files (or stdin) and sends the
// entries on; malformed and blank lines are counted in rep.
func readInputs(ctx context.Context, files []string, stdin io.Reader, out chan<- input, rep *recordReport) error {
	defer close(out)
	if len(files) == 0 {
		files = []string{"-"}
	}
	for _, name := range files {
		var r io.Reader = stdin
		display := "<stdin>"
		if name != "-" {
			f, err := os.Open(name)
			if err != nil {
				return fmt.Errorf("open input: %w", err)
			}
			r, display = f, name
			defer f.Close()
		}
		var n int64
		var sendErr error
		err := jsonl.EachLine(r, func(line []byte, _ bool) {
			n++
			if sendErr != nil {
				return
			}
			rep.Lines++
			if len(strings.TrimSpace(string(line))) == 0 {
				rep.BlankLines++
				return
			}
			e, err := core.ParseEntry(line)
			if err != nil {
				rep.MalformedCount++
				if len(rep.Malformed) < maxMalformedListed {
					rep.Malformed = append(rep.Malformed, badLine{File: display, Line: n, Error: err.Error()})
				}
				return
			}
			select {
			case out <- input{entry: e, file: display, line: n}:
			case <-ctx.Done():
				sendErr = ctx.Err()
			}
		})
		if err != nil {
			return fmt.Errorf("read %s: %w", display, err)
		}
		if sendErr != nil {
			return sendErr
		}
	}
	return nil
}

func printRecordReport(w io.Writer, r *recordReport) {
	fmt.Fprintf(w, "recorded %d entries into %s (%d sessions)\n", r.Accepted, r.ConfigDir, len(r.Sessions))
	fmt.Fprintf(w, "  lines read:          %d\n", r.Lines)
	fmt.Fprintf(w, "  duplicates skipped:  %d\n", r.Duplicates)
	var refused int64
	for _, n := range r.Refused {
		refused += n
	}
	fmt.Fprintf(w, "  refused by guards:   %d\n", refused)
	ids := make([]string, 0, len(r.Refused))
	for id := range r.Refused {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Fprintf(w, "    %s: %d (%s)\n", id, r.Refused[id], r.RefusedReasons[id])
	}
	fmt.Fprintf(w, "  malformed lines:     %d\n", r.MalformedCount)
	for _, b := range r.Malformed {
		fmt.Fprintf(w, "    %s:%d: %s\n", b.File, b.Line, b.Error)
	}
	if r.MalformedCount > int64(len(r.Malformed)) {
		fmt.Fprintf(w, "    ... and %d more\n", r.MalformedCount-int64(len(r.Malformed)))
	}
	if r.BlankLines > 0 {
		fmt.Fprintf(w, "  blank lines:         %d\n", r.BlankLines)
	}
	if r.Unroutable > 0 {
		fmt.Fprintf(w, "  without a session:   %d (not recorded; use --session)\n", r.Unroutable)
	}
	for _, s := range r.Sinks {
		c := s.Counters
		fmt.Fprintf(w, "  sink %s: %d written", s.ID, s.Written)
		if c != nil {
			fmt.Fprintf(w, ", %d files created, %d torn tails sealed, %d metadata re-appends, %d held (no user or assistant entry yet)",
				c["files_created"], c["torn_tails_sealed"], c["metadata_reappends"], c["held"])
		}
		if s.WriteErrors > 0 || s.Dropped > 0 {
			fmt.Fprintf(w, ", %d write errors, %d retries, %d dropped (last error: %s)", s.WriteErrors, s.Retries, s.Dropped, s.LastError)
		}
		fmt.Fprintln(w)
	}
	if r.Accepted == 0 && refused > 0 {
		fmt.Fprintln(w, "nothing recorded: session persistence is disabled (see the guards above)")
	}
	if r.Error != "" {
		fmt.Fprintf(w, "error: %s\n", r.Error)
	}
}

// compactionOf describes a compact_boundary row as a lifecycle event.
func compactionOf(e core.Entry) core.Compaction {
	var row struct {
		CompactMetadata struct {
			Trigger    string `json:"trigger"`
			PreTokens  int64  `json:"preTokens"`
			PostTokens int64  `json:"postTokens"`
		} `json:"compactMetadata"`
	}
	_ = json.Unmarshal(e.Raw, &row)
	m := row.CompactMetadata
	return core.Compaction{Trigger: m.Trigger, PreTokens: m.PreTokens, PostTokens: m.PostTokens, BoundaryUUID: e.UUID}
}

// compactionMeta stamps the compaction with the boundary's own time, so
// recording the same input again derives the same uuid (dedup).
func compactionMeta(e core.Entry) core.LifecycleMeta {
	m := core.LifecycleMeta{SessionID: e.SessionID, CWD: e.CWD}
	if t, err := time.Parse(time.RFC3339Nano, e.Timestamp); err == nil {
		m.At = t
	} else {
		m.At = time.Unix(0, 0)
	}
	return m
}
