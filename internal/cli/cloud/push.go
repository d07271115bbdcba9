// Package cloud holds the commands that talk to the team server: push,
// pull, and the server side of ls --remote and of id prefixes (resolved
// on the server when nothing local matches).
package cloud

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/internal/ident"
	"github.com/e0dc0000/scribe/processors/redact"
	"github.com/e0dc0000/scribe/sinks/events"
	"github.com/e0dc0000/scribe/sinks/ingress"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/sinks/sinkhelper"
	"github.com/e0dc0000/scribe/transcript"
)

// Target is the server push and pull talk to, and the block that
// named it.
type Target struct {
	id       core.ID
	client   *events.Client
	maxBatch int
	maxBytes int
	// red, with push --redact, replaces secrets by markers before a line
	// leaves the machine.
	red *redact.Redactor
}

// findCloudTarget picks the server: the block named by flag (an "events"
// or "ingress" sink, or a "cloud" loader), else, in this order, the first
// events or ingress sink of pipeline.sinks (the one recording mirrors
// to), the first cloud loader of resume.loaders when preferLoader, the
// first declared events sink, the first declared ingress sink, and the
// first declared cloud loader.
func findCloudTarget(f *cmdutil.Factory, cfg *config.Config, flag string, preferLoader bool) (*Target, error) {
	kindOf := map[string]core.Kind{events.Type: core.KindSink, ingress.Type: core.KindSink, events.LoaderType: core.KindLoader}
	var id core.ID
	switch {
	case flag != "":
		var err error
		if id, err = core.ParseID(flag); err != nil {
			return nil, err
		}
		if _, ok := kindOf[id.Type]; !ok {
			return nil, fmt.Errorf("%s: want an %q or %q sink or a %q loader", flag, events.Type, ingress.Type, events.LoaderType)
		}
	default:
		var cands []core.ID
		for _, s := range cfg.Pipeline.Sinks {
			if s.Type == events.Type || s.Type == ingress.Type {
				cands = append(cands, s)
			}
		}
		if preferLoader {
			for _, l := range cfg.Resume.Loaders {
				if _, ok := cfg.Lookup(core.KindLoader, l); ok && l.Type == events.LoaderType {
					cands = append(cands, l)
				}
			}
		}
		for _, typ := range []string{events.Type, ingress.Type, events.LoaderType} {
			for _, c := range cfg.Components {
				if c.ID.Type == typ && c.Kind == kindOf[typ] {
					cands = append(cands, c.ID)
				}
			}
		}
		if len(cands) == 0 {
			return nil, errors.New(`no server configured: declare a sink "events" (or "ingress") block or a loader "cloud" block with base_url and token, or name one with --to/--from`)
		}
		id = cands[0]
	}
	kind := kindOf[id.Type]
	comp, ok := cfg.Lookup(kind, id)
	if !ok {
		return nil, fmt.Errorf("%s %s is not declared in the configuration", kind, id)
	}
	fac, err := f.FindFactory(kind, id.Type)
	if err != nil {
		return nil, err
	}
	c := fac.DefaultConfig()
	if err := comp.Decode(c); err != nil {
		return nil, err
	}
	t := &Target{id: id, maxBatch: events.DefaultMaxBatch, maxBytes: events.DefaultMaxRequestBytes}
	var cc sinkhelper.ClientConfig
	switch c := c.(type) {
	case *events.Config:
		cc, t.maxBatch, t.maxBytes = c.ClientConfig, c.MaxBatch, c.MaxRequestBytes
	case *ingress.Config:
		cc = c.ClientConfig
	case *events.LoaderConfig:
		cc = c.ClientConfig()
	default:
		return nil, fmt.Errorf("%s %s: unexpected config type %T", kind, id, c)
	}
	if t.client, err = events.ClientFor(cc); err != nil {
		return nil, fmt.Errorf("%s %s: %w", kind, id, err)
	}
	return t, nil
}

// pushReport is what `scribe push` prints (--json prints it as is).
type pushReport struct {
	Server string `json:"server"`
	Via    string `json:"via"`
	// Redacted counts the secrets push --redact replaced by markers.
	Redacted int64 `json:"redacted,omitempty"`
	// Sessions pushed (or tried), and their transcript files.
	Sessions int `json:"sessions"`
	Files    int `json:"files"`
	// EntriesSent counts the entries the server acknowledged: Stored of
	// them are new, Duplicates it had already (an earlier push, a sink, a
	// retry after a lost answer).
	EntriesSent int64 `json:"entries_sent"`
	Stored      int64 `json:"stored"`
	Duplicates  int64 `json:"duplicates"`
	// Bytes is the size of the entries sent; Requests the POSTs made.
	Bytes    int64 `json:"bytes"`
	Requests int64 `json:"requests"`
	// Lines that were not sent: blank, not JSON (malformed), a torn last
	// line, or refused (by the checks below or by the server).
	Blank     int64        `json:"blank_lines"`
	Malformed int64        `json:"malformed"`
	Torn      int64        `json:"torn"`
	Refused   int64        `json:"refused"`
	Refusals  []pushIssue  `json:"refusals"`
	Errors    []pushIssue  `json:"errors"`
	Results   []pushResult `json:"results"`
	// TokenRefused is true when the server refused the token (401/403):
	// the push stopped there.
	TokenRefused bool `json:"token_refused"`
	// TokenStatus is the HTTP status the server refused the token with
	// (401 or 403); 0 when it did not.
	TokenStatus int `json:"token_status,omitempty"`
	// Complete counts the sessions sent completely (Sessions less the
	// ones in Errors): the number the summary's headline gives.
	Complete int `json:"complete"`
	// Unreachable says why the server could not be reached at all (the
	// push stopped there); "" when it could.
	Unreachable string `json:"unreachable,omitempty"`
	ElapsedMS   int64  `json:"elapsed_ms"`
}

type pushIssue struct {
	Session string `json:"session"`
	File    string `json:"file,omitempty"`
	Line    int64  `json:"line,omitempty"`
	Error   string `json:"error"`
}

type pushResult struct {
	Session     string `json:"session"`
	ProjectDir  string `json:"project_dir"`
	Files       int    `json:"files"`
	EntriesSent int64  `json:"entries_sent"`
	Stored      int64  `json:"stored"`
	Duplicates  int64  `json:"duplicates"`
	Bytes       int64  `json:"bytes"`
	Error       string `json:"error,omitempty"`
}

// maxRefusalsListed bounds the refusals listed one by one.
const maxRefusalsListed = 100

func NewCmdPush(f *cmdutil.Factory) *cobra.Command {
	var (
		all, asJSON, noProgress bool
		redactOn                bool
		to                      string
		batch, workers          int
	)
	c := &cobra.Command{
		Use:   "push [ID... | --all]",
		Short: "Upload local sessions (with their subagents) to a scribe server; idempotent and resumable",
		Long: `push uploads existing local sessions, the main transcript and every subagent
transcript, to a scribe server as batches of POST /v1/code/sessions/{id}/events.

The server is the one of --to (an "events" or "ingress" sink, or a "cloud"
loader block), else the first events or ingress sink of pipeline.sinks, else the
first declared events sink, ingress sink, cloud loader: its base_url, token or
token_file, timeout and retry policy (max_attempts, backoff_min, backoff_max)
are used; an events block also gives the batch size (max_batch,
max_request_bytes).

The server stores every entry once: by its uuid, and a line without a uuid by a
hash of its bytes (as the sinks send it) or, for the second and later copies of
the same bytes in a file, by a key made of the session, the subagent, the copy's
number and the bytes. So a push run again, or after an interruption (even kill
-9 of push or of the server), sends everything again and stores only what is
missing: the summary counts what was new (stored) and what the server already
had (duplicates). Each session's lines go in file order; sessions go side by
side. A torn last line (a writer still busy) is left for the next push.

A progress bar goes to stderr when it is a terminal, else a progress line
every few seconds and at the end (--no-progress: neither). A server that
refuses connections ends the push after a few attempts, each retry said on
stderr. The summary's first line says how many sessions went ("pushed 2 of
5 sessions ...") and why the rest did not (server unreachable, token refused).
Exit status: 0 when everything was sent, 1 when a session failed (the others
are still pushed), 2 for a bad configuration or flag.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return &cmdutil.ExitError{Code: 2, Err: errors.New("name the sessions to push, or pass --all (not both)")}
			}
			if batch < 0 || workers < 1 {
				return &cmdutil.ExitError{Code: 2, Err: errors.New("--batch must be at least 0 and --workers at least 1")}
			}
			cfg, err := f.LoadConfig(cmd)
			if err != nil {
				return &cmdutil.ExitError{Code: 2, Err: err}
			}
			dir, err := cmdutil.ClaudeConfigDir(cfg)
			if err != nil {
				return &cmdutil.ExitError{Code: 2, Err: err}
			}
			target, err := findCloudTarget(f, cfg, to, false)
			if err != nil {
				return &cmdutil.ExitError{Code: 2, Err: err}
			}
			if batch > 0 {
				target.maxBatch = batch
			}
			target.interactive(cmd.ErrOrStderr(), "push")
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			layout := jsonl.Layout{ConfigDir: dir}
			if redactOn {
				if target.red, _, _, err = cmdutil.RedactorFor(ctx, cmd, cfg, layout); err != nil {
					return err
				}
			}
			sessions, err := pushSessions(ctx, layout, all, args)
			if err != nil {
				return err
			}
			var bar *cmdutil.ProgressBar
			if !noProgress {
				bar = cmdutil.NewProgressBar(cmd.ErrOrStderr(), "push", !f.IOStreams.IsStderrTTY())
			}
			rep := runPush(ctx, target, sessions, workers, bar)
			if asJSON {
				if err := cmdutil.WriteJSON(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
			} else {
				printPushReport(cmd.OutOrStdout(), rep)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if rep.Unreachable != "" {
				return &cmdutil.ExitError{Code: 1, Err: fmt.Errorf("%s: nothing more was sent (%s)", rep.Unreachable, rep.Via)}
			}
			if rep.TokenRefused {
				return &cmdutil.ExitError{Code: 1, Err: fmt.Errorf("%s refused the token of %s: nothing more was sent (check token or token_file)", rep.Server, rep.Via)}
			}
			if len(rep.Errors) > 0 {
				return &cmdutil.ExitError{Code: 1, Err: fmt.Errorf("%d of %d sessions were not pushed completely (run push again to finish)", len(rep.Errors), rep.Sessions)}
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.BoolVar(&all, "all", false, "push every session of the config folder")
	fl.BoolVar(&redactOn, "redact", false, "replace secrets by markers before anything leaves the machine (the local files are not changed)")
	fl.String("rules", "", `with --redact: the processor "redact" block to use (default: the first redact processor of pipeline.processors, else redact/default)`)
	fl.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	fl.StringVar(&to, "to", "", `the server's block: an "events" or "ingress" sink, or a "cloud" loader (type/name)`)
	fl.IntVar(&batch, "batch", 0, "entries per request (default: the events block's max_batch, 500)")
	fl.IntVar(&workers, "workers", 4, "sessions pushed side by side")
	fl.BoolVar(&noProgress, "no-progress", false, "no progress bar, even on a terminal")
	return c
}

// pushSessions lists what push sends: every session of the store with
// all, else the sessions args name, each once.
func pushSessions(ctx context.Context, layout jsonl.Layout, all bool, args []string) ([]cmdutil.LocalSession, error) {
	if all {
		return cmdutil.AllLocalSessions(layout)
	}
	var sessions []cmdutil.LocalSession
	seen := map[string]bool{}
	for _, a := range args {
		id, err := cmdutil.ResolveSession(ctx, layout, a)
		if err != nil {
			return nil, err
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		d, err := layout.FindSession(id, "")
		if err != nil {
			return nil, err
		}
		if d == "" {
			return nil, &cmdutil.ExitError{Code: 1, Err: fmt.Errorf("session %s is not in %s", id, layout.ProjectsDir())}
		}
		sessions = append(sessions, cmdutil.LocalSession{ID: id, Dir: d})
	}
	return sessions, nil
}

// pusher pushes sessions and sums up.
type pusher struct {
	t   *Target
	bar *cmdutil.ProgressBar
	// abort stops every session once the server refused the token: the
	// others would be refused too.
	abort   context.CancelCauseFunc
	refused atomic.Bool
	status  atomic.Int64           // the HTTP status that refused the token
	away    atomic.Pointer[string] // why the server could not be reached

	mu  sync.Mutex
	rep *pushReport

	done atomic.Int64 // bytes read, for the progress bar
}

func runPush(ctx context.Context, t *Target, sessions []cmdutil.LocalSession, workers int, bar *cmdutil.ProgressBar) *pushReport {
	start := time.Now()
	rep := &pushReport{Server: t.client.BaseURL, Via: t.id.String(), Sessions: len(sessions),
		Refusals: []pushIssue{}, Errors: []pushIssue{}, Results: []pushResult{}}
	var total int64
	for i := range sessions {
		s := &sessions[i]
		s.Files, s.Size = jsonl.TranscriptFiles(s.Dir, s.ID)
		total += s.Size
		rep.Files += len(s.Files)
	}
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	p := &pusher{t: t, bar: bar, rep: rep, abort: abort}
	if bar != nil {
		bar.Start(total, len(sessions), &p.done)
	}
	results := make([]pushResult, len(sessions))
	// Sessions not started when ctx ends (interrupted, or aborted) keep
	// an empty result, filled in below.
	_ = durable.Each(ctx, workers, len(sessions), func(ctx context.Context, i int) error {
		results[i] = p.session(ctx, sessions[i])
		if bar != nil {
			bar.SessionDone()
		}
		return nil
	})
	if bar != nil {
		bar.Finish()
	}
	why := "not started: interrupted"
	if p.refused.Load() {
		why = "not started: the server refused the token"
		rep.TokenRefused = true
		rep.TokenStatus = int(p.status.Load())
	}
	if a := p.away.Load(); a != nil {
		why = "not started: the server could not be reached"
		rep.Unreachable = *a
	}
	for i, r := range results {
		if r.Session == "" {
			r = pushResult{Session: sessions[i].ID, ProjectDir: sessions[i].Dir, Error: why}
		}
		rep.Results = append(rep.Results, r)
		if r.Error != "" {
			rep.Errors = append(rep.Errors, pushIssue{Session: r.Session, Error: r.Error})
		}
	}
	rep.Complete = rep.Sessions - len(rep.Errors)
	rep.ElapsedMS = time.Since(start).Milliseconds()
	return rep
}

// session pushes one session's files in order, each in batches.
func (p *pusher) session(ctx context.Context, s cmdutil.LocalSession) pushResult {
	res := pushResult{Session: s.ID, ProjectDir: s.Dir, Files: len(s.Files)}
	for _, f := range s.Files {
		if err := p.file(ctx, s.ID, f, &res); err != nil {
			if errors.Is(err, sinkhelper.ErrUnauthorized) && p.refused.CompareAndSwap(false, true) {
				var se *sinkhelper.StatusError
				if errors.As(err, &se) {
					p.status.Store(int64(se.Code))
				}
				p.abort(err)
			}
			if msg := err.Error(); errors.Is(err, events.ErrUnreachable) && p.away.CompareAndSwap(nil, &msg) {
				p.abort(err)
			}
			if cause := context.Cause(ctx); ctx.Err() != nil && cause != nil && !errors.Is(err, sinkhelper.ErrUnauthorized) &&
				!errors.Is(err, events.ErrUnreachable) {
				err = fmt.Errorf("stopped: %w", cause)
			}
			res.Error = err.Error()
			break
		}
	}
	return res
}

// file pushes one transcript file.
func (p *pusher) file(ctx context.Context, sid string, f jsonl.TranscriptFile, res *pushResult) error {
	if f.AgentID != "" && !ident.Token(f.AgentID, 64) {
		p.refuse(pushIssue{Session: sid, File: f.Path, Error: fmt.Sprintf("agent id %q cannot be sent (want 1 to 64 of letters, digits, '-', '_')", f.AgentID)})
		return nil
	}
	fh, err := os.Open(f.Path)
	if err != nil {
		return err
	}
	defer fh.Close()
	var (
		batch   []events.Event
		size    int
		lineNo  int64
		sendErr error
		copies  = map[string]int{}
	)
	flush := func() {
		if len(batch) == 0 || sendErr != nil {
			return
		}
		sendErr = p.post(ctx, sid, f.Path, batch, res)
		batch, size = batch[:0], 0
	}
	err = transcript.EachLine(fh, func(line []byte, terminated bool) {
		lineNo++
		p.done.Add(int64(len(line)) + 1)
		if sendErr != nil {
			return
		}
		if len(strings.TrimSpace(string(line))) == 0 {
			p.count(func(r *pushReport) { r.Blank++ })
			return
		}
		e, err := core.ParseEntry(line)
		if err != nil {
			if terminated {
				p.count(func(r *pushReport) { r.Malformed++ })
			} else {
				// A writer may still be finishing it: the next push
				// sends it.
				p.count(func(r *pushReport) { r.Torn++ })
			}
			return
		}
		why := checkPushable(&e, sid, f.AgentID)
		if why == "" && f.Sidecar && !core.IsLifecycleRecord(e.Type) {
			why = fmt.Sprintf("a %q line in the sidecar: only lifecycle records and checkpoints belong there", truncateStr(e.Type, 40))
		}
		if why != "" {
			p.refuse(pushIssue{Session: sid, File: f.Path, Line: lineNo, Error: why})
			return
		}
		if red := p.t.red; red != nil && !red.Allowed(f.Path) {
			if out, fs := red.Redact(e.Raw); len(fs) > 0 {
				re, err := core.ParseEntry(out)
				if err != nil {
					// Never send it unredacted.
					p.refuse(pushIssue{Session: sid, File: f.Path, Line: lineNo, Error: "redacted line does not parse: " + err.Error()})
					return
				}
				e = re
				p.count(func(r *pushReport) { r.Redacted += int64(len(fs)) })
			}
		}
		ev := events.Event{Type: e.Type, Payload: e.Raw, AgentID: f.AgentID}
		if e.UUID == "" {
			// The first copy of these bytes goes without a key, so the
			// server keys it by its hash as it does what the sinks
			// send; later copies are kept apart by their number.
			k := f.AgentID + "\x00" + string(e.Raw)
			copies[k]++
			if n := copies[k]; n > 1 {
				ev.EventID = copyKey(sid, f.AgentID, n, e.Raw)
			}
		}
		if len(batch) > 0 && (len(batch) >= p.t.maxBatch || size+len(e.Raw) > p.t.maxBytes) {
			flush()
			if sendErr != nil {
				return
			}
		}
		batch = append(batch, ev)
		size += len(e.Raw)
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", f.Path, err)
	}
	flush()
	if sendErr != nil {
		return sendErr
	}
	return ctx.Err()
}

// copyKey is the idempotency key of the n-th copy (n >= 2) of a uuid-less
// line in a session's file of agent.
func copyKey(sid, agent string, n int, raw []byte) string {
	h := sha256.New()
	h.Write([]byte("scribe-push\x00" + strings.ToLower(sid) + "\x00" + agent + "\x00" + strconv.Itoa(n) + "\x00"))
	h.Write(raw)
	return "push-" + hex.EncodeToString(h.Sum(nil)[:20])
}

// checkPushable returns why the server would refuse the entry in a file of
// session sid and agent ("" if it would not).
func checkPushable(e *core.Entry, sid, agent string) string {
	switch {
	case e.UUID != "" && !ident.Token(e.UUID, 128):
		return fmt.Sprintf("uuid %q cannot be sent (want 1 to 128 of letters, digits, '-', '_')", truncateStr(e.UUID, 80))
	case e.SessionID != "" && !strings.EqualFold(e.SessionID, sid):
		return fmt.Sprintf("the entry belongs to session %q, not %s", truncateStr(e.SessionID, 80), sid)
	case e.Type == "state":
		return `an entry of type "state" would be taken for a state event`
	}
	if own := e.Ref().AgentID; agent != "" && own != "" && own != agent {
		return fmt.Sprintf("the entry belongs to subagent %q, not %q", truncateStr(own, 80), agent)
	}
	return ""
}

func truncateStr(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// post sends a batch; a batch the server refuses as it is (400, 413, 422)
// is split until the entry it refuses is alone, which is then reported and
// skipped.
func (p *pusher) post(ctx context.Context, sid, file string, batch []events.Event, res *pushResult) error {
	r, err := p.t.client.PostEvents(ctx, sid, batch)
	p.count(func(rep *pushReport) { rep.Requests++ })
	if err == nil {
		var n int64
		for i := range batch {
			n += int64(len(batch[i].Payload))
		}
		res.EntriesSent += int64(len(batch))
		res.Stored += int64(r.Stored)
		res.Duplicates += int64(r.Duplicates)
		res.Bytes += n
		p.count(func(rep *pushReport) {
			rep.EntriesSent += int64(len(batch))
			rep.Stored += int64(r.Stored)
			rep.Duplicates += int64(r.Duplicates)
			rep.Bytes += n
		})
		if p.bar != nil {
			p.bar.Entries(int64(len(batch)))
		}
		return nil
	}
	var se *sinkhelper.StatusError
	if errors.As(err, &se) && (se.Code == 400 || se.Code == 413 || se.Code == 422) {
		if len(batch) > 1 {
			half := len(batch) / 2
			if err := p.post(ctx, sid, file, batch[:half], res); err != nil {
				return err
			}
			return p.post(ctx, sid, file, batch[half:], res)
		}
		what := "an entry without uuid"
		if e, perr := core.ParseEntry(batch[0].Payload); perr == nil && e.UUID != "" {
			what = "entry " + e.UUID
		}
		p.refuse(pushIssue{Session: sid, File: file, Error: fmt.Sprintf("the server refused %s: %v", what, err)})
		return nil
	}
	return err
}

func (p *pusher) count(fn func(*pushReport)) {
	p.mu.Lock()
	fn(p.rep)
	p.mu.Unlock()
}

func (p *pusher) refuse(is pushIssue) {
	p.count(func(r *pushReport) {
		r.Refused++
		if len(r.Refusals) < maxRefusalsListed {
			r.Refusals = append(r.Refusals, is)
		}
	})
}

// pushHeadline is the summary's first line: how many sessions went, and
// when not all of them, why the push stopped.
func pushHeadline(r *pushReport) string {
	took := (time.Duration(r.ElapsedMS) * time.Millisecond).Round(time.Millisecond)
	if r.Complete == r.Sessions {
		return fmt.Sprintf("pushed %d sessions (%d files) to %s (%s) in %v", r.Sessions, r.Files, r.Server, r.Via, took)
	}
	head := fmt.Sprintf("pushed %d of %d sessions (%d files) to %s (%s)", r.Complete, r.Sessions, r.Files, r.Server, r.Via)
	switch {
	case r.Unreachable != "":
		return fmt.Sprintf("%s: server unreachable at %s", head, r.Server)
	case r.TokenRefused:
		code := ""
		if r.TokenStatus != 0 {
			code = fmt.Sprintf(" (%d)", r.TokenStatus)
		}
		return fmt.Sprintf("%s: token refused%s; check token or token_file of %s", head, code, r.Via)
	}
	return fmt.Sprintf("%s in %v: %d failed (run push again to finish)", head, took, len(r.Errors))
}

func printPushReport(w io.Writer, r *pushReport) {
	fmt.Fprintln(w, pushHeadline(r))
	fmt.Fprintf(w, "  entries sent:   %d (%s in %d requests)\n", r.EntriesSent, cmdutil.HumanBytes(r.Bytes), r.Requests)
	fmt.Fprintf(w, "  stored:         %d new\n", r.Stored)
	fmt.Fprintf(w, "  duplicates:     %d (already on the server)\n", r.Duplicates)
	if r.Malformed > 0 || r.Torn > 0 || r.Blank > 0 {
		fmt.Fprintf(w, "  not sent:       %d malformed, %d torn last lines, %d blank\n", r.Malformed, r.Torn, r.Blank)
	}
	if r.Refused > 0 {
		fmt.Fprintf(w, "  refused:        %d\n", r.Refused)
		for _, is := range r.Refusals {
			loc := is.File
			if is.Line > 0 {
				loc += ":" + strconv.FormatInt(is.Line, 10)
			}
			fmt.Fprintf(w, "    %s: %s\n", loc, is.Error)
		}
	}
	sort.Slice(r.Errors, func(i, j int) bool { return r.Errors[i].Session < r.Errors[j].Session })
	for _, e := range r.Errors {
		fmt.Fprintf(w, "  FAILED %s: %s\n", e.Session, e.Error)
	}
}
