package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/service"
)

// buildForCommand builds the runtime of a command that SIGINT or SIGTERM
// ends: ctx is cancelled by the signal; done closes the runtime (30 s at
// most), then stops watching for the signal. A build error is a usage
// error (exit 2).
func buildForCommand(cmd *cobra.Command, cfg *config.Config, log hclog.Logger, bo buildOpts) (ctx context.Context, rt *runtime, done func(), err error) {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	rt, err = build(ctx, cfg, log, os.Args[1:], bo)
	if err != nil {
		stop()
		return nil, nil, nil, &exitError{code: 2, err: err}
	}
	return ctx, rt, func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = rt.close(cctx)
		stop()
	}, nil
}

// configFile says which configuration file the command reads over the
// built-in one: --config, else $SCRIBE_CONFIG, else
// $XDG_CONFIG_HOME/scribe/config.hcl or ~/.config/scribe/config.hcl
// (config.Find).
func configFile(cmd *cobra.Command) (config.Found, error) {
	flag, _ := cmd.Flags().GetString("config")
	return config.Find(flag)
}

// loadConfig reads the configuration file (configFile; none: the embedded
// default alone) with env and flag overrides. In the light build, a
// configuration that names a component only the full build holds hands
// the command to it (needsFull).
func loadConfig(cmd *cobra.Command) (*config.Config, error) {
	return loadConfigAfter(cmd, nil)
}

// loadConfigAfter is loadConfig for a command that has read stdin, its
// standard input, already: the full build, if it takes over, gets it.
func loadConfigAfter(cmd *cobra.Command, stdin []byte) (*config.Config, error) {
	found, err := configFile(cmd)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(found.Path, os.Environ(), cmd.Flags())
	if err != nil {
		return nil, err
	}
	if err := needsFull(cfg, stdin); err != nil {
		return nil, err
	}
	return cfg, nil
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
	return service.ClaudeConfigDir(cfg, os.Environ())
}

// runtime is the service a command built, under the names the commands
// use.
type runtime struct {
	svc      *service.Service
	cfg      *config.Config
	log      hclog.Logger
	host     core.HostInfo
	pipeline *core.Pipeline
	loaders  []core.NamedLoader
}

// close shuts the pipeline down if it still runs and stops every other
// component (plugin processes).
func (rt *runtime) close(ctx context.Context) error { return rt.svc.Close(ctx) }

// buildOpts are command-line choices that reach the components.
type buildOpts struct {
	lockWait time.Duration
}

// build creates the components the configuration uses and wires them.
func build(ctx context.Context, cfg *config.Config, log hclog.Logger, args []string, bo buildOpts) (*runtime, error) {
	svc, err := service.Build(ctx, service.Options{Config: cfg, Logger: log, Args: args, LockWait: bo.lockWait})
	if err != nil {
		return nil, err
	}
	return &runtime{svc: svc, cfg: cfg, log: log, host: svc.Host, pipeline: svc.Pipeline, loaders: svc.Loaders}, nil
}

// pinnedConfig is the configuration file a command that scribe sets up to
// run later (a hook, a service) must be given with --config, as an
// absolute path: the one --config or $SCRIBE_CONFIG named. A file found
// in the configuration folder (or none) is found again by that command,
// so nothing is pinned and moving or adding the file later takes effect.
func pinnedConfig(cmd *cobra.Command) (string, error) {
	found, err := configFile(cmd)
	if err != nil || (found.Source != config.SourceFlag && found.Source != config.SourceEnv) {
		return "", err
	}
	abs, err := filepath.Abs(found.Path)
	if err != nil {
		return "", fmt.Errorf("%s %q: %w", found.Source, found.Path, err)
	}
	return abs, nil
}
