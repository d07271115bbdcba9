//go:build !unix

package spool

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockDir opens dir/lock; without flock(2) the spool is not protected from
// a second host.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open spool lock: %w", err)
	}
	return f, nil
}

func unlock(f *os.File) {
	if f != nil {
		_ = f.Close()
	}
}
