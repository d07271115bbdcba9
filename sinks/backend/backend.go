// Package backend holds what scribe's storage backends (postgres, s3) share
// beyond core's Sink and Loader: the listing the command line needs
// (`scribe ls --from`, `copy --all`), laid out as the Agent SDK's
// SessionStore keys sessions (a project key, the sanitized cwd, and a
// session id; subagents under a subpath).
package backend

import (
	"bytes"
	"context"
	"errors"
	"strings"

	"github.com/e0dc0000/scribe/core"
)

// Listed is one stored session: the SDK's listSessions item plus its
// project key.
type Listed struct {
	ProjectKey string
	SessionID  string
	// MTime is the time of the session's last write, in epoch milliseconds.
	MTime int64
}

// Lister is the listing a backend offers.
type Lister interface {
	// ListSessions returns the main transcripts stored for projectKey (every
	// project when it is ""), subagents left out, in no particular order.
	ListSessions(ctx context.Context, projectKey string) ([]Listed, error)
	// ListSubagents returns the agent ids of the subagent transcripts stored
	// under a session, sorted.
	ListSubagents(ctx context.Context, projectKey, sessionID string) ([]string, error)
}

// SubpathLoader loads any subpath of a session, such as LifecycleSubpath.
// A miss is core.ErrNotFound.
type SubpathLoader interface {
	LoadSubpath(ctx context.Context, sessionID, subpath string) (*core.Transcript, error)
}

// Subpath is the SDK's subpath of a ref: "" for the main transcript,
// "subagents/agent-<id>" for a subagent's.
func Subpath(ref core.SessionRef) string {
	if ref.AgentID == "" {
		return ""
	}
	return "subagents/agent-" + ref.AgentID
}

// AgentOfSubpath returns the agent id of a subagent subpath, and false for
// any other subpath.
func AgentOfSubpath(subpath string) (string, bool) {
	id, ok := strings.CutPrefix(subpath, "subagents/agent-")
	return id, ok && id != "" && !strings.Contains(id, "/")
}

// EntryRef is where an entry is stored: its session, or its subagent's
// transcript for a sidechain row, and for a subagent's metadata line
// (agentId set, not in the chain) the subagent's transcript too.
func EntryRef(e *core.Entry) core.SessionRef {
	ref := e.Ref()
	if ref.AgentID == "" && e.AgentID != "" && e.IsMetadata() {
		ref.AgentID = e.AgentID
	}
	return ref
}

// Seed builds a core.Seed from what a loader holds for ref: its uuids and
// its uuid-less metadata lines; a miss is an empty seed.
func Seed(ctx context.Context, l core.Loader, ref core.SessionRef) (core.Seed, error) {
	t, err := l.Load(ctx, ref)
	if errors.Is(err, core.ErrNotFound) {
		return core.Seed{}, nil
	}
	if err != nil {
		return core.Seed{}, err
	}
	var sd core.Seed
	for _, e := range t.Entries {
		if e.UUID != "" {
			sd.UUIDs = append(sd.UUIDs, e.UUID)
		} else {
			sd.Metadata = append(sd.Metadata, bytes.Clone(e.Raw))
		}
	}
	return sd, nil
}

// LifecycleSubpath is where a backend keeps scribe's lifecycle records and
// checkpoints of a session: beside its transcript, out of the SDK's reads
// (not a subagent subpath), as the local store keeps them in a sidecar.
const LifecycleSubpath = "scribe-lifecycle"

// EntrySubpath is the subpath an entry is stored under; skip is true for a
// session event (scribe-state), which no transcript holds.
func EntrySubpath(e *core.Entry) (subpath string, skip bool) {
	switch {
	case e.Type == core.TypeScribeState:
		return "", true
	case core.IsLifecycleRecord(e.Type):
		return LifecycleSubpath, false
	}
	return Subpath(EntryRef(e)), false
}

// UUIDOnce serves each uuid of a transcript once, as a load must: the
// reference adapters store a retried append twice.
type UUIDOnce struct {
	seen map[string]bool
	// Repeats counts the entries left out.
	Repeats int
}

// Keep reports whether e is served: it has no uuid, or its uuid is new.
func (u *UUIDOnce) Keep(e *core.Entry) bool {
	if e.UUID == "" {
		return true
	}
	if u.seen == nil {
		u.seen = map[string]bool{}
	}
	if u.seen[e.UUID] {
		u.Repeats++
		return false
	}
	u.seen[e.UUID] = true
	return true
}

// CheckEntry is the stores' core.EntryChecker: a line without a session id
// has no key to be stored under.
func CheckEntry(store string, e *core.Entry) error {
	if e.SessionID == "" {
		return core.Rejectf("%s: line without a sessionId", store)
	}
	return nil
}

// Deleter is a backend whose sessions can be deleted as the SessionStore's
// delete of a main key deletes one: the main transcript and every subpath
// stored under it (subagents, lifecycle records). It returns how many rows
// or objects went. Callers keep a copy first (the trash): scribe deletes
// nothing without one.
type Deleter interface {
	DeleteSession(ctx context.Context, projectKey, sessionID string) (int, error)
}

// Compactor is a backend that keeps a transcript in parts (S3: one object
// per write) and can merge them into one (scribe s3 compact).
type Compactor interface {
	Compact(ctx context.Context, ref core.SessionRef) (CompactResult, error)
}

// CompactResult says what a Compactor did to one transcript.
type CompactResult struct {
	Parts  int    // parts merged (0: nothing to do)
	Bytes  int64  // bytes of the merged part
	Merged string // key of the merged part
}
