package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/backend"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// A store named by --from or --to: any sink or loader block whose
// component loads sessions and lists them (jsonl, postgres, s3).
type Store struct {
	ID     core.ID
	Loader core.Loader
	Lister backend.Lister
	Sink   core.Sink // nil when the block is a loader
	// Layout is set for the local store, whose own readers serve ls and
	// show directly (for a sealed archive: its decrypted view, and Sealed
	// is set: what is written goes through the sink).
	Layout *jsonl.Layout
	Sealed bool
	// Damaged are the sealed transcripts left out as damaged: the command
	// reads the rest, then exits 1.
	Damaged []error
	Start   func(context.Context) error
	Stop    func(context.Context) error
}

// OpenComponent creates the component of a sink (else loader) block by its
// ID, after tweak (when not nil) has seen its decoded config. It returns
// the folder a jsonl block keeps its projects under. Errors are usage
// errors (exit 2) when the ID is bad or names nothing.
func (f *Factory) OpenComponent(ctx context.Context, cfg *config.Config, id core.ID, tweak func(any)) (any, string, error) {
	dir, err := ClaudeConfigDir(cfg)
	if err != nil {
		return nil, "", err
	}
	wd, _ := os.Getwd()
	host := core.HostInfo{ConfigDir: dir, CleanupPeriodDays: cfg.CleanupPeriodDays, WorkDir: wd}
	set := core.Settings{ID: id, Logger: f.Logger(cfg, "scribe").Named(id.String()), Environ: os.Environ(), Args: os.Args[1:], Host: host}
	for _, kind := range []core.Kind{core.KindSink, core.KindLoader} {
		block, ok := cfg.Lookup(kind, id)
		if !ok {
			continue
		}
		fac, err := f.FindFactory(kind, id.Type)
		if err != nil {
			return nil, "", &ExitError{Code: 2, Err: fmt.Errorf("%s: %w", block.Range, err)}
		}
		c := fac.DefaultConfig()
		if err := block.Decode(c); err != nil {
			return nil, "", &ExitError{Code: 2, Err: err}
		}
		if tweak != nil {
			tweak(c)
		}
		if jc, ok := c.(*jsonl.Config); ok && jc.Dir != "" {
			if dir, err = filepath.Abs(jc.Dir); err != nil {
				return nil, "", &ExitError{Code: 2, Err: fmt.Errorf("%s: dir: %w", id, err)}
			}
		}
		var comp any
		if kind == core.KindSink {
			comp, err = fac.(core.SinkFactory).CreateSink(ctx, set, c)
		} else {
			comp, err = fac.(core.LoaderFactory).CreateLoader(ctx, set, c)
		}
		if err != nil {
			return nil, "", &ExitError{Code: 2, Err: fmt.Errorf("%s %s: %w", kind, id, err)}
		}
		return comp, dir, nil
	}
	return nil, "", &ExitError{Code: 2, Err: fmt.Errorf("%s: no sink or loader block of that name is declared", id)}
}

// OpenStore opens a store for the session commands' --from and --to
// (tweak as for OpenComponent).
func (f *Factory) OpenStore(ctx context.Context, cfg *config.Config, arg string, tweak func(any)) (*Store, error) {
	id, err := core.ParseID(arg)
	if err != nil {
		return nil, &ExitError{Code: 2, Err: err}
	}
	comp, dir, err := f.OpenComponent(ctx, cfg, id, tweak)
	if err != nil {
		return nil, err
	}
	st := &Store{ID: id, Start: func(context.Context) error { return nil }, Stop: func(context.Context) error { return nil }}
	st.Sink, _ = comp.(core.Sink)
	st.Loader, _ = comp.(core.Loader)
	st.Lister, _ = comp.(backend.Lister)
	if st.Sink != nil {
		st.Start, st.Stop = st.Sink.Start, st.Sink.Shutdown
	} else if sd, ok := comp.(shutdowner); ok {
		st.Stop = sd.Shutdown
	}
	if id.Type == "jsonl" {
		l := jsonl.Layout{ConfigDir: dir}
		if js, ok := comp.(*jsonl.Sink); ok && js.Sealed() {
			// Read decrypted in memory; what is written goes through the
			// sink, sealed.
			fsys, rep, err := js.DecryptFS(ctx)
			if err != nil {
				st.Stop(ctx)
				return nil, &ExitError{Code: 1, Err: fmt.Errorf("sealed archive %s: %w", dir, err)}
			}
			l.FS, st.Damaged = fsys, rep.Damaged
			st.Sealed = true
		}
		st.Layout, st.Lister = &l, layoutLister{l}
	}
	if st.Loader == nil || st.Lister == nil {
		st.Stop(ctx)
		return nil, &ExitError{Code: 2, Err: fmt.Errorf("%s is not a store sessions can be listed and loaded from (jsonl, postgres, s3)", id)}
	}
	return st, nil
}

// ResumeFrom makes sure resume can ask the loader of --from: a declared
// sink or loader block that resume.loaders does not list is opened for
// this run (the caller stops it). It returns the store when one was opened
// (its lister is nil when it cannot list its sessions), else nil. A name
// declared nowhere is a usage error saying where to declare and list it.
func (f *Factory) ResumeFrom(ctx context.Context, cfg *config.Config, rt *Runtime, from string) (*Store, error) {
	id, err := core.ParseID(from)
	if err != nil {
		return nil, &ExitError{Code: 2, Err: fmt.Errorf("--from: %w", err)}
	}
	for _, nl := range rt.Loaders {
		if nl.ID == id {
			if ls, ok := nl.Loader.(backend.Lister); ok {
				return &Store{ID: id, Loader: nl.Loader, Lister: ls, Stop: func(context.Context) error { return nil }}, nil
			}
			return nil, nil
		}
	}
	if _, ok := cfg.Lookup(core.KindSink, id); ok {
		st, err := f.OpenStore(ctx, cfg, from, nil)
		if err != nil {
			return nil, err
		}
		rt.Loaders = append(rt.Loaders, core.NamedLoader{ID: id, Loader: st.Loader})
		return st, nil
	}
	if _, ok := cfg.Lookup(core.KindLoader, id); !ok {
		where := "a --config file"
		if cfg.File != "" {
			where = cfg.File
		}
		return nil, &ExitError{Code: 2, Err: fmt.Errorf(`--from %s: no loader or sink block %q %q is declared: declare it in %s and list it in resume { loaders = [...] }`,
			from, id.Type, id.Name, where)}
	}
	comp, _, err := f.OpenComponent(ctx, cfg, id, nil)
	if err != nil {
		return nil, err
	}
	ld, ok := comp.(core.Loader)
	if !ok {
		return nil, &ExitError{Code: 2, Err: fmt.Errorf("--from %s: the block is not a loader", from)}
	}
	st := &Store{ID: id, Loader: ld, Stop: func(context.Context) error { return nil }}
	st.Lister, _ = comp.(backend.Lister)
	if sd, ok := comp.(shutdowner); ok {
		st.Stop = sd.Shutdown
	}
	rt.Loaders = append(rt.Loaders, core.NamedLoader{ID: id, Loader: ld})
	return st, nil
}

// ResolveIn resolves an id prefix among a store's sessions.
func ResolveIn(ctx context.Context, st *Store, arg string) (string, error) {
	if claudedir.IsSessionID(arg) {
		return strings.ToLower(arg), nil
	}
	found, err := Matching(ctx, st, arg)
	if err != nil {
		return "", err
	}
	ids := map[string]bool{}
	for _, l := range found {
		ids[l.SessionID] = true
	}
	if len(ids) == 1 {
		return found[0].SessionID, nil
	}
	var list []string
	for id := range ids {
		list = append(list, "  "+id)
	}
	sort.Strings(list)
	return "", &ExitError{Code: 2, Err: fmt.Errorf("%w: %q matches %d sessions in %s:\n%s", ErrAmbiguous, arg, len(ids), st.ID, strings.Join(list, "\n"))}
}

type shutdowner interface {
	Shutdown(context.Context) error
}

// layoutLister lists the local store as a backend lists itself.
type layoutLister struct{ l jsonl.Layout }

func (ll layoutLister) ListSessions(_ context.Context, projectKey string) ([]backend.Listed, error) {
	projects, err := os.ReadDir(ll.l.ProjectsDir())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var out []backend.Listed
	for _, p := range projects {
		if !p.IsDir() || (projectKey != "" && p.Name() != projectKey) {
			continue
		}
		files, _ := os.ReadDir(ll.l.ProjectFolder(p.Name()))
		for _, f := range files {
			id, ok := claudedir.MainFileID(f.Name())
			if !ok {
				continue
			}
			fi, err := f.Info()
			if err != nil {
				continue
			}
			out = append(out, backend.Listed{ProjectKey: p.Name(), SessionID: id, MTime: fi.ModTime().UnixMilli()})
		}
	}
	return out, nil
}

func (ll layoutLister) ListSubagents(ctx context.Context, _, sessionID string) ([]string, error) {
	return ll.l.Subagents(ctx, sessionID, "")
}

// Matching returns the listed sessions whose id is arg or starts with it.
func Matching(ctx context.Context, st *Store, arg string) ([]backend.Listed, error) {
	if arg == "" || strings.ContainsAny(arg, `/\.`) {
		return nil, &ExitError{Code: 2, Err: fmt.Errorf("%q is not a session id or a prefix of one", arg)}
	}
	all, err := st.Lister.ListSessions(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", st.ID, err)
	}
	prefix := strings.ToLower(arg)
	var out []backend.Listed
	for _, l := range all {
		if strings.HasPrefix(strings.ToLower(l.SessionID), prefix) {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, &ExitError{Code: 1, Err: fmt.Errorf("no session id starts with %q in %s", arg, st.ID)}
	}
	return out, nil
}

// LifecycleOf returns a session's lifecycle records and checkpoints in a
// store: the local store's sidecar, a backend's lifecycle subpath; nil
// when it has none (or cannot hold them).
func LifecycleOf(ctx context.Context, st *Store, sessionID string) ([]core.Entry, error) {
	if st.Layout != nil {
		es, _, err := st.Layout.SidecarRecords(ctx, sessionID, "")
		if errors.Is(err, core.ErrNotFound) {
			return nil, nil
		}
		return es, err
	}
	sl, ok := st.Loader.(backend.SubpathLoader)
	if !ok {
		return nil, nil
	}
	t, err := sl.LoadSubpath(ctx, sessionID, backend.LifecycleSubpath)
	if errors.Is(err, core.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return t.Entries, nil
}
