package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=..."; when it
// is not, buildVersion reads what the Go toolchain stamped into the binary.
var version = ""

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print scribe's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "scribe %s (%s)\n", buildVersion(), buildName())
			return nil
		},
	}
}

// buildVersion is the version the binary says it is: the -X value when one
// was given, else the module's version (`go install ...@v1.2.3`), else the
// commit it was built from (`go build` in a checkout stamps vcs.revision,
// with "+dirty" when the tree had changes), else "unknown".
func buildVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return versionOf(info)
}

// versionOf picks the version from a binary's build information.
func versionOf(info *debug.BuildInfo) string {
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, when string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown (built without version control information)"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := "commit " + rev
	if dirty {
		v += "+dirty"
	}
	if when != "" {
		v += " of " + when
	}
	return v
}
