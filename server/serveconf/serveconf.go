// Package serveconf is the configuration of `scribe serve` (the server
// block): its settings, their defaults and their validation. Package server
// names them as its own (server.Config, server.DefaultConfig, ...).
package serveconf

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/internal/ident"
)

// Defaults of Config.
const (
	DefaultListen          = "127.0.0.1:8787"
	DefaultReplicas        = 1
	DefaultMaxBodyBytes    = 8 << 20
	DefaultDuplicateWindow = "2m"
	// DefaultSync is the embedded JetStream's sync policy: fsync before
	// every acknowledgement.
	DefaultSync = SyncAlways
	// DefaultTrashRetention is how long a session stays in the server's
	// trash before the server empties it: 30 days.
	DefaultTrashRetention = "720h"
)

// SyncAlways is the Sync value that makes the embedded JetStream fsync
// every write before it acknowledges it.
const SyncAlways = "always"

// Scopes a token can carry.
const (
	ScopeRead  = "read"
	ScopeWrite = "write"
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("invalid server configuration")

// Config is the server block of the configuration file. The JSON names are
// the HCL attribute names.
type Config struct {
	// Listen is the HTTP address, host:port. Default "127.0.0.1:8787".
	Listen string `json:"listen"`
	// DataDir holds the embedded JetStream store (used only when NatsURL is
	// empty). "" = <user config dir>/scribe/serve.
	DataDir string `json:"data_dir" config:"path"`
	// NatsURL is the NATS server (or comma-separated cluster URLs) to use.
	// "" runs an embedded nats-server with JetStream in DataDir, reachable
	// only from inside the process.
	NatsURL string `json:"nats_url"`
	// NatsCreds is a NATS credentials file (JWT + nkey), for NatsURL.
	NatsCreds string `json:"nats_creds" config:"path"`
	// Replicas is the replica count of the stream and the KV buckets (1, or
	// up to the size of the JetStream cluster). Default 1.
	Replicas int `json:"replicas"`
	// MaxBodyBytes is the largest request body accepted; larger ones get
	// 413. Default 8 MiB.
	MaxBodyBytes int64 `json:"max_body_bytes"`
	// DuplicateWindow is the stream's Nats-Msg-Id duplicate window, a Go
	// duration. Idempotency does not depend on it (see store.go); it only
	// makes quick retries cheaper. Default "2m".
	DuplicateWindow string `json:"duplicate_window"`
	// Sync is the embedded JetStream's sync policy: "always" (the
	// default) fsyncs every write before it is acknowledged, so an
	// acknowledged entry survives a crash of the machine; a Go duration
	// (such as "2m", nats-server's own default) fsyncs in the background
	// that often, and an acknowledged entry is only in the page cache
	// until then. With NatsURL the NATS server's own jetstream {
	// sync_interval } applies instead.
	Sync string `json:"sync"`
	// Tokens are the accepted bearer tokens, stored hashed.
	Tokens []Token `json:"tokens"`
	// Redact names a processor "redact" block (its name): every entry is
	// redacted with its rules before it is stored. "" stores entries as
	// sent.
	Redact string `json:"redact"`
	// UIHosts are the Host headers the web viewer under /ui/ answers to,
	// as a browser sends them: "scribe.example.com", or "host:port" when
	// the port is not the scheme's own. A request with another Host is
	// refused (DNS rebinding). Empty: the listen address and
	// localhost:<port>.
	UIHosts []string `json:"ui_hosts"`
	// TrashRetention is how long a session moved to the server's trash
	// (scribe rm --from <server>, the viewer's Move to trash) is kept
	// before the server empties it for good, a Go duration or a number of
	// days ("30d"); "0" keeps it until emptied by hand. Default "720h".
	TrashRetention string `json:"trash_retention"`
}

// Token is one accepted bearer token.
type Token struct {
	// SHA256 is the lower-case hex SHA-256 of the token (see HashToken and
	// `scribe token hash`).
	SHA256 string `json:"sha256"`
	// Tenant owns every session written with the token; [a-z0-9_-]{1,64}.
	Tenant string `json:"tenant"`
	// Scopes are "read" (GET routes) and/or "write" (PUT and POST routes).
	Scopes []string `json:"scopes"`
}

// DefaultConfig returns the defaults (DataDir stays "" and is resolved by
// New).
func DefaultConfig() *Config {
	return &Config{
		Listen:          DefaultListen,
		Replicas:        DefaultReplicas,
		MaxBodyBytes:    DefaultMaxBodyBytes,
		DuplicateWindow: DefaultDuplicateWindow,
		Sync:            DefaultSync,
		Tokens:          []Token{},
		UIHosts:         []string{},
		TrashRetention:  DefaultTrashRetention,
	}
}

// HashToken returns the lower-case hex SHA-256 of a bearer token: the form
// tokens take in the configuration.
func HashToken(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

// Validate implements core.Validator: it checks every value and reports all
// problems together.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Listen == "" {
		bad("listen: want host:port, such as %q", DefaultListen)
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		bad("replicas %d: want 1 to 5", c.Replicas)
	}
	if c.MaxBodyBytes < 1024 {
		bad("max_body_bytes %d: want at least 1024", c.MaxBodyBytes)
	}
	if _, err := c.DuplicateWindowDuration(); err != nil {
		bad("%v", err)
	}
	if _, _, err := c.SyncPolicy(); err != nil {
		bad("%v", err)
	}
	if _, err := c.TrashRetentionDuration(); err != nil {
		bad("%v", err)
	}
	if c.NatsURL == "" && c.Replicas > 1 {
		bad("replicas %d needs a JetStream cluster: set nats_url, or keep replicas = 1 for the embedded server", c.Replicas)
	}
	if c.NatsURL == "" && c.NatsCreds != "" {
		bad("nats_creds is set but nats_url is empty: credentials are for an external NATS server")
	}
	seen := map[string]int{}
	for i, t := range c.Tokens {
		h := strings.ToLower(t.SHA256)
		if !ident.Hex(h, 64) {
			bad("tokens[%d].sha256: want 64 hex digits (the SHA-256 of the token: scribe token hash)", i)
		} else if j, dup := seen[h]; dup {
			bad("tokens[%d]: the same token hash as tokens[%d]", i, j)
		} else {
			seen[h] = i
		}
		if !ident.Tenant(t.Tenant) {
			bad("tokens[%d].tenant %q: want 1 to 64 of a-z, 0-9, '_' and '-'", i, t.Tenant)
		}
		if len(t.Scopes) == 0 {
			bad("tokens[%d].scopes: want one or both of %q, %q", i, ScopeRead, ScopeWrite)
		}
		for _, s := range t.Scopes {
			if s != ScopeRead && s != ScopeWrite {
				bad("tokens[%d].scopes: unknown scope %q (valid: %s, %s)", i, s, ScopeRead, ScopeWrite)
			}
		}
	}
	for i, h := range c.UIHosts {
		if h == "" || strings.ContainsAny(h, " \t/@?#") {
			bad("ui_hosts[%d] %q: want a host name or host:port, as a browser sends it in Host", i, h)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	return nil
}

// DuplicateWindowDuration is DuplicateWindow parsed.
func (c *Config) DuplicateWindowDuration() (time.Duration, error) {
	if c.DuplicateWindow == "" {
		return 2 * time.Minute, nil
	}
	d, err := time.ParseDuration(c.DuplicateWindow)
	if err != nil || d < 100*time.Millisecond {
		return 0, fmt.Errorf("duplicate_window %q: want a duration of at least 100ms, such as 2m", c.DuplicateWindow)
	}
	return d, nil
}

// TrashRetentionDuration is TrashRetention parsed ("" the default); 0
// keeps the trash until it is emptied by hand.
func (c *Config) TrashRetentionDuration() (time.Duration, error) {
	v := strings.TrimSpace(c.TrashRetention)
	if v == "" {
		v = DefaultTrashRetention
	}
	if days, ok := strings.CutSuffix(v, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || (d > 0 && d < time.Minute) {
		return 0, fmt.Errorf("trash_retention %q: want 0 or a duration of at least 1m, such as 720h or 30d", c.TrashRetention)
	}
	return d, nil
}

// SyncPolicy returns the embedded JetStream's sync policy: always (every
// write fsynced before its acknowledgement), or the interval of background
// fsyncs.
func (c *Config) SyncPolicy() (always bool, interval time.Duration, err error) {
	switch v := strings.ToLower(strings.TrimSpace(c.Sync)); v {
	case "", SyncAlways:
		return true, 0, nil
	default:
		d, perr := time.ParseDuration(v)
		if perr != nil || d < 10*time.Millisecond {
			return false, 0, fmt.Errorf("sync %q: want \"always\" or a duration of at least 10ms, such as 2m", c.Sync)
		}
		return false, d, nil
	}
}

// WithDefaults fills the zero values with the defaults and resolves DataDir.
func (c Config) WithDefaults() (Config, error) {
	d := DefaultConfig()
	if c.Listen == "" {
		c.Listen = d.Listen
	}
	if c.Replicas == 0 {
		c.Replicas = d.Replicas
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = d.MaxBodyBytes
	}
	if c.DuplicateWindow == "" {
		c.DuplicateWindow = d.DuplicateWindow
	}
	if c.Sync == "" {
		c.Sync = d.Sync
	}
	if c.TrashRetention == "" {
		c.TrashRetention = d.TrashRetention
	}
	if c.DataDir == "" && c.NatsURL == "" {
		dir, err := os.UserConfigDir()
		if err != nil {
			return c, fmt.Errorf("find the user config folder for data_dir (set data_dir): %w", err)
		}
		c.DataDir = filepath.Join(dir, "scribe", "serve")
	}
	for i := range c.Tokens {
		c.Tokens[i].SHA256 = strings.ToLower(c.Tokens[i].SHA256)
	}
	return c, nil
}
