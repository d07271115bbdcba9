package sinkhelper

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/seal"
)

// ClientConfig holds the options every network sink has, under the names
// of its config block. Sinks embed it in their Config.
type ClientConfig struct {
	// BaseURL is the server, such as "https://scribe.example.com"; the
	// routes are appended to it.
	BaseURL string `json:"base_url"`
	// Token is the bearer token. TokenFile names a file holding it
	// instead; the file is read at Start and again after a 401, so a
	// rotated token is picked up. One of them is needed to talk to the
	// server (ErrNoToken when neither is set), not both.
	Token     string `json:"token"`
	TokenFile string `json:"token_file" config:"path"`
	// Timeout bounds each request (a PUT, a GET, a POST).
	Timeout string `json:"timeout"`
	// MaxAttempts attempts make a round; after a failed round the server
	// counts as away (logged) and the sink keeps retrying every
	// BackoffMax, with nothing lost.
	MaxAttempts int    `json:"max_attempts"`
	BackoffMin  string `json:"backoff_min"`
	BackoffMax  string `json:"backoff_max"`
	// QueueSize and QueueBytes bound the entries held in memory before
	// they are spilled to the spool.
	QueueSize  int   `json:"queue_size"`
	QueueBytes int64 `json:"queue_bytes"`
	// SpoolDir is the spool folder; "" is <config dir>/scribe/spool/<type>/<name>.
	SpoolDir string `json:"spool_dir" config:"path"`
	// SpoolMaxBytes bounds the spool; past it new entries are dropped
	// (counted and logged).
	SpoolMaxBytes int64 `json:"spool_max_bytes"`
	// FlushWait is how long Flush waits for the server before it makes the
	// entries durable in the spool instead.
	FlushWait string `json:"flush_wait"`
	// SpoolEncryption encrypts what the spool writes (age): recipients
	// and an identity, or a passphrase, each key by file, env or command.
	SpoolEncryption seal.Options `json:"spool_encryption"`
}

// DefaultClientConfig returns Claude Code's retry policy (10 attempts,
// 500 ms to 8 s, 30 s each) and the queue defaults.
func DefaultClientConfig() ClientConfig {
	return ClientConfig{
		Timeout:       "30s",
		MaxAttempts:   10,
		BackoffMin:    "500ms",
		BackoffMax:    "8s",
		QueueSize:     DefaultQueueSize,
		QueueBytes:    DefaultQueueBytes,
		SpoolMaxBytes: DefaultSpoolMaxBytes,
		FlushWait:     DefaultFlushWait.String(),
	}
}

// Client is a resolved ClientConfig.
type Client struct {
	// BaseURL has no trailing slash.
	BaseURL string
	Token   *Token
	// Timeout bounds each request; the sink applies it (the Sender's
	// AttemptTimeout is left 0, since one attempt may be many requests).
	Timeout time.Duration
	// Options are the Sender's options but for Name, Logger and the
	// batching options, which the sink sets.
	Options Options
}

// DefaultTimeout bounds a request when Client.Timeout is 0.
const DefaultTimeout = 30 * time.Second

// RequestTimeout returns Timeout, or DefaultTimeout when it is 0.
func (c Client) RequestTimeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// Validate checks the options without touching the disk or the network.
func (c *ClientConfig) Validate() error {
	_, err := c.Resolve(core.Settings{ID: core.ID{Type: "t", Name: "n"}, Host: core.HostInfo{ConfigDir: "/"}})
	return err
}

// Resolve checks the options and applies the host's settings.
func (c *ClientConfig) Resolve(set core.Settings) (Client, error) {
	var cl Client
	u, err := url.Parse(c.BaseURL)
	switch {
	case c.BaseURL == "":
		return cl, errors.New("base_url: required, such as https://scribe.example.com")
	case err != nil:
		return cl, fmt.Errorf("base_url %q: %w", c.BaseURL, err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return cl, fmt.Errorf("base_url %q: want an http:// or https:// URL with a host", c.BaseURL)
	case u.RawQuery != "" || u.Fragment != "":
		return cl, fmt.Errorf("base_url %q: want no query or fragment", c.BaseURL)
	}
	cl.BaseURL = strings.TrimRight(c.BaseURL, "/")
	switch {
	case c.Token != "" && c.TokenFile != "":
		return cl, errors.New("token and token_file: set one, not both")
	case strings.ContainsAny(c.Token, "\r\n"):
		return cl, errors.New("token: holds a line break")
	}
	cl.Token = &Token{value: c.Token, file: c.TokenFile, missing: c.Token == "" && c.TokenFile == ""}

	if err := c.SpoolEncryption.Validate(); err != nil {
		return cl, fmt.Errorf("spool_encryption: %w", err)
	}
	o := Options{QueueSize: c.QueueSize, QueueBytes: c.QueueBytes, SpoolMaxBytes: c.SpoolMaxBytes, Dir: c.SpoolDir,
		Encryption: c.SpoolEncryption, Environ: set.Environ}
	if c.QueueSize <= 0 {
		return cl, fmt.Errorf("queue_size %d: want a positive number of entries", c.QueueSize)
	}
	if c.QueueBytes <= 0 {
		return cl, fmt.Errorf("queue_bytes %d: want a positive number of bytes", c.QueueBytes)
	}
	if c.SpoolMaxBytes <= 0 {
		return cl, fmt.Errorf("spool_max_bytes %d: want a positive number of bytes", c.SpoolMaxBytes)
	}
	if o.Dir == "" {
		if set.Host.ConfigDir == "" {
			return cl, errors.New("spool_dir: empty and no config folder to put it in")
		}
		o.Dir = filepath.Join(set.Host.ConfigDir, "scribe", "spool", set.ID.Type, set.ID.Name)
	}
	o.Retry.MaxAttempts = c.MaxAttempts
	o.Retry.Jitter = 0.2
	for _, d := range []struct {
		name, value string
		dst         *time.Duration
	}{
		{"timeout", c.Timeout, &cl.Timeout},
		{"backoff_min", c.BackoffMin, &o.Retry.BackoffMin},
		{"backoff_max", c.BackoffMax, &o.Retry.BackoffMax},
		{"flush_wait", c.FlushWait, &o.FlushWait},
	} {
		v, err := ParseDuration(d.name, d.value)
		if err != nil {
			return cl, err
		}
		*d.dst = v
	}
	if err := o.Retry.validate(); err != nil {
		return cl, err
	}
	cl.Options = o
	return cl, nil
}

// ParseDuration parses a positive duration option, naming it in the error.
func ParseDuration(name, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s %q: want a positive duration such as 500ms or 30s", name, v)
	}
	return d, nil
}

// ErrNoToken is returned by Token.Load when a block sets neither token nor
// token_file.
var ErrNoToken = errors.New("no bearer token: set token, or token_file to a file holding it " +
	"(`scribe token new` makes one; the server's block lists its hash)")

// Token is a bearer token given inline or read from a file.
type Token struct {
	mu    sync.Mutex
	value string
	file  string
	// missing: the block set neither token nor token_file.
	missing bool
}

// NewToken returns an inline token.
func NewToken(value string) *Token { return &Token{value: value} }

// Load reads the token file, when there is one. Sinks call it at Start.
// It returns ErrNoToken when the block set neither token nor token_file.
func (t *Token) Load() error {
	if t.missing {
		return ErrNoToken
	}
	_, err := t.Reload()
	return err
}

// Reload reads the token file again and reports whether the token
// changed. An inline token never changes.
func (t *Token) Reload() (changed bool, err error) {
	if t.file == "" {
		return false, nil
	}
	b, err := os.ReadFile(t.file)
	if err != nil {
		return false, fmt.Errorf("token_file: %w", err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" || strings.ContainsAny(v, "\r\n") {
		return false, fmt.Errorf("token_file %s: want one line holding the token", t.file)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	changed = v != t.value
	t.value = v
	return changed, nil
}

// Authorize sets the Authorization header.
func (t *Token) Authorize(req *http.Request) {
	t.mu.Lock()
	v := t.value
	t.mu.Unlock()
	if v != "" {
		req.Header.Set("Authorization", "Bearer "+v)
	}
}

// StatusError is a response with a status the sink did not expect.
type StatusError struct {
	Method, URL string
	Code        int
	// Body is the start of the response body (the server's message).
	Body string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s %s: %d %s", e.Method, e.URL, e.Code, http.StatusText(e.Code))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// ErrUnauthorized is wrapped by the error of a 401 or 403 response.
var ErrUnauthorized = errors.New("token refused")

// ResponseError turns a response with an unexpected status into an error,
// classified for the retry loop, and closes its body:
//
//   - 401 and 403: Permanent, wrapping ErrUnauthorized (the token is wrong
//     or lacks the scope; retrying cannot help);
//   - 400, 404, 405, 410, 413, 414, 415, 422: Permanent (the server will
//     refuse the same request again);
//   - 429 and 503 with Retry-After: retried no sooner than it says;
//   - anything else: retried.
func ResponseError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	DrainClose(resp)
	e := &StatusError{Method: resp.Request.Method, URL: resp.Request.URL.Redacted(), Code: resp.StatusCode,
		Body: string(bytes.TrimSpace(body))}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return Permanent(fmt.Errorf("%w: %w", ErrUnauthorized, e))
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusGone,
		http.StatusRequestEntityTooLarge, http.StatusRequestURITooLong, http.StatusUnsupportedMediaType,
		http.StatusUnprocessableEntity:
		return Permanent(e)
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		if d, ok := parseRetryAfter(resp.Header.Get("Retry-After")); ok {
			return RetryAfter(e, d)
		}
	}
	return e
}

// parseRetryAfter reads delay-seconds or an HTTP date.
func parseRetryAfter(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// DrainClose reads a little of what is left of the body, so that the
// connection can be reused, and closes it.
func DrainClose(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// NewHTTPClient returns the client network sinks use: its own transport
// (so that one sink's idle connections do not affect another's), no
// overall timeout (each attempt has its context).
func NewHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	return &http.Client{Transport: tr}
}
