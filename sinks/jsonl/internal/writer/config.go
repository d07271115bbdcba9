package writer

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/seal"
)

// The jsonl sink's configuration: the HCL block, its defaults and checks,
// the options it becomes, and the factory the service builds sinks with.

// FsyncPolicy says when the store calls fsync. It is decided in one place,
// (*Sink).sync, and nowhere else.
type FsyncPolicy string

// Config is the sink's block in the HCL file.
type Config struct {
	// Dir is the folder this store keeps its projects/ (and its scribe/
	// locks) under, laid out as Claude Code lays out its config folder;
	// "" is Claude's config folder itself. An archive names a folder of
	// its own here.
	Dir string `json:"dir" config:"path"`
	// Fsync is always, batch (default) or never.
	Fsync string `json:"fsync"`
	// DrainInterval is a duration; "" picks 100ms, or 10ms when a cloud
	// sink is configured.
	DrainInterval string `json:"drain_interval"`
	// ReappendBytes: when one of the session's latest metadata lines
	// (title, tag, last prompt, ...) lies more than this many bytes before
	// the end of the file, the whole block is appended again. Default 32768.
	ReappendBytes int `json:"reappend_bytes"`
	// LockWait is how long to wait for another writer of the same session;
	// "0s" fails at once, naming the holder.
	LockWait string `json:"lock_wait"`
	// LoadMaxBytes, when positive, makes resume refuse transcripts larger
	// than this from this store, so the summary loader serves them.
	LoadMaxBytes int64 `json:"load_max_bytes"`
	// Encryption seals the archive at rest (sealed.go): age recipients and
	// an identity, or a passphrase, from a file, a variable or a command.
	// Claude Code's own folder (dir = "") can never be sealed.
	Encryption seal.Options `json:"encryption"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() *Config {
	return &Config{Fsync: string(FsyncBatch), ReappendBytes: 32 << 10, LockWait: "0s"}
}

// Validate implements core.Validator.
func (c *Config) Validate() error {
	_, err := c.options(core.HostInfo{})
	return err
}

// StoreDir is the config folder the sink writes under (its projects/):
// its dir, else the host's Claude config folder.
func (c *Config) StoreDir(host core.HostInfo) (string, error) {
	o, err := c.options(host)
	return o.ConfigDir, err
}

func (c *Config) options(host core.HostInfo) (Options, error) {
	o := Options{ConfigDir: host.ConfigDir, Fsync: FsyncPolicy(c.Fsync), ReappendBytes: c.ReappendBytes}
	if c.Dir != "" {
		dir, err := filepath.Abs(c.Dir)
		if err != nil {
			return o, fmt.Errorf("dir %q: %w", c.Dir, err)
		}
		o.ConfigDir = dir
	}
	switch o.Fsync {
	case FsyncAlways, FsyncBatch, FsyncNever:
	default:
		return o, fmt.Errorf("fsync %q: want always, batch or never", c.Fsync)
	}
	switch {
	case c.DrainInterval != "":
		d, err := time.ParseDuration(c.DrainInterval)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("drain_interval %q: want a positive duration such as 100ms", c.DrainInterval)
		}
		o.DrainInterval = d
	case host.CloudSinks:
		o.DrainInterval = DrainCloud
	default:
		o.DrainInterval = DrainLocal
	}
	if c.LoadMaxBytes < 0 {
		return o, fmt.Errorf("load_max_bytes %d: want 0 (no limit) or a number of bytes", c.LoadMaxBytes)
	}
	o.LoadMaxBytes = c.LoadMaxBytes
	if !c.Encryption.IsZero() {
		if c.Dir == "" {
			return o, errors.New(`encryption: Claude Code's own folder (dir = "") is never sealed: Claude Code reads it; give the archive a folder of its own`)
		}
		if err := c.Encryption.Validate(); err != nil {
			return o, fmt.Errorf("encryption: %w", err)
		}
		o.Encryption = c.Encryption
	}
	if c.ReappendBytes <= 0 {
		return o, fmt.Errorf("reappend_bytes %d: want a positive number of bytes", c.ReappendBytes)
	}
	if c.LockWait != "" {
		d, err := time.ParseDuration(c.LockWait)
		if err != nil || d < 0 {
			return o, fmt.Errorf("lock_wait %q: want a duration such as 0s or 30s", c.LockWait)
		}
		o.LockWait = d
	}
	return o, nil
}

// Options are the resolved settings of a Sink.
type Options struct {
	// ConfigDir is Claude's config folder; files go under its projects/.
	ConfigDir     string
	Fsync         FsyncPolicy
	DrainInterval time.Duration
	ReappendBytes int
	LockWait      time.Duration
	// DefaultCWD names the project folder of a session whose entries carry
	// no cwd.
	DefaultCWD string
	// LoadMaxBytes bounds what Load serves (0: no bound).
	LoadMaxBytes int64
	// MaxOpenFiles bounds the descriptors the store keeps open (locks and
	// transcripts); 0 derives it from the process's RLIMIT_NOFILE.
	MaxOpenFiles int
	// ID names the store in the transcripts it loads.
	ID     core.ID
	Logger hclog.Logger
	// Encryption, when set, seals every transcript (sealedstore.go);
	// Environ is where its key variables are looked up.
	Encryption seal.Options
	Environ    []string
}

// Factory makes jsonl sinks.
func Factory() core.SinkFactory { return factory{} }

type factory struct{}

func (factory) Kind() core.Kind { return core.KindSink }

func (factory) Type() string { return "jsonl" }

func (factory) DefaultConfig() any { return DefaultConfig() }

func (factory) CreateSink(_ context.Context, set core.Settings, cfg any) (core.Sink, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("sink %s: wrong config type %T", set.ID, cfg)
	}
	o, err := c.options(set.Host)
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", set.ID, err)
	}
	o.Logger = set.Logger
	o.ID = set.ID
	o.Environ = set.Environ
	o.DefaultCWD = set.Host.WorkDir
	if set.Host.LockWait > 0 {
		o.LockWait = set.Host.LockWait
	}
	return New(o)
}
