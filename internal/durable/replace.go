// Package durable is the one home of the ways scribe writes to disk so
// that a crash, even kill -9 or a power cut, leaves either the old state or
// the new one: atomic replace (a temporary file in the same folder, fsync,
// rename, fsync of the folder), directory sync, and advisory locks that
// name their holder. It also holds the two small scheduling helpers every
// writer needs: a sleep that a context cuts short, and a bounded parallel
// loop that stops at the first error.
package durable

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// step names a point of Replace at which tests inject a failure.
type step string

const (
	stepWritten step = "written"
	stepSynced  step = "synced"
	stepClosed  step = "closed"
	stepRenamed step = "renamed"
)

// failAt, set by tests only, makes Replace fail at a step.
var failAt func(step) error

func inject(s step) error {
	if failAt == nil {
		return nil
	}
	return failAt(s)
}

// Options tune a replace. The zero value writes a 0600 file and makes
// missing folders 0700.
type Options struct {
	// Perm is the new file's mode (0600 when zero).
	Perm os.FileMode
	// DirPerm is the mode of the folders made when missing (0700 when
	// zero).
	DirPerm os.FileMode
	// Backup, when set and path exists, keeps what path held as
	// <path>.bak-<Backup> (a hard link, or a synced copy where links are
	// refused); a name already taken gets -1, -2, … appended.
	Backup string
	// NoSync leaves out the fsyncs (of the file and of its folder): readers
	// still see the old content or the new, never a part, but a crash can
	// lose the write or, on some file systems, leave an empty file. For
	// caches, which check what they read and can be rebuilt.
	NoSync bool
	// NoReplace makes a new file only: when path exists the write fails
	// with an error wrapping fs.ErrExist and path is left alone (a hard
	// link puts the file in place, which the kernel refuses over a taken
	// name).
	NoReplace bool
}

// WriteFile replaces path with data atomically; see Replace.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	_, err := Replace(path, Options{Perm: perm}, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	return err
}

// WriteFileNew writes data to path, which must not exist, atomically; when
// it does the error wraps fs.ErrExist (see Options.NoReplace).
func WriteFileNew(path string, data []byte, perm os.FileMode) error {
	_, err := Replace(path, Options{Perm: perm, NoReplace: true}, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
	return err
}

// Replace makes path hold what fill writes, atomically: a temporary file
// in the same folder (named .<name>.tmp-*) is filled, fsynced and renamed
// over path, then the folder is fsynced. A reader sees the old content or
// the new one, never a part; on any failure the temporary file is removed
// and path is left as it was. It returns the backup's path when
// opts.Backup kept one.
func Replace(path string, opts Options, fill func(io.Writer) error) (backup string, err error) {
	perm, dirPerm := opts.Perm, opts.DirPerm
	if perm == 0 {
		perm = 0o600
	}
	if dirPerm == 0 {
		dirPerm = 0o700
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return "", fmt.Errorf("create folder %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				_ = f.Close()
			}
			_ = os.Remove(tmp)
		}
	}()
	if err = fillFile(f, perm, fill); err != nil {
		return "", fmt.Errorf("write %s: %w", tmp, err)
	}
	if !opts.NoSync {
		if err = syncFile(f); err != nil {
			return "", fmt.Errorf("fsync %s: %w", tmp, err)
		}
	}
	closed = true
	if err = f.Close(); err == nil {
		err = inject(stepClosed)
	}
	if err != nil {
		return "", fmt.Errorf("close %s: %w", tmp, err)
	}
	if opts.Backup != "" {
		if backup, err = keepBackup(path, opts.Backup); err != nil {
			return "", fmt.Errorf("back up %s: %w", path, err)
		}
	}
	if err = install(tmp, path, opts.NoReplace); err == nil {
		err = inject(stepRenamed)
	}
	if err != nil {
		return "", fmt.Errorf("replace %s: %w", path, err)
	}
	if opts.NoSync {
		return backup, nil
	}
	return backup, SyncDir(dir)
}

// install puts the written temporary file at path: a rename, or with
// noReplace a hard link that fails when path exists (then the temporary
// name goes).
func install(tmp, path string, noReplace bool) error {
	if !noReplace {
		return os.Rename(tmp, path)
	}
	if _, err := os.Lstat(path); err == nil {
		return fs.ErrExist
	}
	err := os.Link(tmp, path)
	switch {
	case err == nil:
		return os.Remove(tmp)
	case errors.Is(err, fs.ErrExist):
		return fs.ErrExist
	}
	// A file system without hard links: rename, after a last check.
	if _, serr := os.Lstat(path); serr == nil {
		return fs.ErrExist
	}
	return os.Rename(tmp, path)
}

func fillFile(f *os.File, perm os.FileMode, fill func(io.Writer) error) error {
	if err := f.Chmod(perm); err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 64<<10)
	if err := fill(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return inject(stepWritten)
}

func syncFile(f *os.File) error {
	if err := f.Sync(); err != nil {
		return err
	}
	return inject(stepSynced)
}

// keepBackup links (or copies) path to a free <path>.bak-<stamp>[-n]; a
// missing path has no backup.
func keepBackup(path, stamp string) (string, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	backup := path + ".bak-" + stamp
	for i := 1; ; i++ {
		if _, err := os.Lstat(backup); errors.Is(err, fs.ErrNotExist) {
			break
		}
		backup = path + ".bak-" + stamp + "-" + strconv.Itoa(i)
	}
	if os.Link(path, backup) == nil {
		return backup, nil
	}
	old, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return backup, CreateFile(backup, old, 0o600)
}

// CreateFile writes data to a new file at path (failing when it exists)
// and fsyncs it; the caller syncs the folder once it made all it makes.
func CreateFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
	}
	return err
}

// SyncDir fsyncs a folder, so that the names created, renamed or removed
// in it survive a power cut.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open folder %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync folder %s: %w", dir, err)
	}
	return nil
}

// MkdirAll makes dir and its missing parents (perm, 0700 when zero),
// fsyncing the folder that receives each new one.
func MkdirAll(dir string, perm os.FileMode) error {
	if perm == 0 {
		perm = 0o700
	}
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a folder", dir)
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return SyncDir(parent)
}

// CopyRange writes n bytes of src from off to dst (replacing it), synced:
// how a damaged or torn part of a log is kept aside before it is cut.
func CopyRange(src, dst string, off, n int64) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := io.Copy(out, io.NewSectionReader(in, off, n)); err != nil {
		return err
	}
	return out.Sync()
}

// RemoveStaleTemps removes the temporary files Replace left for path when
// its process was killed between creating one and renaming it (the names
// .<name>.tmp-* beside path), and returns how many it removed. Only a
// caller that holds path's writer lock may call it: another writer's
// temporary file in flight would go too.
func RemoveStaleTemps(path string) (int, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	prefix, n := "."+base+".tmp-", 0
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), prefix) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return n, err
			}
			n++
		}
	}
	return n, nil
}
