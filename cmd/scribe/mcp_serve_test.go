package main_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/e0dc0000/scribe/internal/testenv"
)

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// postAs posts a batch of rows for a session with a token.
func postAs(t *testing.T, s *cloudServer, token, sid string, lines []string) {
	t.Helper()
	body := `{"events":[`
	for i, l := range lines {
		if i > 0 {
			body += ","
		}
		body += `{"type":"user","payload":` + l + `}`
	}
	body += `]}`
	req, _ := http.NewRequest(http.MethodPost, s.url()+"/v1/code/sessions/"+sid+"/events", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.hc.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("post %s: %v %v", sid, err, resp)
	}
	resp.Body.Close()
}

// Two tenants' tokens of startTenantsServer, and a read-only one of alpha.
const (
	tenantTokA, tenantTokB = "alpha-token-0123456789abcdef0123456789", "beta-token-0123456789abcdef01234567890"
	tenantTokARO           = "alpha-read-only-token-0123456789abcdef"
)

// startTenantsServer runs scribe serve with two tenants, alpha
// (tenantTokA) and beta (tenantTokB), both reading and writing, and a
// token of alpha that only reads (tenantTokARO).
func startTenantsServer(t *testing.T) *cloudServer {
	t.Helper()
	dir := t.TempDir()
	hash := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }
	s := &cloudServer{t: t, bin: testenv.BuildScribe(t), dataDir: filepath.Join(dir, "data"), cfg: filepath.Join(dir, "serve.hcl"),
		addr: cloudFreeAddr(t), log: &cloudBuffer{}, hc: &http.Client{Timeout: 20 * time.Second}}
	hcl := fmt.Sprintf(`server {
  listen   = %q
  data_dir = %q
  tokens   = [{ sha256 = %q, tenant = "alpha", scopes = ["read", "write"] },
              { sha256 = %q, tenant = "beta", scopes = ["read", "write"] },
              { sha256 = %q, tenant = "alpha", scopes = ["read"] }]
}
`, s.addr, s.dataDir, hash(tenantTokA), hash(tenantTokB), hash(tenantTokARO))
	if err := os.WriteFile(s.cfg, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// serveRow is a user row of session sid with its uuid, cwd and text.
func serveRow(sid, uuid, cwd, text string) string {
	return `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":` + fmt.Sprintf("%q", text) +
		`},"uuid":"` + uuid + `","timestamp":"2026-03-01T10:00:00.000Z","cwd":"` + cwd + `","sessionId":"` + sid + `"}`
}

// TestMcpOnServeSeesOnlyItsTenant: scribe serve answers MCP's streamable
// HTTP transport at /mcp with scribe mcp's tools, behind its bearer tokens:
// a real MCP client with tenant alpha's token lists, searches and reads
// alpha's sessions, never beta's (not by listing, not by id, not through
// search), secrets come out redacted, and a request without a token is
// refused.
func TestMcpOnServeSeesOnlyItsTenant(t *testing.T) {
	s := startTenantsServer(t)
	const tokA, tokB = tenantTokA, tenantTokB

	row := serveRow
	const sidA, sidB = "a1a10000-0000-4000-8000-000000000001", "b2b20000-0000-4000-8000-000000000002"
	const secret = "AKIAIOSFODNN7EXAMPLE"
	postAs(t, s, tokA, sidA, []string{row(sidA, "a1a10000-0000-4000-8000-0000000000a1", "/home/alice/shop", "alpha wants the flux capacitor; key "+secret)})
	postAs(t, s, tokB, sidB, []string{row(sidB, "b2b20000-0000-4000-8000-0000000000b1", "/home/bob/bank", "beta's flux capacitor plans")})

	connect := func(token string) (*mcp.ClientSession, error) {
		c := mcp.NewClient(&mcp.Implementation{Name: "scribe-test", Version: "1"}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url() + "/mcp",
			HTTPClient: &http.Client{Transport: bearerTransport{token}, Timeout: 30 * time.Second}}, nil)
	}
	cs, err := connect(tokA)
	if err != nil {
		t.Fatalf("connect with alpha's token: %v\n%s", err, s.log)
	}
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) < 3 {
		t.Fatalf("tools: %v %v", tools, err)
	}
	list, errText := mcpCall(t, cs, "list_sessions", map[string]any{})
	if !strings.Contains(string(list), sidA) || strings.Contains(string(list), sidB) {
		t.Errorf("alpha's list_sessions: %s %s", list, errText)
	}
	found, errText := mcpCall(t, cs, "search_sessions", map[string]any{"query": "flux capacitor"})
	if !strings.Contains(string(found), sidA) || strings.Contains(string(found), sidB) || !strings.Contains(string(found), "a1a10000-0000-4000-8000-0000000000a1") {
		t.Errorf("alpha's search_sessions: %s %s", found, errText)
	}
	got, errText := mcpCall(t, cs, "get_session", map[string]any{"id": sidA})
	if !strings.Contains(string(got), "flux capacitor") || strings.Contains(string(got), secret) || !strings.Contains(string(got), "REDACTED") {
		t.Errorf("alpha's get_session is not its session, redacted: %s %s", got, errText)
	}
	if doc, errText := mcpCall(t, cs, "get_session", map[string]any{"id": sidB}); doc != nil || errText == "" {
		t.Errorf("alpha reached beta's session: %s", doc)
	}
	if doc, errText := mcpCall(t, cs, "get_session", map[string]any{"id": "../../etc/passwd"}); doc != nil || errText == "" {
		t.Errorf("a traversal id is no error: %s", doc)
	}
	// No token, a wrong token: refused before any tool.
	for _, tok := range []string{"", "not-a-token"} {
		req, _ := http.NewRequest(http.MethodPost, s.url()+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := s.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("/mcp with token %q: %d, want 401", tok, resp.StatusCode)
		}
	}
}
