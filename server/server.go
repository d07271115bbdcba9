package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/server/servemetrics"
)

// Server is `scribe serve`: the HTTP API over the JetStream store.
type Server struct {
	cfg    Config
	log    hclog.Logger
	tokens map[string]principal
	m      *metrics
	window time.Duration

	// proc, when set, processes each entry before it is stored.
	proc core.Processor

	// requestTimeout bounds the work of one request.
	requestTimeout time.Duration

	mu       sync.Mutex
	started  bool
	stopped  bool
	lock     *dataLock
	ns       *natsserver.Server
	nc       *nats.Conn
	ncPub    *nats.Conn // publishes to the entries' stream (see openStore)
	st       *store
	ln       net.Listener
	mounts   []mount            // served behind the tokens (Mount)
	sweeping context.CancelFunc // stops keepSweeping
	httpSrv  *http.Server
	serveErr chan error
}

// principal is what a token grants.
type principal struct {
	tenant      string
	read, write bool
}

// New checks cfg (filling defaults for zero values) and builds a server.
// Nothing is started until Start.
func New(cfg Config, log hclog.Logger) (*Server, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	cfg.Tokens = slices.Clone(cfg.Tokens)
	cfg, err := cfg.WithDefaults()
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	window, _ := cfg.DuplicateWindowDuration()
	s := &Server{
		cfg:            cfg,
		log:            log,
		tokens:         map[string]principal{},
		m:              servemetrics.New(),
		window:         window,
		requestTimeout: 25 * time.Second,
	}
	for _, t := range cfg.Tokens {
		p := principal{tenant: t.Tenant}
		for _, sc := range t.Scopes {
			switch sc {
			case ScopeRead:
				p.read = true
			case ScopeWrite:
				p.write = true
			}
		}
		s.tokens[t.SHA256] = p
	}
	if len(s.tokens) == 0 {
		log.Warn("no tokens are configured: every API request will get 401 (create one with `scribe token new`)")
	}
	return s, nil
}

// Start starts the embedded NATS server (when NatsURL is empty), connects,
// creates the stream and buckets if needed, and starts serving HTTP on
// Listen. It returns once requests are being accepted. ctx bounds the
// start-up, not the server's life; stop it with Shutdown.
func (s *Server) Start(ctx context.Context) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("server already started")
	}
	if s.stopped {
		return errors.New("server was shut down; create a new one")
	}
	defer func() {
		if err != nil {
			s.closeBackend()
		}
	}()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
	}
	if s.cfg.NatsURL == "" {
		if s.lock, err = lockDataDir(s.cfg.DataDir); err != nil {
			return err
		}
		always, interval, _ := s.cfg.SyncPolicy()
		s.ns, err = startEmbedded(s.cfg.DataDir, embeddedPayload(s.cfg.MaxBodyBytes), always, interval, s.log.Named("nats"))
		if err != nil {
			return err
		}
		if jc := s.ns.JetStreamConfig(); jc != nil {
			s.m.SyncInterval.Store(int64(jc.SyncInterval))
			if jc.SyncAlways {
				s.m.SyncAlways.Store(1)
			} else {
				s.m.SyncAlways.Store(0)
			}
		}
	}
	s.nc, err = connect(s.ns, s.cfg.NatsURL, s.cfg.NatsCreds, "scribe serve", s.log.Named("nats"))
	if err != nil {
		return err
	}
	s.ncPub, err = connect(s.ns, s.cfg.NatsURL, s.cfg.NatsCreds, "scribe serve (entries)", s.log.Named("nats"))
	if err != nil {
		return err
	}
	s.st, err = openStore(ctx, s.nc, s.ncPub, storeOptions{
		Replicas:        s.cfg.Replicas,
		DuplicateWindow: s.window,
		Logger:          s.log.Named("store"),
		Metrics:         s.m,
	})
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	s.ln, err = lc.Listen(ctx, "tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Listen, err)
	}
	s.httpSrv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          s.log.Named("http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	s.serveErr = make(chan error, 1)
	go func(srv *http.Server, ln net.Listener, done chan<- error) {
		done <- srv.Serve(ln)
	}(s.httpSrv, s.ln, s.serveErr)
	s.started = true
	if retention, _ := s.cfg.TrashRetentionDuration(); retention > 0 {
		var sweepCtx context.Context
		sweepCtx, s.sweeping = context.WithCancel(context.Background())
		go s.keepSweeping(sweepCtx, retention)
	}
	backend := "embedded NATS in " + s.cfg.DataDir
	sync := s.syncPolicy()
	if s.cfg.NatsURL != "" {
		backend = "NATS " + s.nc.ConnectedUrlRedacted()
	}
	s.log.Info("serving", "addr", s.ln.Addr().String(), "backend", backend, "replicas", s.cfg.Replicas,
		"sync", sync, "tokens", len(s.tokens))
	return nil
}

// DataDir is the folder of the embedded JetStream store (data_dir,
// resolved): "" with nats_url when data_dir is not set.
func (s *Server) DataDir() string { return s.cfg.DataDir }

// Addr returns the address the HTTP server listens on ("" before Start).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// SyncPolicy says when the JetStream store fsyncs what it acknowledges:
// "always", "every <interval>" for the embedded server as running (its
// actual JetStream configuration), or "the NATS server's" with NatsURL.
func (s *Server) SyncPolicy() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.syncPolicy()
}

func (s *Server) syncPolicy() string {
	if s.ns == nil {
		if s.cfg.NatsURL != "" {
			return "the NATS server's (jetstream sync_interval)"
		}
		return "not started"
	}
	jc := s.ns.JetStreamConfig()
	switch {
	case jc == nil:
		return "no JetStream"
	case jc.SyncAlways:
		return SyncAlways
	default:
		return "every " + jc.SyncInterval.String()
	}
}

// Handler returns the HTTP handler, for mounting the API elsewhere (the
// server must be started).
func (s *Server) Handler() http.Handler { return s }

// Shutdown stops accepting requests, waits for the ones in flight (until
// ctx ends), then closes the NATS connection and stops the embedded NATS
// server. It is safe to call twice, and without Start.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.stopped = true
	if s.sweeping != nil {
		s.sweeping()
	}
	var errs []error
	if s.httpSrv != nil {
		if err := s.httpSrv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("drain HTTP requests: %w", err))
			_ = s.httpSrv.Close()
		}
		if err := <-s.serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, fmt.Errorf("HTTP server: %w", err))
		}
	}
	s.closeBackend()
	return errors.Join(errs...)
}

// closeBackend closes the NATS connection and the embedded server.
func (s *Server) closeBackend() {
	if s.ln != nil && s.httpSrv == nil {
		_ = s.ln.Close()
	}
	if s.nc != nil {
		s.nc.Close()
		s.nc = nil
	}
	if s.ncPub != nil {
		s.ncPub.Close()
		s.ncPub = nil
	}
	if s.ns != nil {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
		s.ns = nil
	}
	s.lock.release()
	s.lock = nil
}
