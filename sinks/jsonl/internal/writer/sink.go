package writer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/reader"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/sealed"
)

// The fsync policies.
const (
	// FsyncAlways writes and syncs every batch as it arrives.
	FsyncAlways FsyncPolicy = "always"
	// FsyncBatch syncs what was written at every Flush (acknowledgements
	// wait for one), at the drain interval once the intake pauses, and at
	// least every syncEvery intervals under a steady one (the default).
	FsyncBatch FsyncPolicy = "batch"
	// FsyncNever leaves syncing to the OS; Flush still writes, so what it
	// acknowledged survives a killed process, but not a power cut.
	FsyncNever FsyncPolicy = "never"
)

// Default drain intervals, as Claude Code's write queue.
const (
	DrainLocal = 100 * time.Millisecond
	DrainCloud = 10 * time.Millisecond
	// maxPending makes Write drain at once when this much waits in memory.
	maxPending = 64 << 20
	// drainAt wakes the drain loop before its interval when this much
	// waits: a fast intake is written while it goes on, in pieces small
	// enough that the memory they hold is reused rather than grown. Such a
	// drain leaves the syncs of the batch policy to the interval's drain
	// or the next Flush, which is when acknowledgements are given.
	drainAt = 4 << 20
	// syncEvery bounds, in drain intervals, how long a steady intake goes
	// without the batch policy's sync when no Flush comes.
	syncEvery = 10
)

// Sink is the local store's write side. Entries are routed by their
// sessionId and agentId to Claude Code's files; each file has a write queue
// that a timer drains with one write per drain.
type Sink struct {
	opts   Options
	layout Layout
	log    hclog.Logger

	// mu guards the routing state and the queues. io serializes drains and
	// owns the open files; when both are taken, io comes first.
	mu       sync.Mutex
	sessions map[string]*session
	pending  int64 // bytes queued in all files
	heldN    int   // lines held in all files, so HeldSince costs nothing when none is
	started  bool
	closed   bool
	stop     chan struct{}
	done     chan struct{}

	io        sync.Mutex
	retryAt   time.Time
	retryWait time.Duration

	// dirty holds the files with queued bytes (under mu) and toSync those
	// written and not yet synced (under io), so that a drain or a flush
	// costs what was written, not the number of files the store knows;
	// kick wakes an idle drain loop when something is queued.
	dirty  map[*file]struct{}
	toSync map[*file]struct{}
	// ahead syncs in the background what sized drains wrote (syncahead.go).
	ahead *syncAhead
	// writesSinceTick counts Write calls since the drain loop's last tick;
	// lastSync is when that loop last synced (its goroutine only).
	writesSinceTick atomic.Int64
	lastSync        time.Time
	kick            chan struct{}
	// full wakes the drain loop early: drainAt bytes wait.
	full chan struct{}

	// Open files and locks are bounded (limits.go): a session idle and
	// written out may lose its lock, and a file its descriptor, to make
	// room; both are taken again when the session gets more entries.
	lockBudget, fileBudget int
	locksOpen              int   // under mu
	filesOpen              int64 // under io
	useTick                int64 // under mu

	linesWritten, bytesWritten, writes, fsyncs    atomic.Int64
	partialCut                                    atomic.Int64 // cutPartialLine
	filesCreated, tornSealed, reappends, unrouted atomic.Int64
	writeErrors, lockWaits                        atomic.Int64
	eventsSkipped                                 atomic.Int64
	locksReleased, filesClosed, rescans           atomic.Int64
	foreignDups, rejected, unwritten              atomic.Int64
	sessionsGone                                  atomic.Int64

	// sealed is set for an archive sealed at rest (sealedstore.go).
	sealed *sealed.Store
}

var (
	_ core.Sink     = (*Sink)(nil)
	_ core.Seeder   = (*Sink)(nil)
	_ core.Reporter = (*Sink)(nil)
	_ core.Loader   = (*Sink)(nil)

	_ core.EntryChecker = (*Sink)(nil)
	_ core.Holder       = (*Sink)(nil)
)

// Load implements core.Loader: the local store is also the local loader
// (resume { loaders = ["jsonl/local", ...] } names the sink).
func (s *Sink) Load(ctx context.Context, ref core.SessionRef) (*core.Transcript, error) {
	if s.sealed != nil {
		return s.loadSealed(ctx, ref)
	}
	ld := reader.Loader{Layout: s.layout.reader(), ID: s.opts.ID, MaxBytes: s.opts.LoadMaxBytes}
	return ld.Load(ctx, ref)
}

type session struct {
	id     string
	cwd    string // the first cwd seen; names the project folder
	dir    string // the project folder, once decided
	lock   *layout.SessionLock
	main   *file
	agents map[string]*file
	// side is the sidecar of scribe's lifecycle records (checkpoint.go);
	// nil until one arrives or Seed reads it.
	side *file
	// lastUse orders sessions for giving up their locks; released is set
	// when the lock was given up, so taking it again checks the files.
	lastUse  int64
	released bool
	// gone is set when, with the lock given up, one of the session's files
	// was moved away (rm, relocate) or replaced: its later lines are
	// refused, so that the session is never split into two files.
	gone error
}

// file is one transcript's write queue.
//
//	Write ──► held (until the first user/assistant entry) ──► pending ──► drain: one write(2)
//	                                                          ▲
//	               latest metadata, every ReappendBytes ──────┘
type file struct {
	sess    *session
	agentID string

	path         string
	scanned      *existing // what the file held when first touched
	materialized bool      // the file exists or will on the next drain
	held         []held
	pending      wqueue
	seal         bool         // the file ends in a torn line: prefix "\n"
	sf           *sealed.File // a sealed file's next frame (sealedstore.go)
	// Owned by the drain (s.io):
	fd       *os.File
	created  bool // created by this sink: its folder must be synced
	unsynced bool
	partial  bool // the last write was cut short inside a line
	// ino is the file's inode when the session's lock was given up
	// (recheck: another inode then is another file).
	ino uint64
	// foreign holds uuids another writer appended while this sink did not
	// hold the session's lock; entries with them are not written again.
	foreign map[string]struct{}
	// size is the file's size once everything queued is written; latest
	// holds the last line of each re-append type and latestEnd the offset
	// just after it.
	size      int64
	latest    [][]byte
	latestEnd []int64
}

type held struct {
	raw []byte
	typ string
	seq int64
}

// New returns a sink with resolved options.
func New(opts Options) (*Sink, error) {
	if opts.ConfigDir == "" {
		return nil, errors.New("jsonl: no config folder")
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.DrainInterval <= 0 {
		opts.DrainInterval = DrainLocal
	}
	if opts.ReappendBytes <= 0 {
		opts.ReappendBytes = 32 << 10
	}
	if opts.Fsync == "" {
		opts.Fsync = FsyncBatch
	}
	s := &Sink{
		opts:     opts,
		layout:   Layout{Layout: layout.Layout{ConfigDir: opts.ConfigDir}},
		log:      opts.Logger,
		sessions: make(map[string]*session),
		dirty:    make(map[*file]struct{}),
		toSync:   make(map[*file]struct{}),
		ahead:    newSyncAhead(),
		kick:     make(chan struct{}, 1),
		full:     make(chan struct{}, 1),
	}
	s.lockBudget, s.fileBudget = fdBudgets(opts.MaxOpenFiles)
	sealed, err := sealed.NewStore(opts.ConfigDir, opts.Encryption, opts.Environ, opts.Logger)
	if err != nil {
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	s.sealed = sealed
	return s, nil
}

// Start starts the drain timer (after opening a sealed archive's key).
func (s *Sink) Start(ctx context.Context) error {
	if s.sealed != nil {
		if _, err := s.sealed.DataKey(ctx); err != nil {
			return fmt.Errorf("jsonl: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("jsonl: already started")
	}
	if s.closed {
		return errors.New("jsonl: shut down")
	}
	s.started = true
	s.stop = make(chan struct{})
	s.done = make(chan struct{})
	go s.drainLoop()
	return nil
}

func (s *Sink) drainLoop() {
	defer close(s.done)
	t := time.NewTicker(s.opts.DrainInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			// Under a steady intake the syncs the sized drains left wait
			// for a Flush (acknowledgements do) or for syncEvery; once the
			// intake pauses, the interval's drain syncs.
			quiet := s.writesSinceTick.Swap(0) == 0
			if !time.Now().After(s.retryAt) {
				continue
			}
			if quiet || time.Since(s.lastSync) >= syncEvery*s.opts.DrainInterval {
				s.io.Lock()
				_ = s.flushIO()
				s.lastSync = time.Now()
				s.io.Unlock()
			} else {
				_ = s.drainSized()
			}
		case <-s.full:
			if time.Now().After(s.retryAt) {
				_ = s.drainSized()
			}
		}
		if s.busy() {
			continue
		}
		// Nothing queued: sleep until a write queues something (an idle
		// store costs no wake-ups).
		t.Stop()
		select {
		case <-s.stop:
			return
		case <-s.kick:
		}
		t.Reset(s.opts.DrainInterval)
	}
}

// busy reports whether something waits for the drain.
func (s *Sink) busy() bool {
	s.io.Lock()
	unsynced := len(s.toSync) > 0 // a sized drain's syncs wait for the interval
	s.io.Unlock()
	if unsynced {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.dirty) > 0
}

// session returns the state of a session, creating it.
func (s *Sink) session(id string) *session {
	ss := s.sessions[id]
	if ss == nil {
		ss = &session{id: id, agents: make(map[string]*file)}
		ss.main = &file{sess: ss}
		s.sessions[id] = ss
	}
	return ss
}

// touch takes the session's lock and decides its folder if it already
// exists on disk.
func (s *Sink) touch(ctx context.Context, ss *session, cwd string) error {
	if ss.cwd == "" && cwd != "" {
		ss.cwd = cwd
	}
	if ss.gone != nil {
		return core.Permanent(ss.gone)
	}
	s.useTick++
	ss.lastUse = s.useTick
	if ss.lock == nil {
		if err := layout.CheckName("session id", ss.id); err != nil {
			return core.Permanent(err)
		}
		if s.locksOpen >= s.lockBudget {
			s.makeRoom(ss)
		}
	}
	// makeRoom lets go of s.mu while it drains: another caller (the
	// pipeline seeding a subagent, the runner routing) may have taken the
	// session's lock meanwhile, and a second flock of our own would fail.
	if ss.lock == nil {
		if s.opts.LockWait > 0 {
			s.lockWaits.Add(1)
		}
		l, err := layout.AcquireLock(ctx, s.layout.LockFile(ss.id), s.opts.LockWait)
		if err != nil {
			err = fmt.Errorf("session %s: %w", ss.id, err)
			if errors.Is(err, layout.ErrLocked) {
				// Another process writes it: retrying this run will not
				// change that; the entry is refused, counted, and the
				// rest goes on.
				return core.Permanent(err)
			}
			return err
		}
		ss.lock = l
		s.locksOpen++
		if ss.released {
			ss.released = false
			if err := s.recheck(ss); err != nil {
				if ss.gone != nil {
					// Nothing more is written: the lock goes back at
					// once, so that trash restore can take it.
					ss.lock.Release()
					ss.lock = nil
					s.locksOpen--
				}
				return err
			}
		}
	}
	if ss.dir == "" {
		dir, err := s.layout.FindSession(ss.id, ss.cwd)
		if err != nil {
			return err
		}
		ss.dir = dir
	}
	return nil
}

// fileFor returns the file of a session or of one of its agents, scanning
// it the first time if it exists.
func (s *Sink) fileFor(ss *session, agentID string) (*file, error) {
	f := ss.main
	if agentID != "" {
		if err := layout.CheckName("agent id", agentID); err != nil {
			return nil, core.Permanent(err)
		}
		f = ss.agents[agentID]
		if f == nil {
			f = &file{sess: ss, agentID: agentID}
			ss.agents[agentID] = f
		}
	}
	if f.scanned == nil && ss.dir != "" {
		f.path = s.path(ss, agentID)
		sc, err := s.scanOf(f)
		if err != nil {
			return nil, err
		}
		f.adopt(sc)
	}
	if f.latest == nil {
		f.latest = make([][]byte, len(reappendTypes))
		f.latestEnd = make([]int64, len(reappendTypes))
	}
	return f, nil
}

func (s *Sink) path(ss *session, agentID string) string {
	if agentID != "" {
		return claudedir.AgentFile(ss.dir, ss.id, agentID)
	}
	return claudedir.MainFile(ss.dir, ss.id)
}

// Seed implements core.Seeder: it takes the session's lock, so no other
// process appends while this one deduplicates against the file, and
// returns what the file holds.
func (s *Sink) Seed(ctx context.Context, ref core.SessionRef) (core.Seed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ref.SessionID == "" {
		return core.Seed{}, nil
	}
	ss := s.session(ref.SessionID)
	if err := s.touch(ctx, ss, ref.CWD); err != nil {
		return core.Seed{}, err
	}
	if ss.dir == "" {
		return core.Seed{}, nil
	}
	f, err := s.fileFor(ss, ref.AgentID)
	if err != nil {
		return core.Seed{}, err
	}
	sc := f.scanned
	seed := core.Seed{UUIDs: sc.uuids, Metadata: sc.metadata}
	sc.uuids, sc.metadata = nil, nil // the pipeline keeps them now
	if ref.AgentID == "" {
		// The session's lifecycle records dedup against its sidecar.
		if seed.UUIDs, err = s.seedSide(ss, seed.UUIDs); err != nil {
			return core.Seed{}, err
		}
	}
	return seed, nil
}

// CheckEntry implements core.EntryChecker: an entry whose ids cannot name
// a file is rejected before it is queued anywhere.
func (s *Sink) CheckEntry(e *core.Entry) error {
	if e.SessionID == "" || e.Type == core.TypeScribeState {
		return nil
	}
	if err := layout.CheckName("session id", e.SessionID); err != nil {
		return fmt.Errorf("%w: %v", core.ErrRejected, err)
	}
	if e.AgentID != "" && (e.IsSidechain || e.IsMetadata()) {
		if err := layout.CheckName("agent id", e.AgentID); err != nil {
			return fmt.Errorf("%w: %v", core.ErrRejected, err)
		}
	}
	return nil
}

// HeldSince implements core.Holder: the lowest Seq among the lines held
// back until their session's first user or assistant entry.
func (s *Sink) HeldSince() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.heldN == 0 {
		return 0 // the common case, asked at every flush
	}
	var low int64
	for _, ss := range s.sessions {
		for _, f := range ss.files() {
			for _, h := range f.held {
				if h.seq > 0 && (low == 0 || h.seq < low) {
					low = h.seq
				}
			}
		}
	}
	return low
}

// Write routes each entry to its file's queue. It takes nothing when too
// much already waits for a disk that keeps failing; otherwise it routes
// the entries one by one and, when one fails, returns a core.PartialError
// that says how many it took, so that the pipeline never hands an entry
// over twice.
func (s *Sink) Write(ctx context.Context, entries []core.Entry) error {
	s.mu.Lock()
	full := s.pending > maxPending
	s.mu.Unlock()
	if full {
		if err := s.drainSized(); err != nil {
			return fmt.Errorf("jsonl: %d MiB waiting for the disk: %w", maxPending>>20, err)
		}
	}
	s.writesSinceTick.Add(1)
	s.mu.Lock()
	err := s.route(ctx, entries)
	always := s.opts.Fsync == FsyncAlways
	full = s.pending > maxPending
	if s.pending >= drainAt && !full && !always {
		select {
		case s.full <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
	// The entries are queued: a failed write keeps them there, counted and
	// retried, and Flush reports it.
	switch {
	case always:
		_ = s.drain()
	case full:
		_ = s.drainSized()
	}
	return err
}

// route queues each entry on its file. Called with s.mu held.
func (s *Sink) route(ctx context.Context, entries []core.Entry) error {
	if s.closed {
		return &core.PartialError{N: 0, Err: core.Permanent(errors.New("jsonl: write after shutdown"))}
	}
	for i := range entries {
		if err := s.routeOne(ctx, &entries[i]); err != nil {
			if core.IsPermanent(err) {
				s.rejected.Add(1)
			}
			return &core.PartialError{N: i, Err: err}
		}
	}
	return nil
}

func (s *Sink) routeOne(ctx context.Context, e *core.Entry) error {
	if e.Type == core.TypeScribeState {
		// A session event, not a transcript line: Claude Code's
		// readers must not meet it. Other sinks forward it.
		s.eventsSkipped.Add(1)
		return nil
	}
	if e.SessionID == "" {
		s.unrouted.Add(1)
		s.log.Error("entry has no session id; not written", "type", e.Type, "uuid", e.UUID)
		return nil
	}
	ss := s.session(e.SessionID)
	if err := s.touch(ctx, ss, e.CWD); err != nil {
		return err
	}
	if core.IsLifecycleRecord(e.Type) {
		// Lifecycle events and checkpoints: the sidecar, never the
		// transcript (see core/lifecycle.go).
		return s.routeSide(ss, e)
	}
	agent := ""
	if e.AgentID != "" && (e.IsSidechain || e.IsMetadata()) {
		agent = e.AgentID
	}
	f, err := s.fileFor(ss, agent)
	if err != nil {
		return err
	}
	if f.foreign != nil && e.UUID != "" {
		if _, ok := f.foreign[e.UUID]; ok {
			s.foreignDups.Add(1)
			return nil
		}
	}
	if !f.materialized {
		if !e.IsMessage() {
			f.held = append(f.held, held{raw: bytes.Clone(e.Raw), typ: e.Type, seq: e.Seq})
			s.heldN++
			return nil
		}
		if err := s.materialize(ss, f, agent); err != nil {
			return err
		}
	}
	s.queue(f, e.Raw, e.Type, e.Lease)
	return nil
}

// adopt takes over what a scan of the file found.
func (f *file) adopt(sc *existing) {
	f.scanned = sc
	if sc.size == 0 {
		return
	}
	f.materialized = true
	f.seal = sc.torn
	f.size = sc.size
	if f.seal {
		f.size++
	}
	f.latest, f.latestEnd = sc.latest, sc.latestEnd
}

// materialize decides the file's path and moves what it held to its queue.
func (s *Sink) materialize(ss *session, f *file, agent string) error {
	if ss.dir == "" {
		cwd := ss.cwd
		if cwd == "" {
			cwd = s.opts.DefaultCWD
		}
		if cwd == "" {
			return core.Permanent(fmt.Errorf("session %s: no cwd to name its project folder", ss.id))
		}
		ss.dir = s.layout.ProjectDir(cwd)
	}
	if f.scanned == nil {
		f.path = s.path(ss, agent)
		sc, err := s.scanOf(f)
		if err != nil {
			return err
		}
		f.adopt(sc)
	}
	if f == ss.main && !f.materialized {
		if err := s.refuseDeleted(ss); err != nil {
			return err
		}
	}
	f.materialized = true
	hl := f.held
	f.held = nil
	s.heldN -= len(hl)
	for _, h := range hl {
		s.queue(f, h.raw, h.typ, nil)
	}
	if f == ss.main {
		return s.releaseSide(ss)
	}
	return nil
}

// queue adds an entry's line to the file's queue, and then the session's
// metadata block if one of its lines has fallen ReappendBytes behind.
func (s *Sink) queue(f *file, raw []byte, typ string, lease *core.Lease) {
	s.queueRaw(f, raw, lease)
	if i, ok := reappendIndex[typ]; ok {
		f.latest[i] = bytes.Clone(raw)
		f.latestEnd[i] = f.size
	}
	if f.behind(int64(s.opts.ReappendBytes)) {
		s.appendBlock(f)
	}
}

func (s *Sink) queueRaw(f *file, raw []byte, lease *core.Lease) {
	s.dirty[f] = struct{}{}
	select {
	case s.kick <- struct{}{}:
	default:
	}
	f.pending.add(raw, lease)
	n := int64(len(raw) + 1)
	f.size += n
	s.pending += n
}

// behind reports whether a latest metadata line lies more than n bytes
// before the end of the file.
func (f *file) behind(n int64) bool {
	for i, l := range f.latest {
		if l != nil && f.size-f.latestEnd[i] > n {
			return true
		}
	}
	return false
}

// Shutdown appends a session's metadata block again if one of its lines
// has fallen a quarter of ReappendBytes behind the end (so the file ends
// with it, without a block per short run), flushes, closes the files and
// releases the locks. Metadata of sessions that never got a user or
// assistant entry is reported, since it was never written.
func (s *Sink) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	started := s.started
	s.mu.Unlock()
	if started {
		close(s.stop)
		<-s.done
	}
	s.mu.Lock()
	for _, ss := range s.sessions {
		for _, f := range ss.files() {
			if f.materialized && f.behind(int64(s.opts.ReappendBytes/4)) {
				s.appendBlock(f)
			}
		}
	}
	s.mu.Unlock()
	s.io.Lock()
	defer s.io.Unlock()
	defer s.ahead.wait() // no goroutine outlives the sink
	err := s.flushIO()
	// A failed write is tried again until ctx ends (the user may free the
	// disk); what is still queued then is counted as unwritten.
	for wait := 50 * time.Millisecond; err != nil; wait = min(2*wait, time.Second) {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
			err = s.flushIO()
			continue
		}
		break
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		var lines int
		for _, ss := range s.sessions {
			for _, f := range ss.files() {
				lines += f.pending.lines
				if f.partial && s.sealed == nil {
					if cerr := s.cutPartialLine(f); cerr != nil {
						s.log.Error("could not cut the part of a line a failed write left", "file", f.path, "error", cerr)
					}
				}
			}
		}
		s.unwritten.Store(int64(lines))
		err = fmt.Errorf("%d lines not written: %w", lines, err)
	}
	for _, ss := range s.sessions {
		for _, f := range ss.files() {
			if len(f.held) > 0 {
				s.log.Warn("session never got a user or assistant entry; its metadata was not written",
					"session", ss.id, "agent", f.agentID, "entries", len(f.held))
			}
			if f.fd != nil && f.pending.len() == 0 {
				s.closeFile(f)
			}
		}
		if err == nil && ss.lock != nil {
			ss.lock.Release()
			ss.lock = nil
			s.locksOpen--
		}
	}
	if err != nil {
		return fmt.Errorf("jsonl: entries not written at shutdown: %w", err)
	}
	return nil
}

// Report implements core.Reporter.
func (s *Sink) Report() map[string]int64 {
	s.mu.Lock()
	var held int64
	for _, ss := range s.sessions {
		for _, f := range ss.files() {
			held += int64(len(f.held))
		}
	}
	pending := s.pending
	s.mu.Unlock()
	m := map[string]int64{
		"lines_written":       s.linesWritten.Load(),
		"bytes_written":       s.bytesWritten.Load(),
		"writes":              s.writes.Load(),
		"fsyncs":              s.fsyncs.Load(),
		"fsyncs_ahead":        s.ahead.syncs.Load(),
		"partial_lines_cut":   s.partialCut.Load(),
		"fsyncs_ahead_failed": s.ahead.failed.Load(),
		"files_created":       s.filesCreated.Load(),
		"torn_tails_sealed":   s.tornSealed.Load(),
		"metadata_reappends":  s.reappends.Load(),
		"write_errors":        s.writeErrors.Load(),
		"unrouted":            s.unrouted.Load(),
		"events_skipped":      s.eventsSkipped.Load(),
		"held":                held,
		"pending_bytes":       pending,
		"rejected":            s.rejected.Load(),
		"locks_released":      s.locksReleased.Load(),
		"files_closed":        s.filesClosed.Load(),
		"rescans":             s.rescans.Load(),
		"foreign_duplicates":  s.foreignDups.Load(),
		"sessions_gone":       s.sessionsGone.Load(),
		"unwritten_lines":     s.unwritten.Load(),
	}
	s.reportSealed(m)
	return m
}
