package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/internal/testenv"
)

// The one way these tests run the scribe binary to its end (runScribe);
// tests that drive a process while it runs (signals, a killed writer, a
// server) start it themselves.

// runOpts say how runScribe runs the binary. The zero value runs the
// light build (testenv.BuildScribe, which hands over to scribe-full) in
// cleanEnv's environment, with nothing on its standard input, in the test
// process's folder.
type runOpts struct {
	// base is the environment to start from (nil: cleanEnv()).
	base []string
	// env is added after base (the last value of a name wins).
	env []string
	// stdin is the binary's standard input.
	stdin string
	// dir is its working folder ("": the test process's).
	dir string
	// bin runs another build (scribe-full, a copy) instead.
	bin string
	// shell is a bash command run first (a ulimit); the binary is exec'd
	// after it.
	shell string
	// timeout kills the binary once it passes and fails the test: a guard
	// against a hang, never a claim about speed.
	timeout time.Duration
	// combined puts standard error into stdout, interleaved as written
	// (exec.Cmd.CombinedOutput); stderr is then "".
	combined bool
}

// runScribe runs the scribe binary with args and returns its standard
// output, its standard error and its exit status (-1 when a signal killed
// it), failing the test only when the binary cannot run or, with a
// timeout, does not end in time.
func runScribe(t testing.TB, o runOpts, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin := o.bin
	if bin == "" {
		bin = testenv.BuildScribe(t)
	}
	ctx := context.Background()
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	if o.shell != "" {
		cmd = exec.CommandContext(ctx, "bash", append([]string{"-c", o.shell + `; exec "$0" "$@"`, bin}, args...)...)
	}
	if o.timeout > 0 {
		cmd.WaitDelay = time.Second
	}
	cmd.Dir = o.dir
	base := o.base
	if base == nil {
		base = cleanEnv()
	}
	cmd.Env = append(append([]string{}, base...), o.env...)
	cmd.Stdin = strings.NewReader(o.stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if o.combined {
		cmd.Stderr = &out
	}
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("scribe %s: still running after %v (killed)\nstderr:\n%s", strings.Join(args, " "), o.timeout, errb.String())
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run scribe %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// mustScribe is runScribe failing the test unless scribe exits 0; it
// returns the standard output.
func mustScribe(t testing.TB, o runOpts, args ...string) string {
	t.Helper()
	out, errs, code := runScribe(t, o, args...)
	if code != 0 {
		t.Fatalf("scribe %v: exit %d\n%s\n%s", args, code, out, errs)
	}
	return out
}

// scribeJSON is mustScribe decoding the standard output into v; it
// returns the output as printed.
func scribeJSON(t testing.TB, o runOpts, v any, args ...string) string {
	t.Helper()
	out := mustScribe(t, o, args...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("scribe %v printed %.1000s: %v", args, out, err)
	}
	return out
}
