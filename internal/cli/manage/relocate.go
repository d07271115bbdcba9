package manage

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

func NewCmdRelocate(f *cmdutil.Factory) *cobra.Command {
	var (
		dryRun, yes, asJSON bool
	)
	c := &cobra.Command{
		Use:   "relocate OLD NEW [--dry-run]",
		Short: "After a project folder moved, move its sessions to the new folder's project, cwds rewritten",
		Long: `relocate moves every session whose cwd is OLD or below it to the project folder
of the same place under NEW, with every cwd (and relocatedCwd) in its transcript,
subagents and sidecars rewritten, so that Claude Code and the SDK find and resume
it from NEW. Each session moves under its lock; the originals go to the trash
as a backup (scribe trash ls shows them with reason relocate), and the sessions
index forgets them in the same step.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, _, err := f.LocalLayout(cmd)
			if err != nil {
				return err
			}
			oldPath, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			newPath, err := filepath.Abs(args[1])
			if err != nil {
				return err
			}
			plan, err := l.Relocate(cmd.Context(), oldPath, newPath, jsonl.RelocateOptions{DryRun: true})
			if err != nil {
				return err
			}
			res := plan
			if !dryRun && len(plan) > 0 {
				if err := f.Confirm(cmd, yes, fmt.Sprintf("move %d session(s) from %s to %s?", len(plan), oldPath, newPath)); err != nil {
					return err
				}
				res, err = l.Relocate(cmd.Context(), oldPath, newPath, jsonl.RelocateOptions{Progress: f.IOStreams.ProgressCounter(cmd.ErrOrStderr(), "relocate")})
				var moved []string
				for _, s := range res {
					moved = append(moved, s.SessionID)
				}
				f.ForgetSearch(cmd, l, moved)
				if err != nil {
					printRelocated(cmd, res, false, asJSON)
					return err
				}
			}
			return printRelocated(cmd, res, dryRun, asJSON)
		},
	}
	fl := c.Flags()
	fl.BoolVar(&dryRun, "dry-run", false, "say what would move, move nothing")
	fl.BoolVar(&yes, "yes", false, "do not ask on a terminal")
	fl.BoolVar(&asJSON, "json", false, "print the sessions as JSON")
	return c
}

func printRelocated(cmd *cobra.Command, res []jsonl.RelocatedSession, dryRun, asJSON bool) error {
	if asJSON {
		if res == nil {
			res = []jsonl.RelocatedSession{}
		}
		return cmdutil.WriteJSON(cmd.OutOrStdout(), map[string]any{"dryRun": dryRun, "sessions": res})
	}
	verb := "moved"
	if dryRun {
		verb = "would move"
	}
	for _, s := range res {
		fmt.Fprintf(cmd.OutOrStdout(), "%s %s from %s to %s (%d lines rewritten in %d files)", verb, s.SessionID, s.OldCwd, s.NewCwd, s.Lines, s.Files)
		if s.FromRemoved {
			fmt.Fprintf(cmd.OutOrStdout(), "; removed the emptied project folder %s", s.From)
		}
		fmt.Fprintln(cmd.OutOrStdout())
	}
	if len(res) == 0 {
		fmt.Fprintln(cmd.OutOrStdout(), "no session has its cwd there")
	}
	return nil
}
