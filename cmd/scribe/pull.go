package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/ident"
	"github.com/e0dc0000/scribe/sinks/backend"
	"github.com/e0dc0000/scribe/sinks/events"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/transcript"
)

// pullReport is what `scribe pull` prints (--json prints it as is).
type pullReport struct {
	SessionID  string `json:"session_id"`
	Server     string `json:"server"`
	Via        string `json:"via"`
	ProjectDir string `json:"project_dir"`
	// Entries is the rows written, over all files; Filtered the internal
	// rows left out (session-owner, data-flow-*, repl-mode, host-row,
	// hybrid-organization).
	Entries  int `json:"entries"`
	Filtered int `json:"filtered"`
	// Malformed counts rows from the server that are not JSON objects
	// (skipped).
	Malformed int        `json:"malformed"`
	Files     []pullFile `json:"files"`
	// Backups counts the files whose earlier content was kept as
	// <file>.bak-<timestamp>.
	Backups int `json:"backups"`
	// LocalOnly counts the uuids the replaced files held that the server
	// does not have: they are in the backups only.
	LocalOnly int `json:"local_only"`
	// Untouched lists local transcripts of the session the server has no
	// rows for; they are left as they are.
	Untouched []string `json:"untouched"`
	// ContinueCommand continues the session in Claude Code on this
	// machine: "cd DIR && claude --resume ID" (DIR shell-quoted).
	ContinueCommand string `json:"continue_command"`
}

type pullFile struct {
	Path  string `json:"path"`
	Agent string `json:"agent,omitempty"`
	// Sidecar marks the session's lifecycle records and checkpoints
	// (<id>/scribe-lifecycle.jsonl).
	Sidecar bool `json:"sidecar,omitempty"`
	// Meta marks a subagent's .meta.json, written from its agent_metadata
	// row (Status written or unchanged).
	Meta    bool  `json:"meta,omitempty"`
	Entries int   `json:"entries"`
	Bytes   int64 `json:"bytes"`
	// Status is created, replaced or unchanged.
	Status string `json:"status"`
	Backup string `json:"backup,omitempty"`
}

func newPullCmd() *cobra.Command {
	var (
		asJSON   bool
		noProg   bool
		from     string
		cwd      string
		lockWait time.Duration
	)
	c := &cobra.Command{
		Use:   "pull ID",
		Short: "Replace the local copy of a session with the server's (main transcript and subagents)",
		Long: `pull hydrates the local copy of a session from a scribe server, taking the server
as the authority: it fetches the main transcript and every subagent transcript
through the History API (GET /v1/code/sessions/{id}/teleport-events), leaves
out the internal rows Claude Code's own hydration filters (session-owner,
data-flow-*, repl-mode, host-row, hybrid-organization), and writes each file by
atomic replace: a temporary file in the same folder, fsync, rename, fsync of the
folder. A file whose content changes is kept first as <file>.bak-<timestamp>;
a file already equal to the server's is left alone. scribe's own lifecycle
records and checkpoints go to the session's sidecar
(<id>/scribe-lifecycle.jsonl), never into the transcript, so 'scribe
checkpoints ID' shows them on this machine too.

An ID that is a prefix of no local session is looked up on the server. Progress
goes to stderr (a line every few seconds when it is not a terminal). A server
that refuses connections ends the pull after a few attempts, each retry said on
stderr.

The files go where the session already is, else into the project folder of the
entries' first cwd (--cwd overrides: pull --cwd "$PWD" in a checkout puts the
session where Claude Code's /resume finds it there). The report ends with the
command that continues the session in Claude Code, cd DIR && claude --resume
ID (continue_command in --json). Files are 0600 and folders 0700. The
session's lock is held meanwhile, so a scribe writing the session makes pull
fail (or wait, with --lock-wait).

The server is the one of --from (a "cloud" loader, or an "events" or "ingress"
sink), else the first events or ingress sink of pipeline.sinks, the first cloud
loader of resume.loaders, then the first declared events sink, ingress sink,
cloud loader. Exit status: 0 done, 1 failed (nothing half-written), 2 for a bad
configuration or flag.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			dir, err := claudeConfigDir(cfg)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			target, err := findCloudTarget(cfg, from, true)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			layout := jsonl.Layout{ConfigDir: dir}
			target.interactive(cmd.ErrOrStderr(), "pull")
			remote := func() (*cloudTarget, error) { return target, nil }
			id, err := resolveAnywhere(ctx, layout, args[0], remote, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			var bar *progressBar
			if !noProg {
				bar = newProgressBar(cmd.ErrOrStderr(), "pull", !isCharDevice(os.Stderr))
			}
			rep, err := runPull(ctx, target, layout, id, cwd, lockWait, bar)
			if err != nil {
				if errors.Is(err, core.ErrNotFound) {
					return &exitError{code: 1, err: err}
				}
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			printPullReport(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	f := c.Flags()
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.StringVar(&from, "from", "", `the server's block: a "cloud" loader, or an "events" or "ingress" sink (type/name)`)
	f.StringVar(&cwd, "cwd", "", "write into this path's project folder (default: where the session is, else its first cwd)")
	f.DurationVar(&lockWait, "lock-wait", 0, "wait this long for another process writing the session")
	f.BoolVar(&noProg, "no-progress", false, "no progress on stderr")
	return c
}

// pulledFile is one transcript as the server has it.
type pulledFile struct {
	agent string
	// meta is a subagent's agent_metadata row (a SessionStore's form of
	// its .meta.json), the last one the server has.
	meta    *core.Entry
	data    bytes.Buffer
	entries int
	uuids   map[string]bool
}

// pulledSession is a session as the server has it, split into the files
// the local store keeps.
type pulledSession struct {
	main, side *pulledFile
	agents     map[string]*pulledFile
	order      []string // agent ids, as first met
	// firstCWD and agentCWD are the first cwd of the main conversation and
	// of any subagent: where the project folder is, when no file is local.
	firstCWD, agentCWD string
	// lastAt is the latest timestamp of the main transcript's rows: when
	// the session was last active (zero when no row has one).
	lastAt time.Time
}

// fetchPull reads a session's rows from the server (the subagents' too
// with subagents), counting in rep what it leaves out.
func fetchPull(ctx context.Context, t *cloudTarget, id string, subagents bool, rep *pullReport, bar *progressBar) (*pulledSession, error) {
	ps := &pulledSession{main: &pulledFile{uuids: map[string]bool{}}, side: &pulledFile{uuids: map[string]bool{}},
		agents: map[string]*pulledFile{}}
	main, side, agents := ps.main, ps.side, ps.agents
	var got atomic.Int64
	if bar != nil {
		bar.start(-1, 1, &got)
	}
	err := t.client.History(ctx, id, events.HistoryQuery{Subagents: subagents}, func(ev events.HistoryEvent) error {
		got.Add(int64(len(ev.Payload)) + 1)
		if bar != nil {
			bar.entries(1)
		}
		e, err := core.ParseEntry(ev.Payload)
		if err != nil {
			rep.Malformed++
			return nil
		}
		if events.InternalRow(e.Type) {
			rep.Filtered++
			return nil
		}
		f := main
		switch {
		case ev.AgentID == "" && core.IsLifecycleRecord(e.Type):
			// scribe's own records: the sidecar, as the local store
			// keeps them.
			f = side
		case ev.AgentID != "":
			if f = agents[ev.AgentID]; f == nil {
				f = &pulledFile{agent: ev.AgentID, uuids: map[string]bool{}}
				agents[ev.AgentID] = f
				ps.order = append(ps.order, ev.AgentID)
			}
			if e.Type == backend.TypeAgentMetadata {
				f.meta = &e
				return nil
			}
			if ps.agentCWD == "" {
				ps.agentCWD = e.CWD
			}
		case ps.firstCWD == "":
			ps.firstCWD = e.CWD
		}
		f.data.Write(e.Raw)
		f.data.WriteByte('\n')
		f.entries++
		if f == main && e.Timestamp != "" {
			if at, err := time.Parse(time.RFC3339Nano, e.Timestamp); err == nil && at.After(ps.lastAt) {
				ps.lastAt = at
			}
		}
		if e.UUID != "" {
			f.uuids[e.UUID] = true
		}
		return nil
	})
	if bar != nil {
		bar.finish()
	}
	if err != nil {
		return nil, err
	}
	for _, a := range ps.order {
		if !ident.Token(a, 64) {
			return nil, fmt.Errorf("the server names subagent %q, which cannot be a file name", a)
		}
	}
	if main.entries == 0 && len(ps.order) == 0 && side.entries == 0 {
		return nil, fmt.Errorf("session %s: the server has no rows for it to write (%d internal rows left out): %w", id, rep.Filtered, core.ErrNotFound)
	}
	return ps, nil
}

func runPull(ctx context.Context, t *cloudTarget, layout jsonl.Layout, id, cwd string, lockWait time.Duration,
	bar *progressBar) (*pullReport, error) {
	rep := &pullReport{SessionID: id, Server: t.client.BaseURL, Via: t.id.String(), Files: []pullFile{}, Untouched: []string{}}
	ps, err := fetchPull(ctx, t, id, true, rep, bar)
	if err != nil {
		return nil, err
	}
	main, side, agents, order := ps.main, ps.side, ps.agents, ps.order
	proj, err := layout.FindSession(id, "")
	if err != nil {
		return nil, err
	}
	dir := ps.firstCWD
	if dir == "" {
		dir = ps.agentCWD
	}
	switch {
	case cwd != "":
		abs, err := filepath.Abs(cwd)
		if err != nil {
			return nil, err
		}
		proj, dir = layout.ProjectDir(abs), abs
	case proj != "":
	case ps.firstCWD != "":
		proj = layout.ProjectDir(ps.firstCWD)
	case ps.agentCWD != "":
		proj = layout.ProjectDir(ps.agentCWD)
	default:
		return nil, &exitError{code: 2, err: fmt.Errorf("session %s: no entry says its cwd, so its project folder is unknown: pass --cwd", id)}
	}
	rep.ProjectDir = proj

	unlock, err := layout.LockSession(ctx, id, lockWait)
	if err != nil {
		return nil, err
	}
	defer unlock()

	stamp := time.Now().UTC().Format("20060102T150405Z")
	write := func(path string, f *pulledFile, sidecar bool) error {
		old, _ := os.ReadFile(path)
		status, backup, err := layout.ReplaceTranscript(path, f.data.Bytes(), stamp)
		if err != nil {
			return err
		}
		if backup != "" {
			rep.Backups++
			rep.LocalOnly += localOnly(old, f.uuids)
		}
		rep.Entries += f.entries
		rep.Files = append(rep.Files, pullFile{Path: path, Agent: f.agent, Sidecar: sidecar, Entries: f.entries,
			Bytes: int64(f.data.Len()), Status: status, Backup: backup})
		return nil
	}
	// Subagents and the sidecar first: the main file, which makes the
	// session visible, comes last.
	for _, a := range order {
		path := claudedir.AgentFile(proj, id, a)
		if err := write(path, agents[a], false); err != nil {
			return rep, err
		}
		if m := agents[a].meta; m != nil {
			changed, err := writeAgentMeta(claudedir.AgentMetaFile(path), *m)
			if err != nil {
				return rep, err
			}
			status := "unchanged"
			if changed {
				status = "written"
			}
			rep.Files = append(rep.Files, pullFile{Path: claudedir.AgentMetaFile(path), Agent: a, Meta: true, Status: status})
		}
	}
	if side.entries > 0 {
		if err := write(claudedir.SidecarFile(proj, id), side, true); err != nil {
			return rep, err
		}
	}
	if main.entries > 0 {
		if err := write(claudedir.MainFile(proj, id), main, false); err != nil {
			return rep, err
		}
	}
	local, _ := jsonl.TranscriptFiles(proj, id)
	for _, lf := range local {
		if (lf.Sidecar && side.entries == 0) || (!lf.Sidecar && lf.AgentID == "" && main.entries == 0) ||
			(lf.AgentID != "" && agents[lf.AgentID] == nil) {
			rep.Untouched = append(rep.Untouched, lf.Path)
		}
	}
	if cwd == "" {
		dir, _ = sessionCwd(ctx, layout, id, dir)
	}
	rep.ContinueCommand = continueCommand(dir, id)
	return rep, nil
}

// localOnly counts the uuids of old that are not in server.
func localOnly(old []byte, server map[string]bool) int {
	n := 0
	_ = transcript.EachLine(bytes.NewReader(old), func(line []byte, _ bool) {
		if e, err := core.ParseEntryOwned(line); err == nil && e.UUID != "" && !server[e.UUID] {
			n++
		}
	})
	return n
}
func printPullReport(w io.Writer, r *pullReport) {
	fmt.Fprintf(w, "pulled session %s from %s (%s) into %s\n", r.SessionID, r.Server, r.Via, r.ProjectDir)
	fmt.Fprintf(w, "  entries:  %d in %d files (%d internal rows left out)\n", r.Entries, len(r.Files), r.Filtered)
	for _, f := range r.Files {
		fmt.Fprintf(w, "  %-9s %s (%d entries, %s)", f.Status, f.Path, f.Entries, humanBytes(f.Bytes))
		if f.Backup != "" {
			fmt.Fprintf(w, ", was kept as %s", filepath.Base(f.Backup))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  backups:  %d\n", r.Backups)
	if r.LocalOnly > 0 {
		fmt.Fprintf(w, "  warning:  %d entries of the local copy are not on the server; they are only in the backups\n", r.LocalOnly)
	}
	for _, u := range r.Untouched {
		fmt.Fprintf(w, "  left alone (not on the server): %s\n", u)
	}
	if r.Malformed > 0 {
		fmt.Fprintf(w, "  %d rows from the server were not JSON objects (skipped)\n", r.Malformed)
	}
	fmt.Fprintf(w, "continue in Claude Code:\n  %s\n", r.ContinueCommand)
}
