package events

// The read side of the v2 API, and a small client of both routes that
// `scribe push`, `scribe pull` and the cloud loader share:
//
//	POST {base_url}/v1/code/sessions/{id}/events            Client.PostEvents
//	GET  {base_url}/v1/code/sessions/{id}/teleport-events   Client.History
//	     ?limit=1000 &from_first_event=true &cursor=<next_cursor>
//	     &subagents=false              the main transcript, or
//	     &session_agent_id=<agent>     one subagent's sidechain, or
//	     &subagents=true               everything, each row with its session_agent_id
//	     → {"data":[{"payload":<entry>,"session_agent_id":"…"?}, …], "next_cursor":"…"|null}
//
// History follows next_cursor until it is null, at most MaxPages pages (100,
// as Claude Code's client). Unlike that client, a history longer than that
// is an error (ErrHistoryTruncated), never a silently shortened transcript:
// a loader that served the first 100 000 rows of a session would resume it
// from the wrong leaf. from_first_event=true is sent, and dropped once if the
// server answers 400 or 403, as Claude Code does. 404 is core.ErrNotFound;
// 401 and 403 wrap sinkhelper.ErrUnauthorized with a message naming the
// token; other failures are retried with backoff (Client.Retry).
//
// The cloud loader (type "cloud") serves resume from the History API: the
// rows in server order, without the internal rows Claude Code's hydration
// leaves out (InternalRow).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/ident"
	"github.com/e0dc0000/scribe/server/wire"
	"github.com/e0dc0000/scribe/sinks/sinkhelper"
)

// LoaderType is the cloud loader's type in the config file.
const LoaderType = "cloud"

// History defaults: Claude Code's page size and page limit.
const (
	DefaultPageSize = 1000
	DefaultMaxPages = 100
)

// maxResponseBytes bounds one response body (a History page is at most
// 32 MiB of entries on scribe serve).
const maxResponseBytes = 64 << 20

// ErrHistoryTruncated is returned when a session's history is longer than
// MaxPages pages.
var ErrHistoryTruncated = errors.New("history longer than the page limit")

// InternalRow reports whether an entry type is one of the internal rows
// Claude Code's hydration filters out of a transcript fetched from the
// server: session-owner, data-flow-*, repl-mode, host-row and
// hybrid-organization.
func InternalRow(typ string) bool {
	switch typ {
	case "session-owner", "repl-mode", "host-row", "hybrid-organization":
		return true
	}
	return strings.HasPrefix(typ, "data-flow-")
}

// Client talks to a scribe server (or Claude Code's API) over the v2
// routes. Its zero value is not usable: make it with NewClient or
// ClientFor. It is safe for concurrent use.
type Client struct {
	// BaseURL has no trailing slash.
	BaseURL string
	// Token authorizes every request; a token file is read again after a
	// 401, once, so a rotated token is picked up.
	Token *sinkhelper.Token
	// HTTP defaults to sinkhelper.NewHTTPClient().
	HTTP *http.Client
	// Timeout bounds each request; 0 is sinkhelper.DefaultTimeout.
	Timeout time.Duration
	// Retry says how failed requests are retried: MaxAttempts in all (at
	// least 1), waits from BackoffMin doubling to BackoffMax, with Jitter.
	// Permanent failures (4xx) are not retried.
	Retry sinkhelper.RetryConfig
	// Unreachable, when positive, ends retrying after that many attempts
	// that could not reach the server at all (connection refused, no
	// route, unknown host), with an error wrapping ErrUnreachable that
	// names the address: for interactive commands, where a server that is
	// not there is not worth a whole round of retries.
	Unreachable int
	// OnRetry, when set, is called before each wait between attempts,
	// with the failed attempt's number, the attempts allowed, the wait
	// and the error (push and pull print it on stderr).
	OnRetry func(attempt, attempts int, wait time.Duration, err error)
	// PageSize is History's limit parameter (1 to 1000); 0 is 1000.
	PageSize int
	// MaxPages bounds the pages of one History call; 0 is 100.
	MaxPages int
}

// NewClient returns a client of a resolved client configuration (a sink's
// or the cloud loader's), with its retry policy.
func NewClient(cl sinkhelper.Client) *Client {
	tok := cl.Token
	if tok == nil {
		tok = sinkhelper.NewToken("")
	}
	return &Client{
		BaseURL: cl.BaseURL,
		Token:   tok,
		HTTP:    sinkhelper.NewHTTPClient(),
		Timeout: cl.RequestTimeout(),
		Retry:   cl.Options.Retry,
	}
}

// ClientFor checks a client configuration block (base_url, token or
// token_file, timeout, max_attempts, backoff_min, backoff_max; the queue
// and spool options are ignored) and returns a client for it. It reads the
// token file, if any.
func ClientFor(cc sinkhelper.ClientConfig) (*Client, error) {
	if cc.SpoolDir == "" {
		// Resolve wants a spool folder; a client has none (nothing is
		// created either way).
		cc.SpoolDir = os.TempDir()
	}
	cl, err := cc.Resolve(core.Settings{ID: core.ID{Type: "client", Name: "client"}})
	if err != nil {
		return nil, err
	}
	c := NewClient(cl)
	if err := c.Token.Load(); err != nil {
		return nil, err
	}
	return c, nil
}

// Event is one element of an events batch (wire.Event): an entry
// (Payload, its line byte for byte), the subagent it belongs to ("" for the
// main transcript), and for an entry without a uuid an optional idempotency
// key (event_id), which the server uses instead of a hash of the entry's
// bytes.
type Event = wire.Event

// EncodeEvents builds the body of POST …/events: {"events":[…]}.
func EncodeEvents(evs []Event) []byte {
	n := 16
	for i := range evs {
		n += len(evs[i].Payload) + len(evs[i].Type) + len(evs[i].AgentID) + len(evs[i].EventID) + 64
	}
	buf := make([]byte, 0, n)
	buf = append(buf, `{"events":[`...)
	for i := range evs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = wire.AppendEvent(buf, &evs[i])
	}
	return append(buf, "]}"...)
}

// PostResult is the server's answer to an events batch (wire.EventsResult).
type PostResult = wire.EventsResult

// PostEvents sends one batch of a session, retried as Retry says. The
// server stores each entry once, so a batch sent again after a lost answer
// is answered with duplicates. A *sinkhelper.StatusError of 400, 413 or
// 422 means the server refuses the batch as it is (split it to find the
// entry it refuses).
func (c *Client) PostEvents(ctx context.Context, sessionID string, evs []Event) (PostResult, error) {
	var res PostResult
	u := c.BaseURL + "/v1/code/sessions/" + url.PathEscape(sessionID) + "/events"
	body, err := c.do(ctx, http.MethodPost, u, EncodeEvents(evs))
	if err != nil {
		return res, c.explain(err, sessionID)
	}
	if err := json.Unmarshal(body, &res); err != nil {
		return res, fmt.Errorf("post events of session %s: the answer is not JSON: %w", sessionID, err)
	}
	return res, nil
}

// HistoryQuery selects what History returns.
type HistoryQuery struct {
	// AgentID selects one subagent's sidechain (session_agent_id).
	AgentID string
	// Subagents returns the subagents' rows too, each with its
	// session_agent_id; without it (and without AgentID) only the main
	// transcript (subagents=false).
	Subagents bool
}

// HistoryEvent is one row of the History API (wire.HistoryEvent).
type HistoryEvent = wire.HistoryEvent

// History calls fn for every row of a session's history, in server order,
// page by page. See the package comment for the errors.
func (c *Client) History(ctx context.Context, sessionID string, q HistoryQuery, fn func(HistoryEvent) error) error {
	limit := c.PageSize
	if limit <= 0 || limit > DefaultPageSize {
		limit = DefaultPageSize
	}
	maxPages := c.MaxPages
	if maxPages <= 0 {
		maxPages = DefaultMaxPages
	}
	fromFirst := true
	cursor := ""
	for page := 0; ; page++ {
		if page == maxPages {
			return fmt.Errorf("session %s: %w: more than %d pages of %d rows", sessionID, ErrHistoryTruncated, maxPages, limit)
		}
		v := url.Values{}
		v.Set("limit", strconv.Itoa(limit))
		if fromFirst {
			v.Set("from_first_event", "true")
		}
		if cursor != "" {
			v.Set("cursor", cursor)
		}
		switch {
		case q.AgentID != "":
			v.Set("session_agent_id", q.AgentID)
		case q.Subagents:
			v.Set("subagents", "true")
		default:
			v.Set("subagents", "false")
		}
		u := c.BaseURL + "/v1/code/sessions/" + url.PathEscape(sessionID) + "/teleport-events?" + v.Encode()
		body, err := c.do(ctx, http.MethodGet, u, nil)
		var se *sinkhelper.StatusError
		if err != nil && fromFirst && page == 0 && errors.As(err, &se) &&
			(se.Code == http.StatusBadRequest || se.Code == http.StatusForbidden) {
			// Claude Code's client drops from_first_event when the
			// server does not take it.
			fromFirst = false
			page--
			continue
		}
		if err != nil {
			return c.explain(err, sessionID)
		}
		var p wire.HistoryPage
		if err := json.Unmarshal(body, &p); err != nil {
			return fmt.Errorf("history of session %s: page %d is not JSON: %w", sessionID, page+1, err)
		}
		for _, ev := range p.Data {
			if err := fn(ev); err != nil {
				return err
			}
		}
		if p.NextCursor == nil || *p.NextCursor == "" {
			return nil
		}
		if *p.NextCursor == cursor {
			return fmt.Errorf("history of session %s: the server returned the same next_cursor twice", sessionID)
		}
		cursor = *p.NextCursor
	}
}

// Fetch returns every row History returns.
func (c *Client) Fetch(ctx context.Context, sessionID string, q HistoryQuery) ([]HistoryEvent, error) {
	var out []HistoryEvent
	err := c.History(ctx, sessionID, q, func(ev HistoryEvent) error {
		out = append(out, ev)
		return nil
	})
	return out, err
}

// explain turns the classified errors into messages a user can act on.
func (c *Client) explain(err error, sessionID string) error {
	var se *sinkhelper.StatusError
	switch {
	case errors.Is(err, sinkhelper.ErrUnauthorized):
		return fmt.Errorf("%s refused the token (check token or token_file): %w", c.BaseURL, err)
	case errors.As(err, &se) && se.Code == http.StatusNotFound:
		return fmt.Errorf("%w: session %s is not on %s (%v)", core.ErrNotFound, sessionID, c.BaseURL, err)
	}
	return err
}

// do sends a request with retries and returns the body of a 2xx answer.
func (c *Client) do(ctx context.Context, method, u string, body []byte) ([]byte, error) {
	attempts := max(c.Retry.MaxAttempts, 1)
	away := 0
	for n := 1; ; n++ {
		b, err := c.once(ctx, method, u, body)
		if err == nil {
			return b, nil
		}
		if isUnreachable(err) {
			away++
			if c.Unreachable > 0 && away >= c.Unreachable {
				return nil, &UnreachableError{Addr: c.BaseURL, Attempts: n, Err: err}
			}
		}
		if core.IsPermanent(err) || n >= attempts || ctx.Err() != nil {
			return nil, err
		}
		wait := c.wait(n)
		if c.OnRetry != nil {
			left := attempts
			if isUnreachable(err) && c.Unreachable > 0 {
				left = min(attempts, n-away+c.Unreachable)
			}
			c.OnRetry(n, left, wait, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, err
		}
	}
}

// wait is the jittered backoff after n failed attempts.
func (c *Client) wait(n int) time.Duration {
	lo, hi := c.Retry.BackoffMin, c.Retry.BackoffMax
	if lo <= 0 {
		lo = 500 * time.Millisecond
	}
	if hi < lo {
		hi = lo
	}
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	if j := c.Retry.Jitter; j > 0 && j <= 1 {
		d += time.Duration((rand.Float64()*2 - 1) * j * float64(d))
	}
	return max(d, time.Millisecond)
}

// once sends one request (twice when a 401 made a rotated token file
// worth reading again).
func (c *Client) once(ctx context.Context, method, u string, body []byte) ([]byte, error) {
	b, code, err := c.send(ctx, method, u, body)
	if code == http.StatusUnauthorized {
		if changed, rerr := c.Token.Reload(); rerr == nil && changed {
			b, _, err = c.send(ctx, method, u, body)
		}
	}
	return b, err
}

func (c *Client) send(ctx context.Context, method, u string, body []byte) ([]byte, int, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = sinkhelper.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, 0, sinkhelper.Permanent(fmt.Errorf("%s %s: %w", method, u, err))
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	c.Token.Authorize(req)
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("%s %s: %w", method, redact(u), err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, resp.StatusCode, sinkhelper.ResponseError(resp)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, resp.StatusCode, fmt.Errorf("%s %s: read the answer: %w", method, redact(u), err)
	}
	if len(b) > maxResponseBytes {
		return nil, resp.StatusCode, sinkhelper.Permanent(fmt.Errorf("%s %s: the answer is over %d bytes", method, redact(u), maxResponseBytes))
	}
	return b, resp.StatusCode, nil
}

func redact(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Redacted()
	}
	return u
}

// ---------------------------------------------------------------------------
// The cloud loader

// LoaderConfig is the cloud loader's block in the HCL file.
type LoaderConfig struct {
	// BaseURL is the server, such as "https://scribe.example.com".
	BaseURL string `json:"base_url"`
	// Token is the bearer token; TokenFile names a file holding it
	// instead (read at every load). Exactly one of them is set.
	Token     string `json:"token"`
	TokenFile string `json:"token_file" config:"path"`
	// Timeout bounds each request.
	Timeout string `json:"timeout"`
}

// DefaultLoaderConfig returns the defaults: 30 s a request.
func DefaultLoaderConfig() *LoaderConfig {
	return &LoaderConfig{Timeout: sinkhelper.DefaultTimeout.String()}
}

// ClientConfig returns the block as a client configuration: these options
// and the defaults for the rest, with a short retry policy (3 attempts,
// 200 ms to 1 s) so that resume falls through to the next loader quickly
// when the server is away.
func (c *LoaderConfig) ClientConfig() sinkhelper.ClientConfig {
	cc := sinkhelper.DefaultClientConfig()
	cc.BaseURL, cc.Token, cc.TokenFile, cc.Timeout = c.BaseURL, c.Token, c.TokenFile, c.Timeout
	cc.MaxAttempts, cc.BackoffMin, cc.BackoffMax = 3, "200ms", "1s"
	return cc
}

// Validate implements core.Validator. It does not read the token file.
func (c *LoaderConfig) Validate() error {
	cc := c.ClientConfig()
	cc.SpoolDir = os.TempDir()
	_, err := cc.Resolve(core.Settings{ID: core.ID{Type: LoaderType, Name: "n"}})
	return err
}

// Loader serves resume from the History API (core.Loader).
type Loader struct {
	Client *Client
}

var _ core.Loader = (*Loader)(nil)

// NewLoader returns a loader over c.
func NewLoader(c *Client) *Loader { return &Loader{Client: c} }

// Load fetches ref's rows: the main transcript (subagents=false), or one
// subagent's sidechain (session_agent_id). A session the server does not
// have is core.ErrNotFound; so is an id the server could not hold.
func (l *Loader) Load(ctx context.Context, ref core.SessionRef) (*core.Transcript, error) {
	if !core.IsUUID(ref.SessionID) {
		return nil, fmt.Errorf("%w: session %q is not a UUID", core.ErrNotFound, ref.SessionID)
	}
	if ref.AgentID != "" && !ident.Token(ref.AgentID, 64) {
		return nil, fmt.Errorf("%w: agent id %q cannot be on the server", core.ErrNotFound, ref.AgentID)
	}
	if err := l.Client.Token.Load(); err != nil {
		return nil, err
	}
	tr := &core.Transcript{Ref: ref}
	var internal, malformed int
	err := l.Client.History(ctx, ref.SessionID, HistoryQuery{AgentID: ref.AgentID}, func(ev HistoryEvent) error {
		e, err := core.ParseEntry(ev.Payload)
		if err != nil {
			malformed++
			return nil
		}
		if InternalRow(e.Type) {
			internal++
			return nil
		}
		tr.Entries = append(tr.Entries, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if internal > 0 {
		tr.Notes = append(tr.Notes, fmt.Sprintf("%d internal rows left out (session-owner, data-flow-*, ...)", internal))
	}
	if malformed > 0 {
		tr.Notes = append(tr.Notes, fmt.Sprintf("%d rows from the server are not JSON objects; skipped", malformed))
	}
	return tr, nil
}

// LoaderFactory makes cloud loaders.
func LoaderFactory() core.LoaderFactory { return loaderFactory{} }

type loaderFactory struct{}

func (loaderFactory) Kind() core.Kind    { return core.KindLoader }
func (loaderFactory) Type() string       { return LoaderType }
func (loaderFactory) DefaultConfig() any { return DefaultLoaderConfig() }

func (loaderFactory) CreateLoader(_ context.Context, set core.Settings, cfg any) (core.Loader, error) {
	c, ok := cfg.(*LoaderConfig)
	if !ok {
		return nil, fmt.Errorf("loader %s: wrong config type %T", set.ID, cfg)
	}
	cc := c.ClientConfig()
	cc.SpoolDir = os.TempDir()
	cl, err := cc.Resolve(set)
	if err != nil {
		return nil, fmt.Errorf("loader %s: %w", set.ID, err)
	}
	// The token file is read at each Load, so a loader that is never asked
	// never needs it.
	return NewLoader(NewClient(cl)), nil
}
