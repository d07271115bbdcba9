package core

// Checkpoints: a named point in a conversation (seed 002's "checkpoint"
// line: id, label, the git commit of the work at that moment, timestamp),
// plus the uuid of the message the checkpoint follows, so a session can be
// resumed or forked from there (ResumeOptions.UpTo, fork.Options.UpTo).
//
//	{"type":"scribe-checkpoint","sessionId":"…","commit":"a1b2c3d…","timestamp":"2026-01-10T11:00:02.267Z",
//	 "label":"tests pass","id":"…","messageUuid":"…","cwd":"/home/alice/src/shop","uuid":"…"}
//
// The key order is seed 002's, then scribe's additions. "commit" is absent
// when the session's cwd was not a git repository. "uuid" repeats "id" so
// that dedup applies. Like lifecycle entries, checkpoints are kept out of
// Claude Code's transcripts (see lifecycle.go): the local store writes them
// to the session's sidecar file.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// TypeCheckpoint is the entry type of checkpoints.
const TypeCheckpoint = "scribe-checkpoint"

// Checkpoint is a named point in a session's conversation.
type Checkpoint struct {
	// ID names the checkpoint (a uuid).
	ID    string `json:"id"`
	Label string `json:"label"`
	// Commit is the HEAD of the session's cwd when the checkpoint was
	// taken; "" when the cwd was not a git repository.
	Commit string `json:"commit,omitempty"`
	// MessageUUID is the conversation's leaf when the checkpoint was
	// taken: the message the checkpoint follows.
	MessageUUID string `json:"messageUuid"`
	SessionID   string `json:"sessionId"`
	CWD         string `json:"cwd,omitempty"`
	// Timestamp is ISO-8601 in UTC with milliseconds.
	Timestamp string `json:"timestamp"`
}

// Time returns the checkpoint's time (zero when unreadable).
func (c Checkpoint) Time() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, c.Timestamp)
	return t
}

// NewCheckpoint completes c and returns it with its entry, ready to
// Submit. SessionID and MessageUUID are required. An empty Timestamp is
// set from at (now when at is zero); an empty ID is derived from the
// session, the message, the label and the time, so the same checkpoint
// submitted twice is stored once.
func NewCheckpoint(c Checkpoint, at time.Time) (Checkpoint, Entry, error) {
	if c.SessionID == "" {
		return c, Entry{}, errors.New("checkpoint: no session id")
	}
	if c.MessageUUID == "" {
		return c, Entry{}, fmt.Errorf("checkpoint for session %s: no message to follow", c.SessionID)
	}
	if c.Timestamp == "" {
		if at.IsZero() {
			at = time.Now()
		}
		c.Timestamp = at.UTC().Format(timestampLayout)
	}
	if c.ID == "" {
		c.ID = nameUUID(TypeCheckpoint + "\x00" + c.SessionID + "\x00" + c.MessageUUID + "\x00" + c.Label + "\x00" + c.Timestamp)
	}
	var o jsonObject
	o.str("type", TypeCheckpoint)
	o.str("sessionId", c.SessionID)
	if c.Commit != "" {
		o.str("commit", c.Commit)
	}
	o.str("timestamp", c.Timestamp)
	o.str("label", c.Label)
	o.str("id", c.ID)
	o.str("messageUuid", c.MessageUUID)
	if c.CWD != "" {
		o.str("cwd", c.CWD)
	}
	o.str("uuid", c.ID)
	e, err := ParseEntryOwned(o.bytes())
	if err != nil {
		return c, Entry{}, fmt.Errorf("checkpoint: %w", err)
	}
	return c, e, nil
}

// ErrNotCheckpoint is returned by ParseCheckpoint for an entry of another
// type.
var ErrNotCheckpoint = errors.New("not a checkpoint entry")

// ParseCheckpoint reads a checkpoint entry back.
func ParseCheckpoint(e *Entry) (Checkpoint, error) {
	if e.Type != TypeCheckpoint {
		return Checkpoint{}, fmt.Errorf("%w: type %q", ErrNotCheckpoint, e.Type)
	}
	var c Checkpoint
	if err := json.Unmarshal(e.Raw, &c); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint entry: %w", err)
	}
	if c.ID == "" {
		c.ID = e.UUID
	}
	if c.ID == "" || c.MessageUUID == "" {
		return Checkpoint{}, errors.New("checkpoint entry: no id or no messageUuid")
	}
	return c, nil
}

// SubmitCheckpoint completes c (NewCheckpoint, stamped now) and submits it
// through the guards and dedup to every sink.
func (p *Pipeline) SubmitCheckpoint(ctx context.Context, c Checkpoint) (Checkpoint, Result, error) {
	c, e, err := NewCheckpoint(c, time.Time{})
	if err != nil {
		return c, Result{}, err
	}
	e.CWD = c.CWD
	res, err := p.Submit(ctx, e)
	return c, res, err
}

// Errors of ResolveCheckpoint.
var (
	ErrCheckpointNotFound  = errors.New("no such checkpoint")
	ErrCheckpointAmbiguous = errors.New("ambiguous checkpoint")
)

// ResolveCheckpoint finds the checkpoint a user names, in this order: its
// id; its label (the only one with that label); a prefix of its id (the
// only one with that prefix). Checkpoints with the same id (a re-recorded
// line) count once.
func ResolveCheckpoint(list []Checkpoint, name string) (Checkpoint, error) {
	if name == "" {
		return Checkpoint{}, fmt.Errorf("%w: no checkpoint named", ErrCheckpointNotFound)
	}
	uniq := make([]Checkpoint, 0, len(list))
	seen := map[string]bool{}
	for _, c := range list {
		if !seen[c.ID] {
			seen[c.ID] = true
			uniq = append(uniq, c)
		}
	}
	lower := strings.ToLower(name)
	for _, c := range uniq {
		if strings.ToLower(c.ID) == lower {
			return c, nil
		}
	}
	pick := func(what string, match func(Checkpoint) bool) (Checkpoint, bool, error) {
		var hits []Checkpoint
		for _, c := range uniq {
			if match(c) {
				hits = append(hits, c)
			}
		}
		switch len(hits) {
		case 0:
			return Checkpoint{}, false, nil
		case 1:
			return hits[0], true, nil
		}
		var names []string
		for _, c := range hits {
			names = append(names, fmt.Sprintf("  %s  %q  %s", c.ID, c.Label, c.Timestamp))
		}
		return Checkpoint{}, false, fmt.Errorf("%w: %s %q names %d checkpoints (use the id):\n%s",
			ErrCheckpointAmbiguous, what, name, len(hits), strings.Join(names, "\n"))
	}
	if c, ok, err := pick("label", func(c Checkpoint) bool { return c.Label == name }); ok || err != nil {
		return c, err
	}
	if c, ok, err := pick("id prefix", func(c Checkpoint) bool { return strings.HasPrefix(strings.ToLower(c.ID), lower) }); ok || err != nil {
		return c, err
	}
	return Checkpoint{}, fmt.Errorf("%w: %q is neither the id, a prefix of the id, nor the label of one of the session's %d checkpoints",
		ErrCheckpointNotFound, name, len(uniq))
}

// CommitLookup returns the commit checked out in dir, or "" when there is
// none (dir is not in a repository, the repository has no commit, the tool
// is missing); only a cancelled ctx is an error. core runs no version
// control: the host passes one (gitrev.Head).
type CommitLookup func(ctx context.Context, dir string) (string, error)

// ShortCommit is the first twelve characters of a commit id.
func ShortCommit(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
