// Package ingress is the v1 session-ingress client: a sink that PUTs each
// entry to {base_url}/v1/session_ingress/session/{sessionId}, one at a time
// per session, with optimistic concurrency on the session's last uuid, as
// Claude Code's remote sessions do.
//
// The protocol, per entry:
//
//	PUT …/session/{id}   Authorization: Bearer <token>
//	                     Content-Type: application/json
//	                     Last-Uuid: <the last uuid this client believes the server has>
//	200, 201  → stored: the entry's uuid becomes the last uuid
//	409       → x-last-uuid = the entry's uuid: already stored (success)
//	            x-last-uuid = another uuid: adopt it, send again
//	            no x-last-uuid: GET …/session/{id} → {"loglines":[…]}, adopt the
//	            last uuid there and send again; nothing to adopt: a conflict failure
//	401, 403  → permanent: the batch is dropped, counted, logged, and Flush fails
//	else      → retried with backoff (sinkhelper)
//
// Subagent entries go to the same session URL; the server files them under
// their agentId. The Last-Uuid chain is the session's, across its agents.
package ingress

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/sinkhelper"
)

// Type is the sink type in the config file.
const Type = "ingress"

// Sentinel errors.
var (
	// ErrConflict is a 409 the client could not resolve: the server named
	// no last uuid it could adopt. It is retried.
	ErrConflict = errors.New("session ingress conflict")
	// ErrNoSession is the drop reason of an entry without a session id.
	ErrNoSession = sinkhelper.ErrNoSession
)

// maxBatch is the default number of entries a batch takes from the queue.
const maxBatch = 100

// Config is the sink's block in the HCL file.
type Config struct {
	sinkhelper.ClientConfig
}

// DefaultConfig returns the defaults: Claude Code's policy of 10 attempts
// with backoff from 500 ms to 8 s and 30 s for each.
func DefaultConfig() *Config {
	return &Config{ClientConfig: sinkhelper.DefaultClientConfig()}
}

// Validate implements core.Validator.
func (c *Config) Validate() error { return c.ClientConfig.Validate() }

// Options are the resolved settings of a Sink.
type Options struct {
	Client sinkhelper.Client
	// HTTPClient defaults to sinkhelper.NewHTTPClient().
	HTTPClient *http.Client
	Name       string
	Logger     hclog.Logger
}

// Sink sends entries to the session-ingress API: a sinkhelper.NetSink
// whose push function is the protocol below, the sessions side by side,
// each session's entries one after the other.
type Sink struct {
	*sinkhelper.NetSink
	// maxConflicts bounds the adopt-and-send-again loop of one entry
	// within one attempt.
	maxConflicts int

	mu   sync.Mutex
	last map[string]string // session id → the last uuid the server has

	requests, conflicts, adopted, alreadyStored  atomic.Int64
	logFetches, conflictFailures, unauthorized   atomic.Int64
	tokenReloads, refused, unrouted, putFailures atomic.Int64
}

var (
	_ core.Sink       = (*Sink)(nil)
	_ core.Idempotent = (*Sink)(nil)
	_ core.Reporter   = (*Sink)(nil)
)

// New returns a sink; Start opens its spool.
func New(o Options) (*Sink, error) {
	s := &Sink{
		maxConflicts: max(o.Client.Options.Retry.MaxAttempts, 1),
		last:         map[string]string{},
	}
	ns, err := sinkhelper.NewNetSink(sinkhelper.NetSinkOptions{
		Type: Type, Name: o.Name, Client: o.Client, HTTPClient: o.HTTPClient, Logger: o.Logger,
		// One request per entry: smaller batches are acknowledged (and
		// dropped from the spool) sooner.
		MaxBatch: maxBatch,
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
	m["put_failures"] = s.putFailures.Load()
	m["conflicts"] = s.conflicts.Load()
	m["adopted_last_uuid"] = s.adopted.Load()
	m["already_stored"] = s.alreadyStored.Load()
	m["log_fetches"] = s.logFetches.Load()
	m["conflict_failures"] = s.conflictFailures.Load()
	m["unauthorized"] = s.unauthorized.Load()
	m["token_reloads"] = s.tokenReloads.Load()
	m["refused"] = s.refused.Load()
	m["unrouted"] = s.unrouted.Load()
}

// session sends one session's entries in order, stopping at the first
// that fails.
func (s *Sink) session(ctx context.Context, b *sinkhelper.Batch, sid string, idx []int) error {
	u := s.Conn().BaseURL + "/v1/session_ingress/session/" + url.PathEscape(sid)
	for _, i := range idx {
		err := s.put(ctx, u, sid, &b.Entries[i])
		switch {
		case err == nil:
			b.MarkDone(i)
		case core.IsPermanent(err) && !errors.Is(err, sinkhelper.ErrUnauthorized):
			// The server refuses this entry (too large, malformed):
			// sending it again cannot help, and the rest must not wait.
			s.refused.Add(1)
			b.Drop(i, err)
		default:
			s.putFailures.Add(1)
			return err
		}
	}
	return nil
}

func (s *Sink) lastUUID(sid string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last[sid]
}

func (s *Sink) setLast(sid, uuid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last[sid] = uuid
}

// put stores one entry, resolving conflicts by adopting the server's last
// uuid.
func (s *Sink) put(ctx context.Context, u, sid string, e *core.Entry) error {
	conflicts := 0
	reloaded := false
	for {
		last := s.lastUUID(sid)
		code, theirs, err := s.putOnce(ctx, u, last, e)
		switch code {
		case http.StatusOK, http.StatusCreated:
			if e.UUID != "" {
				s.setLast(sid, e.UUID)
			}
			return nil
		case http.StatusConflict:
			s.conflicts.Add(1)
			if theirs == "" || theirs == last {
				// Nothing new to adopt: the log says what the server has,
				// and whether this entry is already among it.
				logLast, found, err := s.fetchLog(ctx, u, e.UUID)
				if err != nil {
					return err
				}
				if found {
					s.alreadyStored.Add(1)
					return nil
				}
				theirs = logLast
			}
			if e.UUID != "" && theirs == e.UUID {
				s.alreadyStored.Add(1)
				s.setLast(sid, theirs)
				return nil
			}
			if theirs == "" || theirs == last {
				s.conflictFailures.Add(1)
				return fmt.Errorf("%w: put entry %s to session %s: server refused Last-Uuid %q and names no other",
					ErrConflict, e.UUID, sid, last)
			}
			s.adopted.Add(1)
			s.setLast(sid, theirs)
			if conflicts++; conflicts >= s.maxConflicts {
				return fmt.Errorf("%w: put entry %s to session %s: %d conflicts in a row (another writer?)",
					ErrConflict, e.UUID, sid, conflicts)
			}
		case http.StatusUnauthorized:
			// A rotated token file is read again once before giving up.
			if !reloaded {
				if changed, rerr := s.Conn().Token.Reload(); rerr == nil && changed {
					reloaded = true
					s.tokenReloads.Add(1)
					continue
				}
			}
			s.unauthorized.Add(1)
			return err
		case http.StatusForbidden:
			s.unauthorized.Add(1)
			return err
		default:
			return err
		}
	}
}

// putOnce sends one PUT, bounded by the request timeout. It returns the
// status and, for 200, 201 and 409, the x-last-uuid header; for any other
// status (or none) the error to return.
func (s *Sink) putOnce(ctx context.Context, u, last string, e *core.Entry) (code int, theirs string, err error) {
	conn := s.Conn()
	ctx, cancel := context.WithTimeout(ctx, conn.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(e.Raw))
	if err != nil {
		return 0, "", sinkhelper.Permanent(fmt.Errorf("put entry %s: %w", e.UUID, err))
	}
	req.Header.Set("Content-Type", "application/json")
	if last != "" {
		req.Header.Set("Last-Uuid", last)
	}
	conn.Token.Authorize(req)
	s.requests.Add(1)
	resp, err := conn.HTTP.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("put entry %s: %w", e.UUID, err)
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusCreated, http.StatusConflict:
		theirs = resp.Header.Get("x-last-uuid")
		sinkhelper.DrainClose(resp)
		return resp.StatusCode, theirs, nil
	}
	return resp.StatusCode, "", sinkhelper.ResponseError(resp)
}

// fetchLog GETs the session's log and returns the last uuid in it ("" for
// none) and whether want is in it. The log is read as a stream, one line
// at a time.
func (s *Sink) fetchLog(ctx context.Context, u, want string) (last string, found bool, err error) {
	s.logFetches.Add(1)
	conn := s.Conn()
	ctx, cancel := context.WithTimeout(ctx, conn.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", false, sinkhelper.Permanent(err)
	}
	req.Header.Set("Accept", "application/json")
	conn.Token.Authorize(req)
	s.requests.Add(1)
	resp, err := conn.HTTP.Do(req)
	if err != nil {
		return "", false, fmt.Errorf("get session log: %w", err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		sinkhelper.DrainClose(resp)
		return "", false, nil
	default:
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			s.unauthorized.Add(1)
		}
		return "", false, sinkhelper.ResponseError(resp)
	}
	defer sinkhelper.DrainClose(resp)
	last, found, err = scanLog(resp.Body, want)
	if err != nil {
		return "", false, fmt.Errorf("get session log %s: %w", u, err)
	}
	return last, found, nil
}

// scanLog reads {"loglines":[…]} and returns the uuid of the last line that
// has one, and whether a line has the uuid want.
func scanLog(r io.Reader, want string) (last string, found bool, err error) {
	dec := json.NewDecoder(r)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false, fmt.Errorf("want a JSON object (%v)", err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", false, err
		}
		if key, _ := tok.(string); key != "loglines" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return "", false, err
			}
			continue
		}
		tok, err = dec.Token()
		if err != nil {
			return "", false, err
		}
		if tok == nil {
			continue // "loglines": null
		}
		if tok != json.Delim('[') {
			return "", false, errors.New("loglines: want an array")
		}
		for dec.More() {
			var line struct {
				UUID string `json:"uuid"`
			}
			if err := dec.Decode(&line); err != nil {
				return "", false, fmt.Errorf("loglines: %w", err)
			}
			if line.UUID != "" {
				last = line.UUID
				found = found || (want != "" && line.UUID == want)
			}
		}
		if _, err := dec.Token(); err != nil {
			return "", false, err
		}
	}
	return last, found, nil
}

// Factory makes ingress sinks.
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
	cl, err := c.Resolve(set)
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", set.ID, err)
	}
	return New(Options{Client: cl, Name: set.ID.String(), Logger: set.Logger})
}
