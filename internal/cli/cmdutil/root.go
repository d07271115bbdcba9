package cmdutil

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// The root command every command runs under, in the binary and in the
// in-process tests alike: NewRoot, the commands added, FinishRoot, then
// ExitCode for what ExecuteC returned.

// NewRoot is scribe's root command: its global flags (the ones the
// configuration reads: --config, --config-dir, --log-level, --log-json)
// and f's streams; errors and usage are left to ExitCode.
func NewRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:           "scribe",
		Short:         "Session persistence for AI coding agents, in Claude Code's own format",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(f.IOStreams.In)
	root.SetOut(f.IOStreams.Out)
	root.SetErr(f.IOStreams.ErrOut)
	pf := root.PersistentFlags()
	pf.String("config", "", "HCL configuration file, over the built-in one (default: $SCRIBE_CONFIG, else $XDG_CONFIG_HOME/scribe/config.hcl or ~/.config/scribe/config.hcl if there; see scribe config path)")
	pf.String("config-dir", "", "Claude Code's folder, which scribe reads and mirrors; not scribe's configuration (default: $CLAUDE_CONFIG_DIR, else ~/.claude)")
	pf.String("log-level", "", "log level: trace, debug, info, warn, error, off (default info)")
	pf.Bool("log-json", false, "log as JSON lines")
	return root
}

// FinishRoot is the last step of a root once every command is added:
// show, info, fork and export get a --from flag when they have none, and
// every usage error exits 2 (UsageExits).
func FinishRoot(root *cobra.Command) {
	addFromFlags(root)
	UsageExits(root)
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

// UsageExits makes every usage error exit 2, for every command: an unknown
// flag or a bad flag value (the root's flag error func, which subcommands
// inherit), a wrong number of arguments (each command's Args check), and an
// unknown subcommand (a group's own Args check: cobra's default one returns
// a plain error, exit 1).
func UsageExits(root *cobra.Command) {
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &ExitError{Code: 2, Err: err}
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
				return &ExitError{Code: 2, Err: errors.New(msg)}
			}
		} else if args := c.Args; args != nil {
			c.Args = func(c *cobra.Command, a []string) error {
				if err := args(c, a); err != nil {
					return &ExitError{Code: 2, Err: err}
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

// ExitCode is the exit status of what root.ExecuteC returned: 0 without
// an error; else the error is said on stderr, and its status is the
// ExitError's (1 for any other error). A usage error (2) of a command
// that runs is followed by the usage line and where the rest is.
func ExitCode(cmd *cobra.Command, err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	code := 1
	var ee *ExitError
	if errors.As(err, &ee) {
		code = ee.Code
	}
	fmt.Fprintln(stderr, "scribe:", err.Error())
	if code == 2 && cmd != nil && cmd.Runnable() {
		use := cmd.UseLine()
		if cmd.HasSubCommands() {
			use = cmd.CommandPath() + " COMMAND"
		}
		fmt.Fprintf(stderr, "Usage: %s\nRun '%s --help' for more.\n", use, cmd.CommandPath())
	}
	return code
}
