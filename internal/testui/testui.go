// Package testui helps the tests of the web viewer: transcripts written
// line by line into a Claude Code folder, and a headless Chromium driven
// by chromedp (Debian's chromium, which scripts/test installs).
package testui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// RequireEnv, set to 1 (scripts/test sets it), turns a missing Chromium
// from a skip into a failure.
const RequireEnv = "SCRIBE_REQUIRE_CHROMIUM"

// Chromium is the browser's path; the test is skipped without one (failed
// with RequireEnv=1).
func Chromium(t testing.TB) string {
	t.Helper()
	if p := FindChromium(); p != "" {
		return p
	}
	msg := "no Chromium on PATH: install Debian's chromium (scripts/test does: apt-get install chromium)"
	if os.Getenv(RequireEnv) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// FindChromium is the browser's path ("" when there is none).
func FindChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// NewBrowser starts Chromium bin headless (no sandbox, no GPU, no
// /dev/shm; every host name but loopback's unresolvable), its profile and
// HOME under dir, and returns a tab's context; cancel stops the browser.
func NewBrowser(bin, dir string) (context.Context, context.CancelFunc, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND , EXCLUDE 127.0.0.1, EXCLUDE localhost"),
		chromedp.Flag("enable-precise-memory-info", true),
		chromedp.WindowSize(1200, 900),
		chromedp.Env("HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, ".config"), "XDG_CACHE_HOME="+filepath.Join(dir, ".cache")),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	cancel := func() { cancelB(); cancelA() }
	if err := chromedp.Do(ctx); err != nil { // the first run starts the browser: no timeout on it
		cancel()
		return nil, nil, fmt.Errorf("start chromium %s: %w", bin, err)
	}
	return ctx, cancel, nil
}

// Browser starts a headless Chromium for the test (NewBrowser, in a
// temporary folder) and returns a tab's context; the browser is stopped when
// the test ends.
func Browser(t testing.TB) context.Context {
	t.Helper()
	dir, err := os.MkdirTemp("", "scribe-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel, err := NewBrowser(Chromium(t), dir)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		// Chromium's helpers can still write there for a moment after it
		// stops: try again rather than fail (t.TempDir would).
		for range 50 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("could not remove %s", dir)
	})
	return ctx
}

// Timeout bounds one Do or Eval.
const Timeout = 30 * time.Second

// Do runs steps in the tab (Timeout at most), failing the test on error.
func Do(t testing.TB, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	if err := chromedp.Do(tctx, steps...); err != nil {
		t.Fatalf("chromium: %v", err)
	}
}

// Eval evaluates a script in the tab's page and returns its value (a
// promise's, once it settles).
func Eval[T any](t testing.TB, ctx context.Context, script string) T {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	v, err := chromedp.Run(tctx, chromedp.Evaluate[T](script, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("chromium: evaluate %s: %v", script, err)
	}
	return v
}

// Screenshot saves the page as it shows now into path (a PNG), for a
// person to look at; a failure is only logged.
func Screenshot(t testing.TB, ctx context.Context, path string) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	buf, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
	if err == nil {
		err = os.WriteFile(path, buf, 0o644)
	}
	if err != nil {
		t.Logf("screenshot %s: %v", path, err)
	}
}

// Session writes one session's transcript, line by line, as Claude Code
// does.
type Session struct {
	ID, Cwd string
	Path    string
	last    string
	n       int
	at      time.Time
	agent   string
}

// Agent starts the transcript of a subagent of the session, started by
// the tool call toolUseID (its meta file names it): lines with agentId,
// isSidechain, and uuids of their own.
func (s *Session) Agent(t testing.TB, agent, toolUseID string) *Session {
	t.Helper()
	dir := filepath.Join(strings.TrimSuffix(s.Path, ".jsonl"), "subagents")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	meta := fmt.Sprintf(`{"agentType":"Explore","toolUseId":%q}`, toolUseID)
	if err := os.WriteFile(filepath.Join(dir, "agent-"+agent+".meta.json"), []byte(meta), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Session{ID: s.ID, Cwd: s.Cwd, Path: filepath.Join(dir, "agent-"+agent+".jsonl"), at: s.at, agent: agent}
}

// NewSession starts session id of project cwd in the Claude folder dir.
func NewSession(t testing.TB, dir, cwd, id string) *Session {
	t.Helper()
	l := jsonl.Layout{ConfigDir: dir}
	p := filepath.Join(l.ProjectDir(cwd), id+".jsonl")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	return &Session{ID: id, Cwd: cwd, Path: p, at: time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC)}
}

// UUID is the n-th message's uuid (1-based) of the session.
func (s *Session) UUID(n int) string {
	if s.agent != "" {
		return fmt.Sprintf("%s-%012d", s.ID[:19]+"aaaa", n)
	}
	return fmt.Sprintf("%s-%012d", s.ID[:23], n)
}

// User appends a user message whose content is text (a string) or blocks.
func (s *Session) User(t testing.TB, content any) string {
	t.Helper()
	return s.line(t, "user", map[string]any{"role": "user", "content": content}, nil)
}

// Assistant appends an assistant message of these content blocks.
func (s *Session) Assistant(t testing.TB, blocks ...map[string]any) string {
	t.Helper()
	return s.line(t, "assistant", map[string]any{"model": "claude-sonnet-4-5", "id": "msg_" + s.ID[:8], "type": "message",
		"role": "assistant", "content": blocks, "stop_reason": "end_turn"}, nil)
}

// At makes the session's next line written at when (each line after it a
// second later).
func (s *Session) At(when time.Time) { s.at = when.Add(-time.Second) }

// AssistantUsage appends an assistant message of model, with message id
// msgID (its requestId made from it) and this usage (message.usage), as
// Claude Code writes a billed answer.
func (s *Session) AssistantUsage(t testing.TB, model, msgID string, usage map[string]any, blocks ...map[string]any) string {
	t.Helper()
	return s.line(t, "assistant", map[string]any{"model": model, "id": msgID, "type": "message", "role": "assistant",
		"content": blocks, "stop_reason": "end_turn", "usage": usage}, map[string]any{"requestId": "req_" + msgID})
}

// Meta appends a metadata line (custom-title, tag, ...) of these fields.
func (s *Session) Meta(t testing.TB, fields map[string]any) {
	t.Helper()
	fields["sessionId"] = s.ID
	s.write(t, fields)
}

// Text is a text block.
func Text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// ToolUse is a tool_use block.
func ToolUse(id, name string, input map[string]any) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
}

// ToolResult is a tool_result block.
func ToolResult(id string, content any) map[string]any {
	return map[string]any{"type": "tool_result", "tool_use_id": id, "content": content}
}

func (s *Session) line(t testing.TB, typ string, msg map[string]any, extra map[string]any) string {
	t.Helper()
	s.n++
	uuid := s.UUID(s.n)
	var parent any
	if s.last != "" {
		parent = s.last
	}
	s.at = s.at.Add(time.Second)
	row := map[string]any{"parentUuid": parent, "isSidechain": false, "type": typ, "message": msg, "uuid": uuid,
		"timestamp": s.at.Format("2006-01-02T15:04:05.000Z"), "userType": "external", "entrypoint": "cli",
		"cwd": s.Cwd, "sessionId": s.ID, "version": "2.1.332", "gitBranch": "main"}
	for k, v := range extra {
		row[k] = v
	}
	if s.agent != "" {
		row["isSidechain"], row["agentId"] = true, s.agent
	}
	s.write(t, row)
	s.last = uuid
	return uuid
}

func (s *Session) write(t testing.TB, row map[string]any) {
	t.Helper()
	b, err := json.Marshal(row)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(s.Path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
}

// Hostile is markup that would run script, load a frame or change the
// page if a viewer let it through; each script sets window.pwned or opens
// a dialog.
const Hostile = `<script>window.pwned=1</script><img src=x onerror="window.pwned=1;alert(1)"></textarea>` +
	`<iframe src="javascript:window.pwned=1"></iframe><style>body{display:none}</style>`

// HostileSession writes a session whose every field a viewer shows
// carries Hostile: the folder, the prompt, Markdown (with javascript: and
// data: links), a tool's input and result, an edit, images of unsafe
// types or data, an unknown block type, the title and the tag.
func HostileSession(t testing.TB, dir, cwd, id string) *Session {
	t.Helper()
	x := Hostile
	s := NewSession(t, dir, cwd+`/<svg onload=window.pwned=1>`, id)
	s.User(t, "prompt "+x)
	s.Assistant(t, Text("# answer\n"+x+"\n\n[click](javascript:window.pwned=1) [data](data:text/html;base64,PHNjcmlwdD4=) "+
		"[spaced]( JaVaScRiPt:window.pwned=1) <a href=\"javascript:window.pwned=1\">raw</a> ![img](javascript:window.pwned=1)\n\n```html\n"+x+"\n```"),
		ToolUse("toolu_x1", "Bash", map[string]any{"command": "echo " + x}),
		ToolUse("toolu_x2", "Edit", map[string]any{"file_path": "/tmp/" + x, "old_string": x, "new_string": x + "2"}),
		map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/svg+xml", "data": "PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+"}},
		map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": `AAAA" onerror="window.pwned=1`}},
		map[string]any{"type": "x-unknown" + x, "payload": x})
	s.User(t, []map[string]any{ToolResult("toolu_x1", x), ToolResult("toolu_x2", []map[string]any{Text(x)})})
	s.Meta(t, map[string]any{"type": "custom-title", "customTitle": "title " + x})
	s.Meta(t, map[string]any{"type": "tag", "tag": "tag" + x})
	return s
}
