// Package s3 stores sessions in an S3 bucket (AWS or any S3-compatible
// server) in the key layout of the Agent SDK's reference S3 SessionStore
// adapter, so an SDK app using that adapter and scribe read each other's
// sessions. It is a sink, a loader and a listing (backend.Lister).
//
// Keys:
//
//	{prefix}{projectKey}/{sessionId}/part-{epochMs13}-{rand6}.jsonl                           main transcript
//	{prefix}{projectKey}/{sessionId}/subagents/agent-{agentId}/part-{epochMs13}-{rand6}.jsonl  a subagent's
//
// A part holds lines, each ending in "\n", exactly as Claude Code wrote
// them. Write buffers per transcript; a part is stored when a transcript's
// buffer reaches part_bytes, when part_interval passes, and on Flush (which
// returns only once every part is stored). Load lists a transcript's parts
// and concatenates them in key order, serving each uuid once. Compact
// merges a transcript's parts into one.
package s3

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/backend"
	"github.com/e0dc0000/scribe/sinks/sinkhelper"
)

// Config is the block of an s3 component.
type Config struct {
	Bucket string `json:"bucket"`
	// Endpoint is the server's URL for an S3-compatible store; "" means
	// AWS.
	Endpoint string `json:"endpoint"`
	Region   string `json:"region"`
	// Prefix is put before every key; give it a trailing "/" to make it a
	// folder.
	Prefix string `json:"prefix"`
	// PathStyle addresses the bucket in the path (most S3-compatible
	// servers want it) instead of the host name.
	PathStyle bool `json:"path_style"`
	// CredentialsFile is a shared credentials file (AWS's ini format);
	// Profile picks its section. Without it, AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY are used when set, else the default AWS chain.
	CredentialsFile string `json:"credentials_file" config:"path"`
	Profile         string `json:"profile"`
	// SecretAccessKey and SessionToken exist only to refuse them: secrets
	// are never written in the configuration.
	SecretAccessKey string `json:"secret_access_key"`
	SessionToken    string `json:"session_token"`
	// PartBytes stores a transcript's buffered lines as a part once they
	// reach this size.
	PartBytes int64 `json:"part_bytes"`
	// PartInterval stores buffered lines at least this often.
	PartInterval string `json:"part_interval"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() *Config {
	return &Config{Region: "us-east-1", PartBytes: 1 << 20, PartInterval: "1s", Profile: "default"}
}

// ErrInlineSecret is returned by Validate for a secret written in the
// configuration.
var ErrInlineSecret = errors.New("secrets are never written in the configuration: use credentials_file, " +
	"the AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY variables, or the default AWS chain")

// Validate implements core.Validator.
func (c *Config) Validate() error {
	var errs []error
	if c.SecretAccessKey != "" {
		errs = append(errs, fmt.Errorf("secret_access_key: %w", ErrInlineSecret))
	}
	if c.SessionToken != "" {
		errs = append(errs, fmt.Errorf("session_token: %w", ErrInlineSecret))
	}
	if c.Bucket == "" {
		errs = append(errs, errors.New("bucket: required"))
	}
	if c.Endpoint != "" {
		if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("endpoint %q: want a URL such as http://127.0.0.1:7070 or https://s3.example.com", c.Endpoint))
		}
	}
	if c.Region == "" {
		errs = append(errs, errors.New(`region: required (e.g. "us-east-1")`))
	}
	if c.PartBytes <= 0 {
		errs = append(errs, fmt.Errorf("part_bytes %d: want a positive number of bytes", c.PartBytes))
	}
	if _, err := sinkhelper.ParseDuration("part_interval", c.PartInterval); err != nil {
		errs = append(errs, err)
	}
	if strings.HasPrefix(c.Prefix, "/") {
		errs = append(errs, fmt.Errorf("prefix %q: must not start with '/'", c.Prefix))
	}
	return errors.Join(errs...)
}

// Store is the S3 backend: a core.Sink, core.Loader, core.Seeder and
// backend.Lister.
type Store struct {
	cfg      Config
	log      hclog.Logger
	client   *s3.Client
	interval time.Duration
	workDir  string

	mu       sync.Mutex
	bufs     map[string]*buffer // key: transcript prefix
	projects map[string]string  // session id → project key
	lastMs   map[string]int64   // transcript prefix → epoch ms of its last part
	putMu    sync.Mutex         // one put round at a time keeps parts in order
	stop     chan struct{}
	done     chan struct{}
	started  bool
	closed   bool

	parts, bytes, putErrors, duplicates, eventsSkipped atomic.Int64
}

type buffer struct {
	data  []byte
	since time.Time
}

var (
	_ core.Sink      = (*Store)(nil)
	_ core.Loader    = (*Store)(nil)
	_ core.Seeder    = (*Store)(nil)
	_ core.Reporter  = (*Store)(nil)
	_ backend.Lister = (*Store)(nil)

	_ core.EntryChecker = (*Store)(nil)
)

// CheckEntry implements core.EntryChecker.
func (s *Store) CheckEntry(e *core.Entry) error { return backend.CheckEntry("s3", e) }

// New returns an unstarted store. environ is the environment the host
// exposes (AWS_ACCESS_KEY_ID and friends are read from it); workDir is the
// project of a session whose entries carry no cwd.
func New(ctx context.Context, cfg Config, log hclog.Logger, environ []string, workDir string) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	interval, _ := sinkhelper.ParseDuration("part_interval", cfg.PartInterval)
	awsCfg, err := loadAWS(ctx, cfg, environ)
	if err != nil {
		return nil, err
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
	})
	return &Store{cfg: cfg, log: log, client: client, interval: interval, workDir: workDir,
		bufs: map[string]*buffer{}, projects: map[string]string{}, lastMs: map[string]int64{}}, nil
}

// loadAWS resolves the credentials: the credentials file, else the
// variables of environ, else the default chain.
func loadAWS(ctx context.Context, cfg Config, environ []string) (aws.Config, error) {
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(cfg.Region)}
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	switch {
	case cfg.CredentialsFile != "":
		opts = append(opts, awsconfig.WithSharedCredentialsFiles([]string{cfg.CredentialsFile}),
			awsconfig.WithSharedConfigProfile(cfg.Profile))
	case env["AWS_ACCESS_KEY_ID"] != "" && env["AWS_SECRET_ACCESS_KEY"] != "":
		opts = append(opts, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(
			env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env["AWS_SESSION_TOKEN"])))
	}
	c, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("s3: load the AWS configuration: %w", err)
	}
	return c, nil
}

// Start implements core.Sink: it starts the part timer.
func (s *Store) Start(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return nil
	}
	s.started = true
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go s.timer()
	return nil
}

// timer stores buffers older than the part interval.
func (s *Store) timer() {
	defer close(s.done)
	t := time.NewTicker(s.interval / 4)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := s.putParts(context.Background(), false); err != nil {
				s.log.Warn("store parts", "error", err, "put_errors", s.putErrors.Load())
			}
		}
	}
}

// Flush implements core.Sink: it returns once every buffered line is in a
// stored part.
func (s *Store) Flush(ctx context.Context) error { return s.putParts(ctx, true) }

// Shutdown implements core.Sink: it stops the timer and flushes. Safe
// twice and without Start.
func (s *Store) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	wasStarted := s.started && !s.closed
	s.closed = true
	s.mu.Unlock()
	if wasStarted {
		close(s.stop)
		<-s.done
	}
	return s.Flush(ctx)
}

// Report implements core.Reporter.
func (s *Store) Report() map[string]int64 {
	s.mu.Lock()
	var buffered int64
	for _, b := range s.bufs {
		buffered += int64(len(b.data))
	}
	s.mu.Unlock()
	return map[string]int64{"parts": s.parts.Load(), "bytes": s.bytes.Load(), "put_errors": s.putErrors.Load(),
		"buffered_bytes": buffered, "duplicates_on_load": s.duplicates.Load(), "events_skipped": s.eventsSkipped.Load()}
}

// SinkFactory makes s3 sinks.
func SinkFactory() core.SinkFactory { s, _ := factories(); return s }

// LoaderFactory makes s3 loaders (the same component as the sink).
func LoaderFactory() core.LoaderFactory { _, l := factories(); return l }

func factories() (core.SinkFactory, core.LoaderFactory) {
	return backend.Factories("s3", DefaultConfig, func(ctx context.Context, set core.Settings, c *Config) (backend.Store, error) {
		st, err := New(ctx, *c, set.Logger, set.Environ, set.Host.WorkDir)
		if err != nil {
			return nil, err
		}
		return st, nil
	})
}
