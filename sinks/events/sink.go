// Package events is the v2 events client: a sink that sends entries in
// batches, as Claude Code's CCR v2 internal events do:
//
//	POST {base_url}/v1/code/sessions/{sessionId}/events
//	Authorization: Bearer <token>
//	Content-Type: application/json
//
//	{"events":[{"type":"<entry type>","payload":<the entry>,"agent_id":"<agentId>"}, …]}
//
// agent_id is present only for a subagent's sidechain rows. The queue is
// drained every FlushInterval (10 ms by default): one request per session
// per drain, at most MaxBatch events each. 2xx stores the batch; the server
// stores an entry once by its uuid, so a batch sent again after a failure
// or a crash is harmless. 401 and 403 are permanent (dropped, counted,
// logged, and Flush fails); 413, 400 and 422 split the batch until the
// entry the server refuses is alone, and drop only it; other failures are
// retried with backoff from 500 ms to 8 s (sinkhelper).
package events

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/server/wire"
	"github.com/e0dc0000/scribe/sinks/sinkhelper"
)

// Type is the sink type in the config file.
const Type = "events"

// Defaults.
const (
	DefaultFlushInterval = 10 * time.Millisecond
	DefaultMaxBatch      = 500
	// DefaultMaxRequestBytes keeps a request well under the server's body
	// limit; one entry larger than it is still sent alone.
	DefaultMaxRequestBytes = 4 << 20
)

// ErrNoSession is the drop reason of an entry without a session id.
var ErrNoSession = sinkhelper.ErrNoSession

// Config is the sink's block in the HCL file.
type Config struct {
	sinkhelper.ClientConfig
	// FlushInterval is how long entries gather before a batch is sent.
	FlushInterval string `json:"flush_interval"`
	// MaxBatch bounds the events of one request.
	MaxBatch int `json:"max_batch"`
	// MaxRequestBytes bounds the body of one request (a larger entry is
	// sent alone).
	MaxRequestBytes int `json:"max_request_bytes"`
}

// DefaultConfig returns the defaults: batches every 10 ms of at most 500
// events, backoff from 500 ms to 8 s.
func DefaultConfig() *Config {
	return &Config{
		ClientConfig:    sinkhelper.DefaultClientConfig(),
		FlushInterval:   DefaultFlushInterval.String(),
		MaxBatch:        DefaultMaxBatch,
		MaxRequestBytes: DefaultMaxRequestBytes,
	}
}

// Validate implements core.Validator.
func (c *Config) Validate() error {
	_, err := c.options(core.Settings{ID: core.ID{Type: Type, Name: "n"}, Host: core.HostInfo{ConfigDir: "/"}})
	return err
}

func (c *Config) options(set core.Settings) (Options, error) {
	cl, err := c.Resolve(set)
	if err != nil {
		return Options{}, err
	}
	o := Options{Client: cl, MaxBatch: c.MaxBatch, MaxRequestBytes: c.MaxRequestBytes}
	if o.FlushInterval, err = sinkhelper.ParseDuration("flush_interval", c.FlushInterval); err != nil {
		return o, err
	}
	if c.MaxBatch <= 0 {
		return o, fmt.Errorf("max_batch %d: want a positive number of events", c.MaxBatch)
	}
	if c.MaxRequestBytes <= 0 {
		return o, fmt.Errorf("max_request_bytes %d: want a positive number of bytes", c.MaxRequestBytes)
	}
	return o, nil
}

// Options are the resolved settings of a Sink.
type Options struct {
	Client          sinkhelper.Client
	FlushInterval   time.Duration
	MaxBatch        int
	MaxRequestBytes int
	// HTTPClient defaults to sinkhelper.NewHTTPClient().
	HTTPClient *http.Client
	Name       string
	Logger     hclog.Logger
}

// Sink sends entries to the events API in batches: a sinkhelper.NetSink
// whose push function is the protocol below.
type Sink struct {
	*sinkhelper.NetSink
	maxBatch int
	maxBytes int

	requests, events, refused, unauthorized atomic.Int64
	unrouted, splits, tokenReloads, failed  atomic.Int64
}

var (
	_ core.Sink       = (*Sink)(nil)
	_ core.Idempotent = (*Sink)(nil)
	_ core.Reporter   = (*Sink)(nil)
)

// New returns a sink; Start opens its spool.
func New(o Options) (*Sink, error) {
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	s := &Sink{maxBatch: o.MaxBatch, maxBytes: o.MaxRequestBytes}
	ns, err := sinkhelper.NewNetSink(sinkhelper.NetSinkOptions{
		Type: Type, Name: o.Name, Client: o.Client, HTTPClient: o.HTTPClient, Logger: o.Logger,
		Linger: o.FlushInterval, MaxBatch: o.MaxBatch, MaxBatchBytes: o.MaxRequestBytes,
		Counters: s.counters,
	}, sinkhelper.BySession(s.session, &s.unrouted))
	if err != nil {
		return nil, err
	}
	s.NetSink = ns
	return s, nil
}

// counters adds the protocol's counters to Report.
func (s *Sink) counters(m map[string]int64) {
	m["requests"] = s.requests.Load()
	m["request_failures"] = s.failed.Load()
	m["events_sent"] = s.events.Load()
	m["refused"] = s.refused.Load()
	m["unauthorized"] = s.unauthorized.Load()
	m["unrouted"] = s.unrouted.Load()
	m["splits"] = s.splits.Load()
	m["token_reloads"] = s.tokenReloads.Load()
}

// session sends one session's entries in order, in requests of at most
// maxBatch events and about maxBytes.
func (s *Sink) session(ctx context.Context, b *sinkhelper.Batch, sid string, idx []int) error {
	u := s.Conn().BaseURL + "/v1/code/sessions/" + url.PathEscape(sid) + "/events"
	for len(idx) > 0 {
		n, size := 0, 0
		for n < len(idx) && n < s.maxBatch && (n == 0 || size+len(b.Entries[idx[n]].Raw) <= s.maxBytes) {
			size += len(b.Entries[idx[n]].Raw)
			n++
		}
		if err := s.send(ctx, u, b, idx[:n]); err != nil {
			return err
		}
		idx = idx[n:]
	}
	return nil
}

// send posts one request. A 413, 400 or 422 splits it in halves; an entry
// refused alone, or a request refused for another lasting reason (404,
// 415, …), is dropped.
func (s *Sink) send(ctx context.Context, u string, b *sinkhelper.Batch, idx []int) error {
	err := s.post(ctx, u, b, idx)
	switch {
	case err == nil:
		for _, i := range idx {
			b.MarkDone(i)
		}
		s.events.Add(int64(len(idx)))
		return nil
	case !core.IsPermanent(err) || errors.Is(err, sinkhelper.ErrUnauthorized):
		s.failed.Add(1)
		return err
	}
	var se *sinkhelper.StatusError
	if errors.As(err, &se) && splittable(se.Code) && len(idx) > 1 {
		// Too large, or one entry the server cannot take: halves find
		// out which, so that only that one is dropped.
		s.splits.Add(1)
		half := len(idx) / 2
		if err := s.send(ctx, u, b, idx[:half]); err != nil {
			return err
		}
		return s.send(ctx, u, b, idx[half:])
	}
	// The server refuses these entries for good; the rest must not wait.
	s.refused.Add(int64(len(idx)))
	for _, i := range idx {
		b.Drop(i, err)
	}
	return nil
}

func splittable(code int) bool {
	switch code {
	case http.StatusRequestEntityTooLarge, http.StatusBadRequest, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

func (s *Sink) post(ctx context.Context, u string, b *sinkhelper.Batch, idx []int) error {
	body := encode(b.Entries, idx)
	code, err := s.postOnce(ctx, u, body, len(idx))
	if code == http.StatusUnauthorized {
		// A rotated token file is read again once before giving up.
		if changed, rerr := s.Conn().Token.Reload(); rerr == nil && changed {
			s.tokenReloads.Add(1)
			code, err = s.postOnce(ctx, u, body, len(idx))
		}
	}
	if code == http.StatusUnauthorized || code == http.StatusForbidden {
		s.unauthorized.Add(1)
	}
	return err
}

// postOnce sends one request, bounded by the request timeout, and returns
// its status (0 for none) and the error for anything but 2xx.
func (s *Sink) postOnce(ctx context.Context, u string, body []byte, n int) (int, error) {
	conn := s.Conn()
	ctx, cancel := context.WithTimeout(ctx, conn.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, sinkhelper.Permanent(fmt.Errorf("post events: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	conn.Token.Authorize(req)
	s.requests.Add(1)
	resp, err := conn.HTTP.Do(req)
	if err != nil {
		return 0, fmt.Errorf("post %d events: %w", n, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		sinkhelper.DrainClose(resp)
		return resp.StatusCode, nil
	}
	return resp.StatusCode, sinkhelper.ResponseError(resp)
}

// encode builds {"events":[…]} (wire.Event) with each entry's line as its
// payload, byte for byte, and a sidechain row's agent as its agent_id.
func encode(entries []core.Entry, idx []int) []byte {
	n := 16
	for _, i := range idx {
		n += len(entries[i].Raw) + len(entries[i].Type) + len(entries[i].AgentID) + 48
	}
	buf := make([]byte, 0, n)
	buf = append(buf, `{"events":[`...)
	for k, i := range idx {
		e := &entries[i]
		if k > 0 {
			buf = append(buf, ',')
		}
		ev := wire.Event{Type: e.Type, Payload: e.Raw}
		if e.IsSidechain {
			ev.AgentID = e.AgentID
		}
		buf = wire.AppendEvent(buf, &ev)
	}
	return append(buf, "]}"...)
}

// Factory makes events sinks.
func Factory() core.SinkFactory { return factory{} }

type factory struct{}

func (factory) Kind() core.Kind    { return core.KindSink }
func (factory) Type() string       { return Type }
func (factory) DefaultConfig() any { return DefaultConfig() }

func (factory) CreateSink(_ context.Context, set core.Settings, cfg any) (core.Sink, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("sink %s: wrong config type %T", set.ID, cfg)
	}
	o, err := c.options(set)
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", set.ID, err)
	}
	o.Name, o.Logger = set.ID.String(), set.Logger
	return New(o)
}
