// Package cmdtest runs scribe's commands in process, for the tests of the
// command packages: each run makes a Factory with in-memory streams
// (cmdutil.Test), a root as the binary's (cmdutil.NewRoot, the commands,
// cmdutil.FinishRoot) and returns what it printed and its exit status
// (cmdutil.ExitCode). No binary is built or run. Only tests import it.
package cmdtest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/testenv"
)

// NewCmd makes one command with the factory (read.NewCmdShow, ...).
type NewCmd func(f *cmdutil.Factory) *cobra.Command

// Scribe runs commands in process under an environment of the test's
// own (Isolate).
type Scribe struct {
	t    testing.TB
	cmds []NewCmd
	// Stdin is what the commands read on their standard input.
	Stdin string
}

// New is the commands cmds, run in process; it isolates the test's
// environment first.
func New(t testing.TB, cmds ...NewCmd) *Scribe {
	t.Helper()
	Isolate(t)
	return &Scribe{t: t, cmds: cmds}
}

// Run runs scribe with args (the command's name first) and returns its
// standard output, its standard error and its exit status.
func (s *Scribe) Run(args ...string) (stdout, stderr string, code int) {
	s.t.Helper()
	streams, in, out, errOut := cmdutil.Test()
	in.WriteString(s.Stdin)
	f := &cmdutil.Factory{IOStreams: streams}
	root := cmdutil.NewRoot(f)
	for _, c := range s.cmds {
		root.AddCommand(c(f))
	}
	cmdutil.FinishRoot(root)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(context.Background())
	code = cmdutil.ExitCode(cmd, err, errOut)
	return out.String(), errOut.String(), code
}

// Isolate gives the test an environment of its own for the rest of it: a
// fresh home folder (no configuration file, no ~/.claude) with the XDG
// folders under it, and nothing of the caller's that points scribe
// elsewhere or changes what it prints (CLAUDE_CONFIG_DIR, SCRIBE_*,
// NO_COLOR, COLUMNS). Tests that call it cannot run in parallel.
func Isolate(t testing.TB) {
	t.Helper()
	home := t.TempDir()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "CLAUDE_CONFIG_DIR" || k == "NO_COLOR" || k == "COLUMNS" || strings.HasPrefix(k, "SCRIBE_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	t.Setenv("HOME", home)
	for k, dir := range map[string]string{"XDG_CONFIG_HOME": ".config", "XDG_DATA_HOME": ".local/share",
		"XDG_STATE_HOME": ".local/state", "XDG_CACHE_HOME": ".cache"} {
		t.Setenv(k, filepath.Join(home, dir))
	}
}

// Fixture is a fresh config folder holding a copy of the hand-made
// sessions of testdata/sdk-0.3.337 (see its README.md): sessions with
// titles, tags, tool calls, subagents, under /home/alice/src/shop.
func Fixture(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(testenv.RepoRoot(t), "testdata", "sdk-0.3.337")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatalf("cmdtest: copy %s: %v", src, err)
	}
	return dir
}
