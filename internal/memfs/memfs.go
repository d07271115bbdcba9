// Package memfs is a read-only tree of files held in memory, addressed by
// absolute paths: what a store's readers read when its sessions are not
// plain files (a sealed archive decrypted, a backend's sessions loaded),
// so that nothing of them is written to disk to be read.
package memfs

import (
	"bytes"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// FS is a tree of files in memory. The zero value is empty; Add fills it.
// It is safe for concurrent reads once filled, and Add may run beside them.
type FS struct {
	mu    sync.RWMutex
	nodes map[string]*node
}

type node struct {
	name    string
	data    []byte
	mod     time.Time
	dir     bool
	entries map[string]*node
}

// Add puts a file at the absolute path name (its folders made as needed),
// holding data (not copied) and modified at mod. A file already there is
// replaced.
func (m *FS) Add(name string, data []byte, mod time.Time) {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.nodes == nil {
		m.nodes = map[string]*node{}
	}
	m.nodes[name] = &node{name: filepath.Base(name), data: data, mod: mod}
	child := m.nodes[name]
	for dir := filepath.Dir(name); ; dir = filepath.Dir(dir) {
		d, ok := m.nodes[dir]
		if !ok {
			d = &node{name: filepath.Base(dir), dir: true, mod: mod, entries: map[string]*node{}}
			m.nodes[dir] = d
		}
		d.entries[child.name] = child
		if ok || dir == filepath.Dir(dir) {
			return
		}
		child = d
	}
}

// Has reports whether a file or folder is at name.
func (m *FS) Has(name string) bool {
	_, err := m.get("has", name)
	return err == nil
}

// Size is the total size of the files held.
func (m *FS) Size() int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var n int64
	for _, nd := range m.nodes {
		n += int64(len(nd.data))
	}
	return n
}

func (m *FS) get(op, name string) (*node, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	nd, ok := m.nodes[filepath.Clean(name)]
	if !ok {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return nd, nil
}

// Open opens the file at name for reading.
func (m *FS) Open(name string) (*File, error) {
	nd, err := m.get("open", name)
	if err != nil {
		return nil, err
	}
	return &File{Reader: bytes.NewReader(nd.data), info: info{nd}}, nil
}

// ReadDir lists the folder at name, sorted by name.
func (m *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	nd, err := m.get("readdir", name)
	if err != nil {
		return nil, err
	}
	if !nd.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errNotDir}
	}
	m.mu.RLock()
	out := make([]fs.DirEntry, 0, len(nd.entries))
	for _, c := range nd.entries {
		out = append(out, fs.FileInfoToDirEntry(info{c}))
	}
	m.mu.RUnlock()
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

// Stat describes the file or folder at name.
func (m *FS) Stat(name string) (fs.FileInfo, error) {
	nd, err := m.get("stat", name)
	if err != nil {
		return nil, err
	}
	return info{nd}, nil
}

// Lstat is Stat: the tree holds no links.
func (m *FS) Lstat(name string) (fs.FileInfo, error) { return m.Stat(name) }

var errNotDir = fs.ErrInvalid

// File is an open file of an FS.
type File struct {
	*bytes.Reader
	info info
}

// Stat describes the file.
func (f *File) Stat() (fs.FileInfo, error) { return f.info, nil }

// Close does nothing: the data stays in the FS.
func (f *File) Close() error { return nil }

type info struct{ nd *node }

func (i info) Name() string       { return i.nd.name }
func (i info) Size() int64        { return int64(len(i.nd.data)) }
func (i info) ModTime() time.Time { return i.nd.mod }
func (i info) IsDir() bool        { return i.nd.dir }
func (i info) Sys() any           { return nil }
func (i info) Mode() fs.FileMode {
	if i.nd.dir {
		return fs.ModeDir | 0o700
	}
	return 0o600
}
