package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/plugins/sdk"
)

func entry(t *testing.T, line string) core.Entry {
	t.Helper()
	e, err := core.ParseEntry([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// server answers with the given statuses in turn, then 204.
func server(t *testing.T, answers ...int) (*httptest.Server, *[]string, *sync.Mutex) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, r.Header.Get("Idempotency-Key")+" "+string(b))
		n := len(bodies)
		mu.Unlock()
		if n <= len(answers) {
			if answers[n-1] == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", "7")
			}
			w.WriteHeader(answers[n-1])
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, &bodies, &mu
}

func start(t *testing.T, config string) (*Sink, *[]time.Duration) {
	t.Helper()
	var waits []time.Duration
	s := &Sink{sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
	if err := s.Start(context.Background(), []byte(config)); err != nil {
		t.Fatal(err)
	}
	return s, &waits
}

func TestBodyKeepsEntriesByteForByte(t *testing.T) {
	srv, bodies, _ := server(t)
	s, _ := start(t, `{"url":"`+srv.URL+`"}`)
	line := `{"type":"user", "message":{"content":"<b>&amp; \u00e9</b>"},"uuid":"u1","sessionId":"s1"}`
	if err := s.Write(context.Background(), []core.Entry{entry(t, line)}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains((*bodies)[0], `"entries":[`+line+`]`) {
		t.Fatalf("body %s does not carry the line as it was", (*bodies)[0])
	}
}

func TestRetries(t *testing.T) {
	line := `{"type":"user","uuid":"u1","sessionId":"s1"}`
	cases := []struct {
		name     string
		answers  []int
		retries  int
		ok       bool
		attempts int
		waits    string
	}{
		{"5xx then ok", []int{503, 502}, 5, true, 3, "[100ms 200ms]"},
		{"retry-after honoured up to retry_max", []int{429}, 5, true, 2, "[5s]"},
		{"4xx is not retried", []int{400}, 5, false, 1, "[]"},
		{"retries run out", []int{500, 500, 500}, 2, false, 3, "[100ms 200ms]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, bodies, mu := server(t, c.answers...)
			s, waits := start(t, `{"url":"`+srv.URL+`","retries":`+strconv.Itoa(c.retries)+`}`)
			err := s.Write(context.Background(), []core.Entry{entry(t, line)})
			if (err == nil) != c.ok {
				t.Fatalf("Write: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(*bodies) != c.attempts {
				t.Fatalf("%d attempts, want %d", len(*bodies), c.attempts)
			}
			if got := fmtDurations(*waits); got != c.waits {
				t.Fatalf("waits %s, want %s", got, c.waits)
			}
		})
	}
}

func TestIdempotencyKey(t *testing.T) {
	srv, bodies, _ := server(t)
	s, _ := start(t, `{"url":"`+srv.URL+`"}`)
	b := sdk.Batch{Stream: "abc", ID: 42}
	if _, err := s.post(context.Background(), b, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix((*bodies)[0], "abc-42 ") {
		t.Fatalf("key: %s", (*bodies)[0])
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct{ config, want string }{
		{`{}`, "url"},
		{`{"url":"ftp://x"}`, "url"},
		{`{"url":"http://127.0.0.1:1","timeout":"soon"}`, "timeout"},
		{`{"url":"http://127.0.0.1:1","colour":1}`, `unknown option "colour"`},
		{`{"url":"http://127.0.0.1:1","retry_min":"2s","retry_max":"1s"}`, "retry_max"},
	} {
		err := (&Sink{}).Start(context.Background(), []byte(c.config))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error about %s", c.config, err, c.want)
		}
	}
}

func fmtDurations(ds []time.Duration) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, d.String())
	}
	return "[" + strings.Join(parts, " ") + "]"
}
