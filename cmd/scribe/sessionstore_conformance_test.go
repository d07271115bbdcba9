package main_test

// The Agent SDK team's SessionStore conformance suite as they publish it
// (examples/session-stores/shared/conformance.ts of
// anthropics/claude-agent-sdk-typescript, and the Python port's inputs and
// 14th contract), restated in internal/peer/store-conformance.mjs with the
// same ids, calls and expectations, against clients/session-store over the
// real `scribe serve`:
//
//   - TestSessionStorePublishedConformance: every contract of both suites
//     passes, each against a fresh store (a tenant of its own); the SDK's
//     own InMemorySessionStore, held to the same restatement, fails only
//     the published contract 4 (its append(key, []) makes the key exist),
//     which shows the runner can fail.
//   - TestSessionStoreOpaqueIDsVisibleToScribe: sessions stored under
//     session ids that are not UUIDs, and one UUID under two project keys,
//     are apart, and scribe's own views see each under its name: the
//     History API (with its store key), `scribe ls --remote` and
//     `scribe pull`.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/internal/peer"
)

// runConformance runs one suite of store-conformance.mjs and returns the
// numbers of the contracts that did not pass, and all results.
func runConformance(t *testing.T, p *peer.Peer, srv *cloudServer, suite string, tokens []string, flags ...string) ([]int, []contractResult) {
	t.Helper()
	out := p.Run(t, "store-conformance.mjs", append([]string{suite, srv.url(), strings.Join(tokens, ",")}, flags...)...)
	var r struct {
		Suite   string
		Results []contractResult
	}
	if err := json.Unmarshal(out, &r); err != nil || r.Suite != suite {
		t.Fatalf("conformance %s %v: %v\n%s", suite, flags, err, out)
	}
	return notPassed(r.Results), r.Results
}

func TestSessionStorePublishedConformance(t *testing.T) {
	t.Parallel() // a long, self-contained run: it overlaps the others
	p := peer.Find(t)
	suites := map[string]int{"ts": 13, "py": 14}
	tokens := map[string][]string{}
	var tenants []storeTenant
	for suite, n := range suites {
		for i := 1; i <= n; i++ {
			tok := fmt.Sprintf("scribe-conformance-%s-%02d-token-0123456789", suite, i)
			tokens[suite] = append(tokens[suite], tok)
			tenants = append(tenants, storeTenant{tok, fmt.Sprintf("conf-%s-%02d", suite, i)})
		}
	}
	srv := startStoreServer(t, tenants...)
	for suite, n := range suites {
		failed, res := runConformance(t, p, srv, suite, tokens[suite])
		if len(res) != n || len(failed) != 0 {
			t.Errorf("suite %s against ScribeSessionStore over scribe serve: %d results, failed %v\n%+v", suite, len(res), failed, res)
		}
	}
	// The SDK's own store, held to the same restatement.
	if failed, res := runConformance(t, p, srv, "ts", []string{"-"}, "--store", "memory"); !reflect.DeepEqual(failed, []int{4}) {
		t.Errorf("InMemorySessionStore failed %v of the published suite, want [4]\n%+v", failed, res)
	}
	if failed, res := runConformance(t, p, srv, "py", []string{"-"}, "--store", "memory"); len(failed) != 0 {
		t.Errorf("InMemorySessionStore failed %v of the Python port\n%+v", failed, res)
	}
}

// storeCall sends one SessionStore request as acme and decodes its answer.
func storeCall(t *testing.T, srv *cloudServer, method, route string, q url.Values, body string, out any) {
	t.Helper()
	req, err := http.NewRequest(method, srv.url()+"/v1/session_store/"+route+"?"+q.Encode(), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+cloudToken)
	resp, err := srv.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s?%s: %d %s", method, route, q.Encode(), resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s %s: %v: %s", method, route, err, b)
	}
}

func TestSessionStoreOpaqueIDsVisibleToScribe(t *testing.T) {
	srv := startStoreServer(t)
	const cwd, projA, projB = "/home/alice/src/app", "-home-alice-src-app", "-home-bob-src-app"
	const uuidID = "5e55a000-2222-4000-8000-00000000000b"
	line := func(sid, uuid, text string) string {
		return fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,"cwd":%q,"sessionId":%q,"type":"user","message":{"role":"user","content":%q},"uuid":%q,"timestamp":"2026-11-30T10:00:00Z"}`,
			cwd, sid, text, uuid)
	}
	keys := []struct{ project, id, text string }{
		{projA, "sess", "sess of A"},
		{projB, "sess", "sess of B"},
		{projA, "main", "main of A"},
		{projA, uuidID, "the UUID under A"},
		{projB, uuidID, "the UUID under B"},
	}
	names := map[string]string{} // project/id → the name scribe keeps it under
	lines := map[string]string{}
	for i, k := range keys {
		l := line(k.id, fmt.Sprintf("5e55a000-0000-4000-8000-0000000001%02d", i), k.text)
		var r struct {
			Stored  int
			Session string
		}
		storeCall(t, srv, http.MethodPost, "entries", url.Values{"project_key": {k.project}, "session_id": {k.id}}, "["+l+"]", &r)
		if r.Stored != 1 || r.Session == "" {
			t.Fatalf("append %s/%s: %+v", k.project, k.id, r)
		}
		names[k.project+"/"+k.id], lines[r.Session] = r.Session, l
	}
	// Five keys, five sessions; the UUID keeps its own name under the
	// project key that had it first.
	if len(lines) != len(keys) || names[projA+"/"+uuidID] != uuidID {
		t.Fatalf("names: %v", names)
	}
	for _, k := range keys {
		var got struct{ Entries []json.RawMessage }
		storeCall(t, srv, http.MethodGet, "entries", url.Values{"project_key": {k.project}, "session_id": {k.id}}, "", &got)
		if len(got.Entries) != 1 || !strings.Contains(string(got.Entries[0]), k.text) {
			t.Fatalf("load %s/%s: %s", k.project, k.id, got.Entries)
		}
	}
	var listed struct{ Sessions []struct{ SessionID string } }
	storeCall(t, srv, http.MethodGet, "sessions", url.Values{"project_key": {projB}}, "", &listed)
	if ids := []string{listed.Sessions[0].SessionID, listed.Sessions[1].SessionID}; len(listed.Sessions) != 2 ||
		!reflect.DeepEqual(map[string]bool{ids[0]: true, ids[1]: true}, map[string]bool{"sess": true, uuidID: true}) {
		t.Fatalf("listSessions(%s) = %+v", projB, listed.Sessions)
	}

	// The History API: each session under its name, with its store key.
	var hist struct {
		Data []struct {
			ID             string
			ProjectKey     string `json:"project_key"`
			StoreSessionID string `json:"store_session_id"`
		}
	}
	if err := json.Unmarshal(srv.get("/v1/sessions"), &hist); err != nil || len(hist.Data) != len(keys) {
		t.Fatalf("GET /v1/sessions: %v %+v", err, hist)
	}
	for _, h := range hist.Data {
		id := h.StoreSessionID
		if id == "" {
			id = h.ID
		}
		if names[h.ProjectKey+"/"+id] != h.ID {
			t.Errorf("History lists %+v; the store named %s/%s %q", h, h.ProjectKey, id, names[h.ProjectKey+"/"+id])
		}
		if rows := srv.history(h.ID, ""); len(rows) != 1 || rows[0] != lines[h.ID] {
			t.Errorf("history of %s: %q, want %q", h.ID, rows, lines[h.ID])
		}
	}

	// ls --remote and pull: the session of B/sess like any other.
	cfg, dir := cloudMachine(t, srv.url(), "jsonl/local")
	out, errOut, code := cloudRun(t, "", "ls", "--remote", "--json", "--config", cfg)
	var list []struct{ ID string }
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list) != len(keys) {
		t.Fatalf("ls --remote --json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	name := names[projB+"/sess"]
	if out, errOut, code = cloudRun(t, "", "pull", name, "--config", cfg, "--json"); code != 0 {
		t.Fatalf("pull %s: exit %d\n%s\n%s", name, code, out, errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, "projects", "-home-alice-src-app", name+".jsonl"))
	if err != nil || string(b) != lines[name]+"\n" {
		t.Fatalf("pulled %s (%v): %q, want %q", name, err, b, lines[name]+"\n")
	}
}
