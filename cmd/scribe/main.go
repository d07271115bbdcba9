// Command scribe records, lists and resumes AI coding-agent sessions in
// Claude Code's own on-disk format.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"

	"github.com/spf13/cobra"
)

// exitError carries an exit status out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "scribe",
		Short:         "Session persistence for AI coding agents, in Claude Code's own format",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	pf := root.PersistentFlags()
	pf.String("config", "", "HCL configuration file, over the built-in one (default: $SCRIBE_CONFIG, else $XDG_CONFIG_HOME/scribe/config.hcl or ~/.config/scribe/config.hcl if there; see scribe config path)")
	pf.String("config-dir", "", "Claude Code's folder, which scribe reads and mirrors; not scribe's configuration (default: $CLAUDE_CONFIG_DIR, else ~/.claude)")
	pf.String("log-level", "", "log level: trace, debug, info, warn, error, off (default info)")
	pf.Bool("log-json", false, "log as JSON lines")
	pf.String("cpu-profile", "", "write a CPU profile of the command to this file (for bench/)")
	_ = pf.MarkHidden("cpu-profile")
	pf.String("trace", "", "write an execution trace of the command to this file (for bench/)")
	_ = pf.MarkHidden("trace")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if tp, _ := cmd.Flags().GetString("trace"); tp != "" {
			f, err := os.Create(tp)
			if err != nil {
				return &exitError{code: 2, err: fmt.Errorf("--trace: %w", err)}
			}
			if err := trace.Start(f); err != nil {
				f.Close()
				return fmt.Errorf("--trace: %w", err)
			}
			prev := stopProfile
			stopProfile = func() { prev(); trace.Stop(); f.Close() }
		}
		path, _ := cmd.Flags().GetString("cpu-profile")
		if path == "" {
			return nil
		}
		f, err := os.Create(path)
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("--cpu-profile: %w", err)}
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpu-profile: %w", err)
		}
		prev := stopProfile
		stopProfile = func() { pprof.StopCPUProfile(); f.Close(); prev() }
		return nil
	}
	root.AddCommand(newRecordCmd(), newConfigCmd(), newVersionCmd(), newDemoCmd(), newLsCmd(), newShowCmd(), newInfoCmd(), newResumeCmd(), newForkCmd(), newServeCmd(), newTokenCmd(), newPluginCmd(), newPluginsCmd(), newPushCmd(), newPullCmd(), newCheckpointCmd(), newCheckpointsCmd(), newIndexCmd(), newCopyCmd(), newS3Cmd())
	root.AddCommand(newScanCmd(), newRedactCmd())
	root.AddCommand(newRmCmd(), newTrashCmd(), newRenameCmd(), newTagCmd(), newArchiveCmd(true), newArchiveCmd(false), newGCCmd(), newDuCmd(), newDoctorCmd(), newExportCmd(), newImportCmd(), newRelocateCmd(), newSearchCmd(), newMcpCmd(), newUsageCmd(), newUICmd())
	root.AddCommand(newWatchCmd(), newHookCmd(), newHooksCmd())
	addFromFlags(root)
	addCompletions(root)
	usageExits(root)
	return root
}

// usageExits makes every usage error exit 2, for every command: an unknown
// flag or a bad flag value (the root's flag error func, which subcommands
// inherit), a wrong number of arguments (each command's Args check), and an
// unknown subcommand (a group's own Args check: cobra's default one returns
// a plain error, exit 1).
func usageExits(root *cobra.Command) {
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: 2, err: err}
	})
	root.SuggestionsMinimumDistance = 2
	// cobra adds its completion command only in Execute; added now, its
	// group exits 2 on an unknown shell as every group does.
	root.InitDefaultCompletionCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() && !c.Runnable() {
			// A group runs (to print its help) so that its Args check
			// sees an unknown subcommand.
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
			c.Args = func(c *cobra.Command, a []string) error {
				if len(a) == 0 {
					return nil
				}
				msg := fmt.Sprintf("unknown command %q for %q", a[0], c.CommandPath())
				if s := c.SuggestionsFor(a[0]); len(s) > 0 {
					msg += fmt.Sprintf("; did you mean %q?", s[0])
				}
				return &exitError{code: 2, err: errors.New(msg)}
			}
		} else if args := c.Args; args != nil {
			c.Args = func(c *cobra.Command, a []string) error {
				if err := args(c, a); err != nil {
					return &exitError{code: 2, err: err}
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// stopProfile ends the --cpu-profile of the command, if one runs.
var stopProfile = func() {}

func main() {
	cmd, err := newRoot().ExecuteC()
	stopProfile()
	if err == nil {
		return
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	fmt.Fprintln(os.Stderr, "scribe:", err.Error())
	if code == 2 && cmd != nil && cmd.Runnable() {
		// A usage error: the usage line, and where the rest is.
		use := cmd.UseLine()
		if cmd.HasSubCommands() {
			use = cmd.CommandPath() + " COMMAND"
		}
		fmt.Fprintf(os.Stderr, "Usage: %s\nRun '%s --help' for more.\n", use, cmd.CommandPath())
	}
	os.Exit(code)
}
