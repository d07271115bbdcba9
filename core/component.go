// Package core holds scribe's domain and engine: the transcript entry, the
// component contracts (sinks, loaders, guards), and the pipeline that moves
// entries from a host through guards and dedup to every sink.
//
// core imports no other package of scribe's; everything else imports core.
package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Sentinel errors shared by every component.
var (
	// ErrNotFound is returned by a Loader that does not have the session.
	ErrNotFound = errors.New("session not found")
	// ErrPersistenceDisabled is returned (wrapped, with the reason) by a Guard
	// that refuses an entry.
	ErrPersistenceDisabled = errors.New("session persistence disabled")
	// ErrClosed is returned by Submit after Shutdown has begun.
	ErrClosed = errors.New("pipeline closed")
	// ErrInvalidID is returned when a component ID is not of the form type/name.
	ErrInvalidID = errors.New("invalid component id")
	// ErrDropped is returned (wrapped, with the reason) by a Processor that
	// drops an entry on purpose.
	ErrDropped = errors.New("entry dropped")
	// ErrRejected is returned (wrapped, with the reason) for an entry that
	// no sink can store: an id that cannot name a file, a missing cwd.
	// Submit reports it as a Rejected result; the rest of the input goes on.
	ErrRejected = errors.New("entry rejected")
)

// permanent marks an error that retrying cannot fix.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent marks err as one that retrying cannot fix: the pipeline stops
// retrying the entry it concerns, counts it and moves on.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// IsPermanent reports whether err, or an error it wraps, was marked
// Permanent or is ErrRejected.
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p) || errors.Is(err, ErrRejected)
}

// PartialError is returned by a Sink's Write that took the first N entries
// of the batch and failed on entry N with Err. The pipeline never hands the
// first N to the sink again: it retries from entry N (or, when Err is
// permanent, drops entry N, counted, and goes on with N+1).
type PartialError struct {
	N   int
	Err error
}

func (e *PartialError) Error() string {
	return fmt.Sprintf("after %d entries: %v", e.N, e.Err)
}
func (e *PartialError) Unwrap() error { return e.Err }

// Rejectf builds the error of an entry that cannot be stored.
func Rejectf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrRejected, fmt.Sprintf(format, args...))
}

// Kind is the kind of a component.
type Kind string

// The component kinds.
const (
	KindSink      Kind = "sink"
	KindLoader    Kind = "loader"
	KindGuard     Kind = "guard"
	KindProcessor Kind = "processor"
)

// ID names a component instance as "type/name", for example "jsonl/local".
// It is comparable and can be used as a map key.
type ID struct {
	Type string
	Name string
}

// ParseID parses "type/name". Both parts must be non-empty and made of
// letters, digits, '_' and '-'.
func ParseID(s string) (ID, error) {
	typ, name, ok := strings.Cut(s, "/")
	if !ok || !validIDPart(typ) || !validIDPart(name) {
		return ID{}, fmt.Errorf("%w %q: want type/name, each of letters, digits, '_' or '-'", ErrInvalidID, s)
	}
	return ID{Type: typ, Name: name}, nil
}

// MustParseID is ParseID for constants; it panics on a bad ID.
func MustParseID(s string) ID {
	id, err := ParseID(s)
	if err != nil {
		panic(err)
	}
	return id
}

func validIDPart(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
		default:
			return false
		}
	}
	return true
}

// String returns "type/name".
func (id ID) String() string { return id.Type + "/" + id.Name }

// Sink receives entries that passed the guards and dedup.
//
// Lifecycle: Start once, then any number of Write and Flush calls from a
// single goroutine (the pipeline gives each sink its own), then Shutdown.
// Shutdown flushes; it is safe to call twice and safe without Start.
type Sink interface {
	Start(ctx context.Context) error
	// Write hands the sink a batch in submission order. The sink must not
	// keep or change the slice or the entries' Raw bytes after it returns;
	// it copies what it keeps, unless it holds a reference on the entry's
	// Lease (Retain before Write returns, Release once it no longer reads
	// Raw): then it may write the entry's own bytes later.
	Write(ctx context.Context, entries []Entry) error
	// Flush returns nil only when every entry written before the call is
	// durable: it survives the process being killed.
	Flush(ctx context.Context) error
	Shutdown(ctx context.Context) error
}

// SessionRef names a session, or one of its subagent sidechains when AgentID
// is set. CWD, when known, says which project folder to look in first.
type SessionRef struct {
	SessionID string
	AgentID   string
	CWD       string
}

// Key returns the dedup key: the session id, plus "/agent-<id>" for a
// sidechain.
func (r SessionRef) Key() string {
	if r.AgentID == "" {
		return r.SessionID
	}
	return r.SessionID + "/agent-" + r.AgentID
}

// Transcript is what a Loader returns: the session's entries in file order
// (a loader may leave out what precedes the last compact boundary, which
// the conversation rebuild would drop anyway).
type Transcript struct {
	Ref     SessionRef
	Entries []Entry
	// Source is the ID of the loader that served it (set by Resumer).
	Source ID
	// Partial is true when the transcript is known to be incomplete: only
	// the last compaction summary and what follows it, for instance.
	Partial bool
	// Notes say what the loader skipped or repaired while reading.
	Notes []string
}

// Loader finds a session's transcript. A miss is ErrNotFound.
type Loader interface {
	Load(ctx context.Context, ref SessionRef) (*Transcript, error)
}

// Guard decides whether an entry may be persisted. It returns nil to allow,
// or an error wrapping ErrPersistenceDisabled that says why. e is a copy,
// shared by the guards of one pipeline: a guard must not change it nor
// keep it after Check returns.
type Guard interface {
	Check(ctx context.Context, e *Entry) error
}

// StaticGuard is a Guard whose answer does not depend on the entry (the
// built-in env, flag and config guards decide once, when created). Allows
// reports that answer: a pipeline does not ask a static guard that allows
// about each entry.
type StaticGuard interface {
	Guard
	Allows() bool
}

// Processor transforms entries between the guards and dedup. Process must
// not change e (nor the bytes of e.Raw): it returns e itself when nothing
// changes, or a changed copy with a new Raw, which is parsed again. It
// returns an error wrapping ErrDropped to drop the entry on purpose; any
// other error drops it too and is counted as a processor failure. Process
// may be called from several goroutines at once.
type Processor interface {
	Process(ctx context.Context, e Entry) (Entry, error)
}

// ProcessorFactory creates processors.
type ProcessorFactory interface {
	Factory
	CreateProcessor(ctx context.Context, set Settings, cfg any) (Processor, error)
}

// EntryChecker is implemented by sinks that can tell, before an entry is
// queued, that they can never store it (an id that cannot name a file).
// Check returns nil, or an error wrapping ErrRejected. It is called from
// Submit, concurrently, and must not block; e is a copy, shared by a
// pipeline's checks: a check must not change it nor keep it.
type EntryChecker interface {
	CheckEntry(e *Entry) error
}

// Holder is implemented by sinks that keep some entries back on purpose
// (the local store holds a session's metadata until its first user or
// assistant entry, as Claude Code does). HeldSince returns the lowest Seq
// among the entries held now, or 0 when none is held; acknowledgements
// stop below it.
type Holder interface {
	HeldSince() int64
}

// Refusal builds the error a Guard returns.
func Refusal(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrPersistenceDisabled, fmt.Sprintf(format, args...))
}

// Seeder tells the pipeline's dedup what a session already holds, the first
// time the pipeline touches that session. The primary store implements it.
type Seeder interface {
	// Seed returns the uuids already stored for ref and the raw bytes of the
	// uuid-less metadata lines stored for it (used to recognise a replay).
	Seed(ctx context.Context, ref SessionRef) (Seed, error)
}

// Seed is what a Seeder knows of a stored session.
type Seed struct {
	UUIDs    []string
	Metadata [][]byte
}

// Settings is what the host gives every component it creates.
type Settings struct {
	ID     ID
	Logger hclog.Logger
	// Environ is the environment the host decided to expose, as KEY=VALUE.
	// Components never read the process environment themselves.
	Environ []string
	// Args is the command line of the host, for guards that look at flags.
	Args []string
	// Host holds host-wide facts a component may need.
	Host HostInfo
}

// HostInfo holds facts about the whole configuration.
type HostInfo struct {
	// ConfigDir is the Claude config folder ($CLAUDE_CONFIG_DIR or ~/.claude).
	ConfigDir string
	// CloudSinks is true when a network sink is configured; the local store
	// then drains every 10 ms instead of every 100 ms.
	CloudSinks bool
	// CleanupPeriodDays is the top-level cleanup_period_days setting.
	CleanupPeriodDays int
	// CleanupPeriodDaysFrom says where CleanupPeriodDays came from, for
	// messages: "file:line:col", "env SCRIBE_CLEANUP_PERIOD_DAYS", "flag
	// --cleanup-period-days" or "built-in default"; "" when unknown.
	CleanupPeriodDaysFrom string
	// WorkDir is the host's working directory: the project of a session
	// whose entries carry no cwd.
	WorkDir string
	// LockWait, when positive, overrides how long a store waits for another
	// writer of a session (the --lock-wait flag).
	LockWait time.Duration
}

// Factory creates components of one type. Config is decoded by the host:
// DefaultConfig returns a pointer to a struct holding the defaults, which
// the host fills from the user's block (as JSON) and passes to Create.
type Factory interface {
	Kind() Kind
	Type() string
	DefaultConfig() any
}

// SinkFactory creates sinks.
type SinkFactory interface {
	Factory
	CreateSink(ctx context.Context, set Settings, cfg any) (Sink, error)
}

// LoaderFactory creates loaders.
type LoaderFactory interface {
	Factory
	CreateLoader(ctx context.Context, set Settings, cfg any) (Loader, error)
}

// GuardFactory creates guards.
type GuardFactory interface {
	Factory
	CreateGuard(ctx context.Context, set Settings, cfg any) (Guard, error)
}

// Validator is implemented by component configs that can check themselves.
type Validator interface {
	Validate() error
}

// IsUUID reports whether s is a UUID written as 8-4-4-4-12 hex digits, in
// either case: what a session id must be. It is the one check of that
// shape; it runs per entry, so it is written without a regexp.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
