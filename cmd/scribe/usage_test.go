package main_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/internal/testenv"
)

// Usage errors exit 2 for every command, as the README says: an unknown
// flag, a bad flag value, a wrong number of arguments, an unknown command.
// Nothing runs: each fails before the command starts.
func TestUsageErrorsExit2(t *testing.T) {
	bin := testenv.BuildScribe(t)
	dir := t.TempDir()
	commands := [][]string{
		{"record"}, {"config", "check"}, {"version"}, {"demo"}, {"ls"}, {"show", "x"}, {"info", "x"},
		{"resume", "x"}, {"fork", "x"}, {"serve"}, {"token", "new"}, {"token", "hash"}, {"plugin", "describe", "x"},
		{"plugins", "status"}, {"push"}, {"pull", "x"}, {"checkpoint", "x"}, {"checkpoints", "x"},
		{"index", "rebuild"}, {"index", "export"}, {"config"}, {"index"}, {},
	}
	run := func(args ...string) (int, string) {
		cmd := exec.Command(bin, append(args, "--config-dir", dir)...)
		cmd.Env = cleanEnv()
		cmd.Stdin = strings.NewReader("")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), errb.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, errb.String()
	}
	for _, c := range commands {
		if code, stderr := run(append(c, "--no-such-flag")...); code != 2 || !strings.Contains(stderr, "unknown flag") {
			t.Errorf("scribe %s --no-such-flag: exit %d, want 2; stderr %q", strings.Join(c, " "), code, stderr)
		}
	}
	for _, args := range [][]string{
		{"ls", "--limit", "many"}, {"record", "--flush-interval", "soon"}, {"resume", "x", "--json=maybe"},
		{"resume"}, {"resume", "a", "b"}, {"show"}, {"fork"}, {"pull", "a", "b"}, {"version", "extra"}, {"ls", "extra"},
		{"no-such-command"}, {"config", "no-such-command"}, {"index", "no-such-command"},
		{"completion", "tcsh"}, {"token", "new", "--scopes", "admin"},
	} {
		code, stderr := run(args...)
		if code != 2 {
			t.Errorf("scribe %s: exit %d, want 2; stderr %q", strings.Join(args, " "), code, stderr)
		}
		// A usage error names the usage, not a configuration.
		if !strings.Contains(stderr, "\nUsage: scribe") || strings.Contains(stderr, "server configuration") {
			t.Errorf("scribe %s: stderr %q, want the usage line", strings.Join(args, " "), stderr)
		}
	}
	// Help is not an error.
	for _, args := range [][]string{{}, {"config"}, {"index"}, {"ls", "--help"}, {"completion", "bash"}} {
		if code, stderr := run(args...); code != 0 {
			t.Errorf("scribe %s: exit %d, want 0; stderr %q", strings.Join(args, " "), code, stderr)
		}
	}
}
