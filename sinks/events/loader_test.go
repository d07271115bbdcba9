package events

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/server"
	"github.com/e0dc0000/scribe/sinks/sinkhelper"
	"github.com/e0dc0000/scribe/sinks/sinkhelper/sinkhelpertest"
)

const loaderToken = "loader-test-token"

// startScribeServe runs scribe serve in process (embedded JetStream in a
// temporary folder) on a free loopback port.
func startScribeServe(t *testing.T) string {
	t.Helper()
	cfg := server.Config{
		Listen:  "127.0.0.1:0",
		DataDir: filepath.Join(t.TempDir(), "serve"),
		Tokens: []server.Token{
			{SHA256: server.HashToken(loaderToken), Tenant: "acme", Scopes: []string{server.ScopeRead, server.ScopeWrite}},
			{SHA256: server.HashToken("read-only"), Tenant: "acme", Scopes: []string{server.ScopeRead}},
		},
	}
	s, err := server.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return "http://" + s.Addr()
}

func testClient(t *testing.T, base, token string) *Client {
	t.Helper()
	cc := sinkhelper.DefaultClientConfig()
	cc.BaseURL, cc.Token = base, token
	cc.MaxAttempts, cc.BackoffMin, cc.BackoffMax, cc.Timeout = 2, "10ms", "20ms", "10s"
	c, err := ClientFor(cc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const loaderSession = "7a7e0000-0000-4000-8000-00000000aaaa"

func chainRow(id, parent, agent string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	side := ""
	if agent != "" {
		side = fmt.Sprintf(`"isSidechain":true,"agentId":%q,`, agent)
	}
	return fmt.Sprintf(`{"parentUuid":%s,%s"type":"user","message":{"role":"user","content":"row %s"},"uuid":%q,"sessionId":%q,"cwd":"/src/x"}`,
		p, side, id, id, loaderSession)
}

// seed stores 25 main rows (two of them internal, one title twice) and 12
// rows of subagent a1, and returns the rows expected from each.
func seed(t *testing.T, c *Client) (main, agent []string) {
	t.Helper()
	var evs []Event
	parent := ""
	for i := 0; i < 25; i++ {
		id := uuidOf(1000 + i)
		row := chainRow(id, parent, "")
		parent = id
		evs = append(evs, Event{Type: "user", Payload: []byte(row)})
		main = append(main, row)
		if i == 10 {
			owner := `{"type":"session-owner","owner":"x","sessionId":"` + loaderSession + `"}`
			flow := `{"type":"data-flow-step","step":1,"sessionId":"` + loaderSession + `"}`
			evs = append(evs, Event{Type: "session-owner", Payload: []byte(owner)}, Event{Type: "data-flow-step", Payload: []byte(flow)})
		}
		if i == 5 || i == 20 {
			title := `{"type":"custom-title","customTitle":"t","sessionId":"` + loaderSession + `"}`
			ev := Event{Type: "custom-title", Payload: []byte(title)}
			if i == 20 {
				ev.EventID = "second-copy"
			}
			evs = append(evs, ev)
			main = append(main, title)
		}
	}
	parent = ""
	for i := 0; i < 12; i++ {
		id := uuidOf(2000 + i)
		row := chainRow(id, parent, "a1")
		parent = id
		evs = append(evs, Event{Type: "user", Payload: []byte(row), AgentID: "a1"})
		agent = append(agent, row)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.PostEvents(ctx, loaderSession, evs)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stored != len(evs) {
		t.Fatalf("stored %d of %d", res.Stored, len(evs))
	}
	// Everything again: nothing more is stored.
	if res, err = c.PostEvents(ctx, loaderSession, evs); err != nil || res.Stored != 0 || res.Duplicates != len(evs) {
		t.Fatalf("sent again: %+v, %v", res, err)
	}
	return main, agent
}

func rows(tr *core.Transcript) []string {
	var out []string
	for _, e := range tr.Entries {
		out = append(out, string(e.Raw))
	}
	return out
}

func TestLoaderPagesMainAndSidechain(t *testing.T) {
	base := startScribeServe(t)
	c := testClient(t, base, loaderToken)
	wantMain, wantAgent := seed(t, c)
	c.PageSize = 4 // many pages
	ld := NewLoader(c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	tr, err := ld.Load(ctx, core.SessionRef{SessionID: loaderSession})
	if err != nil {
		t.Fatal(err)
	}
	sinkhelpertest.Equal(t, "main", rows(tr), wantMain)
	if len(tr.Notes) != 1 || !strings.Contains(tr.Notes[0], "2 internal rows") {
		t.Errorf("notes %q, want one about 2 internal rows", tr.Notes)
	}
	tr, err = ld.Load(ctx, core.SessionRef{SessionID: loaderSession, AgentID: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	sinkhelpertest.Equal(t, "agent", rows(tr), wantAgent)

	// Everything, with the agents named.
	all, err := c.Fetch(ctx, loaderSession, HistoryQuery{Subagents: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(wantMain)+2+len(wantAgent) {
		t.Fatalf("subagents=true: %d rows, want %d", len(all), len(wantMain)+2+len(wantAgent))
	}
	agents := 0
	for _, ev := range all {
		if ev.AgentID == "a1" {
			agents++
		}
	}
	if agents != len(wantAgent) {
		t.Errorf("subagents=true: %d rows of a1, want %d", agents, len(wantAgent))
	}

	// An unknown subagent of a known session is empty: resume sees an
	// empty transcript and moves on.
	tr, err = ld.Load(ctx, core.SessionRef{SessionID: loaderSession, AgentID: "nobody"})
	if err != nil || len(tr.Entries) != 0 {
		t.Errorf("unknown agent: %d entries, %v", len(tr.Entries), err)
	}
}

func TestLoaderMissesAndRefusals(t *testing.T) {
	base := startScribeServe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	_, err := NewLoader(testClient(t, base, loaderToken)).Load(ctx, core.SessionRef{SessionID: "7a7e0000-0000-4000-8000-00000000ffff"})
	if !errors.Is(err, core.ErrNotFound) {
		t.Errorf("unknown session: %v, want ErrNotFound", err)
	}
	_, err = NewLoader(testClient(t, base, loaderToken)).Load(ctx, core.SessionRef{SessionID: "../etc"})
	if !errors.Is(err, core.ErrNotFound) {
		t.Errorf("a session id that is not a UUID: %v, want ErrNotFound", err)
	}
	_, err = NewLoader(testClient(t, base, "wrong")).Load(ctx, core.SessionRef{SessionID: loaderSession})
	if !errors.Is(err, sinkhelper.ErrUnauthorized) || errors.Is(err, core.ErrNotFound) || !strings.Contains(err.Error(), "refused the token") {
		t.Errorf("wrong token: %v", err)
	}
	// A read-only token cannot post.
	_, err = testClient(t, base, "read-only").PostEvents(ctx, loaderSession, []Event{{Type: "user", Payload: []byte(chainRow(uuidOf(1), "", ""))}})
	if !errors.Is(err, sinkhelper.ErrUnauthorized) {
		t.Errorf("read-only token posting: %v", err)
	}
	// A server that is not there: a plain error after the retries, not
	// a miss.
	c := testClient(t, "http://127.0.0.1:1", loaderToken)
	_, err = NewLoader(c).Load(ctx, core.SessionRef{SessionID: loaderSession})
	if err == nil || errors.Is(err, core.ErrNotFound) {
		t.Errorf("no server: %v", err)
	}
}

func TestLoaderPageLimit(t *testing.T) {
	base := startScribeServe(t)
	c := testClient(t, base, loaderToken)
	seed(t, c)
	c.PageSize, c.MaxPages = 5, 3
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := NewLoader(c).Load(ctx, core.SessionRef{SessionID: loaderSession})
	if !errors.Is(err, ErrHistoryTruncated) {
		t.Fatalf("a history longer than the page limit: %v, want ErrHistoryTruncated", err)
	}
	c.MaxPages = 100
	if _, err := NewLoader(c).Load(ctx, core.SessionRef{SessionID: loaderSession}); err != nil {
		t.Fatal(err)
	}
}

// from_first_event is dropped when the server refuses it, as Claude Code's
// client does.
func TestLoaderDropsFromFirstEvent(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.RawQuery)
		mu.Unlock()
		if r.URL.Query().Get("from_first_event") != "" {
			http.Error(w, `{"error":{"type":"invalid_request_error","message":"no"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":[{"payload":%s}],"next_cursor":null}`, chainRow(uuidOf(1), "", ""))
	})
	srv := sinkhelpertest.Serve(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr, err := NewLoader(testClient(t, srv.URL(), loaderToken)).Load(ctx, core.SessionRef{SessionID: loaderSession})
	if err != nil || len(tr.Entries) != 1 {
		t.Fatalf("%v, %+v", err, tr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || !strings.Contains(seen[0], "from_first_event=true") || strings.Contains(seen[1], "from_first_event") ||
		!strings.Contains(seen[1], "subagents=false") || !strings.Contains(seen[1], "limit=1000") {
		t.Errorf("queries %q", seen)
	}
}

func TestLoaderConfig(t *testing.T) {
	f := LoaderFactory()
	if f.Kind() != core.KindLoader || f.Type() != "cloud" {
		t.Fatal(f.Kind(), f.Type())
	}
	for _, tc := range []struct {
		cfg  LoaderConfig
		want string
	}{
		{LoaderConfig{Token: "x", Timeout: "1s"}, "base_url"},
		{LoaderConfig{BaseURL: "ftp://x", Token: "x", Timeout: "1s"}, "base_url"},
		{LoaderConfig{BaseURL: "http://127.0.0.1:1", Token: "x", TokenFile: "/y", Timeout: "1s"}, "not both"},
		{LoaderConfig{BaseURL: "http://127.0.0.1:1", Token: "x", Timeout: "soon"}, "timeout"},
	} {
		if err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error about %s", tc.cfg, err, tc.want)
		}
	}
	// No token at all is valid configuration; loading says how to give one.
	none := &LoaderConfig{BaseURL: "http://127.0.0.1:1", Timeout: "1s"}
	if err := none.Validate(); err != nil {
		t.Fatalf("a block without a token: %v", err)
	}
	nl, err := f.CreateLoader(context.Background(), core.Settings{ID: core.ID{Type: "cloud", Name: "team"}}, none)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nl.Load(context.Background(), core.SessionRef{SessionID: loaderSession}); !errors.Is(err, sinkhelper.ErrNoToken) {
		t.Errorf("load without a token: %v, want ErrNoToken", err)
	}
	// A token file is read when the loader loads, not when it is made.
	tok := filepath.Join(t.TempDir(), "token")
	c := DefaultLoaderConfig()
	c.BaseURL, c.TokenFile = "http://127.0.0.1:1", tok
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	ld, err := f.CreateLoader(context.Background(), core.Settings{ID: core.ID{Type: "cloud", Name: "team"}}, c)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ld.Load(context.Background(), core.SessionRef{SessionID: loaderSession})
	if err == nil || !strings.Contains(err.Error(), "token_file") {
		t.Errorf("missing token file: %v", err)
	}
	if err := os.WriteFile(tok, []byte("abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = ld.Load(context.Background(), core.SessionRef{SessionID: loaderSession})
	if err == nil || strings.Contains(err.Error(), "token_file") {
		t.Errorf("with the token file, the error should be about the server: %v", err)
	}
}
