package main

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
func storeEnv(cfg *config.Config) (stores.Env, error) {
	dir, err := claudeConfigDir(cfg)
	if err != nil {
		return stores.Env{}, err
	}
	env := stores.Env{Config: cfg, ClaudeDir: dir, Environ: os.Environ(),
		Component: func(ctx context.Context, id core.ID) (any, error) {
			comp, _, err := openComponent(ctx, cfg, id, nil)
			return comp, err
		},
		OnIndex: func(l jsonl.Layout, st sessions.IndexStats) { logIndexStats(indexLogger(cfg), l, st) },
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

// openStoreOf opens the store the command reads: --from's, else Claude
// Code's folder. The caller defers done(&err): it closes the store and,
// when a sealed archive's damaged transcripts were left out, makes a
// command that otherwise succeeded exit 1 naming them.
func openStoreOf(cmd *cobra.Command) (sessions.Store, *config.Config, func(*error), error) {
	cfg, err := loadConfig(cmd)
	if err != nil {
		return nil, nil, nil, &exitError{code: 2, err: err}
	}
	st, done, err := openNamedStore(cmd, cfg, fromFlag(cmd))
	return st, cfg, done, err
}

// openNamedStore is openStoreOf for the store name names.
func openNamedStore(cmd *cobra.Command, cfg *config.Config, name string) (sessions.Store, func(*error), error) {
	env, err := storeEnv(cfg)
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
		(&cloudTarget{id: core.ID{}, client: r.Client()}).interactive(cmd.ErrOrStderr(), "read "+name)
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
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return err
	case errors.Is(err, stores.ErrNoSuchStore), errors.Is(err, stores.ErrNotAStore), errors.Is(err, jsonl.ErrMixedArchive):
		return &exitError{code: 2, err: fmt.Errorf("--from %s: %w", name, err)}
	}
	return &exitError{code: 1, err: err}
}

// resolveErr gives a store's answer to an id argument its exit code: not
// an id (2), ambiguous (2), no such session (1).
func resolveErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, stores.ErrBadArg), errors.Is(err, sessions.ErrAmbiguous):
		return &exitError{code: 2, err: err}
	case errors.Is(err, sessions.ErrNotFound):
		return &exitError{code: 1, err: err}
	}
	return err
}

// capability is the store as a T (a capability of the contract), or an
// error saying the store lacks what (exit 1).
func capability[T any](st sessions.Store, what string) (T, error) {
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
		return c, &exitError{code: 1, err: sessions.Unsupported(st, what, why)}
	}
	return c, nil
}

// localLayout is the folder of the store the command reads, for the
// commands that work on local files only: an error for any other store.
func localLayout(cmd *cobra.Command) (jsonl.Layout, *config.Config, error) {
	st, cfg, done, err := openStoreOf(cmd)
	if err != nil {
		return jsonl.Layout{}, nil, err
	}
	defer done(nil)
	l, ok := st.(*stores.Local)
	if !ok {
		return jsonl.Layout{}, nil, &exitError{code: 1, err: fmt.Errorf("%s is a %s store: scribe %s works on local folders only (Claude's folder, a plain jsonl archive)",
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

// filesOf is the folder of files a store is read through, for what works
// on the files themselves: the local store's, or a sealed archive's
// decrypted in memory. Any other store lacks what (exit 1).
func filesOf(st sessions.Store, what string) (jsonl.Layout, error) {
	switch s := st.(type) {
	case *stores.Local:
		return s.Layout(), nil
	case *stores.Sealed:
		return s.Layout(), nil
	}
	return jsonl.Layout{}, &exitError{code: 1, err: sessions.Unsupported(st, what, "it keeps no folder of files")}
}

// openCapable is openStoreOf for a command that needs capability T of the
// store (what names it for the error when the store lacks it).
func openCapable[T any](cmd *cobra.Command, what string) (sessions.Store, T, func(*error), error) {
	var zero T
	st, _, done, err := openStoreOf(cmd)
	if err != nil {
		return nil, zero, nil, err
	}
	c, err := capability[T](st, what)
	if err != nil {
		done(nil)
		return nil, zero, nil, err
	}
	return st, c, done, nil
}
