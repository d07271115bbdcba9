// Package record holds the commands that record sessions: record (JSONL
// on stdin or in files, through the pipeline), watch (Claude Code's live
// transcripts) and hook (one Claude Code hook event), and the
// configuration check watch and hook share (ResolveWatch).
package record

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/seal"
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
	ConfigDir string `json:"config_dir"`
	// Into names the sinks entries went to, a local store with its
	// folder ("jsonl/archive in /home/me/scribe-archive").
	Into           []string          `json:"into"`
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
	// Rejected lists lines no sink could store (a bad id, a session
	// another process writes), with the reason; the rest was recorded.
	RejectedCount int64     `json:"rejected_count"`
	Rejected      []badLine `json:"rejected"`
	// DroppedBy counts entries processors dropped on purpose, by processor.
	DroppedCount   int64             `json:"dropped_count"`
	DroppedBy      map[string]int64  `json:"dropped"`
	DroppedReasons map[string]string `json:"dropped_reasons,omitempty"`
	// Held counts lines the local store holds back: their session has no
	// user or assistant entry yet, so (as in Claude Code) no file exists.
	// They are not acknowledged.
	Held int64 `json:"held"`
	// Lost is the most entries any durable sink will never have (queue
	// full, retries exhausted, shutdown); not zero means exit 1.
	Lost        int64            `json:"lost"`
	AckedLines  int64            `json:"acked_lines"`
	FlushErrors int64            `json:"flush_errors"`
	Interrupted bool             `json:"interrupted,omitempty"`
	QueueWaits  int64            `json:"queue_waits"`
	Sinks       []core.SinkStats `json:"sinks"`
	Error       string           `json:"error,omitempty"`
}

type recordOpts struct {
	session         string
	cwd             string
	json            bool
	ack             bool
	events          bool
	flushInterval   time.Duration
	lockWait        time.Duration
	shutdownTimeout time.Duration
}

func NewCmdRecord(f *cmdutil.Factory) *cobra.Command {
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
		RunE: func(cmd *cobra.Command, args []string) error { return runRecord(f, cmd, args, o) },
	}
	fl := c.Flags()
	fl.StringVar(&o.session, "session", "", "record every entry into this session id")
	fl.StringVar(&o.cwd, "cwd", "", "the project folder is this path's, whatever the entries' cwd says")
	fl.Bool("no-session-persistence", false, "record nothing (the flag guard refuses every entry)")
	fl.BoolVar(&o.json, "json", false, "print the report as JSON")
	fl.BoolVar(&o.ack, "ack", false, `after each flush, print {"acked_lines":N} on stdout: the first N input lines are durable`)
	fl.BoolVar(&o.events, "events", false, `write the SDK-style event stream (NDJSON) on stdout; the report goes to stderr`)
	fl.DurationVar(&o.flushInterval, "flush-interval", time.Second, "how often to flush (make durable) what was recorded")
	fl.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 30*time.Second, "at the end of the input or on SIGINT/SIGTERM, how long to wait for the sinks to make everything durable (a second signal exits at once)")
	fl.DurationVar(&o.lockWait, "lock-wait", 0, "wait this long for another process writing the same session (default: the store's lock_wait, 0s)")
	return c
}

// input is one parsed line on its way from the reader to the pipeline, or
// the end of one input file (eof).
type input struct {
	entry core.Entry
	file  string
	line  int64 // in its file
	seq   int64 // in the whole input, counting every line of every file
	eof   bool
}

func runRecord(f *cmdutil.Factory, cmd *cobra.Command, args []string, o recordOpts) error {
	cfg, err := f.LoadConfig(cmd)
	if err != nil {
		return &cmdutil.ExitError{Code: 2, Err: err}
	}
	if o.session != "" && !claudedir.IsSessionID(o.session) {
		return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--session %q is not a session id (a UUID)", o.session)}
	}
	if o.shutdownTimeout <= 0 {
		return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--shutdown-timeout %s: want a positive duration", o.shutdownTimeout)}
	}
	log := f.Logger(cfg, "scribe")
	intake, stopIntake := context.WithCancel(cmd.Context())
	defer stopIntake()
	sig := watchSignals(log, stopIntake)
	defer sig.stop()

	rt, err := cmdutil.Build(cmd.Context(), cfg, log, os.Args[1:], cmdutil.BuildOpts{LockWait: o.lockWait})
	if err != nil {
		return &cmdutil.ExitError{Code: 2, Err: err}
	}
	// A key read (a sealed archive's key command) gets --shutdown-timeout
	// and ends at a signal: a command that never answers does not hang
	//
	keys, stopKeys := context.WithTimeout(intake, o.shutdownTimeout)
	err = rt.Pipeline.Start(seal.BoundReads(cmd.Context(), keys))
	stopKeys()
	if err != nil {
		_ = rt.Close(context.Background())
		return err
	}
	r := newRecorder(cmd, rt, o, log)
	lines := make(chan []input, 4)
	readErr := make(chan error, 1)
	go func() { readErr <- readInputs(intake, args, cmd.InOrStdin(), lines, r.rep) }()
	runErr := r.consume(intake, lines)
	if runErr == nil && !sig.caught() {
		// After a signal the reader may be blocked reading stdin: it is
		// not waited for.
		runErr = <-readErr
	}
	if sig.caught() {
		runErr = nil // the signal is reported below, with what is durable
	}
	runErr = r.finish(runErr, sig.caught())
	if runErr != nil {
		if sig.caught() {
			return &cmdutil.ExitError{Code: 130, Err: runErr}
		}
		return runErr
	}
	return nil
}

// signals turns the first SIGINT or SIGTERM into a stop of the intake (the
// command then makes durable what it has, within --shutdown-timeout) and
// the second into an immediate exit.
type signals struct {
	ch   chan os.Signal
	got  atomic.Bool
	done chan struct{}
}

func watchSignals(log hclog.Logger, stopIntake func()) *signals {
	s := &signals{ch: make(chan os.Signal, 2), done: make(chan struct{})}
	signal.Notify(s.ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		for {
			select {
			case sg := <-s.ch:
				if s.got.Swap(true) {
					fmt.Fprintf(os.Stderr, "scribe: second %s: exiting now; what was not flushed is not durable\n", sg)
					os.Exit(130)
				}
				log.Warn("signal: stopping intake and making durable what was read (a second signal exits at once)", "signal", sg.String())
				stopIntake()
			case <-s.done:
				return
			}
		}
	}()
	return s
}

func (s *signals) caught() bool { return s.got.Load() }
func (s *signals) stop() {
	signal.Stop(s.ch)
	close(s.done)
}

// recorder submits the parsed lines and keeps the report.
type recorder struct {
	rt     *cmdutil.Runtime
	o      recordOpts
	log    hclog.Logger
	rep    *recordReport
	out    io.Writer
	repOut io.Writer
	// With --events, stdout carries the stream (buffered, written out
	// whenever the input pauses and at every flush) and nothing else.
	stream *core.EventStream
	events *bufio.Writer

	sessions map[string]bool
	// submitted is the seq of the last line handed to the pipeline: every
	// line up to it was submitted, counted as malformed or blank, or
	// refused on purpose. acked is the last seq acknowledged (under outMu,
	// which also orders everything written to stdout).
	submitted atomic.Int64
	outMu     sync.Mutex
	acked     int64
	flushErrs atomic.Int64
	// openFailures counts lines whose session could not be opened (locked
	// by another process, unreadable); openErr is the first such error.
	openFailures int64
	openErr      error
	// ackLimit is the last seq that may ever be acknowledged: the line
	// before the first whose session could not be opened for a reason
	// other than another writer holding it (out of descriptors, an I/O
	// error): that line was not refused on purpose, nor made durable.
	ackLimit atomic.Int64
	// pre holds, per input file, leading lines without a sessionId until
	// one is known; current is the session of each file's lines so far.
	pre     map[string][]input
	current map[string]string
}

func newRecorder(cmd *cobra.Command, rt *cmdutil.Runtime, o recordOpts, log hclog.Logger) *recorder {
	r := &recorder{
		rt: rt, o: o, log: log,
		rep:      &recordReport{ConfigDir: rt.Host.ConfigDir, Into: sinkTargets(rt.Cfg, rt.Host)},
		out:      cmd.OutOrStdout(),
		repOut:   cmd.OutOrStdout(),
		sessions: map[string]bool{},
		pre:      map[string][]input{},
		current:  map[string]string{},
	}
	r.ackLimit.Store(math.MaxInt64)
	if o.events {
		r.events = bufio.NewWriterSize(r.out, 64<<10)
		r.stream = core.NewEventStream(r.events)
		r.repOut = cmd.ErrOrStderr()
	}
	return r
}

// consume submits lines until the input ends or the intake stops. Flushes
// run beside it, one at a time, so a sink that cannot make anything
// durable holds back acknowledgements, never the intake; a failed flush is
// reported and tried again at the next tick.
func (r *recorder) consume(intake context.Context, lines <-chan []input) error {
	tick := time.NewTicker(r.o.flushInterval)
	defer tick.Stop()
	var flushing sync.WaitGroup
	defer flushing.Wait()
	// The end of the input cuts a periodic flush short: the final one
	// follows.
	fctx, cancelFlush := context.WithCancel(context.Background())
	defer cancelFlush()
	var busy atomic.Bool
	outErr := make(chan error, 1)
	for {
		select {
		case batch, ok := <-lines:
			if !ok {
				return nil
			}
			for i := range batch {
				if err := r.take(&batch[i]); err != nil {
					return err
				}
			}
			recycleBatch(batch)
			if err := r.flushEvents(len(lines) == 0); err != nil {
				return err
			}
		case <-tick.C:
			if r.submitted.Load() <= r.ackedNow() || busy.Swap(true) {
				continue
			}
			flushing.Add(1)
			go func() {
				defer flushing.Done()
				defer busy.Store(false)
				if err := r.flush(fctx, r.o.flushInterval*10); err != nil {
					if fctx.Err() != nil && errors.Is(err, context.Canceled) {
						return // cut short on purpose: the input ended, the final flush follows
					}
					if isOutputError(err) {
						select {
						case outErr <- err:
						default:
						}
						return
					}
					r.flushErrs.Add(1)
					r.log.Error("flush failed; acknowledgements wait until the next one succeeds", "error", err)
				}
			}()
		case err := <-outErr:
			return err
		case <-intake.Done():
			return nil
		}
	}
}

func (r *recorder) ackedNow() int64 {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	return r.acked
}

// flushEvents writes out the buffered event stream when the input pauses.
func (r *recorder) flushEvents(paused bool) error {
	if r.events == nil || !paused {
		return nil
	}
	r.outMu.Lock()
	defer r.outMu.Unlock()
	if r.events.Buffered() == 0 {
		return nil
	}
	if err := r.events.Flush(); err != nil {
		return outputError{err}
	}
	return nil
}

// take routes one input line to its session and submits it, with the
// lines of its file that waited for a session.
func (r *recorder) take(in *input) error {
	if in.eof {
		// Lines of a file that never named a session stay unrecorded; they
		// never belong to the next file's session.
		for _, p := range r.pre[in.file] {
			p.entry.Lease.Release()
			r.rep.Unroutable++
			r.log.Error("entry has no sessionId and none came before it in its file; not recorded (use --session)", "file", p.file, "line", p.line)
		}
		delete(r.pre, in.file)
		delete(r.current, in.file)
		r.advance(in.seq)
		return nil
	}
	e := &in.entry
	switch {
	case r.o.session != "":
		e.SessionID = r.o.session
	case e.SessionID == "":
		e.SessionID = r.current[in.file]
	default:
		r.current[in.file] = e.SessionID
	}
	if r.o.cwd != "" {
		e.CWD = r.o.cwd
	}
	if e.SessionID == "" {
		r.pre[in.file] = append(r.pre[in.file], *in)
		return nil
	}
	for i := range r.pre[in.file] {
		p := &r.pre[in.file][i]
		p.entry.SessionID = e.SessionID
		if err := r.submit(p); err != nil {
			return err
		}
	}
	delete(r.pre, in.file)
	if err := r.submit(in); err != nil {
		return err
	}
	r.advance(in.seq)
	return nil
}

// advance moves the submitted mark, unless a line before it still waits
// for its session.
func (r *recorder) advance(seq int64) {
	for _, p := range r.pre {
		if len(p) > 0 && p[0].seq <= seq {
			seq = p[0].seq - 1
		}
	}
	if seq > r.submitted.Load() {
		r.submitted.Store(seq)
	}
}

func (r *recorder) submit(in *input) error {
	in.entry.Seq = in.seq
	// Submit gives the entry's lease back; the event stream and the
	// compaction below still read Raw: they keep a reference of their own.
	if r.stream != nil || in.entry.Subtype == core.SubtypeCompactBoundary {
		in.entry.Lease.Retain(1)
		defer in.entry.Lease.Release()
	}
	res, err := r.rt.Pipeline.Submit(context.Background(), in.entry)
	if errors.Is(err, core.ErrClosed) {
		return err
	}
	if err != nil {
		// One session's failure (its dedup could not be seeded: its file is
		// locked or unreadable) is that line's, not the input's; the run
		// still fails at the end.
		r.reject(in, err)
		if !errors.Is(err, jsonl.ErrLocked) && in.seq-1 < r.ackLimit.Load() {
			r.ackLimit.Store(in.seq - 1)
		}
		if r.openErr == nil {
			r.openErr = err
		}
		r.openFailures++
		return nil
	}
	switch res.Status {
	case core.Rejected:
		r.reject(in, res.Reason)
	case core.Dropped:
		r.rep.DroppedCount++
	case core.Accepted:
		r.sessions[in.entry.SessionID] = true
		if r.stream != nil {
			r.outMu.Lock()
			err := r.stream.Entry(in.entry)
			r.outMu.Unlock()
			if err != nil {
				return outputError{err}
			}
		}
		if in.entry.Subtype == core.SubtypeCompactBoundary {
			// The compaction goes to the session's lifecycle records too.
			if _, err := r.rt.Pipeline.SubmitLifecycle(context.Background(), compactionMeta(in.entry), compactionOf(in.entry)); err != nil {
				r.log.Warn("could not record the compaction in the session's lifecycle", "uuid", in.entry.UUID, "error", err)
			}
		}
	}
	return nil
}

func (r *recorder) reject(in *input, reason error) {
	r.rep.RejectedCount++
	if len(r.rep.Rejected) < maxMalformedListed {
		r.rep.Rejected = append(r.rep.Rejected, badLine{File: in.file, Line: in.line, Error: reason.Error()})
	}
	r.log.Warn("entry not recorded", "file", in.file, "line", in.line, "uuid", in.entry.UUID, "reason", reason)
}

// outputError marks a failure to write standard output.
type outputError struct{ err error }

func (e outputError) Error() string { return "write events: " + e.err.Error() }
func (e outputError) Unwrap() error { return e.err }

func isOutputError(err error) bool {
	var oe outputError
	return errors.As(err, &oe)
}

// flush makes durable what was submitted, then acknowledges it.
func (r *recorder) flush(parent context.Context, timeout time.Duration) error {
	fctx, cancel := context.WithTimeout(parent, max(timeout, time.Second))
	defer cancel()
	through := min(r.submitted.Load(), r.ackLimit.Load())
	if err := r.rt.Pipeline.Flush(fctx); err != nil {
		return err
	}
	r.outMu.Lock()
	defer r.outMu.Unlock()
	if r.stream != nil {
		// Sessions still waiting for a chain row are announced, so
		// every event of the lines acknowledged precedes the ack.
		if err := r.stream.Flush(); err != nil {
			return outputError{err}
		}
	}
	acked := r.rt.Pipeline.Acked(through)
	if !r.o.ack || acked <= r.acked {
		r.acked = max(r.acked, acked)
		return nil
	}
	r.acked = acked
	if r.stream == nil {
		if _, err := fmt.Fprintf(r.out, "{\"acked_lines\":%d}\n", acked); err != nil {
			return outputError{err}
		}
	} else if err := r.stream.Write(core.Event{Type: core.EventScribeAck, AckedLines: acked}); err != nil {
		return outputError{err}
	} else if err := r.events.Flush(); err != nil {
		return outputError{err}
	}
	return nil
}

// finish makes durable what was accepted (within --shutdown-timeout),
// shuts the pipeline down and prints the report. It returns the run's
// error: the one it was given, joined with anything not durable.
func (r *recorder) finish(runErr error, signalled bool) error {
	for file := range r.pre {
		r.take(&input{file: file, eof: true})
	}
	deadline := time.Now().Add(r.o.shutdownTimeout)
	if err := r.flush(context.Background(), r.o.shutdownTimeout); err != nil && !(isOutputError(err) && isOutputError(runErr)) {
		runErr = errors.Join(runErr, err)
	}
	if r.stream != nil && r.stream.Err() == nil {
		// flush stops at a pipeline error; the events still go out.
		r.outMu.Lock()
		err := r.stream.Flush()
		r.outMu.Unlock()
		if err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("write events: %w", err))
		}
	}
	sctx, cancel := context.WithDeadline(context.Background(), deadline.Add(time.Second))
	defer cancel()
	if err := r.rt.Close(sctx); err != nil {
		runErr = errors.Join(runErr, err)
	}
	r.fillReport()
	if r.openFailures > 0 {
		runErr = errors.Join(runErr, fmt.Errorf("%d lines not recorded: their session could not be opened: %w", r.openFailures, r.openErr))
	}
	if r.rt.Pipeline.Lost() || r.rep.Lost > 0 {
		runErr = errors.Join(runErr, fmt.Errorf("%d entries did not reach every sink (see each sink in the report)", r.rep.Lost))
	}
	if signalled {
		msg := fmt.Sprintf("stopped by a signal after input line %d; lines 1-%d are durable", r.submitted.Load(), r.acked)
		if r.acked < r.submitted.Load() || runErr != nil {
			runErr = errors.Join(errors.New(msg), runErr)
		} else {
			r.log.Warn(msg)
		}
		r.rep.Interrupted = true
	}
	if runErr != nil {
		r.rep.Error = runErr.Error()
	}
	r.rep.AckedLines = r.acked
	if err := r.print(); err != nil {
		return errors.Join(runErr, err)
	}
	return runErr
}

func (r *recorder) fillReport() {
	rep := r.rep
	st := r.rt.Pipeline.Stats()
	rep.Accepted, rep.Duplicates = st.Accepted, st.Duplicates
	rep.Refused, rep.RefusedReasons = st.Refused, st.Reasons
	rep.DroppedBy, rep.DroppedReasons = st.Dropped, st.DropReasons
	rep.QueueWaits, rep.Sinks = st.QueueWaits, st.Sinks
	rep.FlushErrors = r.flushErrs.Load()
	for _, s := range st.Sinks {
		if !s.Volatile {
			rep.Lost = max(rep.Lost, s.Dropped+s.Counters["unwritten_lines"])
		}
		if s.Counters != nil {
			rep.Held = max(rep.Held, s.Counters["held"])
		}
	}
	for s := range r.sessions {
		rep.Sessions = append(rep.Sessions, s)
	}
	sort.Strings(rep.Sessions)
	if rep.Sessions == nil {
		rep.Sessions = []string{}
	}
	if rep.Malformed == nil {
		rep.Malformed = []badLine{}
	}
	if rep.Rejected == nil {
		rep.Rejected = []badLine{}
	}
}

func (r *recorder) print() error {
	if r.o.json {
		enc := json.NewEncoder(r.repOut)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(r.rep)
	}
	printRecordReport(r.repOut, r.rep)
	return nil
}

// sinkTargets names the pipeline's sinks as the report says where entries
// went: a local store with the folder it writes under, any other sink by
// its id.
func sinkTargets(cfg *config.Config, host core.HostInfo) []string {
	out := []string{}
	for _, id := range cfg.Pipeline.Sinks {
		name := id.String()
		if id.Type == "jsonl" {
			if comp, ok := cfg.Lookup(core.KindSink, id); ok {
				jc := jsonl.DefaultConfig()
				if comp.Decode(jc) == nil {
					if dir, err := jc.StoreDir(host); err == nil {
						name += " in " + dir
					}
				}
			}
		}
		out = append(out, name)
	}
	return out
}

func printRecordReport(w io.Writer, r *recordReport) {
	recorded := r.Accepted - r.Held
	if r.Lost > 0 {
		// A full disk, a sink given up at --shutdown-timeout: the headline
		// says so instead of claiming what did not happen.
		fmt.Fprintf(w, "took %d entries for %s (%d sessions), but %d did not reach every sink (see each sink below)\n",
			recorded, strings.Join(r.Into, ", "), len(r.Sessions), r.Lost)
	} else {
		fmt.Fprintf(w, "recorded %d entries into %s (%d sessions)\n", recorded, strings.Join(r.Into, ", "), len(r.Sessions))
	}
	fmt.Fprintf(w, "  lines read:          %d\n", r.Lines)
	fmt.Fprintf(w, "  duplicates skipped:  %d\n", r.Duplicates)
	var refused int64
	for _, n := range r.Refused {
		refused += n
	}
	fmt.Fprintf(w, "  refused by guards:   %d\n", refused)
	printCounts(w, r.Refused, r.RefusedReasons)
	if r.DroppedCount > 0 {
		fmt.Fprintf(w, "  dropped by processors: %d\n", r.DroppedCount)
		printCounts(w, r.DroppedBy, r.DroppedReasons)
	}
	fmt.Fprintf(w, "  malformed lines:     %d\n", r.MalformedCount)
	printBadLines(w, r.Malformed, r.MalformedCount)
	if r.RejectedCount > 0 {
		fmt.Fprintf(w, "  rejected lines:      %d (not recorded; the rest was)\n", r.RejectedCount)
		printBadLines(w, r.Rejected, r.RejectedCount)
	}
	if r.BlankLines > 0 {
		fmt.Fprintf(w, "  blank lines:         %d\n", r.BlankLines)
	}
	if r.Unroutable > 0 {
		fmt.Fprintf(w, "  without a session:   %d (not recorded; use --session)\n", r.Unroutable)
	}
	if r.Held > 0 {
		fmt.Fprintf(w, "  held back:           %d (their session has no user or assistant entry yet, so no file exists; not acknowledged)\n", r.Held)
	}
	for _, s := range r.Sinks {
		printSinkLine(w, s)
	}
	if r.Accepted == 0 && refused > 0 {
		fmt.Fprintln(w, "nothing recorded: session persistence is disabled (see the guards above)")
	}
	if r.Error != "" {
		fmt.Fprintf(w, "error: %s\n", r.Error)
	}
}

func printCounts(w io.Writer, counts map[string]int64, reasons map[string]string) {
	ids := make([]string, 0, len(counts))
	for id := range counts {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Fprintf(w, "    %s: %d (%s)\n", id, counts[id], reasons[id])
	}
}

func printBadLines(w io.Writer, lines []badLine, total int64) {
	for _, b := range lines {
		fmt.Fprintf(w, "    %s:%d: %s\n", b.File, b.Line, b.Error)
	}
	if total > int64(len(lines)) {
		fmt.Fprintf(w, "    ... and %d more\n", total-int64(len(lines)))
	}
}

// printSinkLine says what one sink did, in its own terms: the local store
// in files, a network sink in deliveries and its disk spool.
func printSinkLine(w io.Writer, s core.SinkStats) {
	c := s.Counters
	fmt.Fprintf(w, "  sink %s: %d written", s.ID, s.Written)
	switch {
	case c == nil:
	case hasKey(c, "files_created"):
		fmt.Fprintf(w, ", %d files created, %d torn tails sealed, %d metadata re-appends, %d held",
			c["files_created"], c["torn_tails_sealed"], c["metadata_reappends"], c["held"])
		if hasKey(c, "frames_written") { // a sealed archive
			fmt.Fprintf(w, ", %d frames sealed, %d torn frames cut", c["frames_written"], c["torn_frames_cut"])
			if n := c["sealed_files_upgraded"]; n > 0 {
				fmt.Fprintf(w, ", %d files rewritten in sealed format 2", n)
			}
		}
	case hasKey(c, "delivered"):
		fmt.Fprintf(w, ", %d delivered", c["delivered"])
		if left := max(c["queued"], c["shutdown_spilled"]); left > 0 {
			fmt.Fprintf(w, ", %d NOT YET DELIVERED (kept in the disk spool; sent on the next run)", left)
		}
		if c["dropped"] > 0 {
			fmt.Fprintf(w, ", %d dropped by the spool", c["dropped"])
		}
	}
	if s.WriteErrors > 0 || s.Dropped > 0 {
		fmt.Fprintf(w, ", %d write errors, %d retries, %d dropped", s.WriteErrors, s.Retries, s.Dropped)
		for _, k := range []string{"queue_full", "retries_exhausted", "rejected", "shutdown"} {
			if n := s.DropReasons[k]; n > 0 {
				fmt.Fprintf(w, " (%s: %d)", k, n)
			}
		}
		if s.LastError != "" {
			fmt.Fprintf(w, " (last error: %s)", s.LastError)
		}
	}
	fmt.Fprintln(w)
}

func hasKey(m map[string]int64, k string) bool {
	_, ok := m[k]
	return ok
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
