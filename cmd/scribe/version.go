package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
)

// version is set at build time with -ldflags "-X main.version=..."; when it
// is not, buildVersion reads what the Go toolchain stamped into the binary.
var version = ""

func newVersionCmd(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print scribe's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "scribe %s (%s)\n", cmdutil.BuildVersion(f.Version), buildName())
			return nil
		},
	}
}
