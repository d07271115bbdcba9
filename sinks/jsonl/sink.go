package jsonl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/seal"
)

// FsyncPolicy says when the store calls fsync. It is decided in one place,
// (*Sink).sync, and nowhere else.
type FsyncPolicy string

// The fsync policies.
const (
	// FsyncAlways writes and syncs every batch as it arrives.
	FsyncAlways FsyncPolicy = "always"
	// FsyncBatch syncs once per drain of the write queue (the default).
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
)

// Config is the sink's block in the HCL file.
type Config struct {
	// Dir is the folder this store keeps its projects/ (and its scribe/
	// locks) under, laid out as Claude Code lays out its config folder;
	// "" is Claude's config folder itself. An archive names a folder of
	// its own here.
	Dir string `json:"dir"`
	// Fsync is always, batch (default) or never.
	Fsync string `json:"fsync"`
	// DrainInterval is a duration; "" picks 100ms, or 10ms when a cloud
	// sink is configured.
	DrainInterval string `json:"drain_interval"`
	// ReappendBytes: when one of the session's latest metadata lines
	// (title, tag, last prompt, ...) lies more than this many bytes before
	// the end of the file, the whole block is appended again. Default 32768.
	ReappendBytes int `json:"reappend_bytes"`
	// LockWait is how long to wait for another writer of the same session;
	// "0s" fails at once, naming the holder.
	LockWait string `json:"lock_wait"`
	// LoadMaxBytes, when positive, makes resume refuse transcripts larger
	// than this from this store, so the summary loader serves them.
	LoadMaxBytes int64 `json:"load_max_bytes"`
	// Encryption seals the archive at rest (sealed.go): age recipients and
	// an identity, or a passphrase, from a file, a variable or a command.
	// Claude Code's own folder (dir = "") can never be sealed.
	Encryption seal.Options `json:"encryption"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() *Config {
	return &Config{Fsync: string(FsyncBatch), ReappendBytes: 32 << 10, LockWait: "0s"}
}

// Validate implements core.Validator.
func (c *Config) Validate() error {
	_, err := c.options(core.HostInfo{})
	return err
}

func (c *Config) options(host core.HostInfo) (Options, error) {
	o := Options{ConfigDir: host.ConfigDir, Fsync: FsyncPolicy(c.Fsync), ReappendBytes: c.ReappendBytes}
	if c.Dir != "" {
		dir, err := filepath.Abs(c.Dir)
		if err != nil {
			return o, fmt.Errorf("dir %q: %w", c.Dir, err)
		}
		o.ConfigDir = dir
	}
	switch o.Fsync {
	case FsyncAlways, FsyncBatch, FsyncNever:
	default:
		return o, fmt.Errorf("fsync %q: want always, batch or never", c.Fsync)
	}
	switch {
	case c.DrainInterval != "":
		d, err := time.ParseDuration(c.DrainInterval)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("drain_interval %q: want a positive duration such as 100ms", c.DrainInterval)
		}
		o.DrainInterval = d
	case host.CloudSinks:
		o.DrainInterval = DrainCloud
	default:
		o.DrainInterval = DrainLocal
	}
	if c.LoadMaxBytes < 0 {
		return o, fmt.Errorf("load_max_bytes %d: want 0 (no limit) or a number of bytes", c.LoadMaxBytes)
	}
	o.LoadMaxBytes = c.LoadMaxBytes
	if !c.Encryption.IsZero() {
		if c.Dir == "" {
			return o, errors.New(`encryption: Claude Code's own folder (dir = "") is never sealed: Claude Code reads it; give the archive a folder of its own`)
		}
		if err := c.Encryption.Validate(); err != nil {
			return o, fmt.Errorf("encryption: %w", err)
		}
		o.Encryption = c.Encryption
	}
	if c.ReappendBytes <= 0 {
		return o, fmt.Errorf("reappend_bytes %d: want a positive number of bytes", c.ReappendBytes)
	}
	if c.LockWait != "" {
		d, err := time.ParseDuration(c.LockWait)
		if err != nil || d < 0 {
			return o, fmt.Errorf("lock_wait %q: want a duration such as 0s or 30s", c.LockWait)
		}
		o.LockWait = d
	}
	return o, nil
}

// Options are the resolved settings of a Sink.
type Options struct {
	// ConfigDir is Claude's config folder; files go under its projects/.
	ConfigDir     string
	Fsync         FsyncPolicy
	DrainInterval time.Duration
	ReappendBytes int
	LockWait      time.Duration
	// DefaultCWD names the project folder of a session whose entries carry
	// no cwd.
	DefaultCWD string
	// LoadMaxBytes bounds what Load serves (0: no bound).
	LoadMaxBytes int64
	// MaxOpenFiles bounds the descriptors the store keeps open (locks and
	// transcripts); 0 derives it from the process's RLIMIT_NOFILE.
	MaxOpenFiles int
	// ID names the store in the transcripts it loads.
	ID     core.ID
	Logger hclog.Logger
	// Encryption, when set, seals every transcript (sealedstore.go);
	// Environ is where its key variables are looked up.
	Encryption seal.Options
	Environ    []string
}

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
	kick   chan struct{}

	// Open files and locks are bounded (limits.go): a session idle and
	// written out may lose its lock, and a file its descriptor, to make
	// room; both are taken again when the session gets more entries.
	lockBudget, fileBudget int
	locksOpen              int   // under mu
	filesOpen              int64 // under io
	useTick                int64 // under mu

	linesWritten, bytesWritten, writes, fsyncs    atomic.Int64
	filesCreated, tornSealed, reappends, unrouted atomic.Int64
	writeErrors, lockWaits                        atomic.Int64
	eventsSkipped                                 atomic.Int64
	locksReleased, filesClosed, rescans           atomic.Int64
	foreignDups, rejected, unwritten              atomic.Int64

	// sealed is set for an archive sealed at rest (sealedstore.go).
	sealed *sealedStore
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
	ld := Loader{Layout: s.layout, ID: s.opts.ID, MaxBytes: s.opts.LoadMaxBytes}
	return ld.Load(ctx, ref)
}

type session struct {
	id     string
	cwd    string // the first cwd seen; names the project folder
	dir    string // the project folder, once decided
	lock   *sessionLock
	main   *file
	agents map[string]*file
	// side is the sidecar of scribe's lifecycle records (checkpoint.go);
	// nil until one arrives or Seed reads it.
	side *file
	// lastUse orders sessions for giving up their locks; released is set
	// when the lock was given up, so taking it again checks the files.
	lastUse  int64
	released bool
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
	seal         bool        // the file ends in a torn line: prefix "\n"
	sf           *sealedFile // a sealed file's next frame (sealedstore.go)
	// Owned by the drain (s.io):
	fd       *os.File
	created  bool // created by this sink: its folder must be synced
	unsynced bool
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
		layout:   Layout{ConfigDir: opts.ConfigDir},
		log:      opts.Logger,
		sessions: make(map[string]*session),
		dirty:    make(map[*file]struct{}),
		toSync:   make(map[*file]struct{}),
		kick:     make(chan struct{}, 1),
	}
	s.lockBudget, s.fileBudget = fdBudgets(opts.MaxOpenFiles)
	sealed, err := newSealedStore(opts.ConfigDir, opts.Encryption, opts.Environ, opts.Logger)
	if err != nil {
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	s.sealed = sealed
	return s, nil
}

// Start starts the drain timer (after opening a sealed archive's key).
func (s *Sink) Start(ctx context.Context) error {
	if s.sealed != nil {
		if _, err := s.sealed.dataKey(ctx); err != nil {
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
			s.io.Lock()
			if time.Now().After(s.retryAt) {
				_ = s.drainIO()
			}
			s.io.Unlock()
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
	s.useTick++
	ss.lastUse = s.useTick
	if ss.lock == nil {
		if err := checkName("session id", ss.id); err != nil {
			return core.Permanent(err)
		}
		if s.locksOpen >= s.lockBudget {
			s.makeRoom(ss)
		}
		if s.opts.LockWait > 0 {
			s.lockWaits.Add(1)
		}
		l, err := acquireLock(ctx, s.layout.LockFile(ss.id), s.opts.LockWait)
		if err != nil {
			err = fmt.Errorf("session %s: %w", ss.id, err)
			if errors.Is(err, ErrLocked) {
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
		if err := checkName("agent id", agentID); err != nil {
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
		return AgentFile(ss.dir, ss.id, agentID)
	}
	return MainFile(ss.dir, ss.id)
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
	if err := checkName("session id", e.SessionID); err != nil {
		return fmt.Errorf("%w: %v", core.ErrRejected, err)
	}
	if e.AgentID != "" && (e.IsSidechain || e.IsMetadata()) {
		if err := checkName("agent id", e.AgentID); err != nil {
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
		if err := s.drain(); err != nil {
			return fmt.Errorf("jsonl: %d MiB waiting for the disk: %w", maxPending>>20, err)
		}
	}
	s.mu.Lock()
	err := s.route(ctx, entries)
	drainNow := s.opts.Fsync == FsyncAlways || s.pending > maxPending
	s.mu.Unlock()
	if drainNow {
		// The entries are queued: a failed write keeps them there, counted
		// and retried, and Flush reports it.
		_ = s.drain()
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
	s.queue(f, e.Raw, e.Type)
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
	f.materialized = true
	hl := f.held
	f.held = nil
	s.heldN -= len(hl)
	for _, h := range hl {
		s.queue(f, h.raw, h.typ)
	}
	if f == ss.main {
		return s.releaseSide(ss)
	}
	return nil
}

// queue adds an entry's line to the file's queue, and then the session's
// metadata block if one of its lines has fallen ReappendBytes behind.
func (s *Sink) queue(f *file, raw []byte, typ string) {
	s.queueRaw(f, raw)
	if i, ok := reappendIndex[typ]; ok {
		f.latest[i] = bytes.Clone(raw)
		f.latestEnd[i] = f.size
	}
	if f.behind(int64(s.opts.ReappendBytes)) {
		s.appendBlock(f)
	}
}

func (s *Sink) queueRaw(f *file, raw []byte) {
	s.dirty[f] = struct{}{}
	select {
	case s.kick <- struct{}{}:
	default:
	}
	f.pending.add(raw)
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

// appendBlock queues the latest line of each re-append type, so that
// listings, which read only the last 64 KiB, find them.
func (s *Sink) appendBlock(f *file) {
	for i, l := range f.latest {
		if l != nil {
			s.queueRaw(f, l)
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
	return s.drainIO()
}

// job is one file's queue taken for writing.
type job struct {
	f    *file
	buf  wqueue
	seal bool
}

func (s *Sink) drainIO() error {
	s.mu.Lock()
	var jobs []job
	for f := range s.dirty {
		if f.pending.len() == 0 {
			continue
		}
		s.pending -= int64(f.pending.len())
		jobs = append(jobs, job{f: f, buf: f.pending.take(), seal: f.seal})
		f.seal = false
	}
	clear(s.dirty)
	s.mu.Unlock()
	var errs []error
	for _, j := range jobs {
		rest, sealLeft, err := s.writeJob(j)
		s.mu.Lock()
		f := j.f
		if err != nil {
			errs = append(errs, err)
			s.pending += int64(rest.len())
			f.pending.prepend(rest)
			f.seal = f.seal || sealLeft
			s.dirty[f] = struct{}{}
		} else {
			j.buf.release()
		}
		s.mu.Unlock()
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
		if err := os.MkdirAll(filepath.Dir(f.path), dirMode); err != nil {
			return j.buf, j.seal, fmt.Errorf("create folder for %s: %w", f.path, err)
		}
		_, statErr := os.Stat(f.path)
		fd, err := os.OpenFile(f.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, fileMode)
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
	}
	if err != nil {
		return left, false, fmt.Errorf("write %s: %w", f.path, err)
	}
	return s.written(f)
}

// written ends a successful write of f: counted, synced per the policy,
// and its descriptor closed when over the budget. Called with s.io held.
func (s *Sink) written(f *file) (rest wqueue, sealLeft bool, err error) {
	s.writes.Add(1)
	if err := s.sync(f); err != nil {
		return wqueue{}, false, err
	}
	if s.filesOpen > int64(s.fileBudget) {
		s.closeFile(f)
	}
	return wqueue{}, false, nil
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
	s.fsyncs.Add(1)
	f.unsynced = false
	if f.created {
		if err := syncDir(filepath.Dir(f.path)); err != nil {
			return err
		}
		f.created = false
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open folder %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync folder %s: %w", dir, err)
	}
	return nil
}

// Flush writes every queue now and syncs it (unless the policy is never).
func (s *Sink) Flush(context.Context) error {
	s.io.Lock()
	defer s.io.Unlock()
	return s.flushIO()
}

func (s *Sink) flushIO() error {
	if err := s.drainIO(); err != nil {
		return err
	}
	var errs []error
	for f := range s.toSync {
		if f.unsynced && f.fd != nil {
			if err := s.sync(f); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		if !f.unsynced || s.opts.Fsync == FsyncNever {
			delete(s.toSync, f)
		}
	}
	return errors.Join(errs...)
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
			ss.lock.release()
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
		"lines_written":      s.linesWritten.Load(),
		"bytes_written":      s.bytesWritten.Load(),
		"writes":             s.writes.Load(),
		"fsyncs":             s.fsyncs.Load(),
		"files_created":      s.filesCreated.Load(),
		"torn_tails_sealed":  s.tornSealed.Load(),
		"metadata_reappends": s.reappends.Load(),
		"write_errors":       s.writeErrors.Load(),
		"unrouted":           s.unrouted.Load(),
		"events_skipped":     s.eventsSkipped.Load(),
		"held":               held,
		"pending_bytes":      pending,
		"rejected":           s.rejected.Load(),
		"locks_released":     s.locksReleased.Load(),
		"files_closed":       s.filesClosed.Load(),
		"rescans":            s.rescans.Load(),
		"foreign_duplicates": s.foreignDups.Load(),
		"unwritten_lines":    s.unwritten.Load(),
	}
	s.reportSealed(m)
	return m
}

// Factory makes jsonl sinks.
func Factory() core.SinkFactory { return factory{} }

type factory struct{}

func (factory) Kind() core.Kind    { return core.KindSink }
func (factory) Type() string       { return "jsonl" }
func (factory) DefaultConfig() any { return DefaultConfig() }

func (factory) CreateSink(_ context.Context, set core.Settings, cfg any) (core.Sink, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("sink %s: wrong config type %T", set.ID, cfg)
	}
	o, err := c.options(set.Host)
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", set.ID, err)
	}
	o.Logger = set.Logger
	o.ID = set.ID
	o.Environ = set.Environ
	o.DefaultCWD = set.Host.WorkDir
	if set.Host.LockWait > 0 {
		o.LockWait = set.Host.LockWait
	}
	return New(o)
}
