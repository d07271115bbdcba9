package reader

// The local loader: the store's sessions for core.Resume (see reader.go).

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/transcript"
)

// ---------------------------------------------------------------------------
// Loader

// Loader serves sessions from a config folder (core.Loader).
type Loader struct {
	Layout Layout
	// ID is reported as the transcripts' Source.
	ID core.ID
	// MaxBytes, when positive, refuses transcripts larger than this: resume
	// then falls back to a loader that reads less (the summary loader).
	MaxBytes int64
}

// NewLoader returns a Loader over l.
func NewLoader(l Layout) *Loader { return &Loader{Layout: l} }

// Loader errors: resume reports them as the reason this loader missed.
var (
	ErrTooLarge = errors.New("transcript larger than the loader's max_bytes")
	ErrDamaged  = errors.New("transcript damaged beyond repair")
)

// Load returns ref's entries in file order (from the last compact boundary
// on, for files over 5 MiB), ready for transcript.BuildChain. The session is
// looked for in the project folder of ref.CWD first, then everywhere. A
// miss is ErrNotFound. A conversation whose walk from the leaf meets a
// cycle, or a parent that is not in the file, is ErrDamaged rather than
// served short.
func (ld *Loader) Load(ctx context.Context, ref core.SessionRef) (*core.Transcript, error) {
	l := ld.Layout
	var path string
	var err error
	for i, dir := range []string{ref.CWD, ""} {
		if i == 0 && dir == "" {
			continue
		}
		if ref.AgentID != "" {
			path, err = l.findAgent(ctx, ref.SessionID, ref.AgentID, dir)
		} else {
			var empty bool
			path, empty, err = l.FindMain(ctx, ref.SessionID, dir)
			if empty {
				err = nil
			}
		}
		if err == nil && path != "" {
			break
		}
		if err != nil && !errors.Is(err, core.ErrNotFound) {
			return nil, err
		}
	}
	tr := &core.Transcript{Ref: ref, Source: ld.ID}
	if path == "" {
		if err != nil {
			return nil, err
		}
		return tr, nil
	}
	if ld.MaxBytes > 0 {
		if fi, err := os.Stat(path); err == nil && fi.Size() > ld.MaxBytes {
			return nil, fmt.Errorf("%w: %s is %d bytes, max_bytes %d", ErrTooLarge, path, fi.Size(), ld.MaxBytes)
		}
	}
	entries, rep, err := ReadFile(path, ReadOptions{NoPrecompactSkip: ref.AgentID != ""})
	if err != nil {
		return nil, err
	}
	return CheckedTranscript(tr, path, entries, rep)
}

// CheckedTranscript fills tr with the entries read from path, refusing a
// conversation that cannot be rebuilt (ErrDamaged), with notes on what
// the read skipped.
func CheckedTranscript(tr *core.Transcript, path string, entries []core.Entry, rep sessions.ReadReport) (*core.Transcript, error) {
	ref := tr.Ref
	ch := transcript.BuildChain(entries, transcript.ChainOptions{Sidechain: ref.AgentID != ""})
	if ch.Cycle != nil {
		return nil, fmt.Errorf("%w: %s: parentUuid cycle at %s", ErrDamaged, path, ch.Cycle.UUID)
	}
	if len(ch.Entries) == 0 {
		for i := range entries {
			if entries[i].IsMessage() {
				return nil, fmt.Errorf("%w: %s: no conversation can be rebuilt (no leaf: every row is another's parent)", ErrDamaged, path)
			}
		}
	}
	if len(ch.Entries) > 0 {
		root := ch.Entries[0]
		for _, g := range ch.Gaps {
			if g.UUID == root.UUID {
				return nil, fmt.Errorf("%w: %s: %s names parent %s, which is not in the file", ErrDamaged, path, g.UUID, g.Parent)
			}
		}
	}
	tr.Entries = entries
	if n := len(rep.Malformed); n > 0 {
		tr.Notes = append(tr.Notes, fmt.Sprintf("%d malformed lines skipped in %s", n, path))
	}
	if rep.Torn {
		tr.Notes = append(tr.Notes, "torn last line skipped in "+path)
	}
	if rep.SkippedBytes > 0 {
		tr.Notes = append(tr.Notes, fmt.Sprintf("%d bytes before the last compact boundary not read", rep.SkippedBytes))
	}
	return tr, nil
}
