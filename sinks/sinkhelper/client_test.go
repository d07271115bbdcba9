package sinkhelper

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
)

func TestBackoff(t *testing.T) {
	rc := DefaultRetry()
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second}
	for i, w := range want {
		if got := rc.backoff(i + 1); got != w {
			t.Errorf("backoff after %d failures = %s, want %s", i+1, got, w)
		}
	}
	for range 100 {
		if d := rc.wait(1, errors.New("x")); d < 400*time.Millisecond || d > 600*time.Millisecond {
			t.Fatalf("jittered wait %s outside 500ms ± 20%%", d)
		}
	}
	if d := rc.wait(1, RetryAfter(errors.New("429"), 3*time.Second)); d < 3*time.Second {
		t.Fatalf("wait %s ignores Retry-After 3s", d)
	}
	if d := rc.wait(1, RetryAfter(errors.New("429"), time.Hour)); d > maxRetryAfter {
		t.Fatalf("wait %s above the Retry-After cap", d)
	}
	if core.IsPermanent(errors.New("x")) || !core.IsPermanent(fmt.Errorf("wrapped: %w", Permanent(errors.New("x")))) {
		t.Fatal("IsPermanent")
	}
	if got := Permanent(errors.New("x")).Error(); got != "permanent: x" {
		t.Fatalf("Permanent's message %q, want %q", got, "permanent: x")
	}
	if Permanent(nil) != nil || RetryAfter(nil, time.Second) != nil {
		t.Fatal("nil errors must stay nil")
	}
}

func TestResponseError(t *testing.T) {
	for _, tc := range []struct {
		code       int
		header     string
		permanent  bool
		unauth     bool
		retryAfter time.Duration
	}{
		{code: 401, permanent: true, unauth: true},
		{code: 403, permanent: true, unauth: true},
		{code: 400, permanent: true},
		{code: 413, permanent: true},
		{code: 404, permanent: true},
		{code: 500},
		{code: 502},
		{code: 408},
		{code: 429, header: "3", retryAfter: 3 * time.Second},
		{code: 503, header: "2", retryAfter: 2 * time.Second},
		{code: 503},
	} {
		t.Run(fmt.Sprint(tc.code, tc.header), func(t *testing.T) {
			req, _ := http.NewRequest("PUT", "http://127.0.0.1/x", nil)
			resp := &http.Response{StatusCode: tc.code, Header: http.Header{}, Request: req,
				Body: io.NopCloser(strings.NewReader(`{"error":"nope"}`))}
			if tc.header != "" {
				resp.Header.Set("Retry-After", tc.header)
			}
			err := ResponseError(resp)
			var se *StatusError
			if !errors.As(err, &se) || se.Code != tc.code || !strings.Contains(err.Error(), "nope") {
				t.Fatalf("error %v", err)
			}
			if core.IsPermanent(err) != tc.permanent || errors.Is(err, ErrUnauthorized) != tc.unauth {
				t.Fatalf("error %v: permanent %v unauthorized %v", err, core.IsPermanent(err), errors.Is(err, ErrUnauthorized))
			}
			if got := retryAfter(err); got != tc.retryAfter {
				t.Fatalf("retry after %s, want %s", got, tc.retryAfter)
			}
		})
	}
}

func TestClientConfig(t *testing.T) {
	set := core.Settings{ID: core.MustParseID("ingress/cloud"), Host: core.HostInfo{ConfigDir: "/home/alice/.claude"}}
	ok := DefaultClientConfig()
	ok.BaseURL = "http://127.0.0.1:8080/"
	ok.Token = "secret"
	cl, err := ok.Resolve(set)
	if err != nil {
		t.Fatal(err)
	}
	if cl.BaseURL != "http://127.0.0.1:8080" || cl.Options.Dir != "/home/alice/.claude/scribe/spool/ingress/cloud" ||
		cl.Timeout != 30*time.Second || cl.Options.FlushWait != 5*time.Second ||
		cl.Options.Retry != (RetryConfig{MaxAttempts: 10, BackoffMin: 500 * time.Millisecond, BackoffMax: 8 * time.Second, Jitter: 0.2}) {
		t.Fatalf("resolved %+v", cl)
	}
	for _, tc := range []struct {
		name string
		mod  func(*ClientConfig)
		want string
	}{
		{"no url", func(c *ClientConfig) { c.BaseURL = "" }, "base_url: required"},
		{"bad scheme", func(c *ClientConfig) { c.BaseURL = "ftp://127.0.0.1" }, "base_url"},
		{"both tokens", func(c *ClientConfig) { c.TokenFile = "/x" }, "not both"},
		{"bad timeout", func(c *ClientConfig) { c.Timeout = "soon" }, `timeout "soon"`},
		{"min above max", func(c *ClientConfig) { c.BackoffMin = "10s" }, "backoff_max"},
		{"no attempts", func(c *ClientConfig) { c.MaxAttempts = 0 }, "max_attempts"},
		{"no queue", func(c *ClientConfig) { c.QueueSize = 0 }, "queue_size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mod(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

// A block without token or token_file is valid configuration (the built-in
// one has none), but using it fails with ErrNoToken, which says how to
// give one.
func TestNoToken(t *testing.T) {
	c := DefaultClientConfig()
	c.BaseURL = "http://127.0.0.1:8080"
	cl, err := c.Resolve(core.Settings{ID: core.MustParseID("events/team"), Host: core.HostInfo{ConfigDir: "/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Token.Load(); !errors.Is(err, ErrNoToken) || !strings.Contains(err.Error(), "token_file") {
		t.Fatalf("Load = %v, want ErrNoToken naming token_file", err)
	}
	if err := NewToken("").Load(); err != nil {
		t.Fatalf("an inline empty token (a server without auth): %v", err)
	}
}

func TestTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte("one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tok := &Token{file: path}
	if err := tok.Load(); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "http://127.0.0.1/", nil)
	tok.Authorize(req)
	if got := req.Header.Get("Authorization"); got != "Bearer one" {
		t.Fatalf("Authorization %q", got)
	}
	if changed, err := tok.Reload(); err != nil || changed {
		t.Fatalf("Reload of the same token: %v %v", changed, err)
	}
	if err := os.WriteFile(path, []byte("two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := tok.Reload(); err != nil || !changed {
		t.Fatalf("Reload of a rotated token: %v %v", changed, err)
	}
}
