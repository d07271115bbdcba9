package durable

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

// ErrLocked is what a lock held by another process past the wait is
// (errors.Is); the error itself is a *LockedError naming the holder.
var ErrLocked = errors.New("locked by another process")

// LockedError says who holds a lock that could not be taken.
type LockedError struct {
	Path string
	// Holder describes the holder: "held by pid N (command line)", or
	// "holder unknown" when the file names no live process.
	Holder string
}

func (e *LockedError) Error() string { return "lock " + e.Path + " " + e.Holder }

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// holderWidth is the fixed size of the holder record: every holder writes
// all of it in one pwrite, never a truncate, so a contender reading the
// file sees the previous holder's record or the new one, never an empty
// or mixed one.
const holderWidth = 64

// Lock is an exclusive flock(2) on a lock file. The kernel drops it when
// the holder dies, even by kill -9; the record written in the file (an
// optional role and the pid) only names the holder to contenders.
type Lock struct {
	f    *os.File
	path string
}

// pollEvery is how often a waiting contender tries again.
const pollEvery = 10 * time.Millisecond

// Acquire takes the exclusive lock on path (creating the file and its
// folder, 0600 and 0700), waiting up to wait: 0 tries once, a negative
// wait waits until ctx ends. role, when set, is written before the pid
// ("watch 1234"), so that a contender can tell what holds it (see Role).
// Past the wait the error is a *LockedError.
func Acquire(ctx context.Context, path string, wait time.Duration, role string) (*Lock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("lock folder: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	deadline := time.Now().Add(wait)
	for {
		err = flock(f, unix.LOCK_EX)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if wait == 0 || (wait > 0 && time.Now().After(deadline)) {
			// A holder writes its record just after its flock: a record
			// read in between names the holder before it. Let it settle,
			// then try once more; the refusal names who holds it then.
			if err = Sleep(ctx, settle); err == nil {
				err = flock(f, unix.LOCK_EX)
			}
			if err == nil {
				break
			}
			f.Close()
			return nil, &LockedError{Path: path, Holder: Holder(path)}
		}
		if err := Sleep(ctx, pollEvery); err != nil {
			f.Close()
			return nil, err
		}
	}
	rec := strings.TrimSpace(role + " " + strconv.Itoa(os.Getpid()))
	_, _ = f.WriteAt([]byte(fmt.Sprintf("%-*s\n", holderWidth-1, rec)), 0)
	return &Lock{f: f, path: path}, nil
}

// settle is how long a refused contender waits before its last try and
// reading the holder record.
const settle = 2 * time.Millisecond

func flock(f *os.File, how int) error {
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err != unix.EINTR {
			return err
		}
	}
}

// Release gives the lock back. The holder record stays: the next holder
// overwrites it, and a contender checks that it names a live process.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	_ = l.f.Close()
	l.f = nil
}

// Path is the lock file's path.
func (l *Lock) Path() string { return l.path }

// record reads a lock file's holder record: its role (empty when none)
// and pid (0 when none).
func record(path string) (role string, pid int) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", 0
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return "", 0
	}
	pid, _ = strconv.Atoi(fields[len(fields)-1])
	return strings.Join(fields[:len(fields)-1], " "), pid
}

// Role is the role the last holder of path wrote ("" when none). A holder
// that died leaves it: pair it with a failed Acquire to know it is live.
func Role(path string) string {
	role, _ := record(path)
	return role
}

// Holder describes the process named in a lock file: "held by pid N
// (command line)". The holder writes its record just after it takes the
// lock, so a record that names no live process (the previous holder's)
// is read again for a moment before it is reported as "holder unknown".
func Holder(path string) string {
	var pid int
	for try := 0; try < 50; try++ {
		if _, pid = record(path); pid > 0 && unix.Kill(pid, 0) != unix.ESRCH {
			break
		}
		time.Sleep(pollEvery)
	}
	if pid <= 0 {
		return "holder unknown"
	}
	desc := "pid " + strconv.Itoa(pid)
	if cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && len(cmd) > 0 {
		desc += " (" + strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " ")) + ")"
	}
	return "held by " + desc
}

// Held reports whether some process holds the lock on path, by trying a
// shared lock without waiting and giving it back at once. A missing file
// is not held.
func Held(path string) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	for {
		err = unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err == nil {
		_ = unix.Flock(fd, unix.LOCK_UN)
		return false
	}
	return errors.Is(err, unix.EWOULDBLOCK)
}
