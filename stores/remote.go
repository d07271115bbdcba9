package stores

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/transcript/fork"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/internal/memfs"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/events"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// Remote is the team server (scribe serve) as a store, read only but for
// its trash (remotetrash.go): its
// listing (GET /v1/sessions) and each session's rows (the History API),
// internal rows left out, laid out in memory as Claude Code lays out its
// folder, in the project folder of the session's first cwd, each
// transcript's mtime the latest timestamp of its rows (the server's last
// write when no row has one).
type Remote struct {
	reader
	client *events.Client
	mem    *memfs.FS
	// OnFetch, when set, hears the bytes of each row fetched, and OnSession
	// each session of a listing fetched (a progress bar).
	OnFetch   func(bytes int)
	OnSession func()

	mu     sync.Mutex
	listed []events.SessionInfo // nil until listed
	more   bool
	loaded map[string]bool // session id → fetched with its subagents
	stats  RemoteStats
}

// RemoteStats says what a listing of the server could not give as ls would.
type RemoteStats struct {
	// Listed is how many sessions the server listed; More is set when it
	// has more than it lists at once.
	Listed int
	More   bool
	// NoTimestamp counts sessions with no row carrying a timestamp; Empty
	// those with no main transcript (only subagents or internal rows).
	NoTimestamp, Empty int
}

// remoteWorkers is how many sessions are fetched side by side.
const remoteWorkers = 4

// NewRemote is the store of the server c talks to, named name.
func NewRemote(name string, c *events.Client) *Remote {
	mem := &memfs.FS{}
	r := &Remote{client: c, mem: mem, loaded: map[string]bool{},
		reader: reader{l: jsonl.Layout{ConfigDir: name, FS: jsonl.MemFS(mem)}, name: name, where: c.BaseURL}}
	r.prepare = r.load
	return r
}

// Stats says what the listings so far could not give as ls would.
func (r *Remote) Stats() RemoteStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Client is the server's client (its retry settings are the caller's).
func (r *Remote) Client() *events.Client { return r.client }

// Listed is the server's listing, asked once.
func (r *Remote) Listed(ctx context.Context) ([]events.SessionInfo, error) { return r.listing(ctx) }

func (r *Remote) listing(ctx context.Context) ([]events.SessionInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.listed != nil {
		return r.listed, nil
	}
	list, more, err := r.client.Sessions(ctx, "")
	if err != nil {
		return nil, err
	}
	for _, s := range list {
		if !claudedir.IsSessionID(s.ID) {
			return nil, fmt.Errorf("the server lists %q, which is not a session id", s.ID)
		}
	}
	r.listed, r.more = append([]events.SessionInfo{}, list...), more
	r.stats.Listed, r.stats.More = len(list), more
	return r.listed, nil
}

// load fetches what a call needs: session id with its subagents, else
// (id "") every listed session's main transcript and sidecar.
func (r *Remote) load(ctx context.Context, id, _ string) error {
	if id != "" {
		r.mu.Lock()
		done := r.loaded[strings.ToLower(id)]
		r.mu.Unlock()
		if done {
			return nil
		}
		s, err := r.client.FetchSession(ctx, id, true, r.OnFetch)
		if errors.Is(err, core.ErrNotFound) {
			return nil // the reader says the session is not there
		}
		if err != nil {
			return err
		}
		r.put(id, s, time.Time{})
		r.mu.Lock()
		r.loaded[strings.ToLower(id)] = true
		r.mu.Unlock()
		return nil
	}
	list, err := r.listing(ctx)
	if err != nil {
		return err
	}
	return durable.Each(ctx, remoteWorkers, len(list), func(ctx context.Context, i int) error {
		s := list[i]
		if r.OnSession != nil {
			defer r.OnSession()
		}
		r.mu.Lock()
		done := r.loaded[s.ID]
		r.mu.Unlock()
		if done {
			return nil
		}
		fs, err := r.client.FetchSession(ctx, s.ID, false, r.OnFetch)
		if errors.Is(err, core.ErrNotFound) || (err == nil && fs.Main.Entries == 0) {
			r.mu.Lock()
			r.stats.Empty++
			r.mu.Unlock()
			return nil
		}
		if err != nil {
			return fmt.Errorf("session %s: %w", s.ID, err)
		}
		r.put(s.ID, fs, s.LastActivity)
		return nil
	})
}

// put lays a fetched session out in memory; at is the server's last write,
// the mtime when no row has a timestamp.
func (r *Remote) put(id string, s *events.FetchedSession, at time.Time) {
	proj := r.l.ProjectFolder("unknown-cwd")
	if cwd := s.Cwd(); cwd != "" {
		proj = r.l.ProjectDir(cwd)
	}
	mt := s.LastAt
	if mt.IsZero() {
		mt = at
		r.mu.Lock()
		r.stats.NoTimestamp++
		r.mu.Unlock()
	}
	if s.Side.Entries > 0 {
		r.mem.Add(claudedir.SidecarFile(proj, id), bytes.Clone(s.Side.Data.Bytes()), mt)
	}
	for _, a := range s.Order {
		f := s.Agents[a]
		path := claudedir.AgentFile(proj, id, a)
		r.mem.Add(path, bytes.Clone(f.Data.Bytes()), mt)
	}
	r.mem.Add(claudedir.MainFile(proj, id), bytes.Clone(s.Main.Data.Bytes()), mt)
}

// Resolve resolves an id prefix on the server (its listing of that
// prefix), loading nothing.
func (r *Remote) Resolve(ctx context.Context, arg string) (string, error) {
	if err := checkArg(arg); err != nil {
		return "", err
	}
	if claudedir.IsSessionID(arg) {
		return strings.ToLower(arg), nil
	}
	list, more, err := r.client.Sessions(ctx, strings.ToLower(arg))
	if err != nil {
		return "", err
	}
	switch {
	case len(list) == 0:
		return "", noMatch(fmt.Sprintf("no session id starts with %q on %s (%s)", arg, r.client.BaseURL, r.name))
	case len(list) == 1 && !more:
		return list[0].ID, nil
	}
	lines := make([]string, 0, len(list))
	for _, s := range list {
		lines = append(lines, "  "+s.ID+"  "+s.Title)
	}
	sort.Strings(lines)
	n := fmt.Sprint(len(list))
	if more {
		n = "more than " + n
	}
	return "", fmt.Errorf("%w: %q matches %s sessions on %s:\n%s", sessions.ErrAmbiguous, arg, n, r.client.BaseURL, strings.Join(lines, "\n"))
}

// ForkEntries is a fork of session id as the entries of the new session
// (the same fork as every store's: fork.Options, the SDK's forkSession),
// for a caller that writes them itself: the team server's viewer posts
// them through the server's events route with the caller's token.
func (r *Remote) ForkEntries(ctx context.Context, id string, opt fork.Options) (string, []core.Entry, error) {
	if err := r.load(ctx, id, ""); err != nil {
		return "", nil, err
	}
	res, _, err := r.l.Fork(ctx, id, "", opt)
	if err != nil {
		return "", nil, err
	}
	return res.SessionID, res.Entries, nil
}
