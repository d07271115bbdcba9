package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dataLock is an flock on <data_dir>/scribe-serve.lock: one embedded NATS
// server per data folder. The kernel drops it when the holder dies.
type dataLock struct{ f *os.File }

func lockDataDir(dir string) (*dataLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data_dir: %w", err)
	}
	path := filepath.Join(dir, "scribe-serve.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			holder := "another process"
			if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) != "" {
				holder = "process " + strings.TrimSpace(string(b))
			}
			return nil, fmt.Errorf("data_dir %s is in use by %s (another scribe serve?); give each its own data_dir, or share a NATS cluster with nats_url", dir, holder)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dataLock{f: f}, nil
}

func (l *dataLock) release() {
	if l != nil && l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}
