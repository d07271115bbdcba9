// Package manage holds the commands that change or look after stored
// sessions: rm and the trash, rename, tag, archive and unarchive, gc, du,
// doctor, relocate, the sessions index, checkpoints, fork and resume.
package manage

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/stores"
)

// The session commands: rm and the trash, rename, tag, archive, unarchive.
// Everything on disk goes through sinks/jsonl; these only parse, ask and
// print.

// storeErr makes the store's refusals of a value usage errors (exit 2).
func storeErr(err error) error {
	switch {
	case errors.Is(err, jsonl.ErrEmptyValue), errors.Is(err, jsonl.ErrUnsupportedTag), errors.Is(err, jsonl.ErrBadID):
		return &cmdutil.ExitError{Code: 2, Err: err}
	}
	return err
}

func NewCmdRm(f *cmdutil.Factory) *cobra.Command {
	var (
		asJSON, dryRun, yes bool
		lockWait            time.Duration
		rmKeys              cmdutil.SealFlags
	)
	c := &cobra.Command{
		Use:   "rm ID...",
		Short: "Move sessions to scribe's trash (transcript, subagents, sidecars, tool results)",
		Long: `rm moves everything that belongs to each session (its transcript, its <id>/ folder
with subagents and tool results, its sidecars) from its project folder into
<config dir>/scribe/trash, with a manifest of where each file came from, and
drops it from the sessions index in the same step. Nothing is deleted: scribe
trash restore brings it back byte for byte, scribe trash empty deletes it.
As the Agent SDK's deleteSession, rm first writes the deletion markers
(<config dir>/state/deleted-transcripts/) that keep a running Claude Code from
saving the transcript again; trash restore removes them.
A session a live writer holds is refused (--lock-wait to wait).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			st, tr, done, err := cmdutil.OpenCapable[sessions.Trasher](f, cmd, "remove sessions")
			if err != nil {
				return err
			}
			defer done(&err)
			ids := make([]string, 0, len(args))
			for _, a := range args {
				id, err := st.Resolve(cmd.Context(), a)
				if err != nil {
					return cmdutil.ResolveErr(err)
				}
				ids = append(ids, id)
			}
			if !dryRun {
				if err := f.Confirm(cmd, yes, fmt.Sprintf("move %d session(s) to the trash?", len(ids))); err != nil {
					return err
				}
			}
			sl, err := rmKeys.Sealer(cmd)
			if err != nil {
				return err
			}
			opt := jsonl.TrashOptions{Reason: "rm", LockWait: lockWait, DryRun: dryRun, Markers: true}
			if sl != nil {
				opt.Seal = sl.SealBytes
			}
			var all []jsonl.TrashItem
			for _, id := range ids {
				items, err := tr.Trash(cmd.Context(), id, opt)
				all = append(all, items...)
				if local, ok := st.(*stores.Local); ok && len(items) > 0 && !dryRun {
					f.ForgetSearch(cmd, local.Layout(), []string{id})
				}
				if err != nil {
					printTrashed(cmd, all, dryRun, asJSON)
					return storeErr(err)
				}
			}
			return printTrashed(cmd, all, dryRun, asJSON)
		},
	}
	fl := c.Flags()
	fl.BoolVar(&asJSON, "json", false, "print the trash items as JSON")
	fl.BoolVar(&dryRun, "dry-run", false, "say what would move, move nothing")
	fl.BoolVar(&yes, "yes", false, "do not ask on a terminal")
	fl.DurationVar(&lockWait, "lock-wait", 0, "wait this long for a process writing the session")
	rmKeys.Add(c, true)
	cmdutil.AddStoreFlag(c, "remove the sessions of this store (a jsonl, postgres or s3 block, type/name); a SessionStore's trash is kept on this machine")
	return c
}

func printTrashed(cmd *cobra.Command, items []jsonl.TrashItem, dryRun, asJSON bool) error {
	out := cmd.OutOrStdout()
	if asJSON {
		if items == nil {
			items = []jsonl.TrashItem{}
		}
		return cmdutil.WriteJSON(out, map[string]any{"dryRun": dryRun, "items": items})
	}
	verb := "moved to the trash"
	if dryRun {
		verb = "would move to the trash"
	}
	for _, it := range items {
		fmt.Fprintf(out, "%s %s (%s, %d files, %s) from %s", verb, it.SessionID, orDash(it.Title), len(it.Files), cmdutil.HumanBytes(it.Bytes), it.Project)
		if !dryRun {
			fmt.Fprintf(out, " as %s", it.ID)
		}
		fmt.Fprintln(out)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return strconv.Quote(s)
}

func NewCmdTrash(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "trash",
		Short: "List, restore or empty scribe's trash",
	}
	var asJSON bool
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the sessions in the trash, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			st, tr, done, err := cmdutil.OpenCapable[sessions.Trasher](f, cmd, "keep a trash")
			if err != nil {
				return err
			}
			defer done(&err)
			items, problems, err := tr.TrashItems(cmd.Context())
			if err != nil {
				return err
			}
			for _, p := range problems {
				fmt.Fprintln(cmd.ErrOrStderr(), "scribe: trash:", p)
			}
			if asJSON {
				if items == nil {
					items = []jsonl.TrashItem{}
				}
				return cmdutil.WriteJSON(cmd.OutOrStdout(), map[string]any{"items": items, "problems": problems})
			}
			if len(items) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "the trash is empty (%s)\n", trashDirOf(st))
				return nil
			}
			tw := cmdutil.NewTable(cmd.OutOrStdout())
			fmt.Fprintln(tw, "TRASH ID\tSESSION\tREASON\tSIZE\tFILES\tPROJECT\tTITLE")
			for _, it := range items {
				state := it.Reason
				if !it.Complete {
					state += " (incomplete)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", it.ID, cmdutil.Clip(it.SessionID, 8), state, cmdutil.HumanBytes(it.Bytes), len(it.Files), it.Project, orDash(it.Title))
			}
			return tw.Flush()
		},
	}
	ls.Flags().BoolVar(&asJSON, "json", false, "print the manifests as JSON")
	cmdutil.AddStoreFlag(ls, "list the trash of this store (type/name)")
	c.AddCommand(ls, newTrashRestoreCmd(f), newTrashEmptyCmd(f))
	return c
}

func newTrashRestoreCmd(f *cmdutil.Factory) *cobra.Command {
	var (
		asJSON      bool
		lockWait    time.Duration
		restoreKeys cmdutil.SealFlags
	)
	c := &cobra.Command{
		Use:   "restore ID",
		Short: "Put a session back where it was, byte for byte (ID: a trash id, a session id, or a prefix)",
		Long: `restore checks every file of the trash item against the sha256 in its manifest,
refuses to overwrite anything that is in its place now, and moves the files
back, with their modes and mtimes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			st, tr, done, err := cmdutil.OpenCapable[sessions.Trasher](f, cmd, "restore from a trash")
			if err != nil {
				return err
			}
			defer done(&err)
			sl, err := restoreKeys.Sealer(cmd)
			if err != nil {
				return err
			}
			var open func([]byte) ([]byte, error)
			if sl != nil {
				open = sl.OpenBytes
			}
			it, err := tr.Restore(cmd.Context(), args[0], sessions.RestoreOptions{LockWait: lockWait, Open: open})
			if err != nil {
				return err
			}
			if asJSON {
				return cmdutil.WriteJSON(cmd.OutOrStdout(), it)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %s (%d files, %s) to %s", it.SessionID, len(it.Files), cmdutil.HumanBytes(it.Bytes), it.Project)
			if it.MarkersRemoved > 0 {
				if local, ok := st.(*stores.Local); ok {
					fmt.Fprintf(cmd.OutOrStdout(), "; removed %d deletion marker(s) from %s", it.MarkersRemoved, local.Layout().DeletedTranscriptsDir())
				}
			}
			fmt.Fprintln(cmd.OutOrStdout())
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the restored item as JSON")
	restoreKeys.Add(c, false)
	c.Flags().DurationVar(&lockWait, "lock-wait", 0, "wait this long for a process writing the session")
	cmdutil.AddStoreFlag(c, "restore into this store (type/name), from its trash")
	return c
}

func newTrashEmptyCmd(f *cmdutil.Factory) *cobra.Command {
	var (
		asJSON, dryRun, yes bool
		olderThan           string
	)
	c := &cobra.Command{
		Use:   "empty",
		Short: "Delete what is in the trash (--older-than D: only what was trashed before)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			_, tr, done, err := cmdutil.OpenCapable[sessions.Trasher](f, cmd, "keep a trash")
			if err != nil {
				return err
			}
			defer done(&err)
			age, err := cmdutil.ParseAge("--older-than", olderThan)
			if err != nil {
				return err
			}
			now := time.Now()
			if !dryRun {
				plan, err := tr.EmptyTrash(cmd.Context(), age, true, now)
				if err != nil {
					return err
				}
				if err := f.Confirm(cmd, yes, fmt.Sprintf("delete %d trash item(s) for good?", len(plan))); err != nil {
					return err
				}
			}
			items, err := tr.EmptyTrash(cmd.Context(), age, dryRun, now)
			var bytes int64
			for _, it := range items {
				bytes += it.Bytes
			}
			if asJSON {
				if items == nil {
					items = []jsonl.TrashItem{}
				}
				if jerr := cmdutil.WriteJSON(cmd.OutOrStdout(), map[string]any{"dryRun": dryRun, "deleted": items, "bytes": bytes}); jerr != nil {
					return jerr
				}
				return err
			}
			verb := "deleted"
			if dryRun {
				verb = "would delete"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %d trash item(s), %s\n", verb, len(items), cmdutil.HumanBytes(bytes))
			return err
		},
	}
	fl := c.Flags()
	fl.StringVar(&olderThan, "older-than", "", "only items trashed longer ago than this (30d, 2w, 12h)")
	fl.BoolVar(&dryRun, "dry-run", false, "say what would be deleted, delete nothing")
	fl.BoolVar(&yes, "yes", false, "do not ask on a terminal")
	fl.BoolVar(&asJSON, "json", false, "print the deleted items as JSON")
	cmdutil.AddStoreFlag(c, "empty the trash of this store (type/name)")
	return c
}

// manageCmd is the shape of rename, tag, archive and unarchive.
func manageCmd(f *cmdutil.Factory, use, short, long string, args cobra.PositionalArgs, run func(ctx context.Context, st sessions.Store, id string, args []string, opt jsonl.ManageOptions) (jsonl.ManageResult, error)) *cobra.Command {
	var (
		asJSON, dryRun bool
		lockWait       time.Duration
	)
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  args,
		RunE: func(cmd *cobra.Command, a []string) (err error) {
			st, _, done, err := f.OpenStoreOf(cmd)
			if err != nil {
				return err
			}
			defer done(&err)
			id, err := st.Resolve(cmd.Context(), a[0])
			if err != nil {
				return cmdutil.ResolveErr(err)
			}
			if dryRun {
				fmt.Fprintf(cmd.OutOrStdout(), "would %s %s\n", strings.Fields(use)[0], id)
				return nil
			}
			res, err := run(cmd.Context(), st, id, a[1:], jsonl.ManageOptions{LockWait: lockWait})
			if err != nil {
				return storeErr(err)
			}
			if res.SealedTornTail > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "scribe: sealed a torn last line of %s before appending\n", res.Files[0])
			}
			if asJSON {
				return cmdutil.WriteJSON(cmd.OutOrStdout(), res)
			}
			for _, f := range res.Files {
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s: wrote %s\n", strings.Fields(use)[0], id, f)
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.BoolVar(&asJSON, "json", false, "print what was written as JSON")
	fl.BoolVar(&dryRun, "dry-run", false, "say what would change, change nothing")
	fl.DurationVar(&lockWait, "lock-wait", 0, "wait this long for a process writing the session")
	cmdutil.AddStoreFlag(c, "change a session of this store (a jsonl, postgres or s3 block, type/name)")
	return c
}

func NewCmdRename(f *cmdutil.Factory) *cobra.Command {
	return manageCmd(f, "rename ID TITLE", "Give a session a title, as the SDK's renameSession does",
		`rename appends {"type":"custom-title","customTitle":TITLE,"sessionId":ID} to the
transcript, exactly the line the SDK's renameSession writes (TITLE trimmed).`,
		cobra.ExactArgs(2),
		func(ctx context.Context, st sessions.Store, id string, a []string, opt jsonl.ManageOptions) (jsonl.ManageResult, error) {
			m, err := cmdutil.Capability[sessions.Manager](st, "rename sessions")
			if err != nil {
				return jsonl.ManageResult{}, err
			}
			return m.Rename(ctx, id, a[0], opt)
		})
}

func NewCmdTag(f *cmdutil.Factory) *cobra.Command {
	var clear bool
	c := manageCmd(f, "tag ID TAG | --clear", "Tag a session (or clear its tag), as the SDK's tagSession does",
		`tag appends {"type":"tag","tag":TAG,"sessionId":ID}, the line the SDK's tagSession
writes; --clear appends the empty tag, as tagSession(id, null) does.`,
		cobra.RangeArgs(1, 2),
		func(ctx context.Context, st sessions.Store, id string, a []string, opt jsonl.ManageOptions) (jsonl.ManageResult, error) {
			m, err := cmdutil.Capability[sessions.Manager](st, "tag sessions")
			if err != nil {
				return jsonl.ManageResult{}, err
			}
			if clear == (len(a) == 1) {
				return jsonl.ManageResult{}, &cmdutil.ExitError{Code: 2, Err: errors.New("give a TAG or --clear, not both or neither")}
			}
			tag := ""
			if len(a) == 1 {
				tag = a[0]
			}
			return m.Tag(ctx, id, tag, clear, opt)
		})
	c.Flags().BoolVar(&clear, "clear", false, "clear the tag")
	return c
}

func NewCmdArchive(f *cmdutil.Factory, archived bool) *cobra.Command {
	use, short := "archive ID", "Archive a session, as the SDK's archiveSession does"
	if !archived {
		use, short = "unarchive ID", "Unarchive a session, as the SDK's unarchiveSession does"
	}
	return manageCmd(f, use, short,
		`writes <id>/archived.json ({"archived":true|false,"at":TIME,"by":"scribe"}) beside
every copy of the transcript, as the SDK does. The SDK then lists the session
with archived set (a prompt sent after TIME un-archives it).`,
		cobra.ExactArgs(1),
		func(ctx context.Context, st sessions.Store, id string, _ []string, opt jsonl.ManageOptions) (jsonl.ManageResult, error) {
			ar, err := cmdutil.Capability[sessions.Archiver](st, "archive sessions")
			if err != nil {
				return jsonl.ManageResult{}, err
			}
			return ar.SetArchived(ctx, id, archived, opt)
		})
}

// trashDirOf says where a store keeps its trash.
func trashDirOf(st sessions.Store) string {
	if t, ok := st.(interface{ TrashDir() string }); ok {
		return t.TrashDir()
	}
	return st.Where()
}
