package main

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

//go:embed testdata/sample.jsonl
var sampleSession []byte

func newDemoCmd() *cobra.Command {
	var keep bool
	c := &cobra.Command{
		Use:   "demo",
		Short: "Record a bundled sample session into a throwaway config folder, list it and show it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := os.MkdirTemp("", "scribe-demo-")
			if err != nil {
				return err
			}
			if !keep {
				defer os.RemoveAll(dir)
			}
			out := cmd.OutOrStdout()
			in := filepath.Join(dir, "sample.jsonl")
			if err := os.WriteFile(in, sampleSession, 0o600); err != nil {
				return err
			}
			cfgDir := filepath.Join(dir, "claude")
			run := func(title string, args ...string) error {
				fmt.Fprintf(out, "\n$ scribe %s\n", title)
				root := newRoot()
				root.SetOut(out)
				root.SetErr(cmd.ErrOrStderr())
				root.SetArgs(args)
				return root.ExecuteContext(cmd.Context())
			}
			fmt.Fprintf(out, "scribe demo: a throwaway Claude config folder at %s\n", cfgDir)
			if err := run("record sample.jsonl", "record", "--config-dir", cfgDir, in); err != nil {
				return err
			}
			if err := run("record sample.jsonl   # again: dedup adds nothing", "record", "--config-dir", cfgDir, in); err != nil {
				return err
			}
			if err := run("ls --all", "ls", "--config-dir", cfgDir, "--all"); err != nil {
				return err
			}
			if err := run("show 7b3c --subagents   # a unique prefix of the id is enough", "show", "--config-dir", cfgDir, "7b3c", "--subagents"); err != nil {
				return err
			}
			fmt.Fprintln(out, "\nfiles written, in Claude Code's own layout:")
			return filepath.WalkDir(cfgDir, func(p string, d os.DirEntry, err error) error {
				if err != nil || p == cfgDir {
					return err
				}
				rel, _ := filepath.Rel(cfgDir, p)
				info, err := d.Info()
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "  %v %8d  %s\n", info.Mode(), info.Size(), rel)
				return nil
			})
		},
	}
	c.Flags().BoolVar(&keep, "keep", false, "keep the throwaway folder")
	return c
}
