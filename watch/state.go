package watch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
)

// FingerprintSize is how many leading bytes of a file identify it (the
// OpenTelemetry filelog receiver's default); a shorter file is known by
// all its bytes, and its fingerprint grows with it.
const FingerprintSize = 1000

// File kinds.
const (
	KindMain      = "main"      // <project>/<sessionId>.jsonl
	KindAgent     = "agent"     // <project>/<sessionId>/subagents/**/agent-<id>.jsonl
	KindLifecycle = "lifecycle" // <project>/<sessionId>/scribe-lifecycle.jsonl
	KindSidecar   = "sidecar"   // any other file under <project>/<sessionId>/ (.meta.json, tool-results/)
)

// FileState is one followed file's checkpoint: everything before Offset
// went through the pipeline and was acknowledged (flushed by every sink).
type FileState struct {
	Path    string `json:"path"`
	Kind    string `json:"kind"`
	Session string `json:"session"`
	Agent   string `json:"agent,omitempty"`
	CWD     string `json:"cwd,omitempty"`
	Offset  int64  `json:"offset"`
	// FP is the hex sha256 of the file's first FPLen bytes (at most
	// FingerprintSize), taken when Offset was reached.
	FP    string `json:"fp"`
	FPLen int    `json:"fp_len"`
	Inode uint64 `json:"inode"`
	// Size and MTime are the file's as last seen (sidecars are copied
	// again when they change).
	Size  int64 `json:"size"`
	MTime int64 `json:"mtime_ns"`
	// Messages is set once a user or assistant line was sent: lines
	// before the first one wait, as Claude Code's own writer holds them.
	Messages bool `json:"messages,omitempty"`
	// ArchiveSize is the size of this transcript's copy in the first
	// archive when every line read so far was acknowledged: what the
	// archive holds past it came from lines read but not acknowledged (a
	// run killed between the archive's write and another sink's). When
	// the transcript is deleted, that part is replayed from the archive
	// to every pipeline, so that no sink misses it (replayArchive).
	ArchiveSize int64 `json:"archive_size,omitempty"`
}

type stateFile struct {
	Version int          `json:"version"`
	Saved   string       `json:"saved"`
	Files   []*FileState `json:"files"`
	// States are the sessions' states as the hook events left them.
	States map[string]string `json:"states,omitempty"`
}

// Store keeps the checkpoints of every followed file in one JSON file
// (checkpoints.json), replaced atomically; watch.lock serializes the
// processes that use it (watch for its whole run, hook for one delta).
type Store struct {
	dir  string
	lock *durable.Lock
}

// ErrBusy is returned by OpenStore when another process holds the lock
// past the wait.
var ErrBusy = errors.New("checkpoints are held by another process")

// OpenStore takes the store's lock in dir, waiting up to wait (0: fail at
// once with ErrBusy if another process holds it; negative: wait forever).
func OpenStore(dir string, wait time.Duration) (*Store, error) { return OpenStoreAs(dir, wait, "") }

// OpenStoreAs is OpenStore that names the holder's role in the lock file
// ("watch": a hook then leaves its event in the inbox at once).
func OpenStoreAs(dir string, wait time.Duration, role string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create checkpoint folder: %w", err)
	}
	lk, err := durable.Acquire(context.Background(), filepath.Join(dir, "watch.lock"), wait, role)
	var le *durable.LockedError
	if errors.As(err, &le) {
		return nil, fmt.Errorf("%w (%s, %s)", ErrBusy, le.Path, le.Holder)
	}
	if err != nil {
		return nil, err
	}
	return &Store{dir: dir, lock: lk}, nil
}

// HeldByWatch reports whether the lock file in dir names watch as its
// last holder (a watch that died leaves its name, but no lock).
func HeldByWatch(dir string) bool {
	return durable.Role(filepath.Join(dir, "watch.lock")) == "watch"
}

// Dir is the store's folder.
func (s *Store) Dir() string { return s.dir }

// Close releases the lock.
func (s *Store) Close() error {
	s.lock.Release()
	s.lock = nil
	return nil
}

func (s *Store) path() string { return filepath.Join(s.dir, "checkpoints.json") }

// Load reads the checkpoints, by path, and the sessions' states; a
// missing file is none.
func (s *Store) Load() (map[string]*FileState, map[string]core.State, error) {
	states := map[string]core.State{}
	b, err := os.ReadFile(s.path())
	if errors.Is(err, os.ErrNotExist) {
		return map[string]*FileState{}, states, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read checkpoints: %w", err)
	}
	var sf stateFile
	if err := json.Unmarshal(b, &sf); err != nil {
		return nil, nil, fmt.Errorf("read checkpoints %s: %w", s.path(), err)
	}
	if sf.Version != 1 {
		return nil, nil, fmt.Errorf("read checkpoints %s: version %d, want 1", s.path(), sf.Version)
	}
	out := make(map[string]*FileState, len(sf.Files))
	for _, f := range sf.Files {
		out[f.Path] = f
	}
	for id, st := range sf.States {
		states[id] = core.State(st)
	}
	return out, states, nil
}

// Save replaces the checkpoints with files and states, durably.
func (s *Store) Save(files map[string]*FileState, states map[string]core.State) error {
	sf := stateFile{Version: 1, Saved: time.Now().UTC().Format(time.RFC3339Nano), Files: make([]*FileState, 0, len(files)), States: map[string]string{}}
	for id, st := range states {
		sf.States[id] = string(st)
	}
	for _, f := range files {
		sf.Files = append(sf.Files, f)
	}
	sort.Slice(sf.Files, func(i, j int) bool { return sf.Files[i].Path < sf.Files[j].Path })
	var buf bytes.Buffer
	buf.Grow(256 * len(sf.Files))
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&sf); err != nil {
		return fmt.Errorf("encode checkpoints: %w", err)
	}
	if err := durable.WriteFile(s.path(), buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("save checkpoints: %w", err)
	}
	return nil
}

// fingerprint hashes b (the file's first bytes).
func fingerprint(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:16])
}
