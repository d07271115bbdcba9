// Package backends holds the full build's commands that work on the
// storage backends: copy between any two stores, and s3 compact.
package backends

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/agentmeta"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/sinks/backend"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

func NewCmdCopy(f *cmdutil.Factory) *cobra.Command {
	var (
		from, to    string
		all, asJSON bool
	)
	c := &cobra.Command{
		Use: "copy",
		Long: `copy moves sessions between any two stores: the local files (jsonl/local), a
postgres or an s3 block, named type/name. Each session's main transcript and its
subagents are read from --from and written to --to, in order and byte for byte.
It is idempotent and resumable: what --to already holds (each uuid, and each
uuid-less metadata line) is skipped, so running it again, or after it was
interrupted, copies only what is missing. Each session is flushed (durable)
before the next one starts. The progress goes to stderr; the summary says how
many entries were copied and how many were already there.`,
		RunE: func(cmd *cobra.Command, ids []string) error {
			if from == "" || to == "" {
				return &cmdutil.ExitError{Code: 2, Err: errors.New("copy needs --from and --to (type/name of a jsonl, postgres or s3 block)")}
			}
			if from == to {
				return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--from and --to are both %s", from)}
			}
			if all == (len(ids) > 0) {
				return &cmdutil.ExitError{Code: 2, Err: errors.New("give session ids, or --all")}
			}
			cfg, err := f.LoadConfig(cmd)
			if err != nil {
				return &cmdutil.ExitError{Code: 2, Err: err}
			}
			return runCopy(f, cmd, cfg, from, to, ids, asJSON)
		},
	}
	fl := c.Flags()
	fl.StringVar(&from, "from", "", "the store to read (type/name)")
	fl.StringVar(&to, "to", "", "the store to write (type/name of a sink block)")
	fl.BoolVar(&all, "all", false, "copy every session of --from")
	fl.BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return c
}

// copyReport is copy's summary.
type copyReport struct {
	From     string   `json:"from"`
	To       string   `json:"to"`
	Sessions int      `json:"sessions"`
	Subagent int      `json:"subagents"`
	Copied   int64    `json:"copied"`
	Already  int64    `json:"alreadyThere"`
	Failed   []string `json:"failed"`
	// Notes say what a source held that could not be copied (malformed
	// lines), per transcript.
	Notes []string `json:"notes"`
}

func runCopy(f *cmdutil.Factory, cmd *cobra.Command, cfg *config.Config, from, to string, ids []string, asJSON bool) (err error) {
	ctx := cmd.Context()
	src, err := f.OpenStore(ctx, cfg, from, nil)
	if err != nil {
		return err
	}
	defer src.Stop(context.WithoutCancel(ctx))
	for _, d := range src.Damaged {
		fmt.Fprintf(cmd.ErrOrStderr(), "scribe: %v: left out of what this command reads\n", d)
	}
	defer func() {
		if err == nil && len(src.Damaged) > 0 {
			err = fmt.Errorf("%d sealed transcript(s) of %s are damaged and were left out (see above): %w", len(src.Damaged), from, src.Damaged[0])
		}
	}()
	dst, err := f.OpenStore(ctx, cfg, to, faithfulCopy)
	if err != nil {
		return err
	}
	if dst.Sink == nil {
		dst.Stop(ctx)
		return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--to %s is a loader block: name a sink block", to)}
	}
	if err := dst.Start(ctx); err != nil {
		return fmt.Errorf("start %s: %w", to, err)
	}
	stopped := false
	stopDst := func() error {
		if stopped {
			return nil
		}
		stopped = true
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		return dst.Stop(sctx)
	}
	defer stopDst()

	var sessions []backend.Listed
	if len(ids) == 0 {
		if sessions, err = src.Lister.ListSessions(ctx, ""); err != nil {
			return fmt.Errorf("list %s: %w", from, err)
		}
	}
	for _, arg := range ids {
		found, err := cmdutil.Matching(ctx, src, arg)
		if err != nil {
			return err
		}
		if len(found) > 1 {
			if _, err := cmdutil.ResolveIn(ctx, src, arg); err != nil {
				return err
			}
		}
		sessions = append(sessions, found...)
	}
	sort.Slice(sessions, func(i, j int) bool {
		if sessions[i].SessionID != sessions[j].SessionID {
			return sessions[i].SessionID < sessions[j].SessionID
		}
		return sessions[i].ProjectKey < sessions[j].ProjectKey
	})

	rep := copyReport{From: from, To: to, Failed: []string{}, Notes: []string{}}
	var read atomic.Int64
	bar := cmdutil.NewProgressBar(cmd.ErrOrStderr(), "copy", !cmdutil.IsTerminal(cmd.ErrOrStderr()))
	bar.Start(-1, len(sessions), &read)
	for _, s := range sessions {
		n, subs, err := copySession(ctx, src, dst, s, &read, &rep)
		if err != nil {
			rep.Failed = append(rep.Failed, s.SessionID)
			fmt.Fprintf(cmd.ErrOrStderr(), "scribe: copy %s: %v\n", s.SessionID, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		rep.Sessions++
		rep.Subagent += subs
		bar.Entries(n)
		bar.SessionDone()
	}
	bar.Finish()
	if err := stopDst(); err != nil {
		return fmt.Errorf("close %s: %w", to, err)
	}
	out := cmd.OutOrStdout()
	if asJSON {
		if err := cmdutil.WriteJSON(out, rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "copied %d sessions (%d subagents) from %s to %s: %d entries written, %d already there\n",
			rep.Sessions, rep.Subagent, from, to, rep.Copied, rep.Already)
		for _, n := range rep.Notes {
			fmt.Fprintf(out, "note: %s\n", n)
		}
		if len(rep.Failed) > 0 {
			fmt.Fprintf(out, "failed: %d sessions: %v\n", len(rep.Failed), rep.Failed)
		}
	}
	if len(rep.Failed) > 0 {
		return &cmdutil.ExitError{Code: 1, Err: fmt.Errorf("%d of %d sessions were not copied", len(rep.Failed), len(sessions))}
	}
	return nil
}

// faithfulCopy turns off the local store's metadata re-appends for a copy:
// a copied transcript already holds the re-appended blocks its writer
// made, so the copy gives back its lines as they are, byte for byte.
func faithfulCopy(c any) {
	if jc, ok := c.(*jsonl.Config); ok {
		jc.ReappendBytes = 1 << 50
	}
}

// copySession copies one session's main transcript and subagents (their
// meta files too), writing only what dst lacks, and flushes dst.
func copySession(ctx context.Context, src, dst *cmdutil.Store, s backend.Listed, read *atomic.Int64, rep *copyReport) (int64, int, error) {
	agents, err := src.Lister.ListSubagents(ctx, s.ProjectKey, s.SessionID)
	if err != nil {
		return 0, 0, err
	}
	refs := []core.SessionRef{{SessionID: s.SessionID}}
	for _, a := range agents {
		refs = append(refs, core.SessionRef{SessionID: s.SessionID, AgentID: a})
	}
	var written int64
	metas := map[core.SessionRef]core.Entry{}
	for _, ref := range refs {
		entries, notes, err := copyEntries(ctx, src, ref)
		if err != nil {
			return written, 0, err
		}
		for _, n := range notes {
			rep.Notes = append(rep.Notes, ref.Key()+": "+n)
		}
		if dst.Layout != nil && ref.AgentID != "" {
			// The local store keeps it as the meta file, not a line.
			var meta *core.Entry
			if entries, meta = backend.SplitAgentMeta(entries); meta != nil {
				metas[ref] = *meta
			}
		}
		missing, already, err := missingIn(ctx, dst, ref, entries)
		if err != nil {
			return written, 0, err
		}
		for _, e := range entries {
			read.Add(int64(len(e.Raw)) + 1)
		}
		rep.Already += already
		if len(missing) == 0 {
			continue
		}
		if err := dst.Sink.Write(ctx, missing); err != nil {
			return written, 0, fmt.Errorf("write %s into %s: %w", ref.Key(), dst.ID, err)
		}
		written += int64(len(missing))
		rep.Copied += int64(len(missing))
	}
	n, err := copyLifecycle(ctx, src, dst, s.SessionID, rep)
	if err != nil {
		return written, 0, err
	}
	written += n
	if err := dst.Sink.Flush(ctx); err != nil {
		return written, 0, fmt.Errorf("flush %s: %w", dst.ID, err)
	}
	for ref, meta := range metas {
		path, err := agentmeta.LocalAgentFile(*dst.Layout, ref)
		if err != nil {
			return written, 0, err
		}
		wrote, err := agentmeta.Write(claudedir.AgentMetaFile(path), meta)
		if err != nil {
			return written, 0, err
		}
		if wrote {
			written++
			rep.Copied++
		} else {
			rep.Already++
		}
	}
	return written, len(agents), nil
}

// copyEntries loads a transcript from src for a copy: lines without a
// sessionId (snapshots, summaries) are routed to the transcript they were
// read from, and a local subagent's meta file comes last as the SDK's
// agent_metadata entry.
func copyEntries(ctx context.Context, src *cmdutil.Store, ref core.SessionRef) ([]core.Entry, []string, error) {
	t, err := readTranscript(ctx, src, ref)
	if err != nil {
		return nil, nil, fmt.Errorf("load %s from %s: %w", ref.Key(), src.ID, err)
	}
	for i := range t.Entries {
		e := &t.Entries[i]
		if e.SessionID == "" {
			e.SessionID = ref.SessionID
		}
		if e.AgentID == "" && ref.AgentID != "" && e.IsMetadata() {
			e.AgentID = ref.AgentID
		}
	}
	if src.Layout == nil || ref.AgentID == "" {
		return t.Entries, t.Notes, nil
	}
	path, err := agentmeta.LocalAgentFile(*src.Layout, ref)
	if err != nil {
		return nil, nil, err
	}
	meta, ok, err := agentmeta.Entry(claudedir.AgentMetaFile(path), ref)
	if err != nil {
		return nil, nil, err
	}
	if ok {
		t.Entries = append(t.Entries, meta)
	}
	return t.Entries, t.Notes, nil
}

// readTranscript reads all of a transcript for a copy: a local file whole
// (the local loader serves resume, so it reads a large file from its last
// compaction on and refuses a damaged chain), else the store's load. What
// a local file holds that is no entry (a malformed or torn line) is said
// in the notes.
func readTranscript(ctx context.Context, st *cmdutil.Store, ref core.SessionRef) (*core.Transcript, error) {
	if st.Layout == nil {
		return st.Loader.Load(ctx, ref)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir, err := st.Layout.FindSession(ref.SessionID, "")
	if err != nil {
		return nil, err
	}
	path := claudedir.MainFile(dir, ref.SessionID)
	if ref.AgentID != "" {
		path = claudedir.AgentFile(dir, ref.SessionID, ref.AgentID)
	}
	if dir == "" {
		return nil, fmt.Errorf("%w: %s is not in %s", core.ErrNotFound, ref.Key(), st.Layout.ProjectsDir())
	}
	entries, rep, err := st.Layout.ReadEntries(path, jsonl.ReadOptions{NoPrecompactSkip: true})
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", core.ErrNotFound, path)
	}
	if err != nil {
		return nil, err
	}
	t := &core.Transcript{Ref: ref, Entries: entries}
	if n := len(rep.Malformed); n > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d malformed lines of %s are not entries: not copied", n, path))
	}
	if rep.Torn {
		t.Notes = append(t.Notes, "the torn last line of "+path+" is not copied")
	}
	return t, nil
}

// missingIn returns the entries dst does not hold yet for ref, and how
// many it holds already.
func missingIn(ctx context.Context, dst *cmdutil.Store, ref core.SessionRef, entries []core.Entry) ([]core.Entry, int64, error) {
	have, err := readTranscript(ctx, dst, ref)
	if errors.Is(err, core.ErrNotFound) {
		return entries, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read what %s holds of %s: %w", dst.ID, ref.Key(), err)
	}
	out, already := notIn(entries, have.Entries)
	return out, already, nil
}

// notIn returns the entries that have lacks: those whose uuid it lacks, and
// uuid-less lines beyond the byte-identical ones it has; and how many it
// has already.
func notIn(entries, have []core.Entry) ([]core.Entry, int64) {
	uuids := map[string]bool{}
	lines := map[string]int{}
	for _, e := range have {
		if e.UUID != "" {
			uuids[e.UUID] = true
		} else {
			lines[string(e.Raw)]++
		}
	}
	var out []core.Entry
	var already int64
	for _, e := range entries {
		switch {
		case e.UUID != "" && uuids[e.UUID]:
			already++
		case e.UUID == "" && lines[string(e.Raw)] > 0:
			lines[string(e.Raw)]--
			already++
		default:
			out = append(out, e)
		}
	}
	return out, already
}

// copyLifecycle copies the lifecycle records dst lacks.
func copyLifecycle(ctx context.Context, src, dst *cmdutil.Store, sessionID string, rep *copyReport) (int64, error) {
	life, err := cmdutil.LifecycleOf(ctx, src, sessionID)
	if err != nil || len(life) == 0 {
		return 0, err
	}
	have, err := cmdutil.LifecycleOf(ctx, dst, sessionID)
	if err != nil {
		return 0, fmt.Errorf("read the lifecycle records %s holds of %s: %w", dst.ID, sessionID, err)
	}
	missing, already := notIn(life, have)
	rep.Already += already
	for i := range missing {
		if missing[i].SessionID == "" {
			missing[i].SessionID = sessionID
		}
	}
	if len(missing) == 0 {
		return 0, nil
	}
	if err := dst.Sink.Write(ctx, missing); err != nil {
		return 0, fmt.Errorf("write the lifecycle records of %s into %s: %w", sessionID, dst.ID, err)
	}
	rep.Copied += int64(len(missing))
	return int64(len(missing)), nil
}

func NewCmdS3(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{Use: "s3", Args: cobra.NoArgs}
	var (
		storeID     string
		all, asJSON bool
	)
	compact := &cobra.Command{
		Use:   "compact --store s3/NAME [--all | ID...]",
		Short: "Merge each session's parts (and each subagent's) into one part",
		Long: `compact merges the small parts of a session's transcript, and of each of its
subagents, into one part each: the merged part is stored first, then the parts
it replaces are deleted, so a reader never misses a line (one that lists in
between sees lines twice, which loads serve once by uuid). Compact sessions
nothing is writing.`,
		RunE: func(cmd *cobra.Command, ids []string) error {
			if all == (len(ids) > 0) {
				return &cmdutil.ExitError{Code: 2, Err: errors.New("give session ids, or --all")}
			}
			cfg, err := f.LoadConfig(cmd)
			if err != nil {
				return &cmdutil.ExitError{Code: 2, Err: err}
			}
			st, err := f.OpenStore(cmd.Context(), cfg, storeID, nil)
			if err != nil {
				return err
			}
			defer st.Stop(context.WithoutCancel(cmd.Context()))
			s3s, ok := st.Loader.(backend.Compactor)
			if !ok {
				return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--store %s is not an s3 block", storeID)}
			}
			return runCompact(cmd, st, s3s, ids, asJSON)
		},
	}
	compact.Flags().StringVar(&storeID, "store", "", "the s3 block (type/name)")
	compact.Flags().BoolVar(&all, "all", false, "every session of the store")
	compact.Flags().BoolVar(&asJSON, "json", false, "print what was merged as JSON")
	c.AddCommand(compact)
	return c
}

type compactLine struct {
	Session string `json:"sessionId"`
	Agent   string `json:"agentId,omitempty"`
	Parts   int    `json:"parts"`
	Bytes   int64  `json:"bytes"`
	Merged  string `json:"merged,omitempty"`
}

func runCompact(cmd *cobra.Command, st *cmdutil.Store, s3s backend.Compactor, ids []string, asJSON bool) error {
	ctx := cmd.Context()
	var sessions []backend.Listed
	var err error
	if len(ids) == 0 {
		if sessions, err = st.Lister.ListSessions(ctx, ""); err != nil {
			return err
		}
	}
	for _, arg := range ids {
		id, err := cmdutil.ResolveIn(ctx, st, arg)
		if err != nil {
			return err
		}
		found, _ := cmdutil.Matching(ctx, st, id)
		sessions = append(sessions, found...)
	}
	lines := []compactLine{}
	for _, s := range sessions {
		agents, err := st.Lister.ListSubagents(ctx, s.ProjectKey, s.SessionID)
		if err != nil {
			return err
		}
		for _, a := range append([]string{""}, agents...) {
			res, err := s3s.Compact(ctx, core.SessionRef{SessionID: s.SessionID, AgentID: a})
			if err != nil {
				return err
			}
			lines = append(lines, compactLine{Session: s.SessionID, Agent: a, Parts: res.Parts, Bytes: res.Bytes, Merged: res.Merged})
		}
	}
	if asJSON {
		return cmdutil.WriteJSON(cmd.OutOrStdout(), lines)
	}
	merged := 0
	for _, l := range lines {
		if l.Parts == 0 {
			continue
		}
		merged++
		what := l.Session
		if l.Agent != "" {
			what += " agent " + l.Agent
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s: %d parts merged into one (%s)\n", what, l.Parts, cmdutil.HumanBytes(l.Bytes))
	}
	fmt.Fprintf(cmd.OutOrStdout(), "compacted %d of %d transcripts (the others had one part)\n", merged, len(lines))
	return nil
}
