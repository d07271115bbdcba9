package manage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cloud"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/render"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/stores"
	"github.com/e0dc0000/scribe/transcript"
)

// resumeReport is `scribe resume --json`.
type resumeReport struct {
	SessionID      string         `json:"session_id"`
	ServedBy       string         `json:"served_by"`
	Misses         []missReport   `json:"misses"`
	Partial        bool           `json:"partial"`
	Notes          []string       `json:"notes"`
	Classification string         `json:"classification"`
	Reason         string         `json:"reason"`
	Repairs        []repairReport `json:"repairs"`
	Persisted      int            `json:"persisted"`
	// Copied counts the served entries persisted locally before the
	// repairs (when a loader other than the local store served);
	// CopyDuplicates the ones the local store already held.
	Copied         int               `json:"copied"`
	CopyDuplicates int               `json:"copy_duplicates"`
	DryRun         bool              `json:"dry_run"`
	Violations     []core.Violation  `json:"violations"`
	Conversation   []json.RawMessage `json:"conversation"`
	// Checkpoint is the checkpoint resumed at (--at); its commit is the
	// one to check out.
	Checkpoint *core.Checkpoint `json:"checkpoint,omitempty"`
	// ContinueCommand continues the session in Claude Code:
	// "cd DIR && claude --resume ID" (DIR shell-quoted).
	ContinueCommand string `json:"continue_command"`
}

type missReport struct {
	Loader string `json:"loader"`
	Error  string `json:"error"`
}

type repairReport struct {
	Kind      string `json:"kind"`
	UUID      string `json:"uuid"`
	ToolUseID string `json:"tool_use_id,omitempty"`
}

// resumeFlags are resume's flags.
type resumeFlags struct {
	asJSON, check, dryRun bool
	from, at              string
}

func NewCmdResume(f *cmdutil.Factory) *cobra.Command {
	var fl resumeFlags
	c := &cobra.Command{
		Use:   "resume ID",
		Short: "Load a session from the first loader that has it, repair it so the model API accepts it, and print it",
		Long: `resume asks the configured loaders in order (resume { loaders = [...] }) for the
session, rebuilds its conversation and classifies how it ended: none,
interrupted_prompt or interrupted_turn. Tool calls left without a result get a
synthetic error result, and an interrupted turn gets the meta prompt "Continue
from where you left off."; these repairs go through the pipeline, so they are
persisted (not with --dry-run). It prints the conversation a host would send to
the model, the classification, the repairs and the loader that served, with why
each earlier one missed. --check validates the repaired conversation against the
model API's rules and fails if it breaks one. The output ends with the command
that continues the session in Claude Code, cd DIR && claude --resume ID
(continue_command in --json).

--from LOADER asks only that loader: any declared loader or sink block that
can load, listed in resume.loaders or not (the built-in cloud/team among them).

--at CHECKPOINT (an id, a unique prefix of one, or a label; see scribe
checkpoints) resumes from the checkpoint's message instead of the session's
leaf: the conversation as it stood then, even if the session went on or
branched away since, and the commit to check out. Repairs at a checkpoint hang
from its message, so persisting them makes it the session's leaf (as continuing
from there would); --dry-run leaves the session as it is.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runResume(f, cmd, args[0], fl) },
	}
	fs := c.Flags()
	fs.BoolVar(&fl.asJSON, "json", false, "print the result as JSON")
	fs.BoolVar(&fl.check, "check", false, "validate the repaired conversation against the model API's rules; exit 3 if it breaks one")
	fs.BoolVar(&fl.dryRun, "dry-run", false, "show the repairs without persisting them")
	fs.StringVar(&fl.from, "from", "", "ask only this loader (type/name)")
	fs.StringVar(&fl.at, "at", "", "resume from this checkpoint (id, unique id prefix or label) and print its commit")
	return c
}

// runResume is scribe resume: the runtime, the session's id, the resume
// through the pipeline (none with --dry-run), its record and its report.
func runResume(f *cmdutil.Factory, cmd *cobra.Command, arg string, fl resumeFlags) error {
	cfg, err := f.LoadConfig(cmd)
	if err != nil {
		return &cmdutil.ExitError{Code: 2, Err: err}
	}
	log := f.Logger(cfg, "scribe")
	ctx, rt, done, err := cmdutil.BuildForCommand(cmd, cfg, log, cmdutil.BuildOpts{})
	if err != nil {
		return err
	}
	defer done()
	if len(rt.Loaders) == 0 {
		return &cmdutil.ExitError{Code: 2, Err: errors.New("no loaders: list them in resume { loaders = [...] }")}
	}
	id := arg
	var fromStore *cmdutil.Store
	if fl.from != "" {
		if fromStore, err = f.ResumeFrom(ctx, cfg, rt, fl.from); err != nil {
			return err
		}
		if fromStore != nil {
			defer fromStore.Stop(context.WithoutCancel(ctx))
		}
	}
	if fromStore != nil && fromStore.Lister != nil {
		if id, err = cmdutil.ResolveIn(ctx, fromStore, arg); err != nil {
			return err
		}
	} else if !claudedir.IsSessionID(id) {
		remote := func() (*cloud.Target, error) { return cloud.ResumeRemote(f, cfg, fl.from) }
		if id, err = cloud.ResolveAnywhere(ctx, jsonl.Layout{ConfigDir: rt.Host.ConfigDir}, arg, remote, cmd.ErrOrStderr()); err != nil {
			return err
		}
	}
	opt, cp, err := resumeOptions(ctx, cfg, rt, id, fl)
	if err != nil {
		return err
	}
	var p *core.Pipeline
	if !fl.dryRun {
		if err := rt.Pipeline.Start(ctx); err != nil {
			return err
		}
		p = rt.Pipeline
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = rt.Pipeline.Shutdown(sctx)
		}()
	}
	res, err := core.Resume(ctx, core.NewResumer(rt.Loaders), p, core.SessionRef{SessionID: id}, opt)
	if err != nil {
		if res != nil && res.LoadResult != nil && !fl.asJSON {
			for _, m := range res.Misses {
				fmt.Fprintf(cmd.ErrOrStderr(), "scribe: %s missed: %v\n", m.Loader, m.Err)
			}
		}
		return err
	}
	if p != nil {
		if err := recordResumed(ctx, p, id, res, cp); err != nil {
			log.Warn("could not record the resume in the session's lifecycle", "error", err)
		}
	}
	cwd, local := cmdutil.SessionCwd(ctx, jsonl.Layout{ConfigDir: rt.Host.ConfigDir}, id, firstCwd(res.Conversation))
	if !local {
		fmt.Fprintf(cmd.ErrOrStderr(), "scribe: session %s is not in the local store (%s), so Claude Code does not list it yet\n", id, jsonl.Layout{ConfigDir: rt.Host.ConfigDir}.ProjectsDir())
	}
	return reportResume(cmd.OutOrStdout(), id, res, cp, fl, cmdutil.ContinueCommand(cwd, id))
}

// firstCwd is the first cwd the entries name ("" for none).
func firstCwd(es []core.Entry) string {
	for i := range es {
		if es[i].CWD != "" {
			return es[i].CWD
		}
	}
	return ""
}

// resumeOptions are the options of core.Resume for the flags: the
// configured recovery, the checkpoint of --at and the loader of --from.
func resumeOptions(ctx context.Context, cfg *config.Config, rt *cmdutil.Runtime, id string, fl resumeFlags) (core.ResumeOptions, *core.Checkpoint, error) {
	opt := core.ResumeOptions{
		Format:   transcript.Format{},
		DryRun:   fl.dryRun,
		Recovery: core.RecoveryOptions{Now: time.Now(), MaxAge: cfg.Resume.MaxAge, ContinueText: cfg.Resume.ContinueText},
	}
	var cp *core.Checkpoint
	if fl.at != "" {
		c, err := checkpointOf(ctx, stores.NewLocal(stores.Claude, rt.Host.ConfigDir, nil), id, fl.at)
		if err != nil {
			return opt, nil, err
		}
		cp, opt.UpTo = &c, c.MessageUUID
	}
	if fl.from != "" {
		fid, err := core.ParseID(fl.from)
		if err != nil {
			return opt, nil, &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--from: %w", err)}
		}
		opt.From = []core.ID{fid}
	}
	return opt, cp, nil
}

// reportResume prints the result (as JSON with --json); with --check a
// repaired conversation that breaks the model API's rules is exit 3.
func reportResume(out io.Writer, id string, res *core.ResumeResult, cp *core.Checkpoint, fl resumeFlags, cont string) error {
	rep := newResumeReport(id, res, fl.dryRun)
	rep.Checkpoint, rep.ContinueCommand = cp, cont
	if fl.asJSON {
		if err := cmdutil.WriteJSON(out, rep); err != nil {
			return err
		}
	} else {
		printResume(out, rep, res)
	}
	if fl.check && len(res.Violations) > 0 {
		return &cmdutil.ExitError{Code: 3, Err: fmt.Errorf("the repaired conversation breaks %d of the model API's rules", len(res.Violations))}
	}
	return nil
}

func newResumeReport(id string, res *core.ResumeResult, dryRun bool) *resumeReport {
	rep := &resumeReport{
		SessionID:      id,
		ServedBy:       res.Served.String(),
		Misses:         []missReport{},
		Partial:        res.Transcript.Partial,
		Notes:          append([]string{}, res.Transcript.Notes...),
		Classification: string(res.Recovery.Class),
		Reason:         res.Recovery.Reason,
		Repairs:        []repairReport{},
		Persisted:      res.Persisted,
		Copied:         res.Copied,
		CopyDuplicates: res.CopyDuplicates,
		DryRun:         dryRun,
		Violations:     append([]core.Violation{}, res.Violations...),
	}
	for _, m := range res.Misses {
		rep.Misses = append(rep.Misses, missReport{Loader: m.Loader.String(), Error: m.Err.Error()})
	}
	for _, r := range res.Recovery.Repairs {
		rep.Repairs = append(rep.Repairs, repairReport{Kind: r.Kind, UUID: r.Entry.UUID, ToolUseID: r.ToolUseID})
	}
	for _, e := range res.Conversation {
		rep.Conversation = append(rep.Conversation, json.RawMessage(e.Raw))
	}
	return rep
}

func printResume(w io.Writer, rep *resumeReport, res *core.ResumeResult) {
	fmt.Fprintf(w, "session %s served by %s\n", rep.SessionID, rep.ServedBy)
	for _, m := range rep.Misses {
		fmt.Fprintf(w, "  %s missed: %s\n", m.Loader, m.Error)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	if rep.Partial {
		fmt.Fprintln(w, "  PARTIAL: the transcript is incomplete")
	}
	if cp := rep.Checkpoint; cp != nil {
		fmt.Fprintf(w, "at checkpoint %s %q\n", cp.ID, cp.Label)
		printCheckout(w, *cp)
	}
	fmt.Fprintf(w, "classification: %s", rep.Classification)
	if rep.Reason != "" {
		fmt.Fprintf(w, " (%s)", rep.Reason)
	}
	fmt.Fprintln(w)
	verb := "persisted"
	if rep.DryRun {
		verb = "not persisted: dry run"
	}
	if rep.Copied > 0 || rep.CopyDuplicates > 0 {
		fmt.Fprintf(w, "copied: %d entries from %s into the local store (%d it held already)\n", rep.Copied, rep.ServedBy, rep.CopyDuplicates)
	}
	fmt.Fprintf(w, "repairs: %d (%s)\n", len(rep.Repairs), verb)
	for _, r := range rep.Repairs {
		fmt.Fprintf(w, "  %s %s %s\n", r.Kind, r.ToolUseID, r.UUID)
	}
	if len(rep.Violations) == 0 {
		fmt.Fprintln(w, "check: the conversation follows the model API's rules")
	}
	for _, v := range rep.Violations {
		fmt.Fprintf(w, "check: message %d (%s): %s: %s\n", v.Index, v.UUID, v.Rule, v.Detail)
	}
	fmt.Fprintf(w, "\nconversation (%d rows):\n", len(res.Conversation))
	for _, e := range res.Conversation {
		if !e.IsMessage() {
			continue
		}
		var m struct {
			Message json.RawMessage `json:"message"`
		}
		_ = json.Unmarshal(e.Raw, &m)
		role := e.Type
		if e.IsMeta {
			role += " (meta)"
		}
		if e.IsCompactSummary {
			role += " (compact summary)"
		}
		fmt.Fprintf(w, "── %s · %s\n", role, e.Timestamp)
		for _, part := range render.MessageParts(m.Message) {
			fmt.Fprintf(w, "%s\n", cmdutil.Indent(part.Text))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "continue in Claude Code:\n  %s\n", rep.ContinueCommand)
}

// recordResumed adds the resume, and the interruption it found, to the
// session's lifecycle records (the sidecar beside the transcript).
func recordResumed(ctx context.Context, p *core.Pipeline, id string, res *core.ResumeResult, cp *core.Checkpoint) error {
	var cwd, leaf string
	for i := len(res.Conversation) - 1; i >= 0; i-- {
		if cwd == "" {
			cwd = res.Conversation[i].CWD
		}
		if leaf == "" && res.Conversation[i].UUID != "" {
			leaf = res.Conversation[i].UUID
		}
	}
	meta := core.LifecycleMeta{SessionID: id, CWD: cwd}
	if res.Recovery.Class != core.InterruptionNone {
		if _, err := p.SubmitLifecycle(ctx, meta, core.TurnInterrupted{Kind: res.Recovery.Class, LeafUUID: res.Chain.Leaf, Detail: res.Recovery.Reason}); err != nil {
			return err
		}
	}
	ev := core.SessionResumed{From: res.Served.String(), LeafUUID: leaf, Classification: res.Recovery.Class, Repairs: len(res.Recovery.Repairs)}
	if cp != nil {
		ev.Checkpoint, ev.Commit = cp.ID, cp.Commit
	}
	if _, err := p.SubmitLifecycle(ctx, meta, ev); err != nil {
		return err
	}
	return p.Flush(ctx)
}
