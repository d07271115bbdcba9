// Package summary is the loader of last resort: when the full transcript
// cannot be had (missing from the other loaders, damaged beyond repair, or
// larger than they accept), it rebuilds the conversation from the last
// compaction summary and what follows it, and marks it partial.
//
// It reads the transcript once, front to back, keeping only what follows
// the latest compact boundary seen so far, so its memory follows what it
// returns, not the file's age. Without a compact boundary it falls back to
// the latest legacy "summary" entry, turned into a compact-summary user row.
package summary

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/google/uuid"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// Config is the block of a summary loader. It has no options.
type Config struct{}

// Loader is the summary loader.
type Loader struct {
	layout jsonl.Layout
	id     core.ID
}

var _ core.Loader = (*Loader)(nil)

// New returns a loader over Claude's config folder.
func New(configDir string, id core.ID) *Loader {
	return &Loader{layout: jsonl.Layout{ConfigDir: configDir}, id: id}
}

// Load implements core.Loader.
func (l *Loader) Load(ctx context.Context, ref core.SessionRef) (*core.Transcript, error) {
	if ref.AgentID != "" {
		return nil, fmt.Errorf("summary: subagents have no compaction summary: %w", core.ErrNotFound)
	}
	if !jsonl.IsSessionID(ref.SessionID) {
		return nil, fmt.Errorf("summary: %q is not a session id: %w", ref.SessionID, core.ErrNotFound)
	}
	dir, err := l.layout.FindSession(ref.SessionID, ref.CWD)
	if err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, fmt.Errorf("summary: no transcript: %w", core.ErrNotFound)
	}
	path := jsonl.MainFile(dir, ref.SessionID)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("summary: %w", core.ErrNotFound)
	}
	defer f.Close()

	var (
		after      []core.Entry // from the latest compact boundary on
		boundary   bool
		skipped    int64
		offset     int64
		legacy     []byte // the latest {"type":"summary"} line
		malformed  int
		lineNumber int
	)
	err = jsonl.EachLine(f, func(line []byte, terminated bool) {
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
		case e.IsPlainCompactBoundary():
			boundary = true
			skipped = offset
			after = append(after[:0:0], e)
		case e.Type == "summary":
			legacy = e.Raw
			if boundary {
				after = append(after, e)
			}
		case boundary:
			after = append(after, e)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("summary: read %s: %w", path, err)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	t := &core.Transcript{Ref: ref, Source: l.id, Partial: true}
	if malformed > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d malformed lines skipped", malformed))
	}
	if boundary {
		ch := core.BuildChain(after, core.ChainOptions{})
		if len(ch.Entries) > 0 {
			t.Entries = after
			t.Notes = append(t.Notes, fmt.Sprintf("partial: from the last compaction summary on; %d bytes before it not loaded", skipped))
			return t, nil
		}
	}
	if legacy != nil {
		e, err := fromLegacy(legacy, ref)
		if err != nil {
			return nil, err
		}
		t.Entries = []core.Entry{e}
		t.Notes = append(t.Notes, "partial: only the session's summary is left")
		return t, nil
	}
	return nil, fmt.Errorf("summary: %s has no compaction summary: %w", path, core.ErrNotFound)
}

var namespace = uuid.MustParse("9b7a4f0e-52c1-4d3a-8e6f-0a1b2c3d4e5f")

// fromLegacy turns a {"type":"summary","summary":...} line into the user
// row Claude Code writes after a compaction.
func fromLegacy(raw []byte, ref core.SessionRef) (core.Entry, error) {
	var s struct {
		Summary string `json:"summary"`
	}
	if err := json.Unmarshal(raw, &s); err != nil || s.Summary == "" {
		return core.Entry{}, fmt.Errorf("summary: the summary entry has no text: %w", core.ErrNotFound)
	}
	text := "This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n" + s.Summary
	id := uuid.NewSHA1(namespace, append([]byte(ref.SessionID), raw...)).String()
	content, _ := json.Marshal(text)
	line := `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":` +
		string(content) + `},"isVisibleInTranscriptOnly":true,"isCompactSummary":true,"uuid":"` + id +
		`","timestamp":"1970-01-01T00:00:00.000Z","userType":"external","sessionId":"` + ref.SessionID + `"}`
	return core.ParseEntry([]byte(line))
}

// Factory makes summary loaders.
func Factory() core.LoaderFactory { return factory{} }

type factory struct{}

func (factory) Kind() core.Kind    { return core.KindLoader }
func (factory) Type() string       { return "summary" }
func (factory) DefaultConfig() any { return &Config{} }

func (factory) CreateLoader(_ context.Context, set core.Settings, _ any) (core.Loader, error) {
	return New(set.Host.ConfigDir, set.ID), nil
}
