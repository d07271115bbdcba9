package spool

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/e0dc0000/scribe/internal/durable"
)

// ErrBusy is returned when another live process holds a spool folder (a
// lane, or a batch spool).
var ErrBusy = errors.New("spool is in use by another process")

// lockFolder takes dir/lock without waiting; a holder is named in the
// error.
func lockFolder(dir string) (*durable.Lock, error) {
	lk, err := durable.Acquire(context.Background(), filepath.Join(dir, "lock"), 0, "")
	var le *durable.LockedError
	if errors.As(err, &le) {
		return nil, fmt.Errorf("%w (%s): %s", ErrBusy, le.Holder, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("lock spool %s: %w", dir, err)
	}
	return lk, nil
}
