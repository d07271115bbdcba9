package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/e0dc0000/scribe/internal/durable"
)

// dataLock is an flock on <data_dir>/scribe-serve.lock (durable.Lock): one
// embedded NATS server per data folder. The kernel drops it when the
// holder dies.
type dataLock struct{ lk *durable.Lock }

func lockDataDir(dir string) (*dataLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data_dir: %w", err)
	}
	lk, err := durable.Acquire(context.Background(), filepath.Join(dir, "scribe-serve.lock"), 0, "")
	var le *durable.LockedError
	if errors.As(err, &le) {
		return nil, fmt.Errorf("data_dir %s is in use (%s; another scribe serve?); give each its own data_dir, or share a NATS cluster with nats_url", dir, le.Holder)
	}
	if err != nil {
		return nil, err
	}
	return &dataLock{lk: lk}, nil
}

func (l *dataLock) release() {
	if l != nil {
		l.lk.Release()
		l.lk = nil
	}
}
