package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/backend"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// A store named by --from or --to: any sink or loader block whose
// component loads sessions and lists them (jsonl, postgres, s3).
type store struct {
	id     core.ID
	loader core.Loader
	lister backend.Lister
	sink   core.Sink // nil when the block is a loader
	// layout is set for the local store, whose own readers serve ls and
	// show directly (for a sealed archive: its decrypted view, and sealed
	// is set: what is written goes through the sink).
	layout *jsonl.Layout
	sealed bool
	// damaged are the sealed transcripts left out as damaged: the command
	// reads the rest, then exits 1.
	damaged []error
	start   func(context.Context) error
	stop    func(context.Context) error
}

// openComponent creates the component of a sink (else loader) block by its
// ID, after tweak (when not nil) has seen its decoded config. It returns
// the folder a jsonl block keeps its projects under. Errors are usage
// errors (exit 2) when the ID is bad or names nothing.
func openComponent(ctx context.Context, cfg *config.Config, id core.ID, tweak func(any)) (any, string, error) {
	dir, err := claudeConfigDir(cfg)
	if err != nil {
		return nil, "", err
	}
	wd, _ := os.Getwd()
	host := core.HostInfo{ConfigDir: dir, CleanupPeriodDays: cfg.CleanupPeriodDays, WorkDir: wd}
	set := core.Settings{ID: id, Logger: newLogger(cfg, "scribe").Named(id.String()), Environ: os.Environ(), Args: os.Args[1:], Host: host}
	for _, kind := range []core.Kind{core.KindSink, core.KindLoader} {
		block, ok := cfg.Lookup(kind, id)
		if !ok {
			continue
		}
		f, err := findFactory(kind, id.Type)
		if err != nil {
			return nil, "", &exitError{code: 2, err: fmt.Errorf("%s: %w", block.Range, err)}
		}
		c := f.DefaultConfig()
		if err := block.Decode(c); err != nil {
			return nil, "", &exitError{code: 2, err: err}
		}
		if tweak != nil {
			tweak(c)
		}
		if jc, ok := c.(*jsonl.Config); ok && jc.Dir != "" {
			if dir, err = filepath.Abs(jc.Dir); err != nil {
				return nil, "", &exitError{code: 2, err: fmt.Errorf("%s: dir: %w", id, err)}
			}
		}
		var comp any
		if kind == core.KindSink {
			comp, err = f.(core.SinkFactory).CreateSink(ctx, set, c)
		} else {
			comp, err = f.(core.LoaderFactory).CreateLoader(ctx, set, c)
		}
		if err != nil {
			return nil, "", &exitError{code: 2, err: fmt.Errorf("%s %s: %w", kind, id, err)}
		}
		return comp, dir, nil
	}
	return nil, "", &exitError{code: 2, err: fmt.Errorf("%s: no sink or loader block of that name is declared", id)}
}

// openStore opens a store for the session commands' --from and --to
// (tweak as for openComponent).
func openStore(ctx context.Context, cfg *config.Config, arg string, tweak func(any)) (*store, error) {
	id, err := core.ParseID(arg)
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	comp, dir, err := openComponent(ctx, cfg, id, tweak)
	if err != nil {
		return nil, err
	}
	st := &store{id: id, start: func(context.Context) error { return nil }, stop: func(context.Context) error { return nil }}
	st.sink, _ = comp.(core.Sink)
	st.loader, _ = comp.(core.Loader)
	st.lister, _ = comp.(backend.Lister)
	if st.sink != nil {
		st.start, st.stop = st.sink.Start, st.sink.Shutdown
	} else if sd, ok := comp.(shutdowner); ok {
		st.stop = sd.Shutdown
	}
	if id.Type == "jsonl" {
		l := jsonl.Layout{ConfigDir: dir}
		if js, ok := comp.(*jsonl.Sink); ok && js.Sealed() {
			// Read decrypted in memory; what is written goes through the
			// sink, sealed.
			fsys, rep, err := js.DecryptFS(ctx)
			if err != nil {
				st.stop(ctx)
				return nil, &exitError{code: 1, err: fmt.Errorf("sealed archive %s: %w", dir, err)}
			}
			l.FS, st.damaged = fsys, rep.Damaged
			st.sealed = true
		}
		st.layout, st.lister = &l, layoutLister{l}
	}
	if st.loader == nil || st.lister == nil {
		st.stop(ctx)
		return nil, &exitError{code: 2, err: fmt.Errorf("%s is not a store sessions can be listed and loaded from (jsonl, postgres, s3)", id)}
	}
	return st, nil
}

// resumeFrom makes sure resume can ask the loader of --from: a declared
// sink or loader block that resume.loaders does not list is opened for
// this run (the caller stops it). It returns the store when one was opened
// (its lister is nil when it cannot list its sessions), else nil. A name
// declared nowhere is a usage error saying where to declare and list it.
func resumeFrom(ctx context.Context, cfg *config.Config, rt *runtime, from string) (*store, error) {
	id, err := core.ParseID(from)
	if err != nil {
		return nil, &exitError{code: 2, err: fmt.Errorf("--from: %w", err)}
	}
	for _, nl := range rt.loaders {
		if nl.ID == id {
			if ls, ok := nl.Loader.(backend.Lister); ok {
				return &store{id: id, loader: nl.Loader, lister: ls, stop: func(context.Context) error { return nil }}, nil
			}
			return nil, nil
		}
	}
	if _, ok := cfg.Lookup(core.KindSink, id); ok {
		st, err := openStore(ctx, cfg, from, nil)
		if err != nil {
			return nil, err
		}
		rt.loaders = append(rt.loaders, core.NamedLoader{ID: id, Loader: st.loader})
		return st, nil
	}
	if _, ok := cfg.Lookup(core.KindLoader, id); !ok {
		where := "a --config file"
		if cfg.File != "" {
			where = cfg.File
		}
		return nil, &exitError{code: 2, err: fmt.Errorf(`--from %s: no loader or sink block %q %q is declared: declare it in %s and list it in resume { loaders = [...] }`,
			from, id.Type, id.Name, where)}
	}
	comp, _, err := openComponent(ctx, cfg, id, nil)
	if err != nil {
		return nil, err
	}
	ld, ok := comp.(core.Loader)
	if !ok {
		return nil, &exitError{code: 2, err: fmt.Errorf("--from %s: the block is not a loader", from)}
	}
	st := &store{id: id, loader: ld, stop: func(context.Context) error { return nil }}
	st.lister, _ = comp.(backend.Lister)
	if sd, ok := comp.(shutdowner); ok {
		st.stop = sd.Shutdown
	}
	rt.loaders = append(rt.loaders, core.NamedLoader{ID: id, Loader: ld})
	return st, nil
}

// resolveIn resolves an id prefix among a store's sessions.
func resolveIn(ctx context.Context, st *store, arg string) (string, error) {
	if claudedir.IsSessionID(arg) {
		return strings.ToLower(arg), nil
	}
	found, err := matching(ctx, st, arg)
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
	return "", &exitError{code: 2, err: fmt.Errorf("%w: %q matches %d sessions in %s:\n%s", errAmbiguous, arg, len(ids), st.id, strings.Join(list, "\n"))}
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

// matching returns the listed sessions whose id is arg or starts with it.
func matching(ctx context.Context, st *store, arg string) ([]backend.Listed, error) {
	if arg == "" || strings.ContainsAny(arg, `/\.`) {
		return nil, &exitError{code: 2, err: fmt.Errorf("%q is not a session id or a prefix of one", arg)}
	}
	all, err := st.lister.ListSessions(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", st.id, err)
	}
	prefix := strings.ToLower(arg)
	var out []backend.Listed
	for _, l := range all {
		if strings.HasPrefix(strings.ToLower(l.SessionID), prefix) {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, &exitError{code: 1, err: fmt.Errorf("no session id starts with %q in %s", arg, st.id)}
	}
	return out, nil
}

// materialize writes the sessions (main transcripts and subagents) of a
// store into a temporary folder laid out as Claude Code lays it out, each
// file's mtime the store's, so that ls and show read them with the very
// code (and the very answers) they give for local files. cleanup removes it.
func materialize(ctx context.Context, st *store, sessions []backend.Listed) (jsonl.Layout, func(), error) {
	dir, err := os.MkdirTemp("", "scribe-from-")
	if err != nil {
		return jsonl.Layout{}, nil, fmt.Errorf("make a folder for the sessions of %s: %w", st.id, err)
	}
	cleanup := func() { os.RemoveAll(dir) }
	l := jsonl.Layout{ConfigDir: dir}
	write := func(path string, t *core.Transcript, mtime int64) error {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		var b []byte
		for _, e := range t.Entries {
			b = append(append(b, e.Raw...), '\n')
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return err
		}
		mt := time.UnixMilli(mtime)
		return os.Chtimes(path, mt, mt)
	}
	for _, s := range sessions {
		pdir := l.ProjectFolder(s.ProjectKey)
		t, err := st.loader.Load(ctx, core.SessionRef{SessionID: s.SessionID})
		if err != nil {
			cleanup()
			return jsonl.Layout{}, nil, fmt.Errorf("load %s from %s: %w", s.SessionID, st.id, err)
		}
		if err := write(claudedir.MainFile(pdir, s.SessionID), t, s.MTime); err != nil {
			cleanup()
			return jsonl.Layout{}, nil, fmt.Errorf("write %s from %s: %w", s.SessionID, st.id, err)
		}
		if life, err := lifecycleOf(ctx, st, s.SessionID); err != nil || len(life) > 0 {
			// The sidecar: show --system and checkpoints read it.
			if err == nil {
				err = write(claudedir.SidecarFile(pdir, s.SessionID), &core.Transcript{Entries: life}, s.MTime)
			}
			if err != nil {
				cleanup()
				return jsonl.Layout{}, nil, fmt.Errorf("lifecycle records of %s from %s: %w", s.SessionID, st.id, err)
			}
		}
		agents, err := st.lister.ListSubagents(ctx, s.ProjectKey, s.SessionID)
		if err != nil {
			cleanup()
			return jsonl.Layout{}, nil, err
		}
		for _, a := range agents {
			ref := core.SessionRef{SessionID: s.SessionID, AgentID: a}
			t, err := st.loader.Load(ctx, ref)
			if err != nil {
				cleanup()
				return jsonl.Layout{}, nil, fmt.Errorf("load agent %s of %s from %s: %w", a, s.SessionID, st.id, err)
			}
			var meta *core.Entry
			t.Entries, meta = backend.SplitAgentMeta(t.Entries)
			path := claudedir.AgentFile(pdir, s.SessionID, a)
			if err := write(path, t, s.MTime); err != nil {
				cleanup()
				return jsonl.Layout{}, nil, err
			}
			if meta != nil {
				if _, err := writeAgentMeta(claudedir.AgentMetaFile(path), *meta); err != nil {
					cleanup()
					return jsonl.Layout{}, nil, err
				}
			}
		}
	}
	return l, cleanup, nil
}

// fromLayout is the layout ls, show and fork read with --from: the local
// store's own, or the sessions of a backend whose id starts with prefix
// (every session of project projectKey when prefix is "", every project
// when projectKey is "" too) materialized in a temporary folder.
func fromLayout(cmd *cobra.Command, cfg *config.Config, from, prefix, projectKey string) (jsonl.Layout, *store, func(), error) {
	ctx := cmd.Context()
	st, err := openStore(ctx, cfg, from, nil)
	if err != nil {
		return jsonl.Layout{}, nil, nil, err
	}
	done := func() { st.stop(context.WithoutCancel(ctx)) }
	if st.layout != nil {
		return *st.layout, st, done, nil
	}
	var sessions []backend.Listed
	if prefix != "" {
		sessions, err = matching(ctx, st, prefix)
	} else {
		sessions, err = st.lister.ListSessions(ctx, projectKey)
	}
	if err != nil {
		done()
		return jsonl.Layout{}, nil, nil, err
	}
	sort.Slice(sessions, func(i, j int) bool { return sessions[i].SessionID < sessions[j].SessionID })
	l, cleanup, err := materialize(ctx, st, sessions)
	if err != nil {
		done()
		return jsonl.Layout{}, nil, nil, err
	}
	return l, st, func() { cleanup(); done() }, nil
}

// writeFork writes a fork made in a materialized folder (its transcript at
// path, its subagents beside it) into the store it was forked from, and
// flushes it.
func writeFork(ctx context.Context, st *store, path, newID string) error {
	if st.sink == nil {
		return &exitError{code: 2, err: fmt.Errorf("%s is a loader block: the fork cannot be written there (name its sink block)", st.id)}
	}
	files := []string{path}
	agents, _ := filepath.Glob(claudedir.AgentFileGlob(filepath.Dir(path), newID))
	files = append(files, agents...)
	if err := st.sink.Start(ctx); err != nil {
		return fmt.Errorf("start %s: %w", st.id, err)
	}
	for _, f := range files {
		es, _, err := jsonl.ReadFile(f, jsonl.ReadOptions{NoPrecompactSkip: true})
		if err != nil {
			return fmt.Errorf("read the fork %s: %w", f, err)
		}
		if err := st.sink.Write(ctx, es); err != nil {
			return fmt.Errorf("write the fork into %s: %w", st.id, err)
		}
	}
	if err := st.sink.Flush(ctx); err != nil {
		return fmt.Errorf("flush the fork into %s: %w", st.id, err)
	}
	return nil
}

// lifecycleOf returns a session's lifecycle records and checkpoints in a
// store: the local store's sidecar, a backend's lifecycle subpath; nil
// when it has none (or cannot hold them).
func lifecycleOf(ctx context.Context, st *store, sessionID string) ([]core.Entry, error) {
	if st.layout != nil {
		es, _, err := st.layout.SidecarRecords(ctx, sessionID, "")
		if errors.Is(err, core.ErrNotFound) {
			return nil, nil
		}
		return es, err
	}
	sl, ok := st.loader.(backend.SubpathLoader)
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
