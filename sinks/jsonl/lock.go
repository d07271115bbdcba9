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
	// One write of a fixed width, never a truncate: a contender reading the
	// file sees the old holder's pid or this one, never an empty file.
	_, _ = f.WriteAt([]byte(fmt.Sprintf("%-20d\n", os.Getpid())), 0)
	return &sessionLock{f: f}, nil
}

// lockHolder describes the process named in a lock file. The holder
// writes its pid just after taking the lock, so a pid that names no live
// process (the previous holder's) or an empty file is read again for a
// moment.
func lockHolder(path string) string {
	var pid string
	for try := 0; try < 50; try++ {
		b, err := os.ReadFile(path)
		if err == nil {
			pid = strings.TrimSpace(string(b))
			if n, err := strconv.Atoi(pid); err == nil && n > 0 && unix.Kill(n, 0) != unix.ESRCH {
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
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
	// The pid stays: the next holder overwrites it, and a contender
	// checks that it names a live process.
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}

// LockSession takes a session's writer lock, the one the store itself
// holds while it writes the session, waiting up to wait; release gives it
// back. Commands that replace a session's files (pull) take it through
// here, so a contender always learns the holder's pid.
func (l Layout) LockSession(ctx context.Context, id string, wait time.Duration) (release func(), err error) {
	lk, err := l.lockSession(ctx, id, wait)
	if err != nil {
		return nil, err
	}
	return lk.release, nil
}
