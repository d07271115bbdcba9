// Package guards holds the built-in persistence guards: env (environment
// variables), flag (command-line flags) and config (cleanup_period_days = 0).
// A guard decides once, when it is created, from what the host gave it; its
// Check then costs nothing per entry.
package guards

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/e0dc0000/scribe/core"
)

// decided is a guard whose answer does not depend on the entry.
type decided struct{ refusal error }

func (g decided) Check(context.Context, *core.Entry) error { return g.refusal }

// Allows implements core.StaticGuard.
func (g decided) Allows() bool { return g.refusal == nil }

// EnvRule refuses persistence when Var is set (and, if Equals is not empty,
// equal to it), unless the variable named by Unless is set.
type EnvRule struct {
	Var    string `json:"var"`
	Equals string `json:"equals,omitempty"`
	Unless string `json:"unless,omitempty"`
}

// EnvConfig configures the env guard.
type EnvConfig struct {
	Rules []EnvRule `json:"rules"`
}

// Validate implements core.Validator.
func (c *EnvConfig) Validate() error {
	for i, r := range c.Rules {
		if r.Var == "" {
			return fmt.Errorf("rules[%d]: var is required", i)
		}
	}
	return nil
}

// DefaultEnvRules are Claude Code's own: NODE_ENV=test unless
// TEST_ENABLE_SESSION_PERSISTENCE, and CLAUDE_CODE_SKIP_PROMPT_HISTORY.
func DefaultEnvRules() []EnvRule {
	return []EnvRule{
		{Var: "NODE_ENV", Equals: "test", Unless: "TEST_ENABLE_SESSION_PERSISTENCE"},
		{Var: "CLAUDE_CODE_SKIP_PROMPT_HISTORY"},
	}
}

// NewEnv returns the guard for an environment given as KEY=VALUE strings.
// A variable counts as set when it is present and not empty.
func NewEnv(cfg EnvConfig, environ []string) core.Guard {
	env := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for _, r := range cfg.Rules {
		v := env[r.Var]
		if v == "" || (r.Equals != "" && v != r.Equals) {
			continue
		}
		if r.Unless != "" && env[r.Unless] != "" {
			continue
		}
		what := r.Var + " is set"
		if r.Equals != "" {
			what = r.Var + "=" + r.Equals
		}
		if r.Unless != "" {
			what += " (set " + r.Unless + " to record anyway)"
		}
		return decided{core.Refusal("%s", what)}
	}
	return decided{}
}

// FlagConfig configures the flag guard.
type FlagConfig struct {
	Flags []string `json:"flags"`
}

// Validate implements core.Validator.
func (c *FlagConfig) Validate() error {
	for i, f := range c.Flags {
		if !strings.HasPrefix(f, "--") {
			return fmt.Errorf("flags[%d] %q: must start with --", i, f)
		}
	}
	return nil
}

// NewFlag returns the guard for a command line: it refuses when one of the
// flags is present (as --flag or --flag=true).
func NewFlag(cfg FlagConfig, args []string) core.Guard {
	for _, a := range args {
		if a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(a, "=")
		if slices.Contains(cfg.Flags, name) && (!hasVal || val == "true" || val == "1") {
			return decided{core.Refusal("%s was given", name)}
		}
	}
	return decided{}
}

// NewConfig returns the guard for cleanup_period_days: 0 turns persistence
// off, as it once did in Claude Code. from says where the value came from
// (config.Config.Origin: a file:line, an environment variable, a flag);
// the refusal names it.
func NewConfig(cleanupPeriodDays int, from string) core.Guard {
	if cleanupPeriodDays != 0 {
		return decided{}
	}
	if from == "" {
		from = "the configuration"
	}
	return decided{core.Refusal("cleanup_period_days = 0 (from %s)", from)}
}

// Factories.

type envFactory struct{}
type flagFactory struct{}
type configFactory struct{}

// EnvFactory makes "env" guards.
func EnvFactory() core.GuardFactory { return envFactory{} }

// FlagFactory makes "flag" guards.
func FlagFactory() core.GuardFactory { return flagFactory{} }

// ConfigFactory makes "config" guards.
func ConfigFactory() core.GuardFactory { return configFactory{} }

var errConfigType = errors.New("wrong config type")

func (envFactory) Kind() core.Kind    { return core.KindGuard }
func (envFactory) Type() string       { return "env" }
func (envFactory) DefaultConfig() any { return &EnvConfig{Rules: DefaultEnvRules()} }
func (envFactory) CreateGuard(_ context.Context, set core.Settings, cfg any) (core.Guard, error) {
	c, ok := cfg.(*EnvConfig)
	if !ok {
		return nil, fmt.Errorf("guard %s: %w %T", set.ID, errConfigType, cfg)
	}
	return NewEnv(*c, set.Environ), nil
}

func (flagFactory) Kind() core.Kind { return core.KindGuard }
func (flagFactory) Type() string    { return "flag" }
func (flagFactory) DefaultConfig() any {
	return &FlagConfig{Flags: []string{"--no-session-persistence"}}
}
func (flagFactory) CreateGuard(_ context.Context, set core.Settings, cfg any) (core.Guard, error) {
	c, ok := cfg.(*FlagConfig)
	if !ok {
		return nil, fmt.Errorf("guard %s: %w %T", set.ID, errConfigType, cfg)
	}
	return NewFlag(*c, set.Args), nil
}

// ConfigConfig has no options.
type ConfigConfig struct{}

func (configFactory) Kind() core.Kind    { return core.KindGuard }
func (configFactory) Type() string       { return "config" }
func (configFactory) DefaultConfig() any { return &ConfigConfig{} }
func (configFactory) CreateGuard(_ context.Context, set core.Settings, _ any) (core.Guard, error) {
	return NewConfig(set.Host.CleanupPeriodDays, set.Host.CleanupPeriodDaysFrom), nil
}
