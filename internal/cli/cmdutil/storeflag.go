package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/stores"
)

// Every command that reads or changes sessions reaches them through one
// store, the one --from names (Claude Code's folder without it), opened by
// the one factory, stores.Env.Open; it talks to the store through the
// session-store contract (package sessions) only, and says which
// capability a store lacks.

// storeEnv is the factory's view of the configuration.
func (f *Factory) storeEnv(cfg *config.Config) (stores.Env, error) {
	dir, err := ClaudeConfigDir(cfg)
	if err != nil {
		return stores.Env{}, err
	}
	env := stores.Env{Config: cfg, ClaudeDir: dir, Environ: os.Environ(),
		Component: func(ctx context.Context, id core.ID) (any, error) {
			comp, _, err := f.OpenComponent(ctx, cfg, id, nil)
			return comp, err
		},
		OnIndex: func(l jsonl.Layout, st sessions.IndexStats) { LogIndexStats(f.indexLogger(cfg), l, st) },
	}
	if data, err := config.XDGDir("XDG_DATA_HOME"); err == nil {
		env.DataDir = filepath.Join(data, "scribe")
	}
	return env, nil
}

// fromFlag is the store --from names ("" when the command has no --from
// or it is not given).
func fromFlag(cmd *cobra.Command) string {
	if fl := cmd.Flags().Lookup("from"); fl != nil {
		return fl.Value.String()
	}
	return ""
}

// OpenStoreOf opens the store the command reads: --from's, else Claude
// Code's folder. The caller defers done(&err): it closes the store and,
// when a sealed archive's damaged transcripts were left out, makes a
// command that otherwise succeeded exit 1 naming them.
func (f *Factory) OpenStoreOf(cmd *cobra.Command) (sessions.Store, *config.Config, func(*error), error) {
	cfg, err := f.LoadConfig(cmd)
	if err != nil {
		return nil, nil, nil, &ExitError{Code: 2, Err: err}
	}
	st, done, err := f.OpenStoreWith(cmd, cfg)
	return st, cfg, done, err
}

// OpenStoreWith is OpenStoreOf with the configuration loaded already.
func (f *Factory) OpenStoreWith(cmd *cobra.Command, cfg *config.Config) (sessions.Store, func(*error), error) {
	return f.OpenNamedStore(cmd, cfg, fromFlag(cmd))
}

// OpenNamedStore is OpenStoreOf for the store name names.
func (f *Factory) OpenNamedStore(cmd *cobra.Command, cfg *config.Config, name string) (sessions.Store, func(*error), error) {
	env, err := f.storeEnv(cfg)
	if err != nil {
		return nil, nil, err
	}
	st, err := env.Open(cmd.Context(), name)
	if err != nil {
		return nil, nil, storeOpenErr(name, err)
	}
	var damage error
	if r, ok := st.(*stores.Remote); ok {
		// A server that cannot be reached ends the command in seconds,
		// every retry said.
		Interactive(r.Client(), cmd.ErrOrStderr(), "read "+name)
	}
	if s, ok := st.(*stores.Sealed); ok {
		for _, p := range s.Report.TornFrames {
			fmt.Fprintf(cmd.ErrOrStderr(), "scribe: the last frame of %s is torn (a write was cut short); skipped (the writer cuts it at its next start)\n", p)
		}
		for _, d := range s.Report.Damaged {
			fmt.Fprintf(cmd.ErrOrStderr(), "scribe: %v: left out of what this command reads\n", d)
		}
		damage = s.Damage()
	}
	done := func(errp *error) {
		st.Close(context.WithoutCancel(cmd.Context()))
		if errp != nil && *errp == nil && damage != nil {
			*errp = fmt.Errorf("%w (see above)", damage)
		}
	}
	return st, done, nil
}

// storeOpenErr gives a store that cannot be opened its exit code: a name
// that names no store, or a block that is none, is a usage error (2).
func storeOpenErr(name string, err error) error {
	var ee *ExitError
	switch {
	case errors.As(err, &ee):
		return err
	case errors.Is(err, stores.ErrNoSuchStore), errors.Is(err, stores.ErrNotAStore), errors.Is(err, jsonl.ErrMixedArchive):
		return &ExitError{Code: 2, Err: fmt.Errorf("--from %s: %w", name, err)}
	}
	return &ExitError{Code: 1, Err: err}
}

// ResolveErr gives a store's answer to an id argument its exit code: not
// an id (2), ambiguous (2), no such session (1).
func ResolveErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, stores.ErrBadArg), errors.Is(err, sessions.ErrAmbiguous):
		return &ExitError{Code: 2, Err: err}
	case errors.Is(err, sessions.ErrNotFound):
		return &ExitError{Code: 1, Err: err}
	}
	return err
}

// Capability is the store as a T (a capability of the contract), or an
// error saying the store lacks what (exit 1).
func Capability[T any](st sessions.Store, what string) (T, error) {
	c, ok := st.(T)
	if !ok {
		why := ""
		if _, sealed := st.(*stores.Sealed); sealed {
			why = "a sealed archive is not changed in place"
		} else if _, ro := st.(*stores.Reader); ro {
			why = "it is read only"
		} else if _, ro := st.(*stores.Remote); ro {
			why = "it is read only"
		}
		return c, &ExitError{Code: 1, Err: sessions.Unsupported(st, what, why)}
	}
	return c, nil
}

// LocalLayout is the folder of the store the command reads, for the
// commands that work on local files only: an error for any other store.
func (f *Factory) LocalLayout(cmd *cobra.Command) (jsonl.Layout, *config.Config, error) {
	st, cfg, done, err := f.OpenStoreOf(cmd)
	if err != nil {
		return jsonl.Layout{}, nil, err
	}
	defer done(nil)
	l, ok := st.(*stores.Local)
	if !ok {
		return jsonl.Layout{}, nil, &ExitError{Code: 1, Err: fmt.Errorf("%s is a %s store: scribe %s works on local folders only (Claude's folder, a plain jsonl archive)",
			st.Name(), storeKind(st), cmd.Name())}
	}
	return l.Layout(), cfg, nil
}

// storeKind says what kind of store st is, for messages.
func storeKind(st sessions.Store) string {
	switch st.(type) {
	case *stores.Local:
		return "local"
	case *stores.Sealed:
		return "sealed"
	case *stores.Backend:
		return "SessionStore (" + st.Name() + ")"
	case *stores.Remote:
		return "team server"
	}
	return "read-only"
}

// FilesOf is the folder of files a store is read through, for what works
// on the files themselves: the local store's, or a sealed archive's
// decrypted in memory. Any other store lacks what (exit 1).
func FilesOf(st sessions.Store, what string) (jsonl.Layout, error) {
	switch s := st.(type) {
	case *stores.Local:
		return s.Layout(), nil
	case *stores.Sealed:
		return s.Layout(), nil
	}
	return jsonl.Layout{}, &ExitError{Code: 1, Err: sessions.Unsupported(st, what, "it keeps no folder of files")}
}

// laidOut is a store read through a folder of files in memory (a
// database, a bucket, the team server): the sessions a call needs are
// fetched into it.
type laidOut interface {
	sessions.Store
	Layout() jsonl.Layout
}

// SessionFiles is FilesOf for one session id, which any store read
// through files can give: a database's, a bucket's or the team server's
// session is fetched into the folder its reader holds in memory first (so
// a bundle holds what the store holds of it).
func SessionFiles(ctx context.Context, st sessions.Store, id, what string) (jsonl.Layout, error) {
	if l, err := FilesOf(st, what); err == nil {
		return l, nil
	}
	lo, ok := st.(laidOut)
	if !ok {
		return FilesOf(st, what)
	}
	if _, err := lo.Info(ctx, id); err != nil {
		return jsonl.Layout{}, err
	}
	return lo.Layout(), nil
}

// HasFiles reports whether SessionFiles can give st's sessions' files.
func HasFiles(st sessions.Store) bool {
	_, err := FilesOf(st, "")
	_, lo := st.(laidOut)
	return err == nil || lo
}

// OpenCapable is OpenStoreOf for a command that needs capability T of the
// store (what names it for the error when the store lacks it).
func OpenCapable[T any](f *Factory, cmd *cobra.Command, what string) (sessions.Store, T, func(*error), error) {
	var zero T
	st, _, done, err := f.OpenStoreOf(cmd)
	if err != nil {
		return nil, zero, nil, err
	}
	c, err := Capability[T](st, what)
	if err != nil {
		done(nil)
		return nil, zero, nil, err
	}
	return st, c, done, nil
}

// FromFlag is the store --from names ("" when the command has no --from
// or it is not given).
func FromFlag(cmd *cobra.Command) string { return fromFlag(cmd) }

// StoreOpener is the factory as a function, for a front end that opens
// stores by name as it goes (the web viewer's store chooser): each store
// opened as --from would open it, a sealed archive's damaged transcripts
// said on stderr. The caller closes what it opens.
func (f *Factory) StoreOpener(cmd *cobra.Command, cfg *config.Config) (func(ctx context.Context, name string) (sessions.Store, error), error) {
	env, err := f.storeEnv(cfg)
	if err != nil {
		return nil, err
	}
	stderr := cmd.ErrOrStderr()
	return func(ctx context.Context, name string) (sessions.Store, error) {
		st, err := env.Open(ctx, name)
		if err != nil {
			return nil, storeOpenErr(name, err)
		}
		if s, ok := st.(*stores.Sealed); ok {
			for _, d := range s.Report.Damaged {
				fmt.Fprintf(stderr, "scribe: %v: left out of what is shown\n", d)
			}
		}
		return st, nil
	}, nil
}
