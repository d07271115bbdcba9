package jsonl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrLocked is returned when another process writes the session.
var ErrLocked = errors.New("session is being written by another process")

// sessionLock is an flock on <config dir>/scribe/locks/<id>.lock. The
// kernel drops it when the holder dies, even by kill -9; the pid written in
// the file only names the holder in error messages.
type sessionLock struct{ f *os.File }

func acquireLock(ctx context.Context, path string, wait time.Duration) (*sessionLock, error) {
	if err := os.MkdirAll(filepath.Dir(path), dirMode); err != nil {
		return nil, fmt.Errorf("lock folder: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	deadline := time.Now().Add(wait)
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if wait <= 0 || time.Now().After(deadline) {
			holder := lockHolder(path)
			f.Close()
			return nil, fmt.Errorf("%w: %s (lock %s; wait with lock_wait or --lock-wait)", ErrLocked, holder, path)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &sessionLock{f: f}, nil
}

// lockHolder describes the process named in a lock file.
func lockHolder(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "holder unknown"
	}
	pid := strings.TrimSpace(string(b))
	if pid == "" {
		return "holder unknown"
	}
	desc := "pid " + pid
	if cmd, err := os.ReadFile("/proc/" + pid + "/cmdline"); err == nil && len(cmd) > 0 {
		desc += " (" + strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")) + ")"
	}
	return "held by " + desc
}

func (l *sessionLock) release() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}
