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

	"github.com/e0dc0000/scribe/internal/cli/cloud"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/cli/install"
	"github.com/e0dc0000/scribe/internal/cli/manage"
	"github.com/e0dc0000/scribe/internal/cli/read"
	"github.com/e0dc0000/scribe/internal/cli/record"
	"github.com/e0dc0000/scribe/internal/cli/secrets"
	"github.com/e0dc0000/scribe/internal/cli/usagecmd"
)

// newFactory is what every command is made with: the process's streams and
// this build's hand-overs to the full build (lite.go, full.go).
func newFactory() *cmdutil.Factory {
	return &cmdutil.Factory{
		IOStreams:      cmdutil.System(),
		Version:        version,
		NeedsFull:      needsFull,
		FullFor:        fullFor,
		DropFromSearch: dropFromSearch,
	}
}

func newRoot() *cobra.Command {
	f := newFactory()
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
				return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--trace: %w", err)}
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
			return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--cpu-profile: %w", err)}
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpu-profile: %w", err)
		}
		prev := stopProfile
		stopProfile = func() { pprof.StopCPUProfile(); f.Close(); prev() }
		return nil
	}
	root.AddCommand(
		// Recording.
		record.NewCmdRecord(f), record.NewCmdWatch(f), record.NewCmdHook(f), install.NewCmdHooks(f),
		// Reading.
		read.NewCmdLs(f), read.NewCmdShow(f), read.NewCmdInfo(f), read.NewCmdExport(f), read.NewCmdImport(f),
		// Changing and looking after stored sessions.
		manage.NewCmdRm(f), manage.NewCmdTrash(f), manage.NewCmdRename(f), manage.NewCmdTag(f),
		manage.NewCmdArchive(f, true), manage.NewCmdArchive(f, false), manage.NewCmdGC(f), manage.NewCmdDu(f),
		manage.NewCmdDoctor(f), manage.NewCmdRelocate(f), manage.NewCmdIndex(f),
		manage.NewCmdCheckpoint(f), manage.NewCmdCheckpoints(f), manage.NewCmdFork(f), manage.NewCmdResume(f),
		// The team server.
		cloud.NewCmdPush(f), cloud.NewCmdPull(f),
		// Secrets, usage, this binary.
		secrets.NewCmdScan(f), secrets.NewCmdRedact(f), usagecmd.NewCmdUsage(f), newVersionCmd(f),
	)
	// The full build's commands: in the light build, stubs that hand the
	// command to scribe-full (fullonly.go, lite.go, full.go).
	root.AddCommand(fullCommands(f)...)
	addFromFlags(root)
	read.AddCompletions(f, root)
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
		return &cmdutil.ExitError{Code: 2, Err: err}
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
				return &cmdutil.ExitError{Code: 2, Err: errors.New(msg)}
			}
		} else if args := c.Args; args != nil {
			c.Args = func(c *cobra.Command, a []string) error {
				if err := args(c, a); err != nil {
					return &cmdutil.ExitError{Code: 2, Err: err}
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
	var ee *cmdutil.ExitError
	if errors.As(err, &ee) {
		code = ee.Code
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

// addFromFlags gives show, info and fork a --from flag for reading a
// jsonl store other than Claude's folder, unless they have one already.
func addFromFlags(root *cobra.Command) {
	for _, c := range root.Commands() {
		switch c.Name() {
		case "show", "info", "fork", "export":
			if c.Flags().Lookup("from") == nil {
				c.Flags().String("from", "", "read the sessions of this jsonl store (type/name, such as jsonl/archive) instead of Claude's folder")
			}
		}
	}
}
