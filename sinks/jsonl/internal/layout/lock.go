package layout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/e0dc0000/scribe/internal/durable"
)

// ErrLocked is returned when another process writes the session.
var ErrLocked = errors.New("session is being written by another process")

// SessionLock is an flock on <config dir>/scribe/locks/<id>.lock
// (durable.Lock): the kernel drops it when the holder dies, even by kill
// -9; the pid written in the file only names the holder in error messages.
type SessionLock struct{ lk *durable.Lock }

// AcquireLock takes the lock on path, waiting up to wait (none when <= 0).
func AcquireLock(ctx context.Context, path string, wait time.Duration) (*SessionLock, error) {
	lk, err := durable.Acquire(ctx, path, max(wait, 0), "")
	var le *durable.LockedError
	if errors.As(err, &le) {
		return nil, fmt.Errorf("%w: %s (lock %s; wait with lock_wait or --lock-wait)", ErrLocked, le.Holder, path)
	}
	if err != nil {
		return nil, err
	}
	return &SessionLock{lk: lk}, nil
}

// Release gives the lock back (nothing for a nil lock).
func (l *SessionLock) Release() {
	if l == nil {
		return
	}
	l.lk.Release()
}

// LockSession takes a session's writer lock, the one the store itself
// holds while it writes the session, waiting up to wait; release gives it
// back. Commands that replace a session's files (pull) take it through
// here, so a contender always learns the holder's pid.
func (l Layout) LockSession(ctx context.Context, id string, wait time.Duration) (release func(), err error) {
	lk, err := l.Lock(ctx, id, wait)
	if err != nil {
		return nil, err
	}
	return lk.Release, nil
}
