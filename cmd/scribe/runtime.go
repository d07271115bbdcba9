package main

import (
	"context"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/service"
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
