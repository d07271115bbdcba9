package layout

import (
	"io"
	"io/fs"
	"os"

	"github.com/e0dc0000/scribe/internal/memfs"
)

// FS is the file system a Layout's readers read: nil is the operating
// system's. A store whose sessions are not plain files on disk (a sealed
// archive decrypted in memory, the sessions of PostgreSQL or S3 loaded into
// memory) is read through an FS holding them under the same absolute paths
// the files would have, so that every reader gives the answers it gives for
// a folder of files, and nothing is written to disk to get them.
type FS interface {
	Open(name string) (File, error)
	// ReadDir lists a folder sorted by name, as os.ReadDir does.
	ReadDir(name string) ([]fs.DirEntry, error)
	Stat(name string) (fs.FileInfo, error)
	Lstat(name string) (fs.FileInfo, error)
}

// File is an open file of an FS.
type File interface {
	io.ReaderAt
	io.Closer
	Stat() (fs.FileInfo, error)
}

// osFS is the operating system's files.
type osFS struct{}

func (osFS) Open(name string) (File, error)             { return os.Open(name) }
func (osFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }
func (osFS) Stat(name string) (fs.FileInfo, error)      { return os.Stat(name) }
func (osFS) Lstat(name string) (fs.FileInfo, error)     { return os.Lstat(name) }

// FSOf is fsys, or the operating system's files when it is nil.
func FSOf(fsys FS) FS {
	if fsys == nil {
		return osFS{}
	}
	return fsys
}

// FSys is the file system the layout reads.
func (l Layout) FSys() FS { return FSOf(l.FS) }

// OnDisk reports whether the layout reads the operating system's files
// (the sessions index, locks and every change need them).
func (l Layout) OnDisk() bool { return l.FS == nil }

// ReadFileFS reads a whole file of fsys.
func ReadFileFS(fsys FS, name string) ([]byte, error) {
	f, err := FSOf(fsys).Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, fi.Size())
	n, err := f.ReadAt(b, 0)
	if err == io.EOF && n == len(b) {
		err = nil
	}
	return b[:n], err
}

// MemFS is the FS of a tree of files in memory.
func MemFS(m *memfs.FS) FS { return memFS{m} }

type memFS struct{ *memfs.FS }

func (m memFS) Open(name string) (File, error) {
	f, err := m.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return f, nil
}
