package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// flush makes durable what was submitted and moves every checkpoint the
// acknowledgement covers. force flushes even when nothing new was
// submitted.
func (w *Watcher) flush(ctx context.Context, force bool) error {
	through := w.seq
	if through == w.flushedTo && !force {
		return nil
	}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	w.lastFlush = time.Now()
	w.Stats.Flushes.Add(1)
	acked := through
	var errs []error
	for _, p := range w.ps {
		if err := p.Flush(fctx); err != nil {
			errs = append(errs, err)
			continue
		}
		acked = min(acked, p.Acked(through))
	}
	if err := errors.Join(errs...); err != nil {
		w.Stats.FlushErrors.Add(1)
		return err
	}
	w.flushedTo = through
	w.ack(acked)
	w.ackInbox(acked)
	w.gauges()
	return nil
}

// ack moves the checkpoints of every line whose Seq is at most acked.
func (w *Watcher) ack(acked int64) {
	for f := range w.unacked {
		n := 0
		for n < len(f.marks) && f.marks[n].seq <= acked {
			n++
		}
		if n == 0 {
			continue
		}
		m := f.marks[n-1]
		f.st.Offset, f.st.FP, f.st.FPLen, f.st.Inode, f.st.Messages = m.off, m.fp, m.fpLen, m.inode, m.msgs
		f.st.Size, f.st.MTime = f.size, f.mtime
		f.marks = append(f.marks[:0], f.marks[n:]...)
		if len(f.marks) == 0 {
			// Everything read was acknowledged by every pipeline: the
			// archive's copy, as it is now, holds nothing another sink
			// lacks.
			if size, ok := w.archiveSize(f); ok {
				f.st.ArchiveSize = size
			}
		}
		w.changed = true
		if w.o.OnAck != nil {
			w.o.OnAck(f.st.Path, m.off)
		}
		if len(f.marks) == 0 {
			delete(w.unacked, f)
		}
	}
}

// save writes the checkpoints if they changed (at most every
// SaveInterval unless final).
func (w *Watcher) save(final bool) error {
	if !w.changed || (!final && time.Since(w.lastSave) < w.o.SaveInterval) {
		return nil
	}
	files := make(map[string]*FileState, len(w.files))
	for p, f := range w.files {
		st := f.st
		files[p] = &st
	}
	if err := w.o.Store.Save(files, w.states); err != nil {
		w.Stats.SaveErrors.Add(1)
		return err
	}
	w.Stats.Saves.Add(1)
	w.lastSave = time.Now()
	w.changed = false
	return nil
}

// TranscriptDeleted is the lifecycle event watch records when a followed
// transcript disappears (Claude Code's retention sweep, a user's rm):
// what was mirrored stays in every sink.
type TranscriptDeleted = core.TranscriptDeleted

// deleted records that a followed file is gone and forgets it.
func (w *Watcher) deleted(ctx context.Context, path string, f *follower) error {
	if f.st.Kind == KindSidecar {
		delete(w.files, path)
		w.changed = true
		return nil
	}
	// First what a killed run gave the archive only (a subagent's file
	// too, whose main transcript may be forgotten already).
	if err := w.replayArchive(ctx, f); err != nil {
		return fmt.Errorf("replay the archive's copy of deleted %s: %w", path, err)
	}
	if f.st.Kind == KindAgent {
		w.agentsGone[path] = true // replayed: its session's deletion skips it
	}
	if f.st.Kind == KindMain {
		if err := w.replayUnfollowedAgents(ctx, f); err != nil {
			return fmt.Errorf("replay the archive's subagent copies of deleted %s: %w", path, err)
		}
	}
	if !w.mainMirrored(f.root, projectOf(f.root, path), f.st.Session) {
		// Nothing of the session reached the sinks: there is no record to
		// add the deletion to.
		w.Stats.Deletions.Add(1)
		w.log.Info("followed file deleted before anything of its session was mirrored", "path", path, "unread_bytes_at_last_look", f.size)
		delete(w.files, path)
		delete(w.unacked, f)
		w.changed = true
		return nil
	}
	d := core.TranscriptDeleted{Path: path, AgentID: f.st.Agent, MirroredBytes: f.readOff, LostBytes: max(f.size-f.readOff, 0)}
	id := uuid.NewSHA1(uuid.NameSpaceURL, fmt.Appendf(nil, "scribe-watch-deleted\x00%s\x00%d", path, f.inode)).String()
	res, err := w.submitLifecycle(ctx, core.LifecycleMeta{SessionID: f.st.Session, CWD: f.st.CWD, UUID: id}, d)
	if err != nil {
		return fmt.Errorf("record the deletion of %s: %w", path, err)
	}
	w.Stats.Deletions.Add(1)
	w.log.Info("followed file deleted; what was mirrored stays (bytes written after watch last looked at it are not known)", "path", path, "mirrored_bytes", d.MirroredBytes, "unread_bytes_at_last_look", d.LostBytes, "result", res.Status.String())
	delete(w.files, path)
	delete(w.unacked, f)
	w.changed = true
	return nil
}

// submit hands e to every pipeline, in order; the result is the first
// pipeline's (the one the counters describe). An error stops at the
// pipeline that failed: the line is submitted again later, and the
// pipelines that had it drop it as a duplicate.
func (w *Watcher) submit(ctx context.Context, e core.Entry) (core.Result, error) {
	var first core.Result
	e.Lease.Retain(len(w.ps) - 1) // each Submit takes one reference over
	for i, p := range w.ps {
		res, err := p.Submit(ctx, e)
		if err != nil {
			for range w.ps[i+1:] {
				e.Lease.Release() // the references of the pipelines not reached
			}
			return res, err
		}
		if i == 0 {
			first = res
		}
	}
	return first, nil
}

func (w *Watcher) submitLifecycle(ctx context.Context, m core.LifecycleMeta, d core.LifecycleData) (core.Result, error) {
	e, err := core.LifecycleEntry(m, d)
	if err != nil {
		return core.Result{}, err
	}
	return w.submit(ctx, e)
}

// archiveDirOf finds the session's project folder in an archive ("" when
// the archive does not have it yet).
func archiveDirOf(archive, session, cwd string) string {
	d, err := jsonl.Layout{ConfigDir: archive}.FindSession(session, cwd)
	if err != nil {
		return ""
	}
	return d
}

// archivePath is the path of f's transcript (main or subagent) in the
// first archive ("" without an archive, or before the archive has the
// session); found once, then kept.
func (w *Watcher) archivePath(f *follower) string {
	if f.archive != "" || len(w.o.Archives) == 0 || (f.st.Kind != KindMain && f.st.Kind != KindAgent) {
		return f.archive
	}
	dir := archiveDirOf(w.o.Archives[0], f.st.Session, f.st.CWD)
	if dir == "" {
		return ""
	}
	f.archive = claudedir.MainFile(dir, f.st.Session)
	if f.st.Kind == KindAgent {
		f.archive = claudedir.AgentFile(dir, f.st.Session, f.st.Agent)
	}
	return f.archive
}

// archiveSize is the size of f's copy in the first archive; ok is false
// without one.
func (w *Watcher) archiveSize(f *follower) (int64, bool) {
	p := w.archivePath(f)
	if p == "" {
		return 0, false
	}
	fi, err := os.Stat(p)
	if err != nil {
		f.archive = "" // moved (scribe relocate): found again next time
		return 0, false
	}
	return fi.Size(), true
}

// replayArchive sends every pipeline, again, the lines f's copy in the
// first archive holds past f.st.ArchiveSize (all of it when the copy is
// shorter: something rewrote it), and flushes them. Those lines were read
// from f, but not acknowledged, by a run that was killed: the archive got
// them, another sink (a team server) may not have, and f is gone, so it
// cannot be read again. Each pipeline deduplicates against its own sink:
// the archive drops them all, a sink that lacks one gets it (in a single
// pipeline, dedup replays them to its idempotent sinks). A flush that
// fails leaves f followed: the deletion is handled again later.
func (w *Watcher) replayArchive(ctx context.Context, f *follower) error {
	p := w.archivePath(f)
	if p == "" {
		return nil
	}
	rest, err := readTail(p, f.st.ArchiveSize)
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(p + claudedir.SealedSuffix); serr == nil {
			// A sealed archive is not read back here: what a killed run
			// gave it alone stays there (watch/DESIGN.md).
			w.log.Warn("followed file deleted; its archive copy is sealed and is not replayed to the other sinks", "path", f.st.Path, "archive", p+claudedir.SealedSuffix)
		}
		return nil
	}
	if err != nil {
		return err
	}
	// Whole lines only: a torn last line is no entry.
	rest = rest[:bytes.LastIndexByte(rest, '\n')+1]
	n := 0
	for _, line := range core.CutLines(rest, nil) {
		// Only lines with a uuid: dedup knows them exactly in every
		// pipeline. A uuid-less line (a title, a tag) is known only while
		// a session replays its start, and would be written twice to the
		// archive otherwise.
		e, err := core.ParseEntryOwned(line)
		if err != nil || e.UUID == "" {
			continue
		}
		if err := w.submitEntry(ctx, f, e); err != nil {
			return err
		}
		w.seq++
		n++
	}
	if n == 0 {
		return nil
	}
	w.Stats.Replayed.Add(int64(n))
	w.log.Info("followed file deleted with lines read but not acknowledged; replayed the archive's copy past its checkpoint to every sink", "path", f.st.Path, "archive", p, "lines", n)
	return w.flush(ctx, true)
}

// replayUnfollowedAgents replays, whole, the archive's copy of each
// subagent file of main's session that watch does not follow: one a killed
// run read before it saved its checkpoint, deleted before this run listed
// it. Nothing else knows it existed; its copy may hold lines only the
// archive got. Each pipeline's dedup drops what it has (the archive's is
// seeded from the copy; the team server stores an entry once by uuid).
func (w *Watcher) replayUnfollowedAgents(ctx context.Context, main *follower) error {
	p := w.archivePath(main)
	if p == "" {
		return nil
	}
	copies, err := filepath.Glob(claudedir.AgentFileGlob(filepath.Dir(p), main.st.Session))
	if err != nil {
		return err
	}
	for _, c := range copies {
		agent, ok := claudedir.AgentFileID(filepath.Base(c))
		if !ok {
			continue
		}
		src := claudedir.AgentFile(filepath.Dir(main.st.Path), main.st.Session, agent)
		if w.files[src] != nil || w.agentsGone[src] {
			delete(w.agentsGone, src)
			continue // followed: its own deletion replays (or replayed) it
		}
		f := &follower{root: main.root, archive: c,
			st: FileState{Path: src, Kind: KindAgent, Session: main.st.Session, Agent: agent, CWD: main.st.CWD}}
		if err := w.replayArchive(ctx, f); err != nil {
			return err
		}
	}
	return nil
}

// readTail reads the file at p from offset from to its end, or all of it
// when it is shorter than from (something rewrote it).
func readTail(p string, from int64) ([]byte, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if from > fi.Size() {
		from = 0
	}
	b := make([]byte, fi.Size()-from)
	n, err := fh.ReadAt(b, from)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:n], nil
}

// archivedMetadata returns the uuid-less lines the first archive holds
// for f's transcript (nil without an archive).
func (w *Watcher) archivedMetadata(f *follower) map[string]bool {
	path := w.archivePath(f)
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	set := map[string]bool{}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		if e, err := core.ParseEntryOwned(line); err == nil && e.UUID == "" {
			set[string(line)] = true
		}
	}
	return set
}

// copySidecar copies a changed sidecar file (a subagent's .meta.json, a
// tool result) into the session's folder in every archive, atomically.
// A session an archive does not hold yet is tried again later.
func (w *Watcher) copySidecar(f *follower, fi os.FileInfo) error {
	if !f.changedFrom(fi) && f.st.Size == fi.Size() {
		return nil
	}
	if len(w.o.Archives) == 0 {
		f.size, f.mtime, f.inode = fi.Size(), fi.ModTime().UnixNano(), inodeOf(fi)
		f.st.Size, f.st.MTime, f.st.Inode = f.size, f.mtime, f.inode
		return nil
	}
	_, rel := sessionDirRel(f.root, f.st.Path)
	cwd := w.sessionCWD(f)
	var targets []string
	for _, a := range w.o.Archives {
		d := archiveDirOf(a, f.st.Session, cwd)
		if d == "" {
			w.retry[f.st.Path] = true // the transcript comes first
			return nil
		}
		targets = append(targets, filepath.Join(d, f.st.Session, rel))
	}
	fh, err := openQuiet(f.st.Path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	data, err := readAllFrom(fh)
	fh.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", f.st.Path, err)
	}
	for _, t := range targets {
		if err := durable.WriteFile(t, data, 0o600); err != nil {
			return err
		}
	}
	w.Stats.SidecarsCopied.Add(1)
	w.Stats.BytesRead.Add(int64(len(data)))
	f.size, f.mtime, f.inode = fi.Size(), fi.ModTime().UnixNano(), inodeOf(fi)
	f.st.Size, f.st.MTime, f.st.Inode = f.size, f.mtime, f.inode
	w.changed = true
	return nil
}

func readAllFrom(fh *os.File) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(fh)
	return b.Bytes(), err
}

// sessionCWD is the cwd the session's main transcript recorded, if known.
func (w *Watcher) sessionCWD(f *follower) string {
	project, _ := sessionDirRel(f.root, f.st.Path)
	if m := w.files[claudedir.MainFile(filepath.Join(f.root, project), f.st.Session)]; m != nil {
		return m.st.CWD
	}
	return ""
}

// mainMirrored reports whether the session's main transcript has had a
// user or assistant line acknowledged (the archive's file exists, so
// records for its sidecar are not held back).
func projectOf(root, path string) string {
	rel, _ := filepath.Rel(root, path)
	project, _, _ := strings.Cut(rel, string(filepath.Separator))
	return project
}

func (w *Watcher) mainMirrored(root, project, session string) bool {
	m := w.files[claudedir.MainFile(filepath.Join(root, project), session)]
	return m != nil && m.st.Messages
}
