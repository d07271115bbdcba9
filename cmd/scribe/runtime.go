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

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
)

// loadConfig reads --config (or the embedded default) with env and flag
// overrides.
func loadConfig(cmd *cobra.Command) (*config.Config, error) {
	path, _ := cmd.Flags().GetString("config")
	return config.Load(path, os.Environ(), cmd.Flags())
}

// newLogger makes the host logger from the config.
func newLogger(cfg *config.Config, name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Level:      hclog.LevelFromString(cfg.LogLevel),
		JSONFormat: cfg.LogJSON,
		Output:     os.Stderr,
	})
}

// claudeConfigDir resolves Claude's config folder: the setting, else
// $CLAUDE_CONFIG_DIR, else ~/.claude.
func claudeConfigDir(cfg *config.Config) (string, error) {
	dir := cfg.ConfigDir
	if dir == "" {
		dir = os.Getenv("CLAUDE_CONFIG_DIR")
	}
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find the home folder for ~/.claude: %w", err)
		}
		dir = filepath.Join(home, ".claude")
	}
	return filepath.Abs(dir)
}

// runtime is a pipeline built from a config.
type runtime struct {
	cfg      *config.Config
	log      hclog.Logger
	host     core.HostInfo
	pipeline *core.Pipeline
	loaders  []core.NamedLoader
	// closers stop what the pipeline does not own: guards and loaders that
	// hold resources (plugin processes).
	closers []func(context.Context) error
}

type shutdowner interface {
	Shutdown(context.Context) error
}

// close stops the guards and loaders; the pipeline stops its sinks.
func (rt *runtime) close(ctx context.Context) error {
	var errs []error
	for _, c := range rt.closers {
		if err := c(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	rt.closers = nil
	return errors.Join(errs...)
}

func findFactory(kind core.Kind, typ string) (core.Factory, error) {
	var valid []string
	for _, f := range factories() {
		if f.Kind() != kind {
			continue
		}
		if f.Type() == typ {
			return f, nil
		}
		valid = append(valid, f.Type())
	}
	sort.Strings(valid)
	return nil, fmt.Errorf("unknown %s type %q (valid: %s)", kind, typ, strings.Join(valid, ", "))
}

// buildOpts are command-line choices that reach the components.
type buildOpts struct {
	lockWait time.Duration
}

// build creates the components the pipeline block lists and wires them.
func build(ctx context.Context, cfg *config.Config, log hclog.Logger, args []string, bo buildOpts) (*runtime, error) {
	dir, err := claudeConfigDir(cfg)
	if err != nil {
		return nil, err
	}
	wd, _ := os.Getwd()
	host := core.HostInfo{ConfigDir: dir, CleanupPeriodDays: cfg.CleanupPeriodDays, CleanupPeriodDaysFrom: cfg.Origin("cleanup_period_days"), WorkDir: wd, LockWait: bo.lockWait}
	for _, id := range cfg.Pipeline.Sinks {
		if cloudSinkTypes[id.Type] {
			host.CloudSinks = true
		}
	}
	settings := func(id core.ID) core.Settings {
		return core.Settings{ID: id, Logger: log.Named(id.String()), Environ: os.Environ(), Args: args, Host: host}
	}
	decode := func(kind core.Kind, id core.ID) (core.Factory, any, error) {
		comp, ok := cfg.Lookup(kind, id)
		if !ok {
			return nil, nil, fmt.Errorf("%s %s is not declared", kind, id)
		}
		f, err := findFactory(kind, id.Type)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %s %s: %w", comp.Range, kind, id, err)
		}
		c := f.DefaultConfig()
		if err := comp.Decode(c); err != nil {
			return nil, nil, err
		}
		return f, c, nil
	}
	opts := core.PipelineOptions{Logger: log.Named("pipeline"), QueueSize: cfg.Pipeline.QueueSize}
	var closers []func(context.Context) error
	for _, id := range cfg.Pipeline.Guards {
		f, c, err := decode(core.KindGuard, id)
		if err != nil {
			return nil, err
		}
		g, err := f.(core.GuardFactory).CreateGuard(ctx, settings(id), c)
		if err != nil {
			return nil, err
		}
		opts.Guards = append(opts.Guards, core.NamedGuard{ID: id, Guard: g})
		if sd, ok := g.(shutdowner); ok {
			closers = append(closers, sd.Shutdown)
		}
	}
	for _, id := range cfg.Pipeline.Sinks {
		f, c, err := decode(core.KindSink, id)
		if err != nil {
			return nil, err
		}
		s, err := f.(core.SinkFactory).CreateSink(ctx, settings(id), c)
		if err != nil {
			return nil, err
		}
		opts.Sinks = append(opts.Sinks, core.NamedSink{ID: id, Sink: s})
		// The first store that knows what it holds seeds dedup.
		if sd, ok := s.(core.Seeder); ok && opts.Seeder == nil {
			opts.Seeder = sd
		}
	}
	if len(opts.Sinks) == 0 {
		return nil, errors.New("the pipeline has no sinks: list at least one in pipeline { sinks = [...] }")
	}
	p, err := core.NewPipeline(opts)
	if err != nil {
		return nil, err
	}
	rt := &runtime{cfg: cfg, log: log, host: host, pipeline: p, closers: closers}
	// Resume's loaders: a loader block, or a sink block whose component is
	// also a loader; a sink the pipeline runs is the same instance, so a
	// memory cache the pipeline fills is the one resume asks.
	running := map[core.ID]core.Sink{}
	for _, ns := range opts.Sinks {
		running[ns.ID] = ns.Sink
	}
	for _, id := range cfg.Resume.Loaders {
		var ld core.Loader
		if _, ok := cfg.Lookup(core.KindLoader, id); ok {
			f, c, err := decode(core.KindLoader, id)
			if err != nil {
				return nil, err
			}
			if ld, err = f.(core.LoaderFactory).CreateLoader(ctx, settings(id), c); err != nil {
				return nil, err
			}
		} else {
			s := running[id]
			if s == nil {
				f, c, err := decode(core.KindSink, id)
				if err != nil {
					return nil, err
				}
				if s, err = f.(core.SinkFactory).CreateSink(ctx, settings(id), c); err != nil {
					return nil, err
				}
			}
			var ok bool
			if ld, ok = s.(core.Loader); !ok {
				return nil, fmt.Errorf("resume.loaders: sink %s is not a loader (declare a loader block)", id)
			}
		}
		rt.loaders = append(rt.loaders, core.NamedLoader{ID: id, Loader: ld})
		if _, piped := running[id]; !piped {
			if sd, ok := ld.(shutdowner); ok {
				rt.closers = append(rt.closers, sd.Shutdown)
			}
		}
	}
	return rt, nil
}
