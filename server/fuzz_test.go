package server

// Fuzz targets. The default `go test` replays their seeds and the corpora
// in testdata/fuzz/<target>; `go test -fuzz FuzzParseEvents ./server/` (or
// FuzzHTTP) looks for more.

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fuzzSession is the session of every fuzzed request.
const fuzzSession = "f0220000-0000-4000-8000-000000000001"

// FuzzParseEvents is differential: on any body, parseEvents (the fast
// parser, falling back to encoding/json) accepts exactly what
// parseEventsJSON (encoding/json alone) accepts, with the same steps; and
// whatever the fast parser takes on its own, encoding/json takes the same
// way.
func FuzzParseEvents(f *testing.F) {
	e1 := chainEntry(fuzzSession, "f0220000-1111-4000-8000-000000000001", "", "hello \"q\" \\ \u00e9 \u2603 \n\t")
	e2 := agentEntry(fuzzSession, "a1", "f0220000-1111-4000-8000-000000000002", "sub")
	noUUID := []byte(`{"type":"summary","summary":"s","leafUuid":"x"}`)
	for _, b := range [][]byte{
		eventsBody(e1, e2, noUUID),
		[]byte(`[` + string(e1) + `,` + string(e2) + `]`),
		[]byte(`{"events":[]}`),
		[]byte(`{"events":[{"type":"state","state":"running"},{"type":"user","payload":` + string(e1) + `,"agent_id":"a2","event_id":"k1"}]}`),
		[]byte(`{"events":[{"type":"state","payload":{"state":"idle"}}],"other":[1,2,{"x":null}],"n":-1.5e3}`),
		[]byte(`{"Events":[]}`),
		[]byte(`{"events":[{"type":"u\u0073er","payload":{}}]}`),
		[]byte(`{"events":[{"type":"state","state":"idle","x":01}]}`),
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, gotErr := parseEvents(body, fuzzSession)
		want, wantErr := parseEventsJSON(bytes.TrimSpace(body), fuzzSession)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("parseEvents error %v, encoding/json error %v, on:\n%q", gotErr, wantErr, body)
		}
		if gotErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("parseEvents differs from encoding/json on:\n%q\ngot  %+v\nwant %+v", body, got, want)
		}
		if fast, ok := parseEventsFast(bytes.TrimSpace(body), fuzzSession); ok {
			if wantErr != nil {
				t.Fatalf("the fast parser took a body encoding/json refuses (%v):\n%q", wantErr, body)
			}
			if !reflect.DeepEqual(fast, want) {
				t.Fatalf("the fast parser differs from encoding/json on:\n%q\ngot  %+v\nwant %+v", body, fast, want)
			}
		}
	})
}

// fuzzRoutes are the request shapes FuzzHTTP starts from: a method and a
// path, into which the fuzzed id and query go.
var fuzzRoutes = []struct{ method, path string }{
	{http.MethodPut, "/v1/session_ingress/session/{id}"},
	{http.MethodGet, "/v1/session_ingress/session/{id}"},
	{http.MethodPost, "/v1/code/sessions/{id}/events"},
	{http.MethodGet, "/v1/code/sessions/{id}/teleport-events"},
	{http.MethodGet, "/v1/sessions"},
	{http.MethodDelete, "/v1/sessions"},
	{http.MethodGet, "/{id}"},
}

// FuzzHTTP sends client garbage to the handlers of a real server (embedded
// JetStream): a route, a session id, a query, a Last-Uuid or
// Idempotency-Key header, a token and a body, all fuzzed. No request
// panics or gets a 5xx.
func FuzzHTTP(f *testing.F) {
	cfg := Config{Listen: "127.0.0.1:0", DataDir: f.TempDir(), Tokens: testTokens(), MaxBodyBytes: 64 << 10}
	s, err := New(cfg, nil)
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = s.Shutdown(sctx)
	})
	e1 := string(chainEntry(fuzzSession, "f0220000-2222-4000-8000-000000000001", "", "hi"))
	f.Add(uint8(0), fuzzSession, "", "", uint8(0), e1)
	f.Add(uint8(0), fuzzSession, "", "f0220000-2222-4000-8000-000000000001", uint8(0), e1)
	f.Add(uint8(1), fuzzSession, "after_last_compact=true&subagents=true", "", uint8(1), "")
	f.Add(uint8(2), fuzzSession, "", "", uint8(0), `{"events":[{"type":"state","state":"idle"},`+e1+`]}`)
	f.Add(uint8(2), fuzzSession, "", "k-1", uint8(0), `[{"type":"summary","summary":"s"}]`)
	f.Add(uint8(3), fuzzSession, "limit=2&cursor=zzz&from_first_event=true&session_agent_id=a1", "", uint8(1), "")
	f.Add(uint8(4), "", "limit=-1&state=idle&tag=x&id_prefix=f0", "", uint8(2), "")
	f.Add(uint8(5), "", "", "", uint8(3), "x")
	f.Add(uint8(6), "healthz", "", "", uint8(3), "")
	f.Add(uint8(2), "../../x", "a=%zz", "\x00", uint8(0), "{")
	f.Fuzz(func(t *testing.T, route uint8, id, query, header string, token uint8, body string) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		path := strings.ReplaceAll(rt.path, "{id}", url.PathEscape(id))
		target := path
		if query != "" {
			target += "?" + query
		}
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return // not a request a client could send
		}
		req := httptest.NewRequest(rt.method, "http://127.0.0.1"+path, strings.NewReader(body))
		req.URL = u
		req.RequestURI = target
		switch token % 4 {
		case 0:
			req.Header.Set("Authorization", "Bearer "+tokACME)
		case 1:
			req.Header.Set("Authorization", "Bearer "+tokACMERO)
		case 2:
			req.Header.Set("Authorization", "Bearer "+header)
		}
		if header != "" {
			req.Header.Set("Last-Uuid", header)
			req.Header.Set("Idempotency-Key", header)
		}
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%s %s (header %q, body %q): %d %s", rt.method, target, header, body, w.Code, w.Body.Bytes())
		}
	})
}
