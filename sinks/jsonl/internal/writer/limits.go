package writer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/sys/unix"

	"github.com/e0dc0000/scribe/core"
)

// Bounded descriptors. A store that mirrors thousands of sessions cannot
// keep a lock and a transcript open for each: RLIMIT_NOFILE is often 1024,
// sometimes 256. The budget is split between session locks and open
// transcripts:
//
//	locks:  touch ──► locksOpen ≥ lockBudget? ──► makeRoom: drain everything,
//	        release the locks of the least recently used sessions that have
//	        nothing queued (down to 3/4 of the budget) ──► take the new lock
//	files:  writeJob ──► filesOpen > fileBudget? ──► close it once written and synced
//
// A session whose lock was given up takes it again at its next entry and
// then checks its files: one that changed size while unlocked (another
// writer appended) is scanned again, so its torn tail is sealed, its
// metadata block kept, and uuids the other writer stored are not written
// twice. One writer per session still holds: the lock is only given up
// with nothing queued.

// fdReserve is left for everything else the process opens (sockets,
// plugins, the index, stdin and stdout).
const fdReserve = 48

// fdBudgets splits n (0: the soft RLIMIT_NOFILE) between locks and
// files.
func fdBudgets(n int) (locks, files int) {
	if n <= 0 {
		var rl unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err == nil && rl.Cur > 0 && rl.Cur < 1<<20 {
			n = int(rl.Cur) - fdReserve
		} else {
			n = 1024 - fdReserve
		}
	}
	n = max(n, 8)
	return n / 2, n - n/2
}

// makeRoom writes out what is queued and gives up the locks of idle
// sessions, least recently used first. Called with s.mu held; it releases
// s.mu while it drains (lock order: io before mu) and returns with it held.
// keep is the session about to take its lock.
func (s *Sink) makeRoom(keep *session) {
	s.mu.Unlock()
	s.io.Lock()
	_ = s.drainIO(false) // a failed write stays queued; its session keeps its lock
	s.mu.Lock()
	s.releaseIdle(keep, s.lockBudget*3/4)
	s.mu.Unlock()
	s.io.Unlock()
	s.mu.Lock()
}

// releaseIdle gives up locks until at most target are held. Called with
// s.io and s.mu held.
func (s *Sink) releaseIdle(keep *session, target int) {
	var idle []*session
	for _, ss := range s.sessions {
		if ss.lock != nil && ss != keep && ss.idle(s.opts.Fsync) {
			idle = append(idle, ss)
		}
	}
	sort.Slice(idle, func(i, j int) bool { return idle[i].lastUse < idle[j].lastUse })
	for _, ss := range idle {
		if s.locksOpen <= target {
			break
		}
		for _, f := range ss.files() {
			f.ino = s.inodeOf(f)
			s.closeFile(f)
		}
		ss.lock.Release()
		ss.lock = nil
		ss.released = true
		s.locksOpen--
		s.locksReleased.Add(1)
	}
}

// idle reports whether nothing of the session waits to be written or
// synced.
func (ss *session) idle(policy FsyncPolicy) bool {
	for _, f := range ss.files() {
		if f.pending.len() > 0 || f.seal {
			return false
		}
		if f.unsynced && policy != FsyncNever {
			return false
		}
	}
	return true
}

// closeFile closes a transcript's descriptor; the next write opens it
// again. Called with s.io held.
func (s *Sink) closeFile(f *file) {
	if f.fd == nil {
		return
	}
	_ = f.fd.Close()
	f.fd = nil
	s.filesOpen--
	s.filesClosed.Add(1)
}

// inodeOf is the inode of a session file as it is on disk (0: none).
func (s *Sink) inodeOf(f *file) uint64 {
	if f.path == "" {
		return 0
	}
	disk, _ := s.onDisk(f)
	var st unix.Stat_t
	if unix.Stat(disk, &st) != nil {
		return 0
	}
	return st.Ino
}

// refuseDeleted refuses a session whose transcript would be made anew in
// a folder where it was deleted (rm, or the SDK's deleteSession, left its
// deletion marker): its later lines, recorded by a hook, watch or record
// after the rm, would make a second file holding only the tail (its
// parents in the trash, where trash restore then refuses to overwrite it).
// Claude Code stops saving such a transcript too. Counted as a session
// gone; trash restore removes the markers. Called with s.mu held.
func (s *Sink) refuseDeleted(ss *session) error {
	// The marker of this folder's transcript ("<folder>/<id>.jsonl").
	m := filepath.Join(s.layout.DeletedTranscriptsDir(), s.layout.DeletionMarkers(filepath.Base(ss.dir), ss.id)[0])
	if _, err := os.Lstat(m); err != nil {
		return nil
	}
	ss.gone = fmt.Errorf("session %s was deleted from %s (its deletion marker %s is there: rm, or the SDK's deleteSession): "+
		"its later lines are refused, so that it is not split into two files (scribe trash restore brings it back; or remove the marker to record it anew)", ss.id, ss.dir, m)
	s.sessionsGone.Add(1)
	s.log.Error("session was deleted; refusing its later lines", "session", ss.id, "marker", m)
	return core.Permanent(ss.gone)
}

// recheck scans again the files of a session that took its lock back, when
// one changed size while the lock was given up. A file that held lines and
// is gone now, or is another file (another inode), was moved away while the
// lock was given up (rm, relocate, a replace): writing on would split the
// session into the moved file and a new one holding only the tail, so the
// session's later lines are refused instead (ss.gone), counted and logged.
// Called with s.mu held.
func (s *Sink) recheck(ss *session) error {
	for _, f := range ss.files() {
		if f.path == "" || f.scanned == nil {
			continue
		}
		disk, want := s.onDisk(f)
		var st unix.Stat_t
		err := unix.Stat(disk, &st)
		if err != nil && !errors.Is(err, unix.ENOENT) {
			return &os.PathError{Op: "stat", Path: disk, Err: err}
		}
		if (err != nil && want > 0) || (err == nil && f.ino != 0 && st.Ino != f.ino) {
			what := "was moved away or removed"
			if err == nil {
				what = "was replaced by another file"
			}
			ss.gone = fmt.Errorf("session %s: %s %s while this writer had given up its lock (rm, relocate?): "+
				"its later lines are refused, so that it is not split into two files", ss.id, disk, what)
			s.sessionsGone.Add(1)
			s.log.Error("session file moved away while its lock was given up; refusing the session's later lines",
				"session", ss.id, "file", disk, "what", what)
			return core.Permanent(ss.gone)
		}
		var size int64
		if err == nil {
			size = st.Size
		}
		if size == want {
			continue
		}
		sc, err := s.scanOf(f)
		if err != nil {
			return err
		}
		s.rescans.Add(1)
		s.log.Warn("session file changed while its lock was given up; scanned it again", "file", f.path, "want_size", want, "size", size)
		if len(sc.uuids) > 0 {
			f.foreign = make(map[string]struct{}, len(sc.uuids))
			for _, u := range sc.uuids {
				f.foreign[u] = struct{}{}
			}
		}
		sc.uuids, sc.metadata = nil, nil
		f.adopt(sc)
	}
	return nil
}
