package sinkhelper

// The network-sink helper, in the manner of the OpenTelemetry Collector's
// exporterhelper: a push function and options go in, a finished core.Sink
// comes out. A sink package writes its protocol (the push function, its
// own counters, its config) and embeds a NetSink for the rest.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/core"
)

// NetSinkOptions configure NewNetSink.
type NetSinkOptions struct {
	// Type is the sink's type ("events"), which Start's errors name; Name
	// its id ("events/cloud"), which the Sender's errors and logs name.
	Type, Name string
	// Client is the resolved client block: the server, the token, the
	// request timeout and the Sender's options.
	Client Client
	// HTTPClient defaults to NewHTTPClient().
	HTTPClient *http.Client
	// Logger defaults to a null logger.
	Logger hclog.Logger
	// Linger is the Sender's Linger (0: send at once).
	Linger time.Duration
	// MaxBatch and MaxBatchBytes bound one batch where Client.Options
	// leaves them 0.
	MaxBatch, MaxBatchBytes int
	// Counters, when set, adds the sink's own counters to Report.
	Counters func(map[string]int64)
}

// Conn is how a push function reaches its server.
type Conn struct {
	// BaseURL has no trailing slash.
	BaseURL string
	Token   *Token
	HTTP    *http.Client
	// Timeout bounds each request (Client.RequestTimeout).
	Timeout time.Duration
}

// NetSink is a finished network sink: a Sender (a memory queue that spills
// to a spool, a retry loop with backoff, jitter and permanent errors) over
// a push function, and what every HTTP sink adds to one: the bearer token,
// read at Start; the HTTP client, whose idle connections Shutdown closes;
// the sink's own counters beside the Sender's in Report; idempotence (the
// server stores an entry once by its uuid, so a batch sent again after a
// failure or a crash is harmless).
type NetSink struct {
	sender   *Sender
	conn     Conn
	typ      string
	counters func(map[string]int64)
}

var (
	_ core.Sink       = (*NetSink)(nil)
	_ core.Idempotent = (*NetSink)(nil)
	_ core.Reporter   = (*NetSink)(nil)
)

// NewNetSink returns a sink that delivers through push; Start opens its
// spool. push reaches the server through Conn, which it may read when it
// runs (never before Start).
func NewNetSink(o NetSinkOptions, push PushFunc) (*NetSink, error) {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.HTTPClient == nil {
		o.HTTPClient = NewHTTPClient()
	}
	if o.Client.Token == nil {
		o.Client.Token = NewToken("")
	}
	so := o.Client.Options
	so.Name, so.Logger, so.Linger = o.Name, o.Logger, o.Linger
	if so.MaxBatch == 0 {
		so.MaxBatch = o.MaxBatch
	}
	if so.MaxBatchBytes == 0 {
		so.MaxBatchBytes = o.MaxBatchBytes
	}
	sender, err := New(so, push)
	if err != nil {
		return nil, err
	}
	return &NetSink{
		sender:   sender,
		conn:     Conn{BaseURL: o.Client.BaseURL, Token: o.Client.Token, HTTP: o.HTTPClient, Timeout: o.Client.RequestTimeout()},
		typ:      o.Type,
		counters: o.Counters,
	}, nil
}

// Conn returns how the push function reaches the server.
func (s *NetSink) Conn() Conn { return s.conn }

// Start reads the token file, if any, and starts delivering, beginning
// with what an earlier run left in the spool.
func (s *NetSink) Start(ctx context.Context) error {
	if err := s.conn.Token.Load(); err != nil {
		return fmt.Errorf("sink %s: %w", s.typ, err)
	}
	return s.sender.Start(ctx)
}

// Write queues the entries; see Sender.Write.
func (s *NetSink) Write(ctx context.Context, entries []core.Entry) error {
	return s.sender.Write(ctx, entries)
}

// Flush returns nil when every entry written before it is stored by the
// server or fsynced in the spool; see Sender.Flush. It does not wait for
// the Linger.
func (s *NetSink) Flush(ctx context.Context) error { return s.sender.Flush(ctx) }

// Shutdown delivers what it can within ctx and leaves the rest in the
// spool for the next start.
func (s *NetSink) Shutdown(ctx context.Context) error {
	err := s.sender.Shutdown(ctx)
	s.conn.HTTP.CloseIdleConnections()
	return err
}

// Report implements core.Reporter: the queue's counters and the sink's.
func (s *NetSink) Report() map[string]int64 {
	m := s.sender.Report()
	if s.counters != nil {
		s.counters(m)
	}
	return m
}

// Idempotent implements core.Idempotent: the server keys entries by uuid
// (and uuid-less lines by their content), so an entry sent again is
// stored once.
func (s *NetSink) Idempotent() bool { return true }

// ErrNoSession is the drop reason of an entry without a session id.
var ErrNoSession = errors.New("entry has no session id")

// SessionFunc sends the pending entries of one session, b.Entries[i] for
// each i of idx, in order.
type SessionFunc func(ctx context.Context, b *Batch, sessionID string, idx []int) error

// sessionConcurrency is how many sessions of a batch are sent at the same
// time.
const sessionConcurrency = 4

// BySession returns a push function for a server that takes each
// session's entries on a route of its own. It groups the batch's pending
// entries by session, in order; drops an entry without a session id
// (ErrNoSession, counted in unrouted); sends the sessions side by side, at
// most four at a time, through send; and returns the first permanent error
// of any session (a refused token refuses every session: the batch is given
// up), else the first error (the batch is retried; what send marked done
// is skipped).
func BySession(send SessionFunc, unrouted *atomic.Int64) PushFunc {
	return func(ctx context.Context, b *Batch) error {
		var order []string
		groups := map[string][]int{}
		for i, e := range b.Entries {
			if b.Done(i) {
				continue
			}
			if e.SessionID == "" {
				unrouted.Add(1)
				b.Drop(i, fmt.Errorf("%w (uuid %q)", ErrNoSession, e.UUID))
				continue
			}
			if _, ok := groups[e.SessionID]; !ok {
				order = append(order, e.SessionID)
			}
			groups[e.SessionID] = append(groups[e.SessionID], i)
		}
		errs := make([]error, len(order))
		sem := make(chan struct{}, sessionConcurrency)
		var wg sync.WaitGroup
		for k, sid := range order {
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				errs[k] = send(ctx, b, sid, groups[sid])
			}()
		}
		wg.Wait()
		var retry error
		for _, err := range errs {
			if core.IsPermanent(err) {
				return err
			}
			if err != nil && retry == nil {
				retry = err
			}
		}
		return retry
	}
}
