package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// A sealed archive (a jsonl sink with an encryption block) is read by ls,
// show, info, fork, export and resume through a decrypted view: the
// archive's transcripts decrypted into a private folder on memory-backed
// storage (never on disk), removed when the command ends; a view left by a
// killed command is removed by the next one. Other commands refuse a
// sealed archive rather than act on ciphertext as if it were a transcript.

// sealedReaders are the commands that read a sealed archive.
var sealedReaders = map[string]bool{"ls": true, "show": true, "info": true, "fork": true, "export": true, "resume": true, "copy": true}

// views holds this process's decrypted views by archive folder, and
// viewCleanups what removes them (runViewCleanups, at exit).
var (
	views        = map[string]jsonl.Layout{}
	viewCleanups []func()
	// viewDamage says which archives had damaged transcripts left out of
	// their view: the command reads the rest, then exits 1.
	viewDamage []error
)

func runViewCleanups() {
	for i := len(viewCleanups) - 1; i >= 0; i-- {
		viewCleanups[i]()
	}
	viewCleanups = nil
}

// refuseSealed is the answer of a command that does not read a sealed
// archive yet.
func refuseSealed(cmd *cobra.Command, dir string) error {
	return &exitError{code: 1, err: fmt.Errorf("%s is a sealed archive: scribe %s does not read sealed archives yet (ls, show, info, fork, export and resume --from its sink do, and copy)", dir, cmd.Name())}
}

// sealedViewFor returns the decrypted view of the sealed archive in dir,
// made once per process: decrypt makes the archive's files in the folder it
// is given. The view's folder replaces itself by the archive's in what the
// command prints.
func sealedViewFor(cmd *cobra.Command, dir string, decrypt func(ctx context.Context, view *os.Root) (jsonl.ViewReport, error)) (jsonl.Layout, error) {
	if cmd == nil {
		return jsonl.Layout{}, &exitError{code: 1, err: fmt.Errorf("%s is a sealed archive: no command to read it for", dir)}
	}
	if !sealedReaders[cmd.Name()] {
		return jsonl.Layout{}, refuseSealed(cmd, dir)
	}
	if l, ok := views[dir]; ok {
		return l, nil
	}
	base, err := memoryDir()
	if err != nil {
		return jsonl.Layout{}, &exitError{code: 1, err: fmt.Errorf("%s is a sealed archive: %w", dir, err)}
	}
	root, err := openViewRoot(base)
	if err != nil {
		return jsonl.Layout{}, &exitError{code: 1, err: fmt.Errorf("sealed archive %s: %w", dir, err)}
	}
	removeStaleViews(root)
	name, err := newViewName(root)
	if err != nil {
		root.Close()
		return jsonl.Layout{}, &exitError{code: 1, err: fmt.Errorf("sealed view: %w", err)}
	}
	viewCleanups = append(viewCleanups, func() { root.RemoveAll(name); root.Close() })
	vr, err := root.OpenRoot(name)
	if err != nil {
		return jsonl.Layout{}, &exitError{code: 1, err: fmt.Errorf("sealed view: %w", err)}
	}
	defer vr.Close()
	view := filepath.Join(base, viewsDirName, name)
	// A closed pipe (scribe export ... | head) makes writes fail instead of
	// killing the process, so the view is removed as the command ends.
	signal.Ignore(syscall.SIGPIPE)
	rep, err := decrypt(cmd.Context(), vr)
	if err != nil {
		if !strings.Contains(err.Error(), dir) {
			err = fmt.Errorf("sealed archive %s: %w", dir, err)
		}
		return jsonl.Layout{}, &exitError{code: 1, err: err}
	}
	for _, p := range rep.TornFrames {
		fmt.Fprintf(cmd.ErrOrStderr(), "scribe: the last frame of %s is torn (a write was cut short); skipped (the writer cuts it at its next start)\n", p)
	}
	for _, d := range rep.Damaged {
		fmt.Fprintf(cmd.ErrOrStderr(), "scribe: %v: left out of what this command reads\n", d)
	}
	if n := len(rep.Damaged); n > 0 {
		viewDamage = append(viewDamage, fmt.Errorf("%d sealed transcript(s) of %s are damaged and were left out (see above): %w", n, dir, rep.Damaged[0]))
	}
	l := jsonl.Layout{ConfigDir: view}
	views[dir] = l
	// What the command prints names the archive, not the view.
	out := &viewPaths{w: cmd.OutOrStdout(), view: view, dir: dir}
	errw := &viewPaths{w: cmd.ErrOrStderr(), view: view, dir: dir}
	cmd.SetOut(out)
	cmd.SetErr(errw)
	viewCleanups = append(viewCleanups, func() { out.flush(); errw.flush() })
	return l, nil
}

// memoryDir is where views go: SCRIBE_SEALED_VIEW_DIR, else
// $XDG_RUNTIME_DIR, else /dev/shm; the first that is set and exists must be
// memory-backed (tmpfs or ramfs), or none is used.
func memoryDir() (string, error) {
	var tried []string
	if d := os.Getenv("SCRIBE_SEALED_VIEW_DIR"); d != "" {
		if !memoryBacked(d) {
			return "", fmt.Errorf("SCRIBE_SEALED_VIEW_DIR %s is not on memory-backed storage (tmpfs or ramfs): a decrypted view never goes to disk", d)
		}
		return d, nil
	}
	for _, d := range []string{os.Getenv("XDG_RUNTIME_DIR"), "/dev/shm"} {
		if d == "" {
			continue
		}
		if memoryBacked(d) {
			return d, nil
		}
		tried = append(tried, d)
	}
	return "", fmt.Errorf("no memory-backed folder to decrypt into (tried %s; set SCRIBE_SEALED_VIEW_DIR to a tmpfs): a decrypted view never goes to disk",
		strings.Join(append(tried, "SCRIBE_SEALED_VIEW_DIR unset"), ", "))
}

const ramfsMagic = 0x858458f6

func memoryBacked(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Type == unix.TMPFS_MAGIC || st.Type == ramfsMagic
}

// viewsDirName is the folder of every view, in the memory-backed folder.
const viewsDirName = "scribe-sealed-views"

// openViewRoot opens base/scribe-sealed-views (making it), which must be
// a real folder (no symbolic link) of the caller's, mode 0700: anything
// else, planted by another user, could send decrypted transcripts where
// others read them (or onto disk). The folder returned is the one checked.
func openViewRoot(base string) (*os.Root, error) {
	b, err := os.OpenRoot(base)
	if err != nil {
		return nil, fmt.Errorf("sealed view: %w", err)
	}
	defer b.Close()
	where := filepath.Join(base, viewsDirName)
	fi, err := b.Lstat(viewsDirName)
	if errors.Is(err, fs.ErrNotExist) {
		if err := b.Mkdir(viewsDirName, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("sealed view: %w", err)
		}
		fi, err = b.Lstat(viewsDirName)
	}
	if err != nil {
		return nil, fmt.Errorf("sealed view: %w", err)
	}
	if err := privateDir(where, fi); err != nil {
		return nil, err
	}
	r, err := b.OpenRoot(viewsDirName)
	if err != nil {
		return nil, fmt.Errorf("sealed view: %w", err)
	}
	if now, err := r.Stat("."); err != nil || !os.SameFile(fi, now) {
		r.Close()
		return nil, fmt.Errorf("the folder for decrypted views %s changed while it was opened; not used", where)
	}
	return r, nil
}

// privateDir says why fi (of the folder at where) is not a private folder
// of the caller's.
func privateDir(where string, fi fs.FileInfo) error {
	refuse := func(why string) error {
		return fmt.Errorf("the folder for decrypted views %s %s: a decrypted transcript goes only into a folder of yours that no one else can read (a real folder, mode 0700); remove it and try again, nothing was decrypted", where, why)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		to, _ := os.Readlink(where)
		return refuse("is a symbolic link (to " + to + ")")
	}
	if !fi.IsDir() {
		return refuse("is not a folder")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
		owner := "someone else"
		if ok {
			owner = "uid " + strconv.Itoa(int(st.Uid))
		}
		return refuse("belongs to " + owner)
	}
	if m := fi.Mode().Perm(); m != 0o700 {
		return refuse(fmt.Sprintf("has mode %#o", m))
	}
	return nil
}

// newViewName makes a new view folder in root, named for this process:
// <pid>-<its start time>-<random>, so that a stale view is told from a
// live one even when its pid was reused (removeStaleViews).
func newViewName(root *os.Root) (string, error) {
	start, _ := procStart(os.Getpid())
	for range 10 {
		var r [8]byte
		_, _ = rand.Read(r[:])
		name := fmt.Sprintf("%d-%d-%s", os.Getpid(), start, hex.EncodeToString(r[:]))
		err := root.Mkdir(name, 0o700)
		if err == nil {
			return name, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return "", errors.New("no free name for a view")
}

// procStart is when process pid started (clock ticks since boot, field 22
// of /proc/<pid>/stat).
func procStart(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(f[19], 10, 64)
	return v, err == nil
}

// removeStaleViews removes the views of processes that are gone (killed
// before they could remove theirs): no process with the pid, or one that
// started at another time (the pid was reused).
func removeStaleViews(root *os.Root) {
	d, err := root.Open(".")
	if err != nil {
		return
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return
	}
	for _, e := range ents {
		f := strings.SplitN(e.Name(), "-", 3)
		pid, err := strconv.Atoi(f[0])
		if len(f) < 2 || err != nil || pid <= 0 {
			continue
		}
		gone := errors.Is(unix.Kill(pid, 0), unix.ESRCH)
		if want, err := strconv.ParseUint(f[1], 10, 64); !gone && err == nil && len(f) == 3 {
			now, ok := procStart(pid)
			gone = ok && now != want
		}
		if gone {
			root.RemoveAll(e.Name())
		}
	}
}

// viewPaths writes through to w, line by line, with the view's folder
// replaced by the archive's.
type viewPaths struct {
	w         io.Writer
	view, dir string
	buf       []byte
}

func (v *viewPaths) Write(p []byte) (int, error) {
	v.buf = append(v.buf, p...)
	if i := bytes.LastIndexByte(v.buf, '\n'); i >= 0 {
		line := bytes.ReplaceAll(v.buf[:i+1], []byte(v.view), []byte(v.dir))
		if _, err := v.w.Write(line); err != nil {
			return 0, err
		}
		v.buf = append(v.buf[:0], v.buf[i+1:]...)
	}
	return len(p), nil
}

func (v *viewPaths) flush() {
	if len(v.buf) > 0 {
		v.w.Write(bytes.ReplaceAll(v.buf, []byte(v.view), []byte(v.dir)))
		v.buf = nil
	}
}

// activeCmd is the command running (set by the root's pre-run), for the
// store openers that make a sealed archive's view.
var activeCmd *cobra.Command

// viewToArchive names the archive where a message names its view.
func viewToArchive(msg string) string {
	for dir, l := range views {
		msg = strings.ReplaceAll(msg, l.ConfigDir, dir)
	}
	return msg
}
