// Command scribe records, lists and resumes AI coding-agent sessions in
// Claude Code's own on-disk format.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

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
	pf.String("config", "", "HCL configuration file (default: the built-in configuration, see example.hcl)")
	pf.String("config-dir", "", "Claude's config folder (default: $CLAUDE_CONFIG_DIR, else ~/.claude)")
	pf.String("log-level", "", "log level: trace, debug, info, warn, error, off (default info)")
	pf.Bool("log-json", false, "log as JSON lines")
	root.AddCommand(newRecordCmd(), newConfigCmd(), newVersionCmd(), newDemoCmd(), newLsCmd(), newShowCmd(), newInfoCmd(), newResumeCmd(), newForkCmd(), newServeCmd(), newTokenCmd(), newPluginCmd(), newPluginsCmd(), newPushCmd(), newPullCmd(), newCheckpointCmd(), newCheckpointsCmd(), newIndexCmd())
	return root
}

func main() {
	err := newRoot().Execute()
	if err == nil {
		return
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	fmt.Fprintln(os.Stderr, "scribe:", err)
	os.Exit(code)
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print scribe's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "scribe", version)
			return nil
		},
	}
}
