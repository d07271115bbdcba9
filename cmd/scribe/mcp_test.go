package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/e0dc0000/scribe/internal/testenv"
	"github.com/e0dc0000/scribe/processors/redact/redacttest"
)

// mcpClient starts `scribe mcp args...` over env and connects the go-sdk's
// client to it over stdio.
func mcpClient(t *testing.T, bin string, env []string, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"mcp"}, args...)...)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "scribe-test", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to scribe mcp: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// mcpCall calls a tool and returns its structured answer's JSON (and the
// text of an error answer).
func mcpCall(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (doc []byte, errText string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	if res.IsError {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return nil, b.String()
	}
	structured, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content blocks, want the JSON text", tool, len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok || !mcpSameJSON(t, []byte(tc.Text), structured) {
		t.Fatalf("%s: the text content is not the structured answer", tool)
	}
	// The server's bytes, as it measured them.
	return []byte(tc.Text), ""
}

// jsonText is s as it is inside a JSON string the server writes (< > &
// as they are).
func jsonText(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(strings.TrimSuffix(b.String(), "\n"), `"`)[1:]
}

// secretTokens are the runs of letters and digits of a secret, as the
// search index splits it into words.
func secretTokens(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	})
}

func mcpSameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%v: %.300s", err, a)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%v: %.300s", err, b)
	}
	return reflect.DeepEqual(x, y)
}

// TestMcpServesTheSessionsAsTheSDKReadsThem runs the built scribe mcp
// (through the light build's hand-over) and talks to it with the go-sdk's
// client: the tools and their schemas, list_sessions naming what ls --json
// (the SDK's listSessions) names, search_sessions finding where a phrase
// came from, get_session giving what show --json (the SDK's
// getSessionMessages) gives, no secret ever handed out, traversal ids
// refused, the byte cap held.
func TestMcpServesTheSessionsAsTheSDKReadsThem(t *testing.T) {
	bin := testenv.BuildScribe(t)
	dir := filepath.Join(t.TempDir(), "claude")
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	const (
		plain = "1a2b3c4d-0000-4000-8000-000000000001"
		other = "2b3c4d5e-0000-4000-8000-000000000002"
		long  = "7f7f7f7f-0000-4000-8000-000000000003"
	)
	lsSession(t, dir, plain, "/home/ada/src/shop", start, nil,
		userRow("why does the zebra harmonica quantum build fail?"),
		assistantRow(toolUse("toolu_01", "Bash", map[string]any{"command": "make"})),
		userRow([]any{resultBlock("toolu_01", "make: *** [all] Error 2")}),
		assistantRow(map[string]any{"type": "text", "text": "The Makefile names a missing target."}))
	lsSession(t, dir, other, "/home/ada/src/blog", start.Add(time.Hour), nil,
		userRow("write a post about gardens"),
		assistantRow(map[string]any{"type": "text", "text": "Here is a draft about gardens."}))
	rows := []map[string]any{userRow("read the big log")}
	rows = append(rows, assistantRow(toolUse("toolu_02", "Read", map[string]any{"file_path": "/var/log/big.log"})))
	rows = append(rows, userRow([]any{resultBlock("toolu_02", strings.Repeat("log line of the big file\n", 2000))}))
	for range 200 {
		rows = append(rows, userRow("another prompt to make the session long"),
			assistantRow(map[string]any{"type": "text", "text": "another answer to make the session long: " + strings.Repeat("<&>", 150)}))
	}
	longPath := lsSession(t, dir, long, "/home/ada/src/blog", start.Add(2*time.Hour), nil, rows...)
	// As Claude Code writes them: < > & unescaped (encoding/json escapes
	// them, six bytes each, when it is not told otherwise).
	if b, err := os.ReadFile(longPath); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(longPath, []byte(strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(b))), 0o600); err != nil {
		t.Fatal(err)
	}
	secrets := redacttest.Secrets(11)
	secretDir := filepath.Join(dir, "projects", "-home-ada-src-vault")
	if err := os.MkdirAll(secretDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secretDir, secretSession+".jsonl"), redacttest.Transcript(secretSession, "/home/ada/src/vault", secrets), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(secretDir, secretSession, "subagents"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secretDir, secretSession, "subagents", "agent-"+secretAgent+".jsonl"),
		redacttest.Subagent(secretSession, secretAgent, "/home/ada/src/vault", secrets[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	// A secret across the default cut of a tool result (2000 bytes).
	var cutSecret string
	for _, s := range secrets {
		if !strings.ContainsAny(s.Value, "\n\"\\") && len(s.Value) >= 24 {
			cutSecret = s.Value
			break
		}
	}
	const cutSession = "3c4d5e6f-0000-4000-8000-000000000004"
	lsSession(t, dir, cutSession, "/home/ada/src/vault", start, nil,
		userRow("show the token file"),
		assistantRow(toolUse("toolu_03", "Bash", map[string]any{"command": "cat token"})),
		userRow([]any{resultBlock("toolu_03", strings.Repeat("x", 1990)+" "+cutSecret+"\n")}))
	// A secret across the cut of a title (200 characters of the first
	// prompt).
	const titleSession = "4d5e6f70-0000-4000-8000-000000000005"
	lsSession(t, dir, titleSession, "/home/ada/src/vault", start, nil,
		userRow(strings.Repeat("word ", 38)+cutSecret+" is the token"),
		assistantRow(map[string]any{"type": "text", "text": "Noted."}))
	env := lsEnv(t, dir)
	cs := mcpClient(t, bin, env)

	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.InputSchema == nil || tl.OutputSchema == nil || tl.Description == "" {
			t.Errorf("tool %s: no input schema, output schema or description", tl.Name)
		}
	}
	sort.Strings(names)
	if want := []string{"get_session", "get_usage", "list_sessions", "search_sessions"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	// get_usage: the totals scribe usage (proven equal to ccusage's)
	// prints for the same folder, for the store and for one session.
	for _, report := range []string{"daily", "session"} {
		cli, stderr, code := runScribe(t, runOpts{bin: bin, base: env, }, "usage", report, "--json", "--no-cache")
		if code != 0 {
			t.Fatalf("usage %s --json: %d %s", report, code, stderr)
		}
		var want struct{ Totals map[string]any }
		if err := json.Unmarshal([]byte(cli), &want); err != nil {
			t.Fatal(err)
		}
		doc, errText := mcpCall(t, cs, "get_usage", map[string]any{"report": report})
		var got struct {
			Rows   []map[string]any
			Totals map[string]any
		}
		if err := json.Unmarshal(doc, &got); err != nil || !reflect.DeepEqual(got.Totals, want.Totals) || len(got.Rows) == 0 {
			t.Errorf("get_usage %s: totals %v, want %v (%v %s)", report, got.Totals, want.Totals, err, errText)
		}
		if report == "session" {
			id, _ := got.Rows[0]["sessionId"].(string)
			one, errText := mcpCall(t, cs, "get_usage", map[string]any{"session": id, "report": "session"})
			var single struct{ Rows []map[string]any }
			if json.Unmarshal(one, &single) != nil || len(single.Rows) != 1 || !reflect.DeepEqual(single.Rows[0]["totalCost"], got.Rows[0]["totalCost"]) {
				t.Errorf("get_usage of session %s: %s %s", id, one, errText)
			}
		}
	}
	if doc, errText := mcpCall(t, cs, "get_usage", map[string]any{"report": "hourly"}); doc != nil || errText == "" {
		t.Errorf("get_usage with a bad report: %s", doc)
	}

	// Every session the SDK's listSessions lists (ls --json is proven equal
	// to it), and only those.
	out, stderr, code := runScribe(t, runOpts{bin: bin, base: env}, "ls", "--all", "--json")
	if code != 0 {
		t.Fatalf("ls --json: %d %s", code, stderr)
	}
	var sdk []struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal([]byte(out), &sdk); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range sdk {
		want = append(want, s.SessionID)
	}
	doc, errText := mcpCall(t, cs, "list_sessions", map[string]any{"limit": 1000})
	var listed struct {
		Sessions []struct {
			SessionID, Title, Project, LastActivity, Status string
			Size                                            int64
		}
		Truncated bool
	}
	if errText != "" || json.Unmarshal(doc, &listed) != nil {
		t.Fatalf("list_sessions: %s %s", errText, doc)
	}
	var got []string
	for _, s := range listed.Sessions {
		got = append(got, s.SessionID)
		if s.Size <= 0 || s.LastActivity == "" || s.Status == "" || s.Project == "" {
			t.Errorf("list_sessions: %+v lacks a field", s)
		}
	}
	if len(want) != 6 || !reflect.DeepEqual(got, want) {
		t.Errorf("list_sessions names %v, the SDK's listSessions %v", got, want)
	}
	doc, _ = mcpCall(t, cs, "list_sessions", map[string]any{"project": "/home/ada/src/shop"})
	if !strings.Contains(string(doc), plain) || strings.Contains(string(doc), other) {
		t.Errorf("list_sessions of /home/ada/src/shop: %s", doc)
	}

	// search_sessions finds the session and message a phrase came from.
	doc, errText = mcpCall(t, cs, "search_sessions", map[string]any{"query": "zebra harmonica"})
	var found struct {
		Sessions []struct {
			SessionID string
			Hits      []struct{ UUID, Role, Snippet string }
		}
	}
	if errText != "" || json.Unmarshal(doc, &found) != nil {
		t.Fatalf("search_sessions: %s %s", errText, doc)
	}
	if len(found.Sessions) != 1 || found.Sessions[0].SessionID != plain || len(found.Sessions[0].Hits) != 1 ||
		found.Sessions[0].Hits[0].UUID != plain[:32]+"0000" || !strings.Contains(found.Sessions[0].Hits[0].Snippet, "zebra") {
		t.Errorf("search_sessions zebra harmonica: %s", doc)
	}

	// get_session by a prefix: show --json's messages, the SDK's.
	out, stderr, code = runScribe(t, runOpts{bin: bin, base: env}, "show", "--json", plain)
	if code != 0 {
		t.Fatalf("show --json: %d %s", code, stderr)
	}
	doc, errText = mcpCall(t, cs, "get_session", map[string]any{"id": plain[:10]})
	var window struct {
		SessionID string
		Total     int
		Messages  json.RawMessage
	}
	if errText != "" || json.Unmarshal(doc, &window) != nil {
		t.Fatalf("get_session: %s %s", errText, doc)
	}
	if window.SessionID != plain || window.Total != 4 || !mcpSameJSON(t, window.Messages, []byte(out)) {
		t.Errorf("get_session %s:\n%s\nshow --json:\n%s", plain[:10], doc, out)
	}

	// The resource session://<id> is get_session's first window.
	templates, err := cs.ListResourceTemplates(context.Background(), nil)
	if err != nil || len(templates.ResourceTemplates) != 1 || templates.ResourceTemplates[0].URITemplate != "session://{id}" {
		t.Fatalf("resource templates: %v %+v", err, templates)
	}
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "session://" + plain[:8]})
	if err != nil || len(res.Contents) != 1 || !mcpSameJSON(t, []byte(res.Contents[0].Text), doc) {
		t.Errorf("session://%s: %v %+v", plain[:8], err, res)
	}
	for _, uri := range []string{"session://../x", "session://ffffffff", "session://" + secretSession + "/../x"} {
		if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("%s: no error", uri)
		}
	}
	res, err = cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "session://" + secretSession})
	if err != nil || len(res.Contents) != 1 || !strings.Contains(res.Contents[0].Text, "[REDACTED:") {
		t.Errorf("session://%s is not redacted: %v", secretSession, err)
	} else {
		for _, s := range secrets {
			if strings.Contains(res.Contents[0].Text, jsonText(s.Value)) {
				t.Errorf("session://%s hands out a %s secret", secretSession, s.Kind)
			}
		}
	}

	// A window around a message uuid.
	doc, _ = mcpCall(t, cs, "get_session", map[string]any{"id": plain, "around": plain[:32] + "0002", "limit": 2})
	if json.Unmarshal(doc, &window) != nil || !strings.Contains(string(window.Messages), plain[:32]+"0001") ||
		!strings.Contains(string(window.Messages), plain[:32]+"0002") || strings.Contains(string(window.Messages), plain[:32]+"0003") {
		t.Errorf("get_session around 0002 limit 2: %s", doc)
	}

	// No secret is ever handed out.
	var answers []string
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"get_session", map[string]any{"id": secretSession, "limit": 1000, "max_tool_result": 100000}},
		{"get_session", map[string]any{"id": secretSession, "agent": secretAgent, "limit": 1000, "max_tool_result": 100000}},
		{"list_sessions", map[string]any{"limit": 1000}},
		{"search_sessions", map[string]any{"query": "rotated", "limit": 100}},
		{"search_sessions", map[string]any{"query": "production", "limit": 100}},
		{"search_sessions", map[string]any{"query": "credential", "role": "tool", "limit": 100}},
	} {
		doc, errText := mcpCall(t, cs, call.tool, call.args)
		if errText != "" {
			t.Fatalf("%s: %s", call.tool, errText)
		}
		answers = append(answers, string(doc))
	}
	// A search for a word inside a secret: its snippet holds the secret's
	// neighbours, cut and highlighted ([word]) so no rule finds them there.
	for _, s := range secrets {
		for _, w := range secretTokens(s.Value) {
			doc, errText := mcpCall(t, cs, "search_sessions", map[string]any{"query": w, "limit": 100})
			if errText != "" {
				t.Fatalf("search_sessions %s: %s", w, errText)
			}
			answers = append(answers, string(doc))
		}
	}
	doc, _ = mcpCall(t, cs, "list_sessions", map[string]any{"project": "/home/ada/src/vault"})
	if !strings.Contains(string(doc), "word word") || strings.Contains(string(doc), cutSecret[:9]) {
		t.Errorf("a title cut through a secret: %s", doc)
	}
	answers = append(answers, string(doc))
	doc, _ = mcpCall(t, cs, "get_session", map[string]any{"id": cutSession})
	if !strings.Contains(string(doc), "bytes shown]") || strings.Contains(string(doc), cutSecret[:9]) {
		t.Errorf("a tool result cut through a secret: %.300s", doc[max(0, len(doc)-600):])
	}
	answers = append(answers, string(doc))
	all := strings.Join(answers, "\n")
	for _, s := range secrets {
		if strings.Contains(all, s.Value) || strings.Contains(all, jsonText(s.Value)) {
			t.Errorf("a %s secret was handed out", s.Kind)
		}
		for _, w := range secretTokens(s.Value) {
			if len(w) >= 12 && strings.Contains(all, w) {
				t.Errorf("a part of a %s secret was handed out: %s", s.Kind, w)
			}
		}
	}
	var sub struct {
		Agent    string
		Messages []json.RawMessage
	}
	if json.Unmarshal([]byte(answers[1]), &sub) != nil || sub.Agent != secretAgent || len(sub.Messages) == 0 || !strings.Contains(answers[1], "[REDACTED:") {
		t.Errorf("get_session of the subagent: %.500s", answers[1])
	}
	for _, agent := range []string{"../x", "a/../../b", "ffffffff"} {
		if _, errText := mcpCall(t, cs, "get_session", map[string]any{"id": secretSession, "agent": agent}); errText == "" {
			t.Errorf("get_session agent %q: no error", agent)
		}
	}
	if !strings.Contains(answers[0], "[REDACTED:") {
		t.Errorf("get_session of the secret session holds no redaction marker: %.2000s", answers[0])
	}

	// --no-redact hands out the raw text: the secrets were there to find.
	raw := mcpClient(t, bin, env, "--no-redact")
	doc, _ = mcpCall(t, raw, "get_session", map[string]any{"id": secretSession, "limit": 1000, "max_tool_result": 100000})
	for _, s := range secrets {
		if !strings.Contains(string(doc), jsonText(s.Value)) {
			t.Errorf("--no-redact: the raw answer lacks the %s secret", s.Kind)
		}
	}

	// An ambiguous prefix is an error naming the candidates, bounded.
	for i := range 300 {
		lsSession(t, dir, fmt.Sprintf("eeee%04d-0000-4000-8000-000000000000", i), "/home/ada/src/many", start, nil, userRow("hello"))
	}
	if _, errText := mcpCall(t, cs, "get_session", map[string]any{"id": "eeee"}); !strings.Contains(errText, "ambiguous") || len(errText) > 4200 {
		t.Errorf("get_session of a prefix of 300 sessions: %d bytes: %.300s", len(errText), errText)
	}

	// Ids with a path in them are errors.
	for _, id := range []string{"../x", "../../etc/passwd", "1a2b/../x", ""} {
		if _, errText := mcpCall(t, cs, "get_session", map[string]any{"id": id}); errText == "" {
			t.Errorf("get_session %q: no error", id)
		}
	}
	if _, errText := mcpCall(t, cs, "get_session", map[string]any{"id": plain, "around": "../x"}); errText == "" {
		t.Errorf("get_session around ../x: no error")
	}

	// Tool results are cut (by default, and to the size asked for).
	doc, _ = mcpCall(t, cs, "get_session", map[string]any{"id": long, "limit": 3})
	if len(doc) > 10000 || !strings.Contains(string(doc), "[cut: 2000 of 50000 bytes shown]") {
		t.Errorf("get_session of a 50 kB tool result, by default: %d bytes, %.500s", len(doc), doc)
	}
	doc, _ = mcpCall(t, cs, "get_session", map[string]any{"id": long, "limit": 3, "max_tool_result": 100})
	if !strings.Contains(string(doc), "[cut: 100 of 50000 bytes shown]") {
		t.Errorf("get_session max_tool_result 100: %.500s", doc)
	}

	// The byte cap holds, and says where to go on.
	capped := mcpClient(t, bin, env, "--max-bytes", "8192")
	next := 0
	seen := 0
	for range 200 {
		doc, errText := mcpCall(t, capped, "get_session", map[string]any{"id": long, "offset": next, "limit": 1000, "max_tool_result": 100000})
		if errText != "" {
			t.Fatalf("get_session under the cap: %s", errText)
		}
		if len(doc) > 8192 {
			t.Fatalf("get_session: %d bytes over the cap of 8192", len(doc))
		}
		var w struct {
			NextOffset int `json:"next_offset"`
			Truncated  bool
			Messages   []json.RawMessage
		}
		if err := json.Unmarshal(doc, &w); err != nil {
			t.Fatal(err)
		}
		if w.NextOffset == 0 {
			break
		}
		if !w.Truncated || len(w.Messages) == 0 {
			t.Fatalf("get_session offset %d: stopped at %d without saying it was cut, or gave nothing: %.300s", next, w.NextOffset, doc)
		}
		seen += len(w.Messages)
		next = w.NextOffset
	}
	if next == 0 || seen < 100 {
		t.Errorf("paging under the cap: next %d after %d messages", next, seen)
	}
	doc, _ = mcpCall(t, capped, "get_session", map[string]any{"id": long, "offset": 2, "limit": 1, "max_tool_result": 100000})
	if len(doc) > 8192 || !strings.Contains(string(doc), "a message of ") {
		t.Errorf("a message over the cap alone: %d bytes, %.300s", len(doc), doc)
	}
}

// TestMcpInstallEditsClaudeCodesServers: scribe mcp install adds scribe's
// entry to the "mcpServers" of $CLAUDE_CONFIG_DIR/.claude.json (the
// project's .mcp.json with --scope project), every other byte kept, twice
// changes nothing, a backup beside it, --dry-run writes nothing, uninstall
// gives the file back byte for byte, a "scribe" entry of the user's is
// refused; the installed entry starts a server the go-sdk client talks to.
func TestMcpInstallEditsClaudeCodesServers(t *testing.T) {
	bin := testenv.BuildScribe(t)
	dir := filepath.Join(t.TempDir(), "claude")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	env := lsEnv(t, dir)
	path := filepath.Join(dir, ".claude.json")
	orig := "{\n    \"numStartups\": 3,\n    \"mcpServers\": {\n        \"other\": {\"command\": \"other-mcp\", \"args\": []}\n    },\n    \"theme\": \"dark\\u0021\"\n}\n"
	if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	read := func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	run := func(want int, args ...string) string {
		out, stderr, code := runScribe(t, runOpts{bin: bin, base: env}, args...)
		if code != want {
			t.Fatalf("scribe %v: exit %d, want %d\n%s%s", args, code, want, out, stderr)
		}
		return out
	}
	out := run(0, "mcp", "install", "--dry-run")
	if read() != orig || !strings.Contains(out, "would change (added mcpServers.scribe)") {
		t.Fatalf("--dry-run: %s\nfile:\n%s", out, read())
	}
	run(0, "mcp", "install")
	installed := read()
	var cfg struct {
		MCPServers map[string]struct {
			Type    string
			Command string
			Args    []string
		}
	}
	if err := json.Unmarshal([]byte(installed), &cfg); err != nil {
		t.Fatal(err)
	}
	e := cfg.MCPServers["scribe"]
	if e.Type != "stdio" || !filepath.IsAbs(e.Command) || !reflect.DeepEqual(e.Args, []string{"mcp"}) || cfg.MCPServers["other"].Command != "other-mcp" {
		t.Fatalf("installed:\n%s", installed)
	}
	if !strings.Contains(installed, `"theme": "dark\u0021"`) || !strings.Contains(installed, "\n        \"scribe\": {\n            \"type\": \"stdio\",") {
		t.Errorf("the file's bytes or layout were not kept:\n%s", installed)
	}
	if b, err := os.ReadFile(path + ".scribe.bak"); err != nil || string(b) != orig {
		t.Errorf("no backup of the original: %v", err)
	}
	if out := run(0, "mcp", "install"); read() != installed || !strings.Contains(out, "nothing to change") {
		t.Errorf("install twice: %s", out)
	}

	// The entry as installed starts a server.
	cmd := exec.Command(e.Command, e.Args...)
	cmd.Env = env
	c := mcp.NewClient(&mcp.Implementation{Name: "scribe-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("the installed entry: %v", err)
	}
	if tools, err := cs.ListTools(context.Background(), nil); err != nil || len(tools.Tools) != 4 {
		t.Errorf("the installed entry's tools: %v %v", err, tools)
	}
	cs.Close()

	run(0, "mcp", "uninstall")
	if read() != orig {
		t.Errorf("uninstall did not give the file back:\n%s", read())
	}
	if out := run(0, "mcp", "uninstall"); read() != orig || !strings.Contains(out, "nothing to change") {
		t.Errorf("uninstall twice: %s", out)
	}

	// A "scribe" server of the user's own is left alone.
	own := "{\"mcpServers\": {\"scribe\": {\"command\": \"/opt/scribe\", \"args\": [\"mcp\"], \"env\": {\"X\": \"1\"}}}}\n"
	if err := os.WriteFile(path, []byte(own), 0o600); err != nil {
		t.Fatal(err)
	}
	run(2, "mcp", "install")
	run(2, "mcp", "uninstall")
	if read() != own {
		t.Errorf("the user's scribe entry was changed:\n%s", read())
	}

	// --scope project: the .mcp.json of the current folder, made and
	// removed whole.
	proj := t.TempDir()
	for _, sub := range []string{"install", "uninstall"} {
		if b, _, code := runScribe(t, runOpts{bin: bin, base: env, dir: proj, combined: true}, "mcp", sub, "--scope", "project"); code != 0 {
			t.Fatalf("mcp %s --scope project: exit %d\n%s", sub, code, b)
		}
		b, err := os.ReadFile(filepath.Join(proj, ".mcp.json"))
		if err != nil {
			t.Fatal(err)
		}
		if sub == "install" && !strings.Contains(string(b), `"args": [`) {
			t.Errorf(".mcp.json after install:\n%s", b)
		}
		if sub == "uninstall" && strings.TrimSpace(string(b)) != "{}" {
			t.Errorf(".mcp.json after uninstall:\n%s", b)
		}
	}
}
