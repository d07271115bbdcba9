// Package watch follows Claude Code's live transcript folders and sends
// every new entry, once, through a scribe pipeline.
//
// Files are known by a fingerprint of their first bytes plus their size
// and inode, as the OpenTelemetry Collector's filelog receiver knows them;
// each has a checkpoint (offset, fingerprint) that is saved, atomically,
// only after the pipeline has flushed every entry before the offset. The
// cases it handles (see DESIGN.md in this folder for the list and their
// tests): appends, a torn last line (waited for), a new file, subagent
// files and their .meta.json, tool-result files, a whole-file replace
// (re-read from the start: dedup drops what the sinks have), truncation
// and rewrite (fingerprint or size), an mtime-only touch (nothing), a
// deletion (a lifecycle record; nothing already mirrored is lost). It
// never writes to, locks or holds open the files it follows.
package watch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/core"
)

// Options configure a Watcher.
type Options struct {
	// Roots are the projects folders followed ($CLAUDE_CONFIG_DIR/projects
	// and any others).
	Roots []string
	// Store holds the checkpoints; the Watcher does not close it.
	Store *Store
	// Pipeline is started; the Watcher submits and flushes, never shuts
	// it down.
	Pipeline *core.Pipeline
	// Pipelines are more started pipelines that get every entry too, each
	// deduplicating on its own: give each durable sink a pipeline of its
	// own, so that after a kill -9 a sink that had less than another (a
	// server behind the archive) still gets what it lacks. A line is
	// acknowledged when every pipeline acknowledged it.
	Pipelines []*core.Pipeline
	// Archives are the config folders of the jsonl stores the pipeline
	// writes (their dir): sidecar files (.meta.json, tool-results/) are
	// copied into them, and a rewritten file's metadata lines are checked
	// against them.
	Archives []string
	Logger   hclog.Logger
	// Rescan is the period of the full listing that catches missed
	// events. Default 30s.
	Rescan time.Duration
	// FlushInterval bounds how long submitted entries wait for a flush
	// while more keep coming. Default 50ms.
	FlushInterval time.Duration
	// SaveInterval bounds how often checkpoints are written while entries
	// keep coming (they are always written at stop). Default 200ms.
	SaveInterval time.Duration
	// OnAck, when set, is called after each flush with every file whose
	// acknowledged offset moved, and that offset (from the watcher's
	// goroutine: it must not block).
	OnAck func(path string, offset int64)
	// Inbox, when set, is a folder of hook events (see hook.go) that watch
	// submits while it runs.
	Inbox string
	// MaxLine is the longest line mirrored, in bytes (0: DefaultMaxLine);
	// a longer one is counted (Stats.OverLimit), logged and passed over.
	MaxLine int64
}

// Watcher follows the roots. Run it once.
type Watcher struct {
	o   Options
	log hclog.Logger
	ps  []*core.Pipeline

	files   map[string]*follower
	dirty   map[string]bool
	unacked map[*follower]bool
	retry   map[string]bool
	// failed are the files and folders that could not be read at their
	// last look, with why (logged once each).
	failed map[string]error
	// agentsGone are the subagent files whose deletion was handled (their
	// archive copy replayed from their checkpoint), until their session's
	// main transcript goes too (replayUnfollowedAgents).
	agentsGone map[string]bool
	fsw        *fsnotify.Watcher

	seq       int64 // the last Seq submitted
	flushedTo int64
	lastFlush time.Time
	lastSave  time.Time
	changed   bool // checkpoints differ from the saved ones

	states     map[string]core.State // sessions' states, from hook events
	inboxMarks []inboxMark
	inboxTaken map[string]bool
	// inboxWaiting is set when an event in the inbox waits for its
	// transcript: the retry tick looks again.
	inboxWaiting bool

	Stats Stats
}

// Stats are the watcher's counters, safe to read while it runs.
type Stats struct {
	FilesFollowed, LagBytes, UnackedLines, TornWaiting, WaitingForMessage atomic.Int64
	BytesRead, Lines, Submitted, Accepted, Duplicates, Refused, Rejected  atomic.Int64
	Malformed, Blank, Rewrites, Truncations, Deletions, Touches           atomic.Int64
	SidecarsCopied, MetaSkipped, Errors, Rescans, Events, Overflows       atomic.Int64
	// Replayed counts lines sent again from the archive's copy of a
	// deleted transcript (replayArchive).
	Replayed atomic.Int64
	// OverLimit counts lines longer than Options.MaxLine, passed over.
	OverLimit atomic.Int64
	// Unreadable is how many files and folders could not be read at the
	// last look (a folder or file the process may not read, something
	// not a regular file where a transcript or a folder is): each is
	// logged once, and CatchUp fails while any is left.
	Unreadable                                                         atomic.Int64
	Flushes, FlushErrors, Saves, SaveErrors, HookEvents, StatesRefused atomic.Int64
	// OutsideRoots counts paths a hook named outside every root (Once):
	// logged, not mirrored.
	OutsideRoots atomic.Int64
	// LagSeconds is the age, in seconds, of the oldest line read but not
	// yet acknowledged (0 when all is acknowledged).
	LagMillis atomic.Int64
}

// follower is one followed file: its acknowledged checkpoint and where
// reading goes on.
type follower struct {
	root    string
	st      FileState // acknowledged (what a saved checkpoint says)
	readOff int64     // the next byte to read
	fp      string    // fingerprint as of the last read
	fpLen   int
	inode   uint64
	size    int64
	mtime   int64
	msgs    bool // a user or assistant line was submitted
	marks   []mark
	torn    int64 // bytes after the last newline, waiting
	// metaSkip, after a rewrite, holds the uuid-less lines the archive
	// already has, until reading catches up with skipUntil.
	metaSkip  map[string]bool
	skipUntil int64
	firstRead time.Time // when the oldest unacknowledged line was read
	// nlAt, nlFree: the bytes [nlAt, nlAt+nlFree) of a torn long line
	// hold no newline; the next read does not search them again.
	nlAt, nlFree int64
	archive      string // its copy in the first archive, once found (archivePath)
}

type mark struct {
	seq, off int64
	fp       string
	fpLen    int
	inode    uint64
	msgs     bool
	at       time.Time
}

// New makes a watcher; Run starts it.
func New(o Options) (*Watcher, error) {
	var ps []*core.Pipeline
	if o.Pipeline != nil {
		ps = append(ps, o.Pipeline)
	}
	ps = append(ps, o.Pipelines...)
	if o.Store == nil || len(ps) == 0 {
		return nil, errors.New("watch: a store and a pipeline are required")
	}
	if len(o.Roots) == 0 {
		return nil, errors.New("watch: no folder to follow")
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Rescan <= 0 {
		o.Rescan = 30 * time.Second
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 50 * time.Millisecond
	}
	if o.SaveInterval <= 0 {
		o.SaveInterval = 200 * time.Millisecond
	}
	for i, r := range o.Roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("watch: root %q: %w", r, err)
		}
		o.Roots[i] = abs
	}
	return &Watcher{
		o: o, log: o.Logger, ps: ps,
		files: map[string]*follower{}, dirty: map[string]bool{},
		unacked: map[*follower]bool{}, retry: map[string]bool{}, failed: map[string]error{}, agentsGone: map[string]bool{},
		states: map[string]core.State{}, inboxTaken: map[string]bool{},
	}, nil
}

// Run follows the roots until ctx ends, then flushes what it submitted
// and saves the checkpoints. The error is the first that stopped it (nil
// after ctx ended), joined with a failure to make the last entries
// durable.
func (w *Watcher) Run(ctx context.Context) error {
	if err := w.load(); err != nil {
		return err
	}
	var err error
	w.fsw, err = fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		return fmt.Errorf("watch: start file events: %w", err)
	}
	defer w.fsw.Close()
	for _, r := range w.o.Roots {
		if err := os.MkdirAll(r, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			w.log.Warn("root folder cannot be created; it is followed once it exists", "root", r, "error", err)
		}
	}
	if w.o.Inbox != "" {
		if err := os.MkdirAll(w.o.Inbox, 0o700); err != nil {
			return fmt.Errorf("watch: create hook inbox: %w", err)
		}
		_ = w.fsw.Add(w.o.Inbox)
	}
	w.rescan(ctx)
	if err := w.process(ctx); err != nil {
		return err
	}
	if err := w.flush(ctx, false); err != nil && ctx.Err() == nil {
		w.log.Error("flush failed; checkpoints wait for the next one", "error", err)
	}
	// The catch-up's buffers are garbage now: give the memory back rather
	// than keep the start-up's peak for the life of the process.
	debug.FreeOSMemory()
	runErr := w.loop(ctx)
	// Stop: make durable what was submitted, then save.
	fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.flush(fctx, true); err != nil {
		runErr = errors.Join(runErr, err)
	}
	if err := w.save(true); err != nil {
		runErr = errors.Join(runErr, err)
	}
	return runErr
}

// load reads the saved checkpoints.
func (w *Watcher) load() error {
	saved, states, err := w.o.Store.Load()
	if err != nil {
		return err
	}
	w.states = states
	for path, st := range saved {
		root := w.rootOf(path)
		if root == "" {
			// A root not followed in this run: its checkpoint is kept.
			w.files[path] = &follower{st: *st, size: st.Size, mtime: st.MTime, inode: st.Inode, readOff: st.Offset}
			continue
		}
		f := &follower{root: root, st: *st}
		f.reset()
		w.files[path] = f
	}
	return nil
}

func (w *Watcher) rootOf(path string) string {
	for _, r := range w.o.Roots {
		if strings.HasPrefix(path, r+string(filepath.Separator)) {
			return r
		}
	}
	return ""
}

func (w *Watcher) loop(ctx context.Context) error {
	rescan := time.NewTicker(w.o.Rescan)
	defer rescan.Stop()
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	var flushT <-chan time.Time
	var timer *time.Timer
	for {
		if err := w.process(ctx); err != nil {
			return err
		}
		flushT = nil
		if w.seq > w.flushedTo {
			wait := max(w.o.FlushInterval-time.Since(w.lastFlush), 0)
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			flushT = timer.C
		}
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return errors.New("watch: file events stopped")
			}
			w.event(ev)
			// Take every event already queued before reading files.
			for n := 0; n < 4096; n++ {
				select {
				case ev := <-w.fsw.Events:
					w.event(ev)
					continue
				default:
				}
				break
			}
		case err := <-w.fsw.Errors:
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.Stats.Overflows.Add(1)
				w.log.Warn("file events overflowed; listing every folder again")
				w.rescan(ctx)
			} else if err != nil {
				w.Stats.Errors.Add(1)
				w.log.Error("file events", "error", err)
			}
		case <-rescan.C:
			w.rescan(ctx)
		case <-retry.C:
			for p := range w.retry {
				w.dirty[p] = true
				delete(w.retry, p)
			}
			if w.o.Inbox != "" && w.inboxWaiting {
				w.dirty[w.o.Inbox] = true // events that wait for a transcript
			}
		case <-flushT:
			if err := w.flush(ctx, false); err != nil && ctx.Err() == nil {
				w.log.Error("flush failed; checkpoints wait for the next one", "error", err)
			}
			if err := w.save(false); err != nil {
				w.log.Error("checkpoints not saved", "error", err)
			}
		}
	}
}

// event notes what a file event changed.
func (w *Watcher) event(ev fsnotify.Event) {
	w.Stats.Events.Add(1)
	path := ev.Name
	if w.o.Inbox != "" && filepath.Dir(path) == w.o.Inbox {
		w.dirty[w.o.Inbox] = true
		return
	}
	if ev.Has(fsnotify.Create) {
		if fi, err := os.Lstat(path); err == nil && fi.IsDir() {
			root := w.rootOf(path)
			if root == "" && !w.isRoot(path) {
				return
			}
			w.addTree(path)
			return
		}
	}
	if w.rootOf(path) == "" {
		return
	}
	w.dirty[path] = true
}

func (w *Watcher) isRoot(path string) bool {
	for _, r := range w.o.Roots {
		if r == path {
			return true
		}
	}
	return false
}

// addTree watches a new folder and everything below it, and marks its
// files dirty (files written before the watch was added are not missed).
func (w *Watcher) addTree(dir string) {
	root := w.rootOf(dir)
	if root == "" {
		root = dir
	}
	walkDirsFrom(root, dir, w.listed, func(p string, _ os.FileInfo) { w.dirty[p] = true }, w.unreadable)
}

// listed is a folder listed: watched, and no longer unreadable.
func (w *Watcher) listed(d string) {
	w.readable(d)
	w.watchDir(d)
}

// unreadable notes a file or folder that could not be read: logged the
// first time, counted (Stats.Unreadable) until it is read.
func (w *Watcher) unreadable(path string, err error) {
	if _, known := w.failed[path]; known {
		w.log.Debug("still not readable", "path", path, "error", err)
	} else {
		w.Stats.Errors.Add(1)
		w.log.Warn("not read; looked at again at every listing", "path", path, "error", err)
	}
	w.failed[path] = err
	w.Stats.Unreadable.Store(int64(len(w.failed)))
}

// readable notes that path was read (or is gone).
func (w *Watcher) readable(path string) {
	if _, known := w.failed[path]; known {
		delete(w.failed, path)
		w.Stats.Unreadable.Store(int64(len(w.failed)))
		w.log.Info("readable again", "path", path)
	}
}

func (w *Watcher) watchDir(d string) {
	if w.fsw == nil {
		return // Once: no events
	}
	if err := w.fsw.Add(d); err != nil {
		w.Stats.Errors.Add(1)
		w.log.Warn("folder not watched; the periodic listing still covers it", "folder", d, "error", err)
	}
}

// rescan lists every root: new and changed files become dirty, followed
// files that are gone are deletions.
func (w *Watcher) rescan(ctx context.Context) {
	w.Stats.Rescans.Add(1)
	seen := make(map[string]bool, len(w.files))
	for _, root := range w.o.Roots {
		walkDirs(root, w.listed, func(p string, fi os.FileInfo) {
			seen[p] = true
			f := w.files[p]
			if f == nil || f.changedFrom(fi) {
				w.dirty[p] = true
			}
		}, w.unreadable)
	}
	for p := range w.files {
		if !seen[p] {
			w.dirty[p] = true // process finds it gone
		}
	}
	for p := range w.failed {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			w.readable(p) // gone: nothing left to read
		}
	}
	if w.o.Inbox != "" {
		w.dirty[w.o.Inbox] = true
	}
}

// process reads every dirty file, then takes the hook inbox if it is
// dirty (after the files: its events may wait for one of them).
func (w *Watcher) process(ctx context.Context) error {
	if len(w.dirty) == 0 {
		return nil
	}
	inbox := false
	for len(w.dirty) > 0 {
		for p := range w.dirty {
			delete(w.dirty, p)
			if ctx.Err() != nil {
				return nil
			}
			if p == w.o.Inbox && p != "" {
				inbox = true
				continue
			}
			if err := w.update(ctx, p); err != nil {
				if errors.Is(err, core.ErrClosed) {
					return err
				}
				w.retry[p] = true
				w.unreadable(p, err)
			} else {
				w.readable(p)
			}
			w.flushIfDue(ctx)
		}
	}
	if inbox {
		if err := w.takeInbox(ctx); err != nil {
			if errors.Is(err, core.ErrClosed) {
				return err
			}
			w.Stats.Errors.Add(1)
			w.log.Warn("hook inbox not read; trying again", "error", err)
			w.inboxWaiting = true
		}
	}
	w.gauges()
	return nil
}

// flushIfDue flushes while a backlog is read, every FlushInterval.
func (w *Watcher) flushIfDue(ctx context.Context) {
	if w.seq <= w.flushedTo || time.Since(w.lastFlush) < w.o.FlushInterval {
		return
	}
	if err := w.flush(ctx, false); err != nil && ctx.Err() == nil {
		w.log.Error("flush failed; checkpoints wait for the next one", "error", err)
	}
	if err := w.save(false); err != nil {
		w.log.Error("checkpoints not saved", "error", err)
	}
}

// update brings one path up to date.
func (w *Watcher) update(ctx context.Context, path string) error {
	root := w.rootOf(path)
	if root == "" {
		return nil
	}
	f := w.files[path]
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		if f != nil {
			return w.deleted(ctx, path, f)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if fi.IsDir() {
		w.addTree(path)
		return nil
	}
	if f == nil {
		kind, session, agent, ok := classify(root, path)
		if !ok {
			return nil
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s: %w", path, errNotFollowable)
		}
		f = &follower{root: root, st: FileState{Path: path, Kind: kind, Session: session, Agent: agent}}
		w.files[path] = f
		w.changed = true
	}
	switch f.st.Kind {
	case KindSidecar:
		return w.copySidecar(f, fi)
	case KindLifecycle:
		if !w.mainMirrored(root, projectOf(root, path), f.st.Session) {
			// Its records go beside a transcript the sinks do not have yet.
			w.retry[path] = true
			return nil
		}
	}
	return w.read(ctx, f)
}

// changedFrom reports whether fi differs from what f last saw.
func (f *follower) changedFrom(fi os.FileInfo) bool {
	return fi.Size() != f.size || fi.ModTime().UnixNano() != f.mtime || inodeOf(fi) != f.inode
}

// reset puts reading back at the acknowledged checkpoint.
func (f *follower) reset() {
	f.readOff, f.fp, f.fpLen, f.inode, f.msgs = f.st.Offset, f.st.FP, f.st.FPLen, f.st.Inode, f.st.Messages
	f.size, f.mtime = f.st.Size, f.st.MTime
	f.marks = nil
	f.nlAt, f.nlFree = 0, 0
}

// maxLine is the line cap in bytes.
func (w *Watcher) maxLine() int64 {
	if w.o.MaxLine > 0 {
		return w.o.MaxLine
	}
	return DefaultMaxLine
}

func inodeOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// gauges refreshes the figures that describe all files.
func (w *Watcher) gauges() {
	var lag, unacked, torn, waiting int64
	var oldest time.Time
	for _, f := range w.files {
		if f.st.Kind == KindSidecar {
			continue
		}
		lag += max(f.size-f.st.Offset, 0)
		unacked += int64(len(f.marks))
		if f.torn > 0 {
			torn++
		}
		if !f.msgs && f.st.Kind != KindLifecycle && f.size > 0 {
			waiting++
		}
		if len(f.marks) > 0 && (oldest.IsZero() || f.marks[0].at.Before(oldest)) {
			oldest = f.marks[0].at
		}
	}
	w.Stats.FilesFollowed.Store(int64(len(w.files)))
	w.Stats.LagBytes.Store(lag)
	w.Stats.UnackedLines.Store(unacked)
	w.Stats.TornWaiting.Store(torn)
	w.Stats.WaitingForMessage.Store(waiting)
	if oldest.IsZero() {
		w.Stats.LagMillis.Store(0)
	} else {
		w.Stats.LagMillis.Store(time.Since(oldest).Milliseconds())
	}
}

// Once brings the given files (or folders: every file below them) up to
// date, takes the hook inbox, flushes and saves the checkpoints: what
// `scribe hook` does when no watch runs. Paths outside every root are
// passed over.
func (w *Watcher) Once(ctx context.Context, paths ...string) error {
	if err := w.load(); err != nil {
		return err
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		p = filepath.Clean(p)
		if w.rootOf(p) == "" {
			// A hook of a Claude Code whose folder is not this
			// configuration's: nothing of it would be read, unsaid.
			w.Stats.OutsideRoots.Add(1)
			w.log.Warn("not under any watched folder: not mirrored (does this configuration's Claude folder match Claude Code's?)", "path", p, "roots", strings.Join(w.o.Roots, ","))
		}
		w.dirty[p] = true
	}
	if w.o.Inbox != "" {
		w.dirty[w.o.Inbox] = true
	}
	errs := []error{w.process(ctx)}
	if err := w.flush(ctx, false); err != nil {
		errs = append(errs, err)
	}
	if err := w.save(true); err != nil {
		errs = append(errs, err)
	}
	w.sayWaiting()
	return errors.Join(errs...)
}

// CatchUp reads every file once (what a start-up does), flushes, saves
// the checkpoints and returns: `scribe watch --once`.
func (w *Watcher) CatchUp(ctx context.Context) error {
	if err := w.load(); err != nil {
		return err
	}
	var err error
	if w.fsw, err = fsnotify.NewWatcher(); err != nil {
		return fmt.Errorf("watch: start file events: %w", err)
	}
	defer w.fsw.Close()
	w.rescan(ctx)
	var runErr error
	for pass := 0; pass < 2 && runErr == nil; pass++ {
		// The second pass takes what waited for a transcript to reach the
		// sinks (sidecars, lifecycle records, hook events).
		for p := range w.retry {
			w.dirty[p] = true
			delete(w.retry, p)
		}
		runErr = w.process(ctx)
		if err := w.flush(ctx, true); err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	if err := w.save(true); err != nil {
		runErr = errors.Join(runErr, err)
	}
	w.sayWaiting()
	if err := w.unreadErr(); err != nil {
		runErr = errors.Join(runErr, err)
	}
	return runErr
}

// unreadErr is an error naming what could not be read, nil when all was.
func (w *Watcher) unreadErr() error {
	if len(w.failed) == 0 {
		return nil
	}
	paths := make([]string, 0, len(w.failed))
	for p := range w.failed {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	more := ""
	if len(paths) > 5 {
		paths, more = paths[:5], fmt.Sprintf(" and %d more", len(paths)-5)
	}
	return fmt.Errorf("watch: %d files or folders could not be read (see the log): %s%s", len(w.failed), strings.Join(paths, ", "), more)
}

// sayWaiting logs every followed file none of whose lines was sent: they
// wait for the file's first user or assistant line (Claude Code writes a
// transcript's metadata before its first message and the archive's file
// is made by that message), so nothing is passed over without a word.
func (w *Watcher) sayWaiting() {
	for p, f := range w.files {
		if f.root != "" && f.st.Kind != KindSidecar && f.st.Kind != KindLifecycle && !f.msgs && f.torn > 0 {
			w.log.Warn("file followed, nothing sent yet: its lines wait for a first user or assistant line", "path", p, "bytes_waiting", f.torn)
		}
	}
}
