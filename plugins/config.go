package plugins

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/plugins/internal/shared"
)

// Config is the block of a plugin component, the same for the three kinds:
//
//	sink "plugin" "audit" {
//	  command   = "/usr/local/lib/scribe/audit-sink"
//	  args      = ["--region", "eu"]
//	  sha256    = "9f86d08...0f00a08"
//	  env_allow = ["AUDIT_TOKEN"]
//	  config    = { url = "http://127.0.0.1:8080/audit" }
//	}
type Config struct {
	// Command is the plugin binary: an absolute path, a path relative to
	// the host's working directory, or a bare name looked up in PATH.
	Command string `json:"command" config:"path"`
	// Args are passed to the binary.
	Args []string `json:"args"`
	// SHA256 is the hex sha256 of the binary. It is checked before every
	// start; a mismatch refuses to run it. Required with Command.
	SHA256 string `json:"sha256"`
	// EnvAllow names host environment variables passed to the plugin, on
	// top of PATH, HOME and TMPDIR. Nothing else of the host's environment
	// reaches it.
	EnvAllow []string `json:"env_allow"`
	// StartTimeout bounds the start: launch, handshake, Describe and the
	// plugin's Start or Configure. Default "10s".
	StartTimeout string `json:"start_timeout"`
	// CallTimeout bounds one call to the plugin (a Write, a Flush, a Check,
	// the wait for a Load's next page). A call that takes longer counts as
	// a hung plugin, which is killed and restarted. Default "30s".
	CallTimeout string `json:"call_timeout"`
	// Config is the plugin's own configuration, handed to it as JSON.
	Config json.RawMessage `json:"config"`
	// Reattach is the JSON a plugin prints when started in debug mode;
	// when set, the host attaches to that process instead of starting one.
	Reattach string `json:"reattach"`
	// QueueSize is how many entries a plugin sink keeps in memory for the
	// plugin; past it, batches go to the spool on disk. Default 4096.
	QueueSize int `json:"queue_size"`
	// SpoolEncryption seals what the spool keeps on disk (age: recipients,
	// an identity or a passphrase from a file, a variable or a command).
	SpoolEncryption seal.Options `json:"spool_encryption"`

	startTimeout, callTimeout time.Duration
	sum                       []byte
	reattach                  *shared.Reattach
}

// DefaultConfig returns the defaults.
func DefaultConfig() *Config {
	return &Config{
		StartTimeout: "10s",
		CallTimeout:  "30s",
		QueueSize:    4096,
	}
}

// Validate implements core.Validator.
func (c *Config) Validate() error {
	if err := c.SpoolEncryption.Validate(); err != nil {
		return fmt.Errorf("spool_encryption: %w", err)
	}
	if c.Command == "" && c.Reattach == "" {
		return fmt.Errorf("command is required (the path of the plugin binary)")
	}
	if c.Command != "" {
		if c.SHA256 == "" {
			return fmt.Errorf("sha256 is required with command: take it from `sha256sum %s` or `scribe plugin describe %s`", c.Command, c.Command)
		}
		sum, err := hex.DecodeString(strings.TrimSpace(c.SHA256))
		if err != nil || len(sum) != 32 {
			return fmt.Errorf("sha256 %q: want 64 hex digits", c.SHA256)
		}
		c.sum = sum
	}
	var err error
	if c.startTimeout, err = positiveDuration("start_timeout", c.StartTimeout); err != nil {
		return err
	}
	if c.callTimeout, err = positiveDuration("call_timeout", c.CallTimeout); err != nil {
		return err
	}
	for _, name := range c.EnvAllow {
		if name == "" || strings.ContainsAny(name, "= \t\n") {
			return fmt.Errorf("env_allow: %q is not a variable name", name)
		}
	}
	if c.QueueSize <= 0 {
		return fmt.Errorf("queue_size must be greater than 0, not %d", c.QueueSize)
	}
	if t := bytes.TrimSpace(c.Config); len(t) > 0 && !bytes.Equal(t, []byte("null")) && t[0] != '{' {
		return fmt.Errorf("config must be an object")
	}
	if c.Reattach != "" {
		if c.reattach, err = shared.ParseReattach(c.Reattach); err != nil {
			return err
		}
	} else {
		c.reattach = nil
	}
	return nil
}

func positiveDuration(name, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s %q: %w", name, s, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s must be positive, not %q", name, s)
	}
	return d, nil
}

// pluginConfig is the object handed to the plugin.
func (c *Config) pluginConfig() []byte {
	t := bytes.TrimSpace(c.Config)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return []byte("{}")
	}
	return append([]byte(nil), t...)
}

// resolved is a validated Config with what the host decided around it.
type resolved struct {
	*Config
	path     string   // the binary, absolute
	env      []string // the plugin's environment (go-plugin adds its own)
	reattach *shared.Reattach
}

// resolve validates cfg (if the host has not) and works out the binary's
// path, the plugin's environment and reattach mode from what the host gave.
func resolve(set core.Settings, cfg *Config) (*resolved, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	env := envMap(set.Environ)
	r := &resolved{Config: cfg, reattach: cfg.reattach}
	if v := env[ReattachEnv(set.ID.Name)]; v != "" {
		ra, err := shared.ParseReattach(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ReattachEnv(set.ID.Name), err)
		}
		r.reattach = ra
	}
	for _, k := range append([]string{"PATH", "HOME", "TMPDIR"}, cfg.EnvAllow...) {
		if v, ok := env[k]; ok {
			r.env = append(r.env, k+"="+v)
		}
	}
	if set.Logger != nil {
		r.env = append(r.env, shared.EnvLogLevel+"="+levelName(set.Logger))
	}
	if cfg.Command != "" {
		p, err := lookPath(cfg.Command, set.Host.WorkDir, env["PATH"])
		if err != nil {
			if r.reattach == nil {
				return nil, err
			}
		}
		r.path = p
	}
	return r, nil
}

// ReattachEnv is the environment variable the host reads (from the
// environment it is given, core.Settings.Environ) to attach to a plugin
// component named name instead of starting it: SCRIBE_PLUGIN_REATTACH_ and
// the name in upper case, '-' as '_'.
func ReattachEnv(name string) string {
	return shared.EnvReattachPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

func envMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// lookPath resolves command like a shell would, but against the PATH the
// host was given rather than the process's own.
func lookPath(command, workDir, path string) (string, error) {
	if strings.Contains(command, "/") {
		if !filepath.IsAbs(command) && workDir != "" {
			command = filepath.Join(workDir, command)
		}
		abs, err := filepath.Abs(command)
		if err != nil {
			return "", err
		}
		if err := executable(abs); err != nil {
			return "", err
		}
		return abs, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, command)
		if executable(p) == nil {
			return filepath.Abs(p)
		}
	}
	return "", fmt.Errorf("%w: %q is not in PATH", ErrNotFound, command)
}
