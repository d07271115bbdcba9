package stores

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/events"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// Claude is the name of Claude Code's own folder as a store: what every
// command reads when --from is not given.
const Claude = "claude"

// ErrNoSuchStore is returned for a --from that names no store.
var ErrNoSuchStore = errors.New("no such store")

// Env is what opening a store needs from the command line: the
// configuration and how to make its components. Open is the one factory
// every front end resolves --from through.
type Env struct {
	Config *config.Config
	// ClaudeDir is Claude Code's config folder (the "claude" store).
	ClaudeDir string
	// DataDir is scribe's data folder ($XDG_DATA_HOME/scribe): a backend's
	// trash is kept under it.
	DataDir string
	Environ []string
	// Component makes the component of a declared sink (else loader) block
	// (the command line's, which knows the light and the full build).
	Component func(ctx context.Context, id core.ID) (any, error)
	// OnIndex, when set, hears what each listing through the sessions index
	// did.
	OnIndex func(jsonl.Layout, sessions.IndexStats)
}

// Open opens the store name names: "" or "claude" for Claude Code's
// folder, else a declared sink or loader block (type/name): jsonl (plain,
// or sealed: decrypted in memory), postgres, s3, or any block whose
// component lists and loads sessions. The caller closes it.
func (e Env) Open(ctx context.Context, name string) (sessions.Store, error) {
	if name == "" || name == Claude {
		return e.claude()
	}
	id, err := core.ParseID(name)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrNoSuchStore, name, err)
	}
	if id.Type == "jsonl" {
		return e.jsonl(ctx, id)
	}
	if _, ok := e.Config.Lookup(core.KindSink, id); !ok {
		if _, ok := e.Config.Lookup(core.KindLoader, id); !ok {
			return nil, fmt.Errorf("%w: %s: no sink or loader block of that name is declared", ErrNoSuchStore, id)
		}
	}
	comp, err := e.Component(ctx, id)
	if err != nil {
		return nil, err
	}
	closeComp := func(ctx context.Context) error {
		if sd, ok := comp.(interface{ Shutdown(context.Context) error }); ok {
			return sd.Shutdown(ctx)
		}
		return nil
	}
	if ld, ok := comp.(*events.Loader); ok {
		// The team server: read only.
		return NewRemote(id.String(), ld.Client), nil
	}
	o := BackendOptions{Name: id.String(), Where: id.String(), Component: comp, Close: closeComp}
	if _, isSink := comp.(core.Sink); isSink {
		o.Sink = func(ctx context.Context) (core.Sink, error) {
			c, err := e.Component(ctx, id)
			if err != nil {
				return nil, err
			}
			sk, ok := c.(core.Sink)
			if !ok {
				return nil, fmt.Errorf("%s is not a sink", id)
			}
			return sk, nil
		}
		if e.DataDir != "" {
			o.TrashDir = filepath.Join(e.DataDir, "stores", id.Type+"-"+id.Name, "trash")
		}
	}
	b, err := NewBackend(o)
	if err != nil {
		closeComp(context.WithoutCancel(ctx))
		return nil, err
	}
	return b, nil
}

func (e Env) claude() (sessions.Store, error) {
	l := jsonl.Layout{ConfigDir: e.ClaudeDir}
	if l.IsSealed() {
		return nil, fmt.Errorf("%s is a sealed archive: Claude Code's folder is never sealed; read the archive with --from its sink (a jsonl block with its encryption)", e.ClaudeDir)
	}
	return NewLocal(Claude, e.ClaudeDir, e.OnIndex), nil
}

// jsonl opens a jsonl block's folder: plain, or sealed (decrypted in
// memory with the block's encryption).
func (e Env) jsonl(ctx context.Context, id core.ID) (sessions.Store, error) {
	block, ok := e.Config.Lookup(core.KindSink, id)
	if !ok {
		return nil, fmt.Errorf("%w: %s: no such sink in the configuration (declare sink \"jsonl\" %q { dir = \"...\" })", ErrNoSuchStore, id, id.Name)
	}
	jc := jsonl.DefaultConfig()
	if err := block.Decode(jc); err != nil {
		return nil, err
	}
	if !jc.Encryption.IsZero() {
		if err := jc.Validate(); err != nil {
			return nil, fmt.Errorf("sink %s: %w", id, err)
		}
	}
	dir := e.ClaudeDir
	if jc.Dir != "" {
		abs, err := filepath.Abs(jc.Dir) // ~ was expanded by the configuration
		if err != nil {
			return nil, err
		}
		dir = abs
	}
	l := jsonl.Layout{ConfigDir: dir}
	if jc.Encryption.IsZero() {
		if l.IsSealed() {
			return nil, fmt.Errorf("sink %s: %w: %s is sealed; give the sink its encryption block", id, jsonl.ErrMixedArchive, dir)
		}
		return NewLocal(id.String(), dir, e.OnIndex), nil
	}
	sink := func(ctx context.Context) (core.Sink, error) {
		c, err := e.Component(ctx, id)
		if err != nil {
			return nil, err
		}
		return c.(core.Sink), nil
	}
	return OpenSealed(ctx, id.String(), dir, jc.Encryption, e.Environ, sink)
}

// IsStoreName reports whether s can name a store: "claude" or type/name.
func IsStoreName(s string) bool {
	if s == Claude {
		return true
	}
	t, n, ok := strings.Cut(s, "/")
	return ok && t != "" && n != ""
}
