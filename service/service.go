// Package service turns a configuration into the running system: the
// pipeline with its guards, processors and sinks, the loaders resume tries,
// and a Close that stops everything it started, plugin processes included,
// on every path. It is what `scribe` runs and what a Go host embeds:
//
//	cfg, _ := config.Load("scribe.hcl", os.Environ(), nil)
//	svc, err := service.Build(ctx, service.Options{Config: cfg})
//	if err != nil { ... }         // nothing is left running
//	defer svc.Close(ctx)          // drains, flushes, stops plugins
//	if err := svc.Start(ctx); err != nil { ... }
//	res, err := svc.Pipeline.Submit(ctx, entry)
//
// service imports every component package; core imports none of them.
package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
)

// Options says what to build and the facts of the host.
type Options struct {
	// Config is the loaded configuration (config.Load). Required.
	Config *config.Config
	// Logger is the host's logger; nil logs nothing.
	Logger hclog.Logger
	// Args is the host's command line, for guards that look at flags.
	Args []string
	// Environ is the environment components may see; nil is os.Environ().
	Environ []string
	// WorkDir names the project of a session whose entries carry no cwd;
	// "" is the process's working folder.
	WorkDir string
	// LockWait, when positive, overrides how long a store waits for
	// another writer of a session.
	LockWait time.Duration
	// Factories are the component types; nil is Builtin().
	Factories []core.Factory
}

// Service is a built system. Build it, Start it, use Pipeline and
// Resumer, Close it.
type Service struct {
	Config *config.Config
	Log    hclog.Logger
	// Host holds the facts every component was given (the resolved Claude
	// config folder among them).
	Host     core.HostInfo
	Pipeline *core.Pipeline
	// Loaders are resume's loaders in the configured order.
	Loaders []core.NamedLoader

	factories []core.Factory
	environ   []string
	args      []string

	mu      sync.Mutex
	started bool
	closed  bool
	// closers stop what the pipeline does not own: guards, processors and
	// loaders that hold resources (plugin processes), in reverse order.
	closers []func(context.Context) error
}

type shutdowner interface {
	Shutdown(context.Context) error
}

// CloudSinkTypes are the sink types that talk to a server; while one is
// configured the local store drains every 10 ms.
var CloudSinkTypes = map[string]bool{"ingress": true, "events": true}

// ClaudeConfigDir resolves Claude's config folder: the setting, else
// $CLAUDE_CONFIG_DIR of environ, else ~/.claude.
func ClaudeConfigDir(cfg *config.Config, environ []string) (string, error) {
	dir := cfg.ConfigDir
	if dir == "" {
		dir = lookupEnv(environ, "CLAUDE_CONFIG_DIR")
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

func lookupEnv(environ []string, key string) string {
	for i := len(environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(environ[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// FindFactory returns the factory of a component type, or an error that
// lists the valid ones.
func FindFactory(factories []core.Factory, kind core.Kind, typ string) (core.Factory, error) {
	var valid []string
	for _, f := range factories {
		if f.Kind() != kind {
			continue
		}
		if f.Type() == typ {
			return f, nil
		}
		valid = append(valid, f.Type())
	}
	if Light && IsHeavy(kind, typ) {
		return nil, fmt.Errorf("%s type %q is in the full build only (scribe-full), not in this light one", kind, typ)
	}
	sort.Strings(valid)
	return nil, fmt.Errorf("unknown %s type %q (valid: %s)", kind, typ, strings.Join(valid, ", "))
}

// Build creates and wires every component the configuration uses. It
// starts nothing but the plugin processes a component needs to exist; on
// an error everything already created is stopped before it returns.
func Build(ctx context.Context, opts Options) (svc *Service, err error) {
	if opts.Config == nil {
		return nil, errors.New("service: no configuration")
	}
	s, err := newService(opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = s.stopComponents(cctx)
		}
	}()
	popts, err := s.pipelineOptions(ctx)
	if err != nil {
		return nil, err
	}
	if s.Pipeline, err = core.NewPipeline(popts); err != nil {
		s.addSinkClosers(popts.Sinks)
		return nil, err
	}
	if err := s.buildLoaders(ctx, popts.Sinks); err != nil {
		s.addSinkClosers(popts.Sinks)
		return nil, err
	}
	return s, nil
}

func newService(opts Options) (*Service, error) {
	cfg := opts.Config
	s := &Service{Config: cfg, Log: opts.Logger, factories: opts.Factories, environ: opts.Environ, args: opts.Args}
	if s.Log == nil {
		s.Log = hclog.NewNullLogger()
	}
	if s.factories == nil {
		s.factories = Builtin()
	}
	// The redacted sink builds its parts from this service's blocks.
	fs := make([]core.Factory, len(s.factories))
	for i, f := range s.factories {
		if _, ok := f.(redactedFactory); ok {
			f = redactedFactory{svc: s}
		}
		fs[i] = f
	}
	s.factories = fs
	if s.environ == nil {
		s.environ = os.Environ()
	}
	dir, err := ClaudeConfigDir(cfg, s.environ)
	if err != nil {
		return nil, err
	}
	wd := opts.WorkDir
	if wd == "" {
		wd, _ = os.Getwd()
	}
	s.Host = core.HostInfo{
		ConfigDir:             dir,
		CleanupPeriodDays:     cfg.CleanupPeriodDays,
		CleanupPeriodDaysFrom: cfg.Origin("cleanup_period_days"),
		WorkDir:               wd,
		LockWait:              opts.LockWait,
	}
	for _, id := range cfg.Pipeline.Sinks {
		if CloudSinkTypes[id.Type] {
			s.Host.CloudSinks = true
		}
	}
	return s, nil
}

func (s *Service) settings(id core.ID) core.Settings {
	return core.Settings{ID: id, Logger: s.Log.Named(id.String()), Environ: s.environ, Args: s.args, Host: s.Host}
}

// decode finds a declared component's factory and decodes its block over
// the factory's defaults.
func (s *Service) decode(kind core.Kind, id core.ID) (core.Factory, any, error) {
	comp, ok := s.Config.Lookup(kind, id)
	if !ok {
		return nil, nil, fmt.Errorf("%s %s is not declared", kind, id)
	}
	f, err := FindFactory(s.factories, kind, id.Type)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %s %s: %w", comp.Range, kind, id, err)
	}
	c := f.DefaultConfig()
	if err := comp.Decode(c); err != nil {
		return nil, nil, err
	}
	return f, c, nil
}

func (s *Service) keep(v any) {
	if sd, ok := v.(shutdowner); ok {
		s.closers = append(s.closers, sd.Shutdown)
	}
}

// addSinkClosers makes Close stop sinks the pipeline never got to own.
func (s *Service) addSinkClosers(sinks []core.NamedSink) {
	for _, ns := range sinks {
		s.closers = append(s.closers, ns.Sink.Shutdown)
	}
}

func (s *Service) pipelineOptions(ctx context.Context) (core.PipelineOptions, error) {
	cfg := s.Config
	opts := core.PipelineOptions{
		Logger:    s.Log.Named("pipeline"),
		QueueSize: cfg.Pipeline.QueueSize,
		RetryFor:  cfg.Pipeline.RetryFor,
	}
	for _, id := range cfg.Pipeline.Guards {
		f, c, err := s.decode(core.KindGuard, id)
		if err != nil {
			return opts, err
		}
		g, err := f.(core.GuardFactory).CreateGuard(ctx, s.settings(id), c)
		if err != nil {
			return opts, err
		}
		s.keep(g)
		opts.Guards = append(opts.Guards, core.NamedGuard{ID: id, Guard: g})
	}
	for _, id := range cfg.Pipeline.Processors {
		f, c, err := s.decode(core.KindProcessor, id)
		if err != nil {
			return opts, err
		}
		pf, ok := f.(core.ProcessorFactory)
		if !ok {
			return opts, fmt.Errorf("processor %s: type %q makes no processors", id, id.Type)
		}
		p, err := pf.CreateProcessor(ctx, s.settings(id), c)
		if err != nil {
			return opts, err
		}
		s.keep(p)
		opts.Processors = append(opts.Processors, core.NamedProcessor{ID: id, Processor: p})
	}
	drop := map[core.ID]bool{}
	for _, id := range cfg.Pipeline.DropWhenFull {
		drop[id] = true
	}
	for _, id := range cfg.Pipeline.Sinks {
		f, c, err := s.decode(core.KindSink, id)
		if err != nil {
			s.addSinkClosers(opts.Sinks)
			return opts, err
		}
		sk, err := f.(core.SinkFactory).CreateSink(ctx, s.settings(id), c)
		if err != nil {
			s.addSinkClosers(opts.Sinks)
			return opts, err
		}
		ov := core.Overflow{Mode: core.OverflowWait, Wait: cfg.Pipeline.OverflowWait}
		if drop[id] {
			ov = core.Overflow{Mode: core.OverflowDrop}
		}
		opts.Sinks = append(opts.Sinks, core.NamedSink{ID: id, Sink: sk, Overflow: ov})
		// The first store that knows what it holds seeds dedup.
		if sd, ok := sk.(core.Seeder); ok && opts.Seeder == nil {
			opts.Seeder = sd
		}
	}
	if len(opts.Sinks) == 0 {
		return opts, errors.New("the pipeline has no sinks: list at least one in pipeline { sinks = [...] }")
	}
	return opts, nil
}

// buildLoaders creates resume's loaders: a loader block, or a sink block
// whose component is also a loader; a sink the pipeline runs is the same
// instance, so a memory cache the pipeline fills is the one resume asks.
func (s *Service) buildLoaders(ctx context.Context, sinks []core.NamedSink) error {
	running := map[core.ID]core.Sink{}
	for _, ns := range sinks {
		running[ns.ID] = ns.Sink
	}
	for _, id := range s.Config.Resume.Loaders {
		ld, err := s.loader(ctx, id, running)
		if err != nil {
			return err
		}
		s.Loaders = append(s.Loaders, core.NamedLoader{ID: id, Loader: ld})
		if _, piped := running[id]; !piped {
			s.keep(ld)
		}
	}
	return nil
}

func (s *Service) loader(ctx context.Context, id core.ID, running map[core.ID]core.Sink) (core.Loader, error) {
	if _, ok := s.Config.Lookup(core.KindLoader, id); ok {
		f, c, err := s.decode(core.KindLoader, id)
		if err != nil {
			return nil, err
		}
		return f.(core.LoaderFactory).CreateLoader(ctx, s.settings(id), c)
	}
	sk := running[id]
	if sk == nil {
		f, c, err := s.decode(core.KindSink, id)
		if err != nil {
			return nil, err
		}
		if sk, err = f.(core.SinkFactory).CreateSink(ctx, s.settings(id), c); err != nil {
			return nil, err
		}
	}
	ld, ok := sk.(core.Loader)
	if !ok {
		if _, piped := running[id]; !piped {
			s.keep(sk)
		}
		return nil, fmt.Errorf("resume.loaders: sink %s is not a loader (declare a loader block)", id)
	}
	return ld, nil
}

// Start starts the pipeline's sinks and runners.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return core.ErrClosed
	}
	if err := s.Pipeline.Start(ctx); err != nil {
		return err
	}
	s.started = true
	return nil
}

// Resumer returns a resumer over the configured loaders.
func (s *Service) Resumer() *core.Resumer { return core.NewResumer(s.Loaders) }

// Close shuts the pipeline down (drain, flush, stop every sink) within ctx,
// then stops guards, processors and loaders. Safe to call twice and without
// Start; the errors of every part are joined.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	var errs []error
	if s.Pipeline != nil {
		if err := s.Pipeline.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := s.stopComponents(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (s *Service) stopComponents(ctx context.Context) error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		if err := s.closers[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	s.closers = nil
	return errors.Join(errs...)
}
