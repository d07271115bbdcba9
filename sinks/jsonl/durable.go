package jsonl

import (
	"fmt"
	"os"
	"path/filepath"
)

// replaceFile writes the parts, one after the other, to path atomically:
// a temporary file in the same folder (mode 0600, named .<name>.tmp-*),
// fsync, rename over path, fsync of the folder (made 0700 when missing). A
// reader sees the old content or the new, never a part.
func replaceFile(path string, parts ...[]byte) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("create folder %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err = f.Chmod(fileMode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	for _, p := range parts {
		if _, err = f.Write(p); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return syncDir(dir)
}
