// Package stores implements the session-store contract (package sessions)
// for every kind of store scribe reads: Claude Code's folder and scribe's
// archives (Local), a sealed archive decrypted in memory (Sealed), and the
// backends that keep sessions as the Agent SDK's SessionStore keys them,
// PostgreSQL and S3 (Backend). Open is the one factory the front ends
// resolve --from through.
//
// Every store is read by the same reader, the local store's (sinks/jsonl),
// over the files on disk or over a tree of files in memory laid out as
// Claude Code lays out its folder; so a session read from any store gives
// the very answers the Agent SDK gives for the same lines in a file, and
// nothing of a sealed or remote store is written to disk to read it.
package stores

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// reader is the read side every store shares: a layout, on disk or in
// memory, and the store's name.
type reader struct {
	l           jsonl.Layout
	name, where string
	// onIndex, when set, hears what each listing through the sessions
	// index did (the local stores on disk only).
	onIndex func(jsonl.Layout, sessions.IndexStats)
	// prepare, when set, makes sure the layout holds the sessions a call
	// needs (id "" for every session of project key key, "" for all).
	prepare func(ctx context.Context, id, key string) error
}

func (r *reader) Name() string  { return r.name }
func (r *reader) Where() string { return r.where }

// Layout is the reader's layout (in memory for a sealed or remote store).
func (r *reader) Layout() jsonl.Layout { return r.l }

func (r *reader) ready(ctx context.Context, id, key string) error {
	if r.prepare == nil {
		return nil
	}
	return r.prepare(ctx, id, key)
}

func (r *reader) readyFor(ctx context.Context, opt sessions.ListOptions) error {
	key := ""
	if opt.Dir != "" {
		key = claudedir.SanitizePath(opt.Dir)
	}
	return r.ready(ctx, "", key)
}

func (r *reader) indexed(opt sessions.ListOptions) bool {
	return r.l.FS == nil && !opt.NoIndex
}

func (r *reader) List(ctx context.Context, opt sessions.ListOptions) ([]sessions.Info, error) {
	if err := r.readyFor(ctx, opt); err != nil {
		return nil, err
	}
	if !r.indexed(opt) {
		return r.l.List(ctx, opt)
	}
	infos, st, err := r.l.ListIndexedWith(ctx, opt, sessions.IndexOptions{SkipLastEntryTail: opt.SkipLastEntryTail})
	r.heard(st)
	return infos, err
}

func (r *reader) Records(ctx context.Context, opt sessions.ListOptions) ([]sessions.Record, error) {
	if err := r.readyFor(ctx, opt); err != nil {
		return nil, err
	}
	if !r.indexed(opt) {
		infos, err := r.l.List(ctx, opt)
		if err != nil {
			return nil, err
		}
		return r.l.Records(ctx, infos)
	}
	recs, st, err := r.l.ListRecords(ctx, opt)
	r.heard(st)
	return recs, err
}

func (r *reader) heard(st sessions.IndexStats) {
	if r.onIndex != nil {
		r.onIndex(r.l, st)
	}
}

func (r *reader) Info(ctx context.Context, id string) (*sessions.Info, error) {
	if err := r.ready(ctx, id, ""); err != nil {
		return nil, err
	}
	return r.l.Info(ctx, id, "")
}

func (r *reader) Messages(ctx context.Context, id string, opt sessions.MessagesOptions) ([]sessions.Message, *sessions.MessagesReport, error) {
	if err := r.ready(ctx, id, ""); err != nil {
		return nil, &sessions.MessagesReport{}, err
	}
	return r.l.Messages(ctx, id, "", opt)
}

func (r *reader) Subagents(ctx context.Context, id string) ([]string, error) {
	if err := r.ready(ctx, id, ""); err != nil {
		return nil, err
	}
	return r.l.Subagents(ctx, id, "")
}

// SubagentParents implements sessions.SubagentParents from the meta files.
func (r *reader) SubagentParents(ctx context.Context, id string) (map[string]string, error) {
	if err := r.ready(ctx, id, ""); err != nil {
		return nil, err
	}
	return r.l.SubagentParents(ctx, id, "")
}

func (r *reader) SubagentMessages(ctx context.Context, id, agent string, opt sessions.MessagesOptions) ([]sessions.Message, *sessions.MessagesReport, error) {
	if err := r.ready(ctx, id, ""); err != nil {
		return nil, &sessions.MessagesReport{}, err
	}
	return r.l.SubagentMessages(ctx, id, agent, "", opt)
}

func (r *reader) Transcript(ctx context.Context, id string) (*sessions.Transcript, error) {
	if err := r.ready(ctx, id, ""); err != nil {
		return nil, err
	}
	return r.l.Transcript(ctx, id, "")
}

func (r *reader) AgentTranscript(ctx context.Context, id, agent string) (*sessions.Transcript, error) {
	if err := r.ready(ctx, id, ""); err != nil {
		return nil, err
	}
	return r.l.AgentTranscript(ctx, id, agent, "")
}

func (r *reader) Lifecycle(ctx context.Context, id string) ([]core.Entry, error) {
	if err := r.ready(ctx, id, ""); err != nil {
		return nil, err
	}
	es, _, err := r.l.SidecarRecords(ctx, id, "")
	if errors.Is(err, core.ErrNotFound) {
		return nil, nil
	}
	return es, err
}

func (r *reader) Close(context.Context) error { return nil }

// Resolve turns a full id or a unique prefix into a session id, among the
// main transcripts of every project folder.
func (r *reader) Resolve(ctx context.Context, arg string) (string, error) {
	if err := checkArg(arg); err != nil {
		return "", err
	}
	if claudedir.IsSessionID(arg) {
		return strings.ToLower(arg), nil
	}
	if err := r.ready(ctx, "", ""); err != nil {
		return "", err
	}
	found, err := r.l.MainIDs(strings.ToLower(arg))
	if err != nil {
		return "", err
	}
	return pick(arg, found, r.where)
}

// ErrBadArg is returned for an argument that is no session id or prefix.
var ErrBadArg = errors.New("not a session id or a prefix of one")

func checkArg(arg string) error {
	if arg == "" {
		return fmt.Errorf("no session id given: %w", ErrBadArg)
	}
	if strings.ContainsAny(arg, `/\.`) {
		return fmt.Errorf("%q: %w", arg, ErrBadArg)
	}
	return nil
}

// pick is the one id of found (id → the project folders holding it), or
// ErrNotFound, or ErrAmbiguous listing them.
func pick(arg string, found map[string][]string, where string) (string, error) {
	switch len(found) {
	case 0:
		return "", noMatch(fmt.Sprintf("no session id starts with %q in %s", arg, where))
	case 1:
		for id := range found {
			return id, nil
		}
	}
	ids := make([]string, 0, len(found))
	for id := range found {
		ids = append(ids, fmt.Sprintf("  %s  (%s)", id, strings.Join(found[id], ", ")))
	}
	sort.Strings(ids)
	return "", fmt.Errorf("%w: %q matches %d sessions:\n%s", sessions.ErrAmbiguous, arg, len(found), strings.Join(ids, "\n"))
}

// noMatch is a prefix no session id starts with: sessions.ErrNotFound,
// said in its own words.
type noMatch string

func (e noMatch) Error() string        { return string(e) }
func (e noMatch) Is(target error) bool { return target == sessions.ErrNotFound }
