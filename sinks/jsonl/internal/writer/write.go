package writer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// The write side of the sink: queued lines drained into their files (plain
// or sealed), fsync by policy, Flush and what it promises.

// appendBlock queues the latest line of each re-append type, so that
// listings, which read only the last 64 KiB, find them.
func (s *Sink) appendBlock(f *file) {
	for i, l := range f.latest {
		if l != nil {
			s.queueRaw(f, l, nil)
			f.latestEnd[i] = f.size
		}
	}
	s.reappends.Add(1)
}

// drain writes every file's queue with one write each, then syncs as the
// policy says. The routing lock is held only to swap each file's queue for
// its spare buffer, so Write goes on while the disk works. A failed write
// puts what was not written back at the front of the queue and backs off;
// the error is returned, counted and logged.
func (s *Sink) drain() error {
	s.io.Lock()
	defer s.io.Unlock()
	return s.drainIO(false)
}

// drainSized is a drain made because much waits (drainAt, maxPending):
// under the batch policy it writes without syncing; the interval's drain
// or the next Flush syncs what it wrote.
func (s *Sink) drainSized() error {
	s.io.Lock()
	defer s.io.Unlock()
	return s.drainIO(s.opts.Fsync == FsyncBatch)
}

// job is one file's queue taken for writing.
type job struct {
	f         *file
	buf       wqueue
	seal      bool
	deferSync bool // a sized drain's: written, not synced (drainSized)
}

// drainIO writes every queue; deferSync leaves the syncs of what it wrote
// to a later flushIO (drainSized).
func (s *Sink) drainIO(deferSync bool) error {
	s.mu.Lock()
	var jobs []job
	for f := range s.dirty {
		if f.pending.len() == 0 {
			continue
		}
		s.pending -= int64(f.pending.len())
		jobs = append(jobs, job{f: f, buf: f.pending.take(), seal: f.seal, deferSync: deferSync})
		f.seal = false
	}
	clear(s.dirty)
	s.mu.Unlock()
	var errs []error
	var toSync []*file // written by this drain, synced together after it
	for _, j := range jobs {
		rest, sealLeft, err := s.writeJob(j)
		s.mu.Lock()
		f := j.f
		if err != nil {
			errs = append(errs, err)
		}
		if err != nil && (rest.len() > 0 || sealLeft) {
			// rest holds the job's blocks and references: back in front.
			s.pending += int64(rest.len())
			f.pending.prepend(rest)
			f.seal = f.seal || sealLeft
			s.dirty[f] = struct{}{}
		} else {
			j.buf.release() // all written (a failed sync is retried by Flush)
		}
		s.mu.Unlock()
		if err == nil && !deferSync && f.unsynced && f.fd != nil {
			toSync = append(toSync, f)
		}
	}
	// The syncs of a drain that syncs are made once everything is written,
	// side by side (syncFiles).
	if err := s.syncFiles(toSync); err != nil {
		errs = append(errs, err)
	}
	err := errors.Join(errs...)
	if err != nil {
		s.writeErrors.Add(1)
		s.retryWait = min(max(2*s.retryWait, 50*time.Millisecond), 5*time.Second)
		s.retryAt = time.Now().Add(s.retryWait)
		s.log.Error("write failed; keeping the entries queued and retrying", "retry_in", s.retryWait, "error", err)
	} else {
		s.retryWait = 0
	}
	return err
}

func (ss *session) files() []*file {
	out := make([]*file, 0, 2+len(ss.agents))
	out = append(out, ss.main)
	for _, f := range ss.agents {
		out = append(out, f)
	}
	if ss.side != nil {
		out = append(out, ss.side)
	}
	return out
}

// writeJob writes a taken queue with as few write calls as it can (one,
// below 100 MiB) and syncs per the policy. It returns what was not written
// and whether the torn tail is still to be sealed. Called with s.io held.
func (s *Sink) writeJob(j job) (rest wqueue, sealLeft bool, err error) {
	f := j.f
	if s.sealed != nil {
		return s.writeSealed(j)
	}
	if f.fd == nil {
		if err := os.MkdirAll(filepath.Dir(f.path), layout.DirMode); err != nil {
			return j.buf, j.seal, fmt.Errorf("create folder for %s: %w", f.path, err)
		}
		_, statErr := os.Stat(f.path)
		fd, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, layout.FileMode)
		if err != nil {
			return j.buf, j.seal, fmt.Errorf("open %s: %w", f.path, err)
		}
		f.fd = fd
		s.filesOpen++
		if errors.Is(statErr, os.ErrNotExist) {
			f.created = true
			s.filesCreated.Add(1)
		}
	}
	if j.seal {
		// The last line was torn (a crash mid-write); end it so the next
		// line starts on a line of its own.
		n, err := f.fd.Write([]byte{'\n'})
		if n != 1 {
			return j.buf, true, fmt.Errorf("seal torn tail of %s: %w", f.path, err)
		}
		s.tornSealed.Add(1)
		s.log.Warn("sealed a torn last line", "file", f.path)
	}
	left, n, lines, err := j.buf.writeTo(int(f.fd.Fd()))
	s.bytesWritten.Add(int64(n))
	s.linesWritten.Add(int64(lines))
	if n > 0 {
		f.unsynced = true
		s.toSync[f] = struct{}{}
		// A write cut short may end inside a line: the next one goes on
		// from that byte, and if none comes, Shutdown cuts the part off
		// (cutPartialLine reads the file's end to tell).
		f.partial = err != nil
	}
	if err != nil {
		return left, false, fmt.Errorf("write %s: %w", f.path, err)
	}
	return s.written(j)
}

// written ends a successful write of f: counted, synced per the policy,
// and its descriptor closed when over the budget. Called with s.io held.
func (s *Sink) written(j job) (rest wqueue, sealLeft bool, err error) {
	f := j.f
	s.writes.Add(1)
	if s.filesOpen > int64(s.fileBudget) {
		// Over the budget of open files: synced now, so that it can be
		// closed before the drain opens another.
		if err := s.sync(f); err != nil {
			return wqueue{}, false, err
		}
		s.closeFile(f)
		return wqueue{}, false, nil
	}
	if j.deferSync {
		// Sync it in the background, without waiting: the sync that
		// counts then finds the disk done (syncahead.go).
		s.ahead.wrote(f.fd, int64(j.buf.len()))
		return wqueue{}, false, nil // in toSync: synced at the interval or the next Flush
	}
	return wqueue{}, false, nil // synced with the drain's other files (drainIO)
}

// sync is the one place the fsync policy is applied: batch and always
// sync after every drain (always drains at every Write), never leaves it to
// the OS. Called with s.io held.
func (s *Sink) sync(f *file) error {
	if !f.unsynced || s.opts.Fsync == FsyncNever {
		return nil
	}
	if err := f.fd.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", f.path, err)
	}
	if err := s.recordExtent(f); err != nil {
		return err
	}
	return s.synced(f, nil)
}

// synced records that f's bytes are on disk and, the first time, syncs the
// folder that holds its name (unless dirs says that is done).
func (s *Sink) synced(f *file, dirs map[string]error) error {
	s.fsyncs.Add(1)
	f.unsynced = false
	if !f.created {
		return nil
	}
	dir := filepath.Dir(f.path)
	err, done := dirs[dir]
	if !done {
		err = durable.SyncDir(dir)
		if dirs != nil {
			dirs[dir] = err
		}
	}
	if err != nil {
		return err
	}
	f.created = false
	return nil
}

// syncWorkers is how many fsyncs syncFiles has waiting at once.
const syncWorkers = 16

// syncFiles syncs files side by side: the file system commits the fsyncs
// that wait together in one journal commit, where one after another each
// waits for a commit of its own (20 files: 120 ms one by one on the bench
// machine). Called with s.io held; the fsync policy applies as in sync.
func (s *Sink) syncFiles(files []*file) error {
	if s.opts.Fsync == FsyncNever || len(files) == 0 {
		return nil
	}
	if len(files) == 1 {
		return s.sync(files[0])
	}
	errs := make([]error, len(files))
	_ = durable.Each(context.Background(), syncWorkers, len(files), func(_ context.Context, i int) error {
		if f := files[i]; f.unsynced && f.fd != nil {
			if err := f.fd.Sync(); err != nil {
				errs[i] = fmt.Errorf("fsync %s: %w", f.path, err)
			} else {
				errs[i] = s.recordExtent(f) // a sealed file's, once its frames are on disk
			}
		}
		return nil // every file is tried; errs says which failed
	})
	dirs := make(map[string]error)
	for i, f := range files {
		if errs[i] == nil && f.unsynced && f.fd != nil {
			errs[i] = s.synced(f, dirs)
		}
	}
	return errors.Join(errs...)
}

// Flush writes every queue now and syncs it (unless the policy is never).
func (s *Sink) Flush(context.Context) error {
	s.io.Lock()
	defer s.io.Unlock()
	return s.flushIO()
}

func (s *Sink) flushIO() error {
	if err := s.drainIO(false); err != nil {
		return err
	}
	var files []*file
	for f := range s.toSync {
		if f.unsynced && f.fd != nil {
			files = append(files, f)
		}
	}
	err := s.syncFiles(files)
	for f := range s.toSync {
		if !f.unsynced || s.opts.Fsync == FsyncNever {
			delete(s.toSync, f)
		}
	}
	return err
}

// cutPartialLine truncates f after its last newline: the part of a line
// a write cut short left there, when nothing will write the rest (the
// store gave up at Shutdown). The lines before it were written whole;
// without this, the next run would seal the part into a line of its own
// that no reader can parse. Reads back at most the file's tail.
func (s *Sink) cutPartialLine(f *file) error {
	fd, err := os.OpenFile(f.path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer fd.Close()
	fi, err := fd.Stat()
	if err != nil {
		return err
	}
	end := fi.Size()
	buf := make([]byte, 64<<10)
	for end > 0 {
		start := max(end-int64(len(buf)), 0)
		chunk := buf[:end-start]
		if _, err := fd.ReadAt(chunk, start); err != nil {
			return err
		}
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			end = start + int64(i) + 1
			break
		}
		end = start
	}
	if end == fi.Size() {
		return nil
	}
	if err := fd.Truncate(end); err != nil {
		return err
	}
	if err := fd.Sync(); err != nil {
		return err
	}
	s.partialCut.Add(1)
	s.log.Warn("cut the part of a line a failed write left at the end of the file", "file", f.path, "bytes", fi.Size()-end)
	return nil
}
