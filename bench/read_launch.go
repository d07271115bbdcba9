package main

// How the read benchmark times a child process: through a tiny launcher
// that reports the child's wall time, CPU and peak RSS.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// readMeasure runs a case once through the launcher, which reports the
// child's wall time (start to exit), CPU and peak RSS.
func readMeasure(ctx context.Context, launcher string, c *readCase) (readRun, []byte, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return readRun{}, nil, err
	}
	defer pr.Close()
	cmd := exec.CommandContext(ctx, launcher, append([]string{c.bin}, c.args...)...)
	cmd.Dir, cmd.Env = c.dir, c.env
	if c.stdin != "" {
		cmd.Stdin = strings.NewReader(c.stdin)
	}
	cmd.ExtraFiles = []*os.File{pw}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return readRun{}, nil, err
	}
	report, rerr := io.ReadAll(pr)
	err = cmd.Wait()
	var r struct {
		Error   string `json:"error"`
		Wall    int64  `json:"wall_ns"`
		CPU     int64  `json:"cpu_ns"`
		MaxRSS  int64  `json:"max_rss_kb"`
		Started bool   `json:"started"`
	}
	if rerr == nil {
		rerr = json.Unmarshal(report, &r)
	}
	switch {
	case err != nil || rerr != nil || r.Error != "":
		return readRun{}, nil, fmt.Errorf("%s: %v %v %s\nstderr:\n%s", c.Command, err, rerr, r.Error, tail(errb.String()))
	case !r.Started:
		return readRun{}, nil, fmt.Errorf("%s: the launcher did not start it", c.Command)
	}
	return readRun{Wall: time.Duration(r.Wall), CPU: time.Duration(r.CPU), RSSKB: r.MaxRSS}, out.Bytes(), nil
}

// readLauncherSource is a tiny program that runs a command (with its own
// standard input) and reports its rusage on fd 3. The measured processes are its children, not the
// harness's: Linux carries the address space's high-water mark over execve,
// and Go starts children with vfork, so a child of this (large) process
// would report at least this process's peak RSS. The launcher's own peak
// is a couple of MB, below anything measured.
const readLauncherSource = `package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	rep := map[string]any{}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	rep["wall_ns"] = time.Since(start).Nanoseconds()
	if ps := cmd.ProcessState; ps != nil {
		rep["started"] = true
		rep["cpu_ns"] = (ps.UserTime() + ps.SystemTime()).Nanoseconds()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			rep["max_rss_kb"] = ru.Maxrss
		}
	}
	if err != nil {
		rep["error"] = err.Error()
	}
	json.NewEncoder(os.NewFile(3, "report")).Encode(rep)
}
`

// buildReadLauncher builds the launcher into tmp/bin.
func buildReadLauncher(ctx context.Context, tmp string) (string, error) {
	src := filepath.Join(tmp, "launcher")
	if err := os.MkdirAll(src, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module launcher\n\ngo 1.22\n"), 0o600); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(readLauncherSource), 0o600); err != nil {
		return "", err
	}
	bin := filepath.Join(tmp, "bin", "launcher")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the launcher: %v\n%s", err, b)
	}
	return bin, nil
}
