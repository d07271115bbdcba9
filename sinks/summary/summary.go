// Package summary is the loader of last resort: when the full transcript
// cannot be had (missing from the other loaders, damaged beyond repair, or
// larger than they accept), it rebuilds the conversation from the last
// compaction summary and what follows it, and marks it partial.
//
// It reads the transcript once, front to back, keeping only what follows
// the latest compact boundary seen so far, so its memory follows what it
// returns, not the file's age. A session with no compact boundary has no
// compaction to serve: that is a miss (core.ErrNotFound, with the reason).
// A {"type":"summary"} line is not one either: Claude Code writes it as a
// title for the conversation ending at its leafUuid, not as a compaction,
// so it is never turned into a compaction summary (it has no date, and a
// made-up one would say 1970).
package summary

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/transcript"
)

// Config is the block of a summary loader. It has no options.
type Config struct{}

// Transcripts is the store the summary loader reads: the local store
// (jsonl.Layout), which the host passes to Factory.
type Transcripts interface {
	// OpenTranscript opens a session's main transcript for reading,
	// looking first in the project folder of cwd (when given); a session
	// the store does not hold is core.ErrNotFound.
	OpenTranscript(id, cwd string) (*os.File, error)
}

// Loader is the summary loader.
type Loader struct {
	store Transcripts
	id    core.ID
}

var _ core.Loader = (*Loader)(nil)

// New returns a loader over the transcripts of store.
func New(store Transcripts, id core.ID) *Loader {
	return &Loader{store: store, id: id}
}

// Load implements core.Loader.
func (l *Loader) Load(ctx context.Context, ref core.SessionRef) (*core.Transcript, error) {
	if ref.AgentID != "" {
		return nil, fmt.Errorf("summary: subagents have no compaction summary: %w", core.ErrNotFound)
	}
	f, err := l.store.OpenTranscript(ref.SessionID, ref.CWD)
	if err != nil {
		return nil, fmt.Errorf("summary: %w", err)
	}
	defer f.Close()

	var (
		after      []core.Entry // from the latest compact boundary on
		boundary   bool
		skipped    int64
		offset     int64
		malformed  int
		lineNumber int
	)
	err = transcript.EachLine(f, func(line []byte, terminated bool) {
		lineNumber++
		n := int64(len(line))
		if terminated {
			n++
		}
		defer func() { offset += n }()
		if ctx.Err() != nil || len(bytes.TrimSpace(line)) == 0 {
			return
		}
		e, perr := core.ParseEntry(line)
		if perr != nil {
			malformed++
			return
		}
		switch {
		case transcript.IsPlainCompactBoundary(&e):
			boundary = true
			skipped = offset
			after = append(after[:0:0], e)
		case boundary:
			after = append(after, e)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("summary: read %s: %w", f.Name(), err)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	t := &core.Transcript{Ref: ref, Source: l.id, Partial: true}
	if malformed > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d malformed lines skipped", malformed))
	}
	if !boundary {
		return nil, fmt.Errorf("summary: %s has no compaction (no compact boundary): %w", f.Name(), core.ErrNotFound)
	}
	if ch := transcript.BuildChain(after, transcript.ChainOptions{}); len(ch.Entries) == 0 {
		return nil, fmt.Errorf("summary: %s: no conversation follows its last compact boundary: %w", f.Name(), core.ErrNotFound)
	}
	t.Entries = after
	t.Notes = append(t.Notes, fmt.Sprintf("partial: from the last compaction summary on; %d bytes before it not loaded", skipped))
	return t, nil
}

// Factory makes summary loaders, each over the store that store returns
// for the host's config folder.
func Factory(store func(configDir string) Transcripts) core.LoaderFactory {
	return factory{store: store}
}

type factory struct {
	store func(configDir string) Transcripts
}

func (factory) Kind() core.Kind    { return core.KindLoader }
func (factory) Type() string       { return "summary" }
func (factory) DefaultConfig() any { return &Config{} }

func (f factory) CreateLoader(_ context.Context, set core.Settings, _ any) (core.Loader, error) {
	return New(f.store(set.Host.ConfigDir), set.ID), nil
}
