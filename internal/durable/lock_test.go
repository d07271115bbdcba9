package durable

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary act as another process holding a lock:
// with DURABLE_HOLD set it takes the lock (role DURABLE_ROLE), says
// "held", and keeps it until its stdin closes; with DURABLE_FLAP it takes
// and gives back the lock in a loop until stdin closes.
func TestMain(m *testing.M) {
	if path := os.Getenv("DURABLE_HOLD"); path != "" {
		l, err := Acquire(context.Background(), path, -1, os.Getenv("DURABLE_ROLE"))
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("held")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		l.Release()
		os.Exit(0)
	}
	if path := os.Getenv("DURABLE_FLAP"); path != "" {
		done := make(chan struct{})
		go func() { _, _ = bufio.NewReader(os.Stdin).ReadString('\n'); close(done) }()
		fmt.Println("flapping")
		for {
			select {
			case <-done:
				os.Exit(0)
			default:
			}
			if l, err := Acquire(context.Background(), path, -1, ""); err == nil {
				time.Sleep(time.Millisecond)
				l.Release()
			}
		}
	}
	os.Exit(m.Run())
}

type helper struct {
	cmd   *exec.Cmd
	stdin interface{ Close() error }
}

func startHelper(t *testing.T, env ...string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, stdin: stdin}
	t.Cleanup(func() { h.stdin.Close(); _ = cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || (line != "held\n" && line != "flapping\n") {
		t.Fatalf("helper said %q, %v", line, err)
	}
	return h
}

// TestLockNamesHolderAcrossProcesses: a lock held by another process is
// refused with ErrLocked naming that process's pid and role; once the
// holder exits, the lock is free and the role stays readable.
func TestLockNamesHolderAcrossProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "locks", "x.lock")
	h := startHelper(t, "DURABLE_HOLD="+path, "DURABLE_ROLE=watch")
	if !Held(path) {
		t.Fatal("Held: false while another process holds the lock")
	}
	_, err := Acquire(context.Background(), path, 0, "")
	var le *LockedError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &le) {
		t.Fatalf("contender got %v, want ErrLocked", err)
	}
	if want := fmt.Sprintf("held by pid %d", h.cmd.Process.Pid); !strings.HasPrefix(le.Holder, want) {
		t.Fatalf("holder %q, want %q", le.Holder, want)
	}
	if Role(path) != "watch" {
		t.Fatalf("role %q, want watch", Role(path))
	}
	// A wait that ends before the holder lets go fails the same way.
	if _, err := Acquire(context.Background(), path, 30*time.Millisecond, ""); !errors.Is(err, ErrLocked) {
		t.Fatalf("waiting contender got %v", err)
	}
	// A cancelled wait returns the context's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Acquire(ctx, path, -1, ""); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait got %v", err)
	}
	h.stdin.Close()
	_ = h.cmd.Wait()
	l, err := Acquire(context.Background(), path, 0, "hook")
	if err != nil {
		t.Fatalf("the lock of an exited holder is not free: %v", err)
	}
	defer l.Release()
	if Role(path) != "hook" {
		t.Fatalf("role %q after a new holder, want hook", Role(path))
	}
}

// TestLockHolderKnownUnderContention: while another process takes and
// gives back the lock as fast as it can, every refusal still names it (the
// record is never empty while the lock is held).
func TestLockHolderKnownUnderContention(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	// A previous holder that died left a record naming no live process.
	if err := os.WriteFile(path, []byte("999999999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHelper(t, "DURABLE_FLAP="+path)
	want := fmt.Sprintf("held by pid %d", h.cmd.Process.Pid)
	refused := 0
	for try := 0; refused < 20 && try < 100000; try++ {
		l, err := Acquire(context.Background(), path, 0, "")
		if err == nil {
			l.Release()
			continue
		}
		var le *LockedError
		if !errors.As(err, &le) {
			t.Fatal(err)
		}
		refused++
		if !strings.HasPrefix(le.Holder, want) {
			t.Fatalf("refusal %d: holder %q, want %q", refused, le.Holder, want)
		}
	}
	if refused == 0 {
		t.Fatal("never contended with the other process")
	}
}
