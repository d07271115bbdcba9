// Command webhook-sink is a scribe sink plugin that POSTs every batch of
// entries as one JSON document to an HTTP endpoint:
//
//	POST <url>
//	Content-Type: application/json
//	Idempotency-Key: <stream>-<batch id>
//
//	{"sink":"plugin/audit","stream":"9c1f…","batch_id":12,"entries":[{…},{…}]}
//
// The entries are the transcript lines exactly as scribe holds them. A
// batch that scribe sends again (after the plugin or scribe restarted)
// carries the same Idempotency-Key and the same entries, so an endpoint
// that remembers the keys it stored gets every entry exactly once.
//
// Network errors, 5xx and 429 answers are retried with exponential backoff
// (a Retry-After header is honoured up to retry_max); other answers fail
// the batch, which scribe then retries itself. A 2xx answer means the
// endpoint has the batch, so Flush has nothing to do.
//
// Configuration (the `config` object of the plugin's block):
//
//	config = {
//	  url       = "http://127.0.0.1:8080/scribe"   # required
//	  headers   = { Authorization = "Bearer …" }
//	  timeout   = "10s"    # per request
//	  retries   = 5        # attempts after the first
//	  retry_min = "100ms"
//	  retry_max = "5s"
//	}
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/plugins/sdk"
)

var version = "0.1.0"

// Config is the plugin's configuration.
type Config struct {
	URL      string            `json:"url" doc:"endpoint every batch is POSTed to (http or https)"`
	Headers  map[string]string `json:"headers" doc:"extra request headers, such as Authorization"`
	Timeout  string            `json:"timeout" doc:"timeout of one request"`
	Retries  int               `json:"retries" doc:"attempts after the first for network errors, 5xx and 429"`
	RetryMin string            `json:"retry_min" doc:"first backoff between attempts"`
	RetryMax string            `json:"retry_max" doc:"longest backoff between attempts"`

	timeout, retryMin, retryMax time.Duration
}

func defaultConfig() *Config {
	return &Config{Timeout: "10s", Retries: 5, RetryMin: "100ms", RetryMax: "5s"}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	u, err := url.Parse(c.URL)
	if c.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("url %q: want an http or https URL", c.URL)
	}
	for _, d := range []struct {
		name string
		s    string
		dst  *time.Duration
	}{{"timeout", c.Timeout, &c.timeout}, {"retry_min", c.RetryMin, &c.retryMin}, {"retry_max", c.RetryMax, &c.retryMax}} {
		v, err := time.ParseDuration(d.s)
		if err != nil || v <= 0 {
			return fmt.Errorf("%s %q: want a positive duration such as \"5s\"", d.name, d.s)
		}
		*d.dst = v
	}
	if c.Retries < 0 {
		return fmt.Errorf("retries must be 0 or more, not %d", c.Retries)
	}
	if c.retryMax < c.retryMin {
		return fmt.Errorf("retry_max %s is less than retry_min %s", c.RetryMax, c.RetryMin)
	}
	return nil
}

// Sink posts batches to the endpoint.
type Sink struct {
	cfg    *Config
	id     string
	client *http.Client
	sleep  func(context.Context, time.Duration) error
}

var _ sdk.Sink = (*Sink)(nil)

// Start decodes the configuration.
func (s *Sink) Start(ctx context.Context, raw json.RawMessage) error {
	s.id = sdk.ComponentID(ctx)
	cfg := defaultConfig()
	if err := sdk.DecodeConfig(raw, cfg); err != nil {
		return err
	}
	s.cfg = cfg
	s.client = &http.Client{Timeout: cfg.timeout}
	if s.sleep == nil {
		s.sleep = sleepCtx
	}
	sdk.Logger().Info("webhook sink started", "url", redact(cfg.URL))
	return nil
}

// permanent is an answer that retrying the same request will not change.
type permanent struct{ error }

// Write posts one batch, retrying what is worth retrying.
func (s *Sink) Write(ctx context.Context, entries []core.Entry) error {
	b, _ := sdk.BatchFrom(ctx)
	body := encode(s.id, b, entries)
	delay := s.cfg.retryMin
	var err error
	for attempt := 0; attempt <= s.cfg.Retries; attempt++ {
		var wait time.Duration
		wait, err = s.post(ctx, b, body)
		if err == nil {
			return nil
		}
		var p permanent
		if errors.As(err, &p) || attempt == s.cfg.Retries {
			break
		}
		if wait <= 0 {
			wait = delay
		}
		wait = min(wait, s.cfg.retryMax)
		sdk.Logger().Warn("post failed; will retry", "batch", b.ID, "attempt", attempt+1, "backoff", wait, "error", err)
		if serr := s.sleep(ctx, wait); serr != nil {
			return serr
		}
		delay = min(delay*2, s.cfg.retryMax)
	}
	return fmt.Errorf("post batch %d (%d entries) to %s: %w", b.ID, len(entries), redact(s.cfg.URL), err)
}

// post sends the batch once. wait is the server's Retry-After, if any.
func (s *Sink) post(ctx context.Context, b sdk.Batch, body []byte) (wait time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return 0, permanent{err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "scribe-webhook-sink/"+version)
	if b.Stream != "" {
		req.Header.Set("Idempotency-Key", b.Key())
	}
	for k, v := range s.cfg.Headers {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return 0, nil
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return retryAfter(resp.Header.Get("Retry-After")), fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(msg))
	default:
		return 0, permanent{fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(msg))}
	}
}

func retryAfter(h string) time.Duration {
	if h == "" {
		return 0
	}
	if n, err := strconv.Atoi(h); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return time.Until(t)
	}
	return 0
}

// encode builds the request body by hand, so the entries go out byte for
// byte (encoding/json would re-format and HTML-escape them).
func encode(id string, b sdk.Batch, entries []core.Entry) []byte {
	n := 64
	for i := range entries {
		n += len(entries[i].Raw) + 1
	}
	buf := bytes.NewBuffer(make([]byte, 0, n))
	sink, _ := json.Marshal(id)
	stream, _ := json.Marshal(b.Stream)
	fmt.Fprintf(buf, `{"sink":%s,"stream":%s,"batch_id":%d,"entries":[`, sink, stream, b.ID)
	for i := range entries {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(entries[i].Raw)
	}
	buf.WriteString("]}")
	return buf.Bytes()
}

// Flush has nothing to do: a batch is durable once the endpoint took it.
func (s *Sink) Flush(context.Context) error { return nil }

// Shutdown closes idle connections.
func (s *Sink) Shutdown(context.Context) error {
	if s.client != nil {
		s.client.CloseIdleConnections()
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// redact drops credentials from a URL for logs.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(invalid url)"
	}
	return u.Redacted()
}

func main() {
	sdk.ServeSink(sdk.Info{
		Type:          "webhook",
		Version:       version,
		Description:   "POSTs batches of entries as JSON to an HTTP endpoint, with retries",
		Config:        defaultConfig(),
		DurableWrites: true,
	}, &Sink{})
}
