package manage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/gitrev"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

func NewCmdCheckpoint(f *cmdutil.Factory) *cobra.Command {
	var (
		label    string
		asJSON   bool
		lockWait time.Duration
	)
	c := &cobra.Command{
		Use:   "checkpoint ID",
		Short: "Mark the session's current point with a label and the git commit of its cwd, to resume or fork from later",
		Long: `checkpoint appends a checkpoint after the session's current leaf (the last
message of its conversation as Claude Code rebuilds it): an id, the label, the
uuid of that message, the time, and the commit checked out in the session's cwd
when that is a git repository. It goes through the pipeline like any entry and
takes the session's lock as a writer does (--lock-wait to wait for another
writer). The local store keeps checkpoints beside the transcript, in
<project>/<sessionId>/scribe-lifecycle.jsonl, where Claude Code never looks.

Later, "scribe resume ID --at CHECKPOINT" and "scribe fork ID --at CHECKPOINT"
start from that message and print the commit to check out. A checkpoint is
named by its id, a unique prefix of it, or its label.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := f.LoadConfig(cmd)
			if err != nil {
				return &cmdutil.ExitError{Code: 2, Err: err}
			}
			local := false
			for _, id := range cfg.Pipeline.Sinks {
				local = local || id.Type == "jsonl"
			}
			if !local {
				return &cmdutil.ExitError{Code: 2, Err: errors.New("checkpoint needs the local store: list a jsonl sink in pipeline { sinks = [...] }")}
			}
			log := f.Logger(cfg, "scribe")
			ctx, rt, done, err := cmdutil.BuildForCommand(cmd, cfg, log, cmdutil.BuildOpts{LockWait: lockWait})
			if err != nil {
				return err
			}
			defer done()
			l := jsonl.Layout{ConfigDir: rt.Host.ConfigDir}
			id, err := cmdutil.ResolveSession(ctx, l, args[0])
			if err != nil {
				return err
			}
			cp, err := takeCheckpoint(ctx, rt.Pipeline, l, id, label)
			if err != nil {
				return err
			}
			if asJSON {
				return cmdutil.WriteJSON(cmd.OutOrStdout(), cp)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "checkpoint %s %q in session %s\n", cp.ID, cp.Label, cp.SessionID)
			printCheckout(cmd.OutOrStdout(), cp)
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&label, "label", "", "the checkpoint's label (it can name the checkpoint later)")
	fl.BoolVar(&asJSON, "json", false, "print the checkpoint as JSON")
	fl.DurationVar(&lockWait, "lock-wait", 0, "wait this long for another process writing the same session (default: the store's lock_wait, 0s)")
	return c
}

// takeCheckpoint runs the pipeline for one checkpoint: seeding dedup takes
// the session's lock (the jsonl store is the seeder), then the leaf is
// read, the checkpoint submitted and flushed, and the pipeline shut down,
// which releases the lock.
func takeCheckpoint(ctx context.Context, p *core.Pipeline, l jsonl.Layout, id, label string) (core.Checkpoint, error) {
	if err := p.Start(ctx); err != nil {
		return core.Checkpoint{}, err
	}
	shutdown := func() error {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return p.Shutdown(sctx)
	}
	fail := func(err error) (core.Checkpoint, error) {
		_ = shutdown()
		return core.Checkpoint{}, err
	}
	if err := p.SeedSession(ctx, core.SessionRef{SessionID: id}, nil); err != nil {
		return fail(err)
	}
	cp, e, err := l.CheckpointAtLeaf(ctx, id, "", label, time.Now(), gitrev.Head)
	if err != nil {
		return fail(err)
	}
	res, err := p.Submit(ctx, e)
	if err != nil {
		return fail(err)
	}
	if res.Status == core.Refused {
		return fail(&cmdutil.ExitError{Code: 3, Err: fmt.Errorf("checkpoint refused by %s: %v", res.Guard, res.Reason)})
	}
	if err := p.Flush(ctx); err != nil {
		return fail(err)
	}
	if err := shutdown(); err != nil {
		return core.Checkpoint{}, err
	}
	return cp, nil
}

func NewCmdCheckpoints(f *cmdutil.Factory) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "checkpoints ID",
		Short: "List a session's checkpoints, oldest first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, _, err := f.LocalLayout(cmd)
			if err != nil {
				return err
			}
			id, err := cmdutil.ResolveSession(cmd.Context(), l, args[0])
			if err != nil {
				return err
			}
			cps, err := l.Checkpoints(cmd.Context(), id, "")
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if cps == nil {
					cps = []core.Checkpoint{}
				}
				return cmdutil.WriteJSON(out, cps)
			}
			if len(cps) == 0 {
				fmt.Fprintf(out, "no checkpoints in session %s (scribe checkpoint %s --label TEXT takes one)\n", id, id)
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTIME\tLABEL\tCOMMIT\tMESSAGE")
			for _, cp := range cps {
				commit := core.ShortCommit(cp.Commit)
				if commit == "" {
					commit = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cp.ID, cpTime(cp), cmdutil.Clip(cp.Label, 50), commit, cp.MessageUUID)
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the checkpoints as a JSON array")
	return c
}

func cpTime(cp core.Checkpoint) string {
	if t := cp.Time(); !t.IsZero() {
		return t.Local().Format("2006-01-02 15:04:05")
	}
	return cp.Timestamp
}

// checkpointOf resolves --at: a checkpoint of the session named by id,
// unique id prefix or label.
func checkpointOf(ctx context.Context, st sessions.Store, sessionID, name string) (core.Checkpoint, error) {
	cps, err := sessions.Checkpoints(ctx, st, sessionID)
	if err != nil {
		return core.Checkpoint{}, err
	}
	cp, err := core.ResolveCheckpoint(cps, name)
	switch {
	case errors.Is(err, core.ErrCheckpointAmbiguous):
		return cp, &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--at: %w", err)}
	case err != nil:
		return cp, &cmdutil.ExitError{Code: 1, Err: fmt.Errorf("--at: session %s: %w", sessionID, err)}
	}
	return cp, nil
}

// printCheckout says where a checkpoint is and which commit to check out.
func printCheckout(w io.Writer, cp core.Checkpoint) {
	fmt.Fprintf(w, "  after message %s (%s)\n", cp.MessageUUID, cp.Timestamp)
	switch {
	case cp.Commit != "" && cp.CWD != "":
		fmt.Fprintf(w, "  commit %s: git -C %s checkout %s\n", cp.Commit, cmdutil.ShellQuote(cp.CWD), cp.Commit)
	case cp.Commit != "":
		fmt.Fprintf(w, "  commit %s: git checkout %s\n", cp.Commit, cp.Commit)
	case cp.CWD != "":
		fmt.Fprintf(w, "  no commit: %s was not a git repository (or had no commit)\n", cp.CWD)
	default:
		fmt.Fprintln(w, "  no commit: the session had no cwd")
	}
}
