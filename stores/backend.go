package stores

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/memfs"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/backend"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/transcript/fork"
)

// Backend is a store that keeps sessions as the Agent SDK's SessionStore
// keys them (a project key, a session id, subpaths for subagents and
// scribe's lifecycle records): PostgreSQL and S3. The sessions a call needs
// are loaded into memory, laid out as Claude Code lays out its folder, and
// read there by the local store's reader; nothing is written to disk to
// read them. With its sink it can rename, tag and fork (lines written
// through the sink) and, with a trash folder, remove sessions into a trash
// kept on this machine.
type Backend struct {
	reader
	loader core.Loader
	lister backend.Lister
	// sink opens the store's sink (nil for a loader block: read only).
	sink func(ctx context.Context) (core.Sink, error)
	// trash is where removed sessions are kept ("" for none: no rm).
	trash string
	close func(context.Context) error

	mem    *memfs.FS
	mu     sync.Mutex
	listed []backend.Listed // nil until listed
	loaded map[string]bool  // "<project key>/<session id>"
}

// BackendOptions say how to open a Backend.
type BackendOptions struct {
	// Name is the store's block (postgres/team), Where where it is.
	Name, Where string
	// Component is the store's loader (or sink) component: a core.Loader
	// that is a backend.Lister.
	Component any
	// Sink opens the store's sink for what is written (nil: read only).
	Sink func(ctx context.Context) (core.Sink, error)
	// TrashDir is where rm keeps what it removes ("" : no rm).
	TrashDir string
	// Close releases the component.
	Close func(context.Context) error
}

// ErrNotAStore is returned for a block whose component cannot list and
// load sessions.
var ErrNotAStore = errors.New("not a store sessions can be listed and loaded from (jsonl, postgres, s3)")

// NewBackend is the store of a backend's component.
func NewBackend(o BackendOptions) (*Backend, error) {
	ld, ok1 := o.Component.(core.Loader)
	ls, ok2 := o.Component.(backend.Lister)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%s: %w", o.Name, ErrNotAStore)
	}
	mem := &memfs.FS{}
	// The tree is rooted at the store's name, so that what the reader
	// says (a damaged line's file) names the store.
	l := jsonl.Layout{ConfigDir: o.Name, FS: jsonl.MemFS(mem)}
	b := &Backend{reader: reader{l: l, name: o.Name, where: o.Where}, loader: ld, lister: ls,
		sink: o.Sink, trash: o.TrashDir, close: o.Close, mem: mem, loaded: map[string]bool{}}
	b.prepare = b.load
	return b, nil
}

var (
	_ sessions.Manager = (*Backend)(nil)
	_ sessions.Trasher = (*Backend)(nil)
	_ sessions.Forker  = (*Backend)(nil)
)

// Close releases the component.
func (b *Backend) Close(ctx context.Context) error {
	if b.close == nil {
		return nil
	}
	return b.close(ctx)
}

// listing is the store's main transcripts (trash keys left out), listed
// once.
func (b *Backend) listing(ctx context.Context, fresh bool) ([]backend.Listed, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.listed != nil && !fresh {
		return b.listed, nil
	}
	all, err := b.lister.ListSessions(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", b.name, err)
	}
	b.listed = make([]backend.Listed, 0, len(all))
	for _, l := range all {
		if claudedir.IsSessionID(l.SessionID) {
			b.listed = append(b.listed, l)
		}
	}
	return b.listed, nil
}

// load loads into memory the listed sessions a call needs: session id
// (every copy of it), else every session of project key key ("" : all).
func (b *Backend) load(ctx context.Context, id, key string) error {
	listed, err := b.listing(ctx, false)
	if err != nil {
		return err
	}
	for _, s := range listed {
		if (id != "" && !strings.EqualFold(s.SessionID, id)) || (key != "" && s.ProjectKey != key) {
			continue
		}
		b.mu.Lock()
		done := b.loaded[s.ProjectKey+"/"+s.SessionID]
		b.loaded[s.ProjectKey+"/"+s.SessionID] = true
		b.mu.Unlock()
		if done {
			continue
		}
		f, err := b.fetch(ctx, s)
		if err != nil {
			return err
		}
		b.put(s, f)
	}
	return nil
}

// fetched is one session of a backend: its subpaths' entries as stored.
type fetched struct {
	main, life []core.Entry
	agents     map[string][]core.Entry // agent id → its transcript, agent_metadata lines kept
}

// fetch loads a listed session: its main transcript, its lifecycle records
// and its subagents.
func (b *Backend) fetch(ctx context.Context, s backend.Listed) (*fetched, error) {
	t, err := b.loader.Load(ctx, core.SessionRef{SessionID: s.SessionID})
	if err != nil {
		return nil, fmt.Errorf("load %s from %s: %w", s.SessionID, b.name, err)
	}
	f := &fetched{main: t.Entries, agents: map[string][]core.Entry{}}
	if sl, ok := b.loader.(backend.SubpathLoader); ok {
		lt, err := sl.LoadSubpath(ctx, s.SessionID, backend.LifecycleSubpath)
		switch {
		case err == nil:
			f.life = lt.Entries
		case !errors.Is(err, core.ErrNotFound):
			return nil, fmt.Errorf("lifecycle records of %s from %s: %w", s.SessionID, b.name, err)
		}
	}
	agents, err := b.lister.ListSubagents(ctx, s.ProjectKey, s.SessionID)
	if err != nil {
		return nil, fmt.Errorf("list the subagents of %s in %s: %w", s.SessionID, b.name, err)
	}
	for _, a := range agents {
		at, err := b.loader.Load(ctx, core.SessionRef{SessionID: s.SessionID, AgentID: a})
		if err != nil {
			return nil, fmt.Errorf("load agent %s of %s from %s: %w", a, s.SessionID, b.name, err)
		}
		f.agents[a] = at.Entries
	}
	return f, nil
}

// put lays a fetched session out in memory as Claude Code lays it out,
// every file with the listing's mtime.
func (b *Backend) put(s backend.Listed, f *fetched) {
	mt := time.UnixMilli(s.MTime)
	dir := b.l.ProjectFolder(s.ProjectKey)
	b.mem.Add(claudedir.MainFile(dir, s.SessionID), joinLines(f.main), mt)
	if len(f.life) > 0 {
		b.mem.Add(claudedir.SidecarFile(dir, s.SessionID), joinLines(f.life), mt)
	}
	for a, es := range f.agents {
		rest, meta := backend.SplitAgentMeta(es)
		path := claudedir.AgentFile(dir, s.SessionID, a)
		b.mem.Add(path, joinLines(rest), mt)
		if meta != nil {
			if mb, err := backend.AgentMetaFile(*meta); err == nil {
				b.mem.Add(claudedir.AgentMetaFile(path), mb, mt)
			}
		}
	}
}

func joinLines(es []core.Entry) []byte {
	n := 0
	for i := range es {
		n += len(es[i].Raw) + 1
	}
	out := make([]byte, 0, n)
	for i := range es {
		out = append(append(out, es[i].Raw...), '\n')
	}
	return out
}

// Resolve resolves an id prefix among the listed sessions, loading none.
func (b *Backend) Resolve(ctx context.Context, arg string) (string, error) {
	if err := checkArg(arg); err != nil {
		return "", err
	}
	if claudedir.IsSessionID(arg) {
		return strings.ToLower(arg), nil
	}
	listed, err := b.listing(ctx, false)
	if err != nil {
		return "", err
	}
	prefix := strings.ToLower(arg)
	found := map[string][]string{}
	for _, s := range listed {
		if strings.HasPrefix(strings.ToLower(s.SessionID), prefix) {
			found[s.SessionID] = append(found[s.SessionID], s.ProjectKey)
		}
	}
	return pick(arg, found, b.name)
}

// copies is the listed copies of session id (one per project key).
func (b *Backend) copies(ctx context.Context, id string, fresh bool) ([]backend.Listed, error) {
	listed, err := b.listing(ctx, fresh)
	if err != nil {
		return nil, err
	}
	var out []backend.Listed
	for _, s := range listed {
		if strings.EqualFold(s.SessionID, id) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: session %s in %s", sessions.ErrNotFound, id, b.name)
	}
	return out, nil
}

// Rename appends the SDK's custom-title line through the sink.
func (b *Backend) Rename(ctx context.Context, id, title string, _ sessions.ManageOptions) (sessions.ManageResult, error) {
	line, err := jsonl.RenameLine(id, title)
	if err != nil {
		return sessions.ManageResult{}, err
	}
	return b.appendMeta(ctx, "rename", id, line)
}

// Tag appends the SDK's tag line through the sink.
func (b *Backend) Tag(ctx context.Context, id, tag string, clear bool, _ sessions.ManageOptions) (sessions.ManageResult, error) {
	line, err := jsonl.TagLine(id, tag, clear)
	if err != nil {
		return sessions.ManageResult{}, err
	}
	return b.appendMeta(ctx, "tag", id, line)
}

func (b *Backend) appendMeta(ctx context.Context, what, id, line string) (sessions.ManageResult, error) {
	if b.sink == nil {
		return sessions.ManageResult{}, sessions.Unsupported(b, what, "a loader block is read only: name the sink block")
	}
	cs, err := b.copies(ctx, id, false)
	if err != nil {
		return sessions.ManageResult{}, err
	}
	e, err := core.ParseEntry([]byte(line))
	if err != nil {
		return sessions.ManageResult{}, err
	}
	if err := writeThrough(ctx, b.sink, []core.Entry{e}); err != nil {
		return sessions.ManageResult{}, fmt.Errorf("%s %s in %s: %w", what, id, b.name, err)
	}
	b.forget()
	return sessions.ManageResult{SessionID: cs[0].SessionID, Files: []string{b.name + ":" + cs[0].ProjectKey + "/" + cs[0].SessionID}, Line: line}, nil
}

// Fork writes the fork through the sink.
func (b *Backend) Fork(ctx context.Context, id string, opt fork.Options) (string, string, error) {
	if b.sink == nil {
		return "", "", sessions.Unsupported(b, "fork", "a loader block is read only: name the sink block")
	}
	if err := b.load(ctx, id, ""); err != nil {
		return "", "", err
	}
	res, _, err := b.l.Fork(ctx, id, "", opt)
	if err != nil {
		return "", "", err
	}
	if err := writeThrough(ctx, b.sink, res.Entries); err != nil {
		return "", "", fmt.Errorf("write the fork into %s: %w", b.name, err)
	}
	b.forget()
	return res.SessionID, b.name, nil
}

// forget drops what was listed and loaded, after a write: the next read
// lists and loads again.
func (b *Backend) forget() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.listed, b.loaded = nil, map[string]bool{}
}
