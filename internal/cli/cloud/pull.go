package cloud

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
	"github.com/e0dc0000/scribe/internal/agentmeta"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
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

func NewCmdPull(f *cmdutil.Factory) *cobra.Command {
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
			cfg, err := f.LoadConfig(cmd)
			if err != nil {
				return &cmdutil.ExitError{Code: 2, Err: err}
			}
			dir, err := cmdutil.ClaudeConfigDir(cfg)
			if err != nil {
				return &cmdutil.ExitError{Code: 2, Err: err}
			}
			target, err := findCloudTarget(f, cfg, from, true)
			if err != nil {
				return &cmdutil.ExitError{Code: 2, Err: err}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			layout := jsonl.Layout{ConfigDir: dir}
			target.interactive(cmd.ErrOrStderr(), "pull")
			remote := func() (*Target, error) { return target, nil }
			id, err := ResolveAnywhere(ctx, layout, args[0], remote, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			var bar *cmdutil.ProgressBar
			if !noProg {
				bar = cmdutil.NewProgressBar(cmd.ErrOrStderr(), "pull", !f.IOStreams.IsStderrTTY())
			}
			rep, err := runPull(ctx, target, layout, id, cwd, lockWait, bar)
			if err != nil {
				if errors.Is(err, core.ErrNotFound) {
					return &cmdutil.ExitError{Code: 1, Err: err}
				}
				return err
			}
			if asJSON {
				return cmdutil.WriteJSON(cmd.OutOrStdout(), rep)
			}
			printPullReport(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	fl := c.Flags()
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fl.StringVar(&from, "from", "", `the server's block: a "cloud" loader, or an "events" or "ingress" sink (type/name)`)
	fl.StringVar(&cwd, "cwd", "", "write into this path's project folder (default: where the session is, else its first cwd)")
	fl.DurationVar(&lockWait, "lock-wait", 0, "wait this long for another process writing the session")
	fl.BoolVar(&noProg, "no-progress", false, "no progress on stderr")
	return c
}

// fetchPull reads a session's rows from the server (the subagents' too
// with subagents), counting in rep what it leaves out.
func fetchPull(ctx context.Context, t *Target, id string, subagents bool, rep *pullReport, bar *cmdutil.ProgressBar) (*events.FetchedSession, error) {
	var got atomic.Int64
	var onRow func(int)
	if bar != nil {
		bar.Start(-1, 1, &got)
		onRow = func(n int) { got.Add(int64(n)); bar.Entries(1) }
	}
	ps, err := t.client.FetchSession(ctx, id, subagents, onRow)
	if bar != nil {
		bar.Finish()
	}
	if ps != nil {
		rep.Filtered += ps.Filtered
		rep.Malformed += ps.Malformed
	}
	return ps, err
}

func runPull(ctx context.Context, t *Target, layout jsonl.Layout, id, cwd string, lockWait time.Duration,
	bar *cmdutil.ProgressBar) (*pullReport, error) {
	rep := &pullReport{SessionID: id, Server: t.client.BaseURL, Via: t.id.String(), Files: []pullFile{}, Untouched: []string{}}
	ps, err := fetchPull(ctx, t, id, true, rep, bar)
	if err != nil {
		return nil, err
	}
	main, side, agents, order := ps.Main, ps.Side, ps.Agents, ps.Order
	proj, err := layout.FindSession(id, "")
	if err != nil {
		return nil, err
	}
	dir := ps.FirstCWD
	if dir == "" {
		dir = ps.AgentCWD
	}
	switch {
	case cwd != "":
		abs, err := filepath.Abs(cwd)
		if err != nil {
			return nil, err
		}
		proj, dir = layout.ProjectDir(abs), abs
	case proj != "":
	case ps.FirstCWD != "":
		proj = layout.ProjectDir(ps.FirstCWD)
	case ps.AgentCWD != "":
		proj = layout.ProjectDir(ps.AgentCWD)
	default:
		return nil, &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("session %s: no entry says its cwd, so its project folder is unknown: pass --cwd", id)}
	}
	rep.ProjectDir = proj

	unlock, err := layout.LockSession(ctx, id, lockWait)
	if err != nil {
		return nil, err
	}
	defer unlock()

	stamp := time.Now().UTC().Format("20060102T150405Z")
	write := func(path string, f *events.FetchedFile, sidecar bool) error {
		old, _ := os.ReadFile(path)
		status, backup, err := layout.ReplaceTranscript(path, f.Data.Bytes(), stamp)
		if err != nil {
			return err
		}
		if backup != "" {
			rep.Backups++
			rep.LocalOnly += localOnly(old, f.UUIDs)
		}
		rep.Entries += f.Entries
		rep.Files = append(rep.Files, pullFile{Path: path, Agent: f.Agent, Sidecar: sidecar, Entries: f.Entries,
			Bytes: int64(f.Data.Len()), Status: status, Backup: backup})
		return nil
	}
	// Subagents and the sidecar first: the main file, which makes the
	// session visible, comes last.
	for _, a := range order {
		path := claudedir.AgentFile(proj, id, a)
		if err := write(path, agents[a], false); err != nil {
			return rep, err
		}
		if m := agents[a].Meta; m != nil {
			changed, err := agentmeta.Write(claudedir.AgentMetaFile(path), *m)
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
	if side.Entries > 0 {
		if err := write(claudedir.SidecarFile(proj, id), side, true); err != nil {
			return rep, err
		}
	}
	if main.Entries > 0 {
		if err := write(claudedir.MainFile(proj, id), main, false); err != nil {
			return rep, err
		}
	}
	local, _ := jsonl.TranscriptFiles(proj, id)
	for _, lf := range local {
		if (lf.Sidecar && side.Entries == 0) || (!lf.Sidecar && lf.AgentID == "" && main.Entries == 0) ||
			(lf.AgentID != "" && agents[lf.AgentID] == nil) {
			rep.Untouched = append(rep.Untouched, lf.Path)
		}
	}
	if cwd == "" {
		dir, _ = cmdutil.SessionCwd(ctx, layout, id, dir)
	}
	rep.ContinueCommand = cmdutil.ContinueCommand(dir, id)
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
		fmt.Fprintf(w, "  %-9s %s (%d entries, %s)", f.Status, f.Path, f.Entries, cmdutil.HumanBytes(f.Bytes))
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
