package cmdutil

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

// BuildForCommand builds the runtime of a command that SIGINT or SIGTERM
// ends: ctx is cancelled by the signal; done closes the runtime (30 s at
// most), then stops watching for the signal. A build error is a usage
// error (exit 2).
func BuildForCommand(cmd *cobra.Command, cfg *config.Config, log hclog.Logger, bo BuildOpts) (ctx context.Context, rt *Runtime, done func(), err error) {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	rt, err = Build(ctx, cfg, log, os.Args[1:], bo)
	if err != nil {
		stop()
		return nil, nil, nil, &ExitError{Code: 2, Err: err}
	}
	return ctx, rt, func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = rt.Close(cctx)
		stop()
	}, nil
}

// ConfigFile says which configuration file the command reads over the
// built-in one: --config, else $SCRIBE_CONFIG, else
// $XDG_CONFIG_HOME/scribe/config.hcl or ~/.config/scribe/config.hcl
// (config.Find).
func ConfigFile(cmd *cobra.Command) (config.Found, error) {
	flag, _ := cmd.Flags().GetString("config")
	return config.Find(flag)
}

// LoadConfig reads the configuration file (ConfigFile; none: the embedded
// default alone) with env and flag overrides. In the light build, a
// configuration that names a component only the full build holds hands
// the command to it (NeedsFull).
func (f *Factory) LoadConfig(cmd *cobra.Command) (*config.Config, error) {
	return f.LoadConfigAfter(cmd, nil)
}

// LoadConfigAfter is LoadConfig for a command that has read stdin, its
// standard input, already: the full build, if it takes over, gets it.
func (f *Factory) LoadConfigAfter(cmd *cobra.Command, stdin []byte) (*config.Config, error) {
	found, err := ConfigFile(cmd)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(found.Path, os.Environ(), cmd.Flags())
	if err != nil {
		return nil, err
	}
	if err := f.needsFull(cfg, stdin); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Logger makes the host logger from the config, on the standard error.
func (f *Factory) Logger(cfg *config.Config, name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Level:      hclog.LevelFromString(cfg.LogLevel),
		JSONFormat: cfg.LogJSON,
		Output:     f.IOStreams.ErrOut,
	})
}

// ClaudeConfigDir resolves Claude's config folder: the setting, else
// $CLAUDE_CONFIG_DIR, else ~/.claude.
func ClaudeConfigDir(cfg *config.Config) (string, error) {
	return service.ClaudeConfigDir(cfg, os.Environ())
}

// Runtime is the service a command built, under the names the commands
// use.
type Runtime struct {
	Svc      *service.Service
	Cfg      *config.Config
	Log      hclog.Logger
	Host     core.HostInfo
	Pipeline *core.Pipeline
	Loaders  []core.NamedLoader
}

// Close shuts the pipeline down if it still runs and stops every other
// component (plugin processes).
func (rt *Runtime) Close(ctx context.Context) error { return rt.Svc.Close(ctx) }

// BuildOpts are command-line choices that reach the components.
type BuildOpts struct {
	LockWait time.Duration
}

// Build creates the components the configuration uses and wires them.
func Build(ctx context.Context, cfg *config.Config, log hclog.Logger, args []string, bo BuildOpts) (*Runtime, error) {
	svc, err := service.Build(ctx, service.Options{Config: cfg, Logger: log, Args: args, LockWait: bo.LockWait})
	if err != nil {
		return nil, err
	}
	return &Runtime{Svc: svc, Cfg: cfg, Log: log, Host: svc.Host, Pipeline: svc.Pipeline, Loaders: svc.Loaders}, nil
}

// PinnedConfig is the configuration file a command that scribe sets up to
// run later (a hook, a service) must be given with --config, as an
// absolute path: the one --config or $SCRIBE_CONFIG named. A file found
// in the configuration folder (or none) is found again by that command,
// so nothing is pinned and moving or adding the file later takes effect.
func PinnedConfig(cmd *cobra.Command) (string, error) {
	found, err := ConfigFile(cmd)
	if err != nil || (found.Source != config.SourceFlag && found.Source != config.SourceEnv) {
		return "", err
	}
	abs, err := filepath.Abs(found.Path)
	if err != nil {
		return "", fmt.Errorf("%s %q: %w", found.Source, found.Path, err)
	}
	return abs, nil
}
