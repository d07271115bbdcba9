package listing

// The listing: reading one file's two windows (see listing.go).

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// ---------------------------------------------------------------------------
// Reading one file

// Win is a file's two windows. Tail aliases Head for files of 64 KiB
// or less.
type Win struct {
	Head, Tail []byte
	size       int64
	mtime      int64
}

// Worker holds one goroutine's buffers.
type Worker struct {
	fsys   layout.FS // the layout's FS (nil: the files on disk)
	noTail bool      // leave SessionInfo.LastEntryTail nil
	buf    []byte    // head window, then tail window
	side   []byte
	tix    keyIndex // the tail window's keys
	hix    keyIndex // the head window's title keys
	// The tail's relocatedCwd as the last derive found it, reused by the
	// collision filter.
	recCwd   string
	recFound bool
}

// Index prepares the key indexes of a freshly read window pair.
func (w *Worker) Index(win *Win) {
	w.tix.reset(win.Tail)
	w.tix.buildAll()
	w.hix.reset(win.Head)
}

// ContinuedIn is the session the indexed tail says this one continues in
// (the SDK's continued-in check), after Index.
func (w *Worker) ContinuedIn() (string, bool) { return w.tix.continuedIn() }

// RelocatedCwd is the tail's relocatedCwd as the last Derive found it.
func (w *Worker) RelocatedCwd() (string, bool) { return w.recCwd, w.recFound }

// headTitles returns the index to look up titles in the head with.
func (w *Worker) headTitles(win *Win) *keyIndex {
	if len(win.Head) == len(win.Tail) && (len(win.Head) == 0 || &win.Head[0] == &win.Tail[0]) {
		return &w.tix
	}
	if !w.hix.titles {
		w.hix.buildTitles()
	}
	return &w.hix
}

func newWorker(fsys layout.FS) *Worker {
	return &Worker{fsys: fsys, buf: make([]byte, 2*claudedir.ListWindow)}
}

// Read opens path as the SDK does (O_NOFOLLOW|O_NONBLOCK: a symlink is an
// error), requires a regular non-empty file and reads the windows.
func (w *Worker) Read(path string) (Win, bool, error) {
	f, err := openFile(w.fsys, path)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return Win{}, false, nil
		}
		return Win{}, false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer f.close()
	st, err := f.stat()
	if err != nil {
		return Win{}, false, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if !st.regular {
		return Win{}, false, nil
	}
	n, err := f.pread(w.buf[:claudedir.ListWindow], 0)
	if err != nil {
		return Win{}, false, &os.PathError{Op: "read", Path: path, Err: err}
	}
	if n == 0 {
		return Win{}, false, nil
	}
	win := Win{Head: w.buf[:n], size: st.size, mtime: st.mtime}
	win.Tail = win.Head
	if off := st.size - claudedir.ListWindow; off > 0 {
		m, err := f.pread(w.buf[claudedir.ListWindow:], off)
		if err != nil {
			return Win{}, false, &os.PathError{Op: "read", Path: path, Err: err}
		}
		win.Tail = w.buf[claudedir.ListWindow : claudedir.ListWindow+m]
	}
	return win, true, nil
}

// file is a file the listing reads: a descriptor of a file on disk
// (read with pread, as the SDK reads), or a file of the layout's FS.
type file struct {
	fd int
	f  layout.File
}

// fileStat is what the listing needs of a file's stat.
type fileStat struct {
	size, mtime int64 // mtime in ms, as Node's Stats.mtime.getTime()
	regular     bool
}

// openFile opens path on disk (fsys nil) or in fsys.
func openFile(fsys layout.FS, path string) (file, error) {
	if fsys == nil {
		fd, err := openNoFollow(path)
		return file{fd: fd}, err
	}
	f, err := fsys.Open(path)
	return file{fd: -1, f: f}, err
}

func (lf file) stat() (fileStat, error) {
	if lf.f != nil {
		fi, err := lf.f.Stat()
		if err != nil {
			return fileStat{}, err
		}
		mt := fi.ModTime()
		return fileStat{size: fi.Size(), mtime: millis(mt.Unix(), int64(mt.Nanosecond())), regular: fi.Mode().IsRegular()}, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(lf.fd, &st); err != nil {
		return fileStat{}, err
	}
	return fileStat{size: st.Size, mtime: millis(st.Mtim.Sec, st.Mtim.Nsec), regular: st.Mode&unix.S_IFMT == unix.S_IFREG}, nil
}

// pread fills b from off as far as the file goes.
func (lf file) pread(b []byte, off int64) (int, error) {
	if lf.f != nil {
		n, err := lf.f.ReadAt(b, off)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		return n, err
	}
	return preadFull(lf.fd, b, off)
}

func (lf file) close() {
	if lf.f != nil {
		lf.f.Close()
		return
	}
	unix.Close(lf.fd)
}

func openNoFollow(path string) (int, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		return fd, err
	}
}

func preadFull(fd int, b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Pread(fd, b[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m <= 0 {
			break
		}
		n += m
	}
	return n, nil
}

// millis is Node's Stats.mtime.getTime(): sec*1e3 + nsec/1e6 in
// float64, rounded to an integer as Math.round does.
func millis(sec, nsec int64) int64 {
	ms := float64(float64(sec)*1000) + float64(nsec)/1e6
	r := math.Floor(ms)
	if ms-r >= 0.5 {
		r++
	}
	return int64(r)
}

// readLite is getSessionInfo on one known file (no listing filters).
func (w *Worker) readLite(path, id, projectPath string, trySide bool) (sessions.Info, bool, error) {
	win, ok, err := w.Read(path)
	if err != nil || !ok {
		return sessions.Info{}, false, err
	}
	w.Index(&win)
	info, ok := w.Derive(id, path, &win, projectPath, trySide)
	return info, ok, nil
}

// process is the SDK's per-file step of listSessions: read, the
// programmatic filter, continued-in hiding, the sidecars, the fields, the
// collision filter.
func (w *Worker) process(c *Cand, includeProgrammatic bool, cw *Collision) (sessions.Info, bool) {
	win, ok, err := w.Read(c.Path)
	if err != nil || !ok {
		return sessions.Info{}, false
	}
	w.Index(&win)
	if !includeProgrammatic {
		if ep, sk, nested, _ := w.programmaticFields(&win); programmatic(ep, sk, nested) {
			return sessions.Info{}, false
		}
	}
	if target, ok := w.tix.continuedIn(); ok && w.ContinuedTargetLive(filepath.Join(c.ProjectDir, target+".jsonl")) {
		return sessions.Info{}, false
	}
	info, ok := w.Derive(c.ID, c.Path, &win, c.ProjectPath, c.HasSideDir)
	if !ok {
		return sessions.Info{}, false
	}
	info.ProjectDir = c.ProjectDir
	if c.ProjectPath != "" {
		rec, found := w.recCwd, w.recFound
		if !found {
			rec, found = FirstParsed(win.Head, "cwd")
		}
		if found && !UnderOwn(rec, c.Own) && cw.Collides(rec, c.ProjectPath) {
			return sessions.Info{}, false
		}
	}
	if c.mtime != 0 {
		info.LastModified = c.mtime
	}
	return info, true
}

// Derive computes the SDK's SessionInfo from the windows (its Ca function)
// plus the two sidecars. ok is false for a sidechain-first file and for a
// file with nothing to show as a summary.
func (w *Worker) Derive(id, path string, win *Win, projectPath string, trySide bool) (sessions.Info, bool) {
	head := win.Head
	first := head
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		first = head[:i]
	}
	if bytes.Contains(first, []byte(`"isSidechain":true`)) || bytes.Contains(first, []byte(`"isSidechain": true`)) {
		return sessions.Info{}, false
	}
	dir := filepath.Dir(path)
	info := sessions.Info{SessionID: id, LastModified: win.mtime, FileSize: win.size, Path: path, ProjectDir: dir, ProjectPath: projectPath}

	// customTitle = tail custom-title ‖ sidecar ‖ head custom-title ‖ tail ai-title ‖ head ai-title
	tix := &w.tix
	tailTitle, tailTitleFound := tix.lastKeyed(lkCustomTitle, typeCustomTitle, true)
	title := tailTitle
	if title == "" && !tailTitleFound && trySide {
		title = w.sidecarTitle(filepath.Join(dir, id, "custom-title.json"))
	}
	if title == "" {
		title, _ = w.headTitles(win).lastKeyed(lkCustomTitle, typeCustomTitle, true)
	}
	if title == "" {
		title, _ = tix.lastKeyed(lkAITitle, typeAITitle, true)
	}
	if title == "" {
		title, _ = w.headTitles(win).lastKeyed(lkAITitle, typeAITitle, true)
	}
	info.CustomTitle = title
	info.FirstPrompt = firstPrompt(head)
	if ts, ok := firstValue(head, &keyTimestamp); ok && ts != "" {
		if ms, ok := DateParse(ts); ok {
			info.CreatedAt = &ms
		}
	}
	summary := title
	if summary == "" {
		summary, _ = tix.lastKeyed(lkLastPrompt, "", false)
	}
	if summary == "" {
		summary, _ = tix.lastKeyed(lkSummary, "", false)
	}
	if summary == "" {
		summary = info.FirstPrompt
	}
	if summary == "" {
		summary = mediaPlaceholder(head)
	}
	if summary == "" {
		return sessions.Info{}, false
	}
	info.Summary = summary
	if b, _ := tix.lastValue(lkGitBranch); b != "" {
		info.GitBranch = b
	} else if b, _ := firstValue(head, &keyGitBranch); b != "" {
		info.GitBranch = b
	}
	w.recCwd, w.recFound = tix.lastKeyed(lkRelocatedCwd, typeRelocated, false)
	if c := w.recCwd; c != "" {
		info.Cwd = c
	} else if c, _ := firstValue(head, &keyCwd); c != "" {
		info.Cwd = c
	} else {
		info.Cwd = projectPath
	}
	info.Tag, _ = tix.lastKeyed(lkTag, typeTag, true)
	if trySide {
		info.Archived = w.archived(filepath.Join(dir, id, "archived.json"), win)
	}
	info.Entrypoint, info.SessionKind, info.Nested, info.Forked = w.programmaticFields(win)
	if !w.noTail {
		info.LastEntryTail = tix.lastEntry()
	}
	return info, true
}
