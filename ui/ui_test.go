package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	xhtml "golang.org/x/net/html"

	"github.com/e0dc0000/scribe/internal/testui"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/stores"
	"github.com/e0dc0000/scribe/ui"
)

const cwd = "/home/alice/src/shop"

// sid is the n-th test session's id.
func sid(n int) string { return fmt.Sprintf("7b3c2a10-5d4e-4f6a-9b8c-%012d", n) }

// newHandler serves the Claude folder dir.
func newHandler(t testing.TB, dir string) (*ui.Handler, sessions.Store) {
	t.Helper()
	st := stores.NewLocal(stores.Claude, dir, nil)
	h, err := ui.New(ui.Options{Stores: []string{stores.Claude}, Open: func(context.Context, string) (sessions.Store, error) { return st, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h, st
}

// get serves a GET of path and returns the status and body.
func get(t testing.TB, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec.Code, rec.Body.String()
}

// conversation writes session n with k prompt/answer pairs.
func conversation(t testing.TB, dir string, n, k int) *testui.Session {
	t.Helper()
	s := testui.NewSession(t, dir, cwd, sid(n))
	for i := range k {
		s.User(t, fmt.Sprintf("prompt %d of session %d", i, n))
		s.Assistant(t, testui.Text(fmt.Sprintf("answer %d", i)))
	}
	return s
}

// The list shows each session with the title Store.List gives it, and
// links to its page; a page of ?limit rows, ?q filters.
func TestListShowsStoreTitles(t *testing.T) {
	dir := t.TempDir()
	for n := range 7 {
		s := conversation(t, dir, n, 1)
		if n%2 == 0 {
			s.Meta(t, map[string]any{"type": "custom-title", "customTitle": fmt.Sprintf("Custom title %d", n)})
		}
	}
	h, st := newHandler(t, dir)
	infos, err := st.List(context.Background(), sessions.ListOptions{IncludeWorktrees: true, IncludeProgrammatic: true})
	if err != nil || len(infos) != 7 {
		t.Fatalf("List: %d, %v", len(infos), err)
	}
	code, body := get(t, h, "/")
	if code != 200 {
		t.Fatalf("GET /: %d", code)
	}
	for _, in := range infos {
		want := `<a href="/sessions/` + in.SessionID + `?store=claude">` + html.EscapeString(in.Summary) + `</a>`
		if !strings.Contains(body, want) {
			t.Errorf("the list lacks %s", want)
		}
	}
	_, body = get(t, h, "/?limit=3&page=3")
	if n := strings.Count(body, `<li class="row`); n != 1 || !strings.Contains(body, "7–7 of 7") {
		t.Errorf("page 3 of 3 rows: %d rows\n%s", n, body)
	}
	_, body = get(t, h, "/?q=CUSTOM+title+000000000004&partial=1")
	if n := strings.Count(body, `<li class="row`); n != 1 || !strings.Contains(body, "Custom title 4") || strings.Contains(body, "<html") {
		t.Errorf("filtered fragment: %d rows\n%s", n, body)
	}
	_, body = get(t, h, "/?q=title+custom&partial=1")
	if n := strings.Count(body, `<li class="row`); n != 4 {
		t.Errorf("every word of the filter: %d rows, want the 4 with a custom title", n)
	}
}

// A session page renders the last FirstWindow messages, each with
// id="m-<uuid>"; ?at= renders the window around an early one, and
// /window?before= the Window messages before one.
func TestSessionWindow(t *testing.T) {
	dir := t.TempDir()
	s := conversation(t, dir, 1, 150) // 300 messages
	h, _ := newHandler(t, dir)
	_, body := get(t, h, "/sessions/"+s.ID)
	ids := regexp.MustCompile(`<article class="msg[^"]*" id="m-([^"]+)"`).FindAllStringSubmatch(body, -1)
	if len(ids) != 40 || ids[39][1] != s.UUID(300) || ids[0][1] != s.UUID(261) {
		t.Fatalf("the page shows %d messages, want the last 40", len(ids))
	}
	if !strings.Contains(body, `class="more earlier"`) || strings.Contains(body, `class="more later"`) {
		t.Error("the last window links to earlier messages only")
	}
	_, body = get(t, h, "/sessions/"+s.ID+"?at="+s.UUID(3))
	if !strings.Contains(body, `id="m-`+s.UUID(3)+`"`) || !strings.Contains(body, `class="more later"`) {
		t.Error("?at= an early message renders the window around it")
	}
	_, frag := get(t, h, "/sessions/"+s.ID+"/window?before="+s.UUID(201))
	fids := regexp.MustCompile(`<article class="msg[^"]*" id="m-([^"]+)"`).FindAllStringSubmatch(frag, -1)
	if len(fids) != 100 || fids[99][1] != s.UUID(200) || fids[0][1] != s.UUID(101) || strings.Contains(frag, "<html") {
		t.Errorf("/window?before= renders the 100 messages before it, as a fragment: %d", len(fids))
	}
	code, _ := get(t, h, "/sessions/"+s.ID[:8])
	if code != http.StatusSeeOther {
		t.Errorf("a prefix of the id: %d, want a redirect to the id", code)
	}
	if code, _ := get(t, h, "/sessions/nope"); code != http.StatusNotFound {
		t.Errorf("an unknown session: %d", code)
	}
}

// Hostile text in a title, a prompt, Markdown, a tool's input and result
// reaches the page as text: no element, attribute or address of it.
func TestHostileTranscriptIsEscaped(t *testing.T) {
	dir := t.TempDir()
	s := hostileSession(t, dir)
	h, _ := newHandler(t, dir)
	for _, path := range []string{"/", "/sessions/" + s.ID} {
		_, body := get(t, h, path)
		checkInert(t, path, body)
	}
	_, body := get(t, h, "/sessions/"+s.ID)
	for _, want := range []string{"&lt;script&gt;window.pwned=1&lt;/script&gt;", "&lt;/textarea&gt;", "&lt;iframe", "&lt;style&gt;"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not show %q as text", want)
		}
	}
}

// checkInert fails when body, parsed as a browser parses it, holds an
// element, attribute or address a transcript put there.
func checkInert(t *testing.T, what, body string) {
	t.Helper()
	doc, err := xhtml.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var walk func(n *xhtml.Node)
	walk = func(n *xhtml.Node) {
		if n.Type == xhtml.ElementNode {
			switch n.Data {
			case "svg":
				// The usage page's charts are its own SVG: only there, and
				// only of shapes and text.
				if !strings.HasPrefix(what, "usage") || !strings.HasPrefix(attr(n, "class"), "chart ") {
					t.Errorf("%s: a <%s> element", what, n.Data)
				}
				checkChart(t, what, n)
			case "iframe", "object", "embed", "textarea", "base", "frame":
				t.Errorf("%s: a <%s> element", what, n.Data)
			case "script":
				if n.FirstChild != nil || !strings.HasPrefix(attr(n, "src"), "/static/ui.js?v=") {
					t.Errorf("%s: a script other than /static/ui.js", what)
				}
			case "style":
				if what != "export" {
					t.Errorf("%s: a <style> element", what)
				}
			}
			for _, a := range n.Attr {
				v := strings.ToLower(strings.TrimSpace(a.Val))
				switch {
				case strings.HasPrefix(a.Key, "on"), a.Key == "style", a.Key == "srcdoc":
					t.Errorf("%s: <%s %s=%q>", what, n.Data, a.Key, a.Val)
				case (a.Key == "href" || a.Key == "src" || a.Key == "action") && (strings.HasPrefix(v, "javascript:") ||
					strings.HasPrefix(v, "vbscript:") || (strings.HasPrefix(v, "data:") && !regexp.MustCompile(`^data:image/(png|jpeg|gif|webp);base64,[a-z0-9+/]*=*$`).MatchString(v))):
					t.Errorf("%s: <%s %s=%q>", what, n.Data, a.Key, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
}

// checkChart fails when a chart's SVG holds an element other than the
// shapes and text the usage page draws (a link, a script, foreign
// content).
func checkChart(t *testing.T, what string, svg *xhtml.Node) {
	t.Helper()
	for n := range svg.Descendants() {
		if n.Type == xhtml.ElementNode && !slices.Contains([]string{"g", "rect", "line", "text", "title"}, n.Data) {
			t.Errorf("%s: a <%s> element in a chart", what, n.Data)
		}
	}
}

func attr(n *xhtml.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hostileSession(t *testing.T, dir string) *testui.Session {
	return testui.HostileSession(t, dir, cwd, sid(66))
}

// Changes are POST only, with the CSRF token of the page.
func TestActionsNeedCSRF(t *testing.T) {
	dir := t.TempDir()
	s := conversation(t, dir, 1, 1)
	h, st := newHandler(t, dir)
	_, page := get(t, h, "/sessions/"+s.ID)
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the page has no CSRF token")
	}
	post := func(form url.Values, header string) int {
		req := httptest.NewRequest("POST", "/sessions/"+s.ID+"/rename", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if header != "" {
			req.Header.Set("X-CSRF-Token", header)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	if code := post(url.Values{"title": {"Hijacked"}}, ""); code != http.StatusForbidden {
		t.Errorf("POST without a token: %d", code)
	}
	if code := post(url.Values{"title": {"Hijacked"}, "csrf": {strings.Repeat("0", 64)}}, ""); code != http.StatusForbidden {
		t.Errorf("POST with a wrong token: %d", code)
	}
	if code, _ := get(t, h, "/sessions/"+s.ID+"/rename?title=Hijacked&csrf="+m[1]); code != http.StatusMethodNotAllowed {
		t.Errorf("GET of an action: %d", code)
	}
	if info, _ := st.Info(context.Background(), s.ID); info.Summary == "Hijacked" {
		t.Fatal("a refused request renamed the session")
	}
	if code := post(url.Values{"title": {"Renamed"}, "csrf": {m[1]}}, ""); code != http.StatusSeeOther {
		t.Fatalf("POST with the token: %d", code)
	}
	if code := post(url.Values{"title": {"Renamed by header"}}, m[1]); code != http.StatusSeeOther {
		t.Fatalf("POST with the token in X-CSRF-Token: %d", code)
	}
	if info, _ := st.Info(context.Background(), s.ID); info.Summary != "Renamed by header" {
		t.Fatalf("after rename: %q", info.Summary)
	}
}

// The guard: no cookie 401, a wrong token 403, the token once for the
// cookie and a redirect without it, a foreign Host 403 whatever else.
func TestLocalGuard(t *testing.T) {
	dir := t.TempDir()
	conversation(t, dir, 1, 1)
	h, _ := newHandler(t, dir)
	g := ui.NewLocalGuard(h, []string{"127.0.0.1:8080", "localhost:8080"})
	tok := g.Token()
	do := func(host, path string, cookie *http.Cookie) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", path, nil)
		req.Host = host
		if cookie != nil {
			req.AddCookie(cookie)
		}
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		return rec
	}
	if rec := do("127.0.0.1:8080", "/", nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("no cookie: %d", rec.Code)
	}
	if rec := do("127.0.0.1:8080", "/?token=wrong", nil); rec.Code != http.StatusForbidden {
		t.Errorf("a wrong token: %d", rec.Code)
	}
	if rec := do("evil.example:8080", "/?token="+tok, nil); rec.Code != http.StatusForbidden {
		t.Errorf("the token through a foreign Host: %d", rec.Code)
	}
	rec := do("localhost:8080", "/?store=claude&token="+tok, nil)
	cookies := rec.Result().Cookies()
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/?store=claude" || len(cookies) != 1 {
		t.Fatalf("the token: %d, Location %q, cookies %v", rec.Code, rec.Header().Get("Location"), cookies)
	}
	c := cookies[0]
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Name != "scribe_ui_8080" {
		t.Errorf("cookie %+v", c)
	}
	if rec := do("127.0.0.1:8080", "/?token="+tok, nil); rec.Code != http.StatusForbidden {
		t.Errorf("the token a second time: %d", rec.Code)
	}
	if rec := do("127.0.0.1:8080", "/", c); rec.Code != http.StatusOK {
		t.Errorf("with the cookie: %d", rec.Code)
	}
	if rec := do("attacker.example:8080", "/", c); rec.Code != http.StatusForbidden {
		t.Errorf("the cookie through a foreign Host (DNS rebinding): %d", rec.Code)
	}
	if rec := do("127.0.0.1:8080", "/", &http.Cookie{Name: g.CookieName(), Value: "forged"}); rec.Code != http.StatusUnauthorized {
		t.Errorf("a forged cookie: %d", rec.Code)
	}
}

// Every answer carries the Content-Security-Policy, and the page loads
// its script and style from the server only.
func TestSecurityHeaders(t *testing.T) {
	dir := t.TempDir()
	s := conversation(t, dir, 1, 1)
	h, _ := newHandler(t, dir)
	for _, p := range []string{"/", "/sessions/" + s.ID, "/static/ui.js", "/sessions/nope"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q", p, csp)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", p)
		}
		if p == "/sessions/"+s.ID && regexp.MustCompile(`<script>|\sstyle=|<style`).MatchString(rec.Body.String()) {
			t.Errorf("%s has inline script or style", p)
		}
	}
}

// The live stream sends a message appended to the file, rendered.
func TestEventsSendAppendedMessages(t *testing.T) {
	dir := t.TempDir()
	s := conversation(t, dir, 1, 2)
	h, _ := newHandler(t, dir)
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/sessions/" + s.ID + "/events?after=" + s.UUID(4))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	s.User(t, "a live <b>prompt</b>")
	got := make([]byte, 0, 4096)
	buf := make([]byte, 4096)
	for !strings.Contains(string(got), "\n\n") {
		n, err := resp.Body.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF || err != nil {
			t.Fatalf("read the stream: %v\n%s", err, got)
		}
		if strings.HasPrefix(string(got), ": ping") {
			got = got[:0]
		}
	}
	ev := string(got)
	if !strings.Contains(ev, "event: messages") || !strings.Contains(ev, `id=\"m-`+s.UUID(5)+`\"`) ||
		!strings.Contains(ev, `a live \u0026lt;b\u0026gt;prompt`) || strings.Contains(ev, "m-"+s.UUID(4)) {
		t.Fatalf("event:\n%s", ev)
	}
	// A message that arrives live offers a fork at it as the page's do.
	if !strings.Contains(ev, `class=\"fork-here\" data-uuid=\"`+s.UUID(5)+`\"`) {
		t.Errorf("the live message offers no fork:\n%s", ev)
	}
}

// export: one page with its style inside, no script, the conversation.
func TestExportIsSelfContained(t *testing.T) {
	dir := t.TempDir()
	s := hostileSession(t, dir)
	_, st := newHandler(t, dir)
	var b strings.Builder
	if err := ui.Export(context.Background(), &b, st, s.ID); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, "<style>") || strings.Contains(page, "<script") || strings.Contains(page, `rel="stylesheet"`) {
		t.Error("the export is not one self-contained page without script")
	}
	if !strings.Contains(page, "&lt;script&gt;window.pwned=1") || !strings.Contains(page, `id="m-`+s.UUID(1)+`"`) {
		t.Error("the export lacks the conversation")
	}
	checkInert(t, "export", page)
	if os.Getenv("SCRIBE_UI_DUMP") != "" {
		_ = os.WriteFile(os.Getenv("SCRIBE_UI_DUMP"), []byte(page), 0o644)
	}
}

// post sends a form to h with the page's CSRF token.
func post(t *testing.T, h http.Handler, path string, form url.Values) *httptest.ResponseRecorder {
	t.Helper()
	_, page := get(t, h, "/")
	m := regexp.MustCompile(`<meta name="csrf-token" content="([0-9a-f]+)">`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token in the list page")
	}
	form.Set("csrf", m[1])
	req := httptest.NewRequest("POST", path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// Tag, archive, fork and the trash (after its confirmation page) change
// what the store says.
func TestActions(t *testing.T) {
	dir := t.TempDir()
	s := conversation(t, dir, 1, 2)
	h, st := newHandler(t, dir)
	ctx := context.Background()
	if rec := post(t, h, "/sessions/"+s.ID+"/tag", url.Values{"tag": {"bugfix"}}); rec.Code != http.StatusSeeOther {
		t.Fatalf("tag: %d %s", rec.Code, rec.Body)
	}
	if rec := post(t, h, "/sessions/"+s.ID+"/archive", url.Values{"archived": {"1"}}); rec.Code != http.StatusSeeOther {
		t.Fatalf("archive: %d %s", rec.Code, rec.Body)
	}
	info, _ := st.Info(ctx, s.ID)
	if info.Tag != "bugfix" || info.Archived == nil || !*info.Archived {
		t.Errorf("after tag and archive: tag %q, archived %v", info.Tag, info.Archived)
	}
	if _, body := get(t, h, "/"); !strings.Contains(body, `<li class="row archived">`) || !strings.Contains(body, ` · #bugfix · archived</small>`) {
		t.Error("the list does not show the tag and the archived mark")
	}
	rec := post(t, h, "/sessions/"+s.ID+"/fork", url.Values{"up_to": {s.UUID(2)}, "title": {"A fork"}})
	loc := rec.Header().Get("Location")
	if rec.Code != http.StatusSeeOther || !strings.HasPrefix(loc, "/sessions/") {
		t.Fatalf("fork: %d %q %s", rec.Code, loc, rec.Body)
	}
	forkID := strings.TrimPrefix(strings.SplitN(loc, "?", 2)[0], "/sessions/")
	if fi, err := st.Info(ctx, forkID); err != nil || fi == nil || fi.Summary != "A fork" {
		t.Fatalf("the fork %s: %+v, %v", forkID, fi, err)
	}
	rec = post(t, h, "/sessions/"+s.ID+"/trash", url.Values{})
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `name="confirm" value="1"`) {
		t.Fatalf("trash without confirm: %d, want the confirmation page", rec.Code)
	}
	if info, _ := st.Info(ctx, s.ID); info == nil {
		t.Fatal("the confirmation page trashed the session")
	}
	if rec := post(t, h, "/sessions/"+s.ID+"/trash", url.Values{"confirm": {"1"}}); rec.Code != http.StatusSeeOther {
		t.Fatalf("trash: %d %s", rec.Code, rec.Body)
	}
	if info, _ := st.Info(ctx, s.ID); info != nil {
		t.Error("the session is still there after the trash")
	}
	// The list links the trash page, which lists the session with a
	// Restore button that puts it back (with the CSRF token only).
	if _, body := get(t, h, "/"); !strings.Contains(body, `class="trash-link" href="/trash?store=`) {
		t.Error("the list does not link the trash page")
	}
	code, body := get(t, h, "/trash")
	if code != http.StatusOK || !strings.Contains(body, s.ID) || !strings.Contains(body, `<form method="post" action="/trash/restore?store=`) {
		t.Fatalf("the trash page: %d\n%s", code, body)
	}
	req := httptest.NewRequest("POST", "/trash/restore", strings.NewReader(url.Values{"ref": {s.ID}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec = httptest.NewRecorder()
	if h.ServeHTTP(rec, req); rec.Code != http.StatusForbidden {
		t.Errorf("a restore without the CSRF token: %d", rec.Code)
	}
	if rec := post(t, h, "/trash/restore", url.Values{"ref": {s.ID}}); rec.Code != http.StatusSeeOther {
		t.Fatalf("restore: %d %s", rec.Code, rec.Body)
	}
	if info, _ := st.Info(ctx, s.ID); info == nil {
		t.Error("the session is not back after Restore")
	}
	if _, body := get(t, h, "/trash"); !strings.Contains(body, "The trash is empty.") {
		t.Error("the trash page still lists the restored session")
	}
}

// A store that cannot change its sessions offers no action, and refuses
// one asked for.
func TestActionsOnReadOnlyStore(t *testing.T) {
	dir := t.TempDir()
	s := conversation(t, dir, 1, 1)
	local := stores.NewLocal(stores.Claude, dir, nil)
	ro := stores.NewReader("archive", dir, local.Layout())
	h, err := ui.New(ui.Options{Stores: []string{"archive"}, Open: func(context.Context, string) (sessions.Store, error) { return ro, nil }})
	if err != nil {
		t.Fatal(err)
	}
	_, page := get(t, h, "/sessions/"+s.ID)
	if strings.Contains(page, "/rename?") || strings.Contains(page, "/trash?") || strings.Contains(page, "fork-here") || !strings.Contains(page, "claude --resume "+s.ID) {
		t.Error("a read-only store's page offers changes, or lacks the resume command")
	}
	h2, _ := newHandler(t, dir)
	_, page = get(t, h2, "/sessions/"+s.ID)
	for n := 1; n <= 2; n++ {
		if !strings.Contains(page, `class="fork-here" data-uuid="`+s.UUID(n)+`"`) {
			t.Errorf("the local store's page offers no fork at message %d", n)
		}
	}
	if rec := post(t, h, "/sessions/"+s.ID+"/rename", url.Values{"title": {"x"}}); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("rename on a read-only store: %d", rec.Code)
	}
}

// ?at= a subagent's message opens the window around the call that
// started the subagent, whose conversation holds the message.
func TestPermalinkIntoSubagent(t *testing.T) {
	dir := t.TempDir()
	s := testui.NewSession(t, dir, cwd, sid(3))
	s.User(t, "find it")
	s.Assistant(t, testui.ToolUse("toolu_a1", "Task", map[string]any{"description": "look", "prompt": "look for it"}))
	s.User(t, []map[string]any{testui.ToolResult("toolu_a1", "found")})
	for i := range 150 {
		s.User(t, fmt.Sprintf("later prompt %d", i))
	}
	a := s.Agent(t, "a0123456789abcdef", "toolu_a1")
	a.User(t, "look for it")
	target := a.Assistant(t, testui.Text("here it is"))
	h, _ := newHandler(t, dir)
	_, body := get(t, h, "/sessions/"+s.ID)
	if strings.Contains(body, `id="m-`+target+`"`) {
		t.Fatal("the last window holds the early subagent's message")
	}
	_, body = get(t, h, "/sessions/"+s.ID+"?at="+target)
	if !strings.Contains(body, `id="m-`+target+`"`) || !strings.Contains(body, `id="m-`+s.UUID(2)+`"`) {
		t.Error("?at= a subagent's message does not show it under its call")
	}
}

// A slash command Claude Code wrote as tags is shown as the command line
// it was, and a local command's output as output, not as the tags; what
// is inside them stays text.
func TestSlashCommandsShownAsCommands(t *testing.T) {
	dir := t.TempDir()
	s := testui.NewSession(t, dir, cwd, sid(70))
	s.User(t, "<command-name>/review</command-name>\n            <command-message>review</command-message>\n            <command-args>the <script>x()</script> branch</command-args>")
	s.User(t, "<local-command-stdout>See <b>ya</b>!</local-command-stdout>")
	s.User(t, "a prompt that speaks of <command-name>/x</command-name> later on")
	h, _ := newHandler(t, dir)
	_, body := get(t, h, "/sessions/"+s.ID)
	checkInert(t, "commands", body)
	for _, want := range []string{
		`<div class="command"><code>/review the &lt;script&gt;x()&lt;/script&gt; branch</code></div>`,
		`<pre class="output">See &lt;b&gt;ya&lt;/b&gt;!</pre>`,
		`a prompt that speaks of &lt;command-name&gt;/x&lt;/command-name&gt; later on`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not hold %s", want)
		}
	}
	if strings.Contains(body, "&lt;command-message&gt;") || strings.Contains(body, "&lt;local-command-stdout&gt;") {
		t.Error("the command's tags are shown")
	}
}

// A subagent without a meta file (older Claude Code; the SDK gives it no
// parent call) is still shown under the call whose result names it
// ("agentId: <id>"); a result naming an agent the session does not have
// shows none.
func TestSubagentFoundByItsResult(t *testing.T) {
	dir := t.TempDir()
	s := testui.NewSession(t, dir, cwd, sid(4))
	s.User(t, "find it")
	s.Assistant(t, testui.ToolUse("toolu_b1", "Agent", map[string]any{"description": "look", "prompt": "look for it"}))
	s.User(t, []map[string]any{testui.ToolResult("toolu_b1", []map[string]any{testui.Text("found it"), testui.Text("agentId: a5eedfeed0000beef (for resuming)")})})
	s.Assistant(t, testui.ToolUse("toolu_b2", "Agent", map[string]any{"description": "again", "prompt": "and again"}))
	s.User(t, []map[string]any{testui.ToolResult("toolu_b2", "agentId: affffffffffffffff")})
	a := s.Agent(t, "a5eedfeed0000beef", "toolu_b1")
	if err := os.Remove(strings.TrimSuffix(a.Path, ".jsonl") + ".meta.json"); err != nil {
		t.Fatal(err)
	}
	a.User(t, "look for it")
	said := a.Assistant(t, testui.Text("the subagent's answer"))
	h, _ := newHandler(t, dir)
	_, body := get(t, h, "/sessions/"+s.ID)
	section := `<section class="agent" data-fetch="/sessions/` + s.ID + `/agents/a5eedfeed0000beef/inline?store=claude">`
	if n := strings.Count(body, `<section class="agent"`); n != 1 {
		t.Fatalf("%d subagent sections, want 1 (under toolu_b1)", n)
	}
	call := strings.Index(body, `data-tool="Agent"`)
	if sec := strings.Index(body, section); call < 0 || sec < call {
		t.Error("the subagent is not shown under the call that names it")
	}
	// Its messages, fetched when the call is opened.
	if _, part := get(t, h, "/sessions/"+s.ID+"/agents/a5eedfeed0000beef/inline?store=claude"); !strings.Contains(part, `id="m-`+said+`"`) {
		t.Errorf("the subagent's messages:\n%s", part)
	}
}

// A page leaves its subagents' messages to be fetched when their calls
// are opened, except the one a permalink points into; an export holds
// them all.
func TestSubagentsFetchedWhenOpened(t *testing.T) {
	dir := t.TempDir()
	s := testui.NewSession(t, dir, cwd, sid(6))
	s.User(t, "two agents")
	s.Assistant(t, testui.ToolUse("toolu_c1", "Task", map[string]any{"description": "one", "prompt": "first"}))
	s.User(t, []map[string]any{testui.ToolResult("toolu_c1", "done one")})
	s.Assistant(t, testui.ToolUse("toolu_c2", "Task", map[string]any{"description": "two", "prompt": "second"}))
	s.User(t, []map[string]any{testui.ToolResult("toolu_c2", "done two")})
	a1 := s.Agent(t, "a0000000000000001", "toolu_c1")
	a1.User(t, "first")
	a1.Assistant(t, testui.Text("agent one speaks"))
	a2 := s.Agent(t, "a0000000000000002", "toolu_c2")
	a2.User(t, "second")
	a2.User(t, "and more") // (the agents' uuids are numbered alike: this one's last is its own)
	said2 := a2.Assistant(t, testui.Text("agent two speaks"))
	h, st := newHandler(t, dir)
	_, page := get(t, h, "/sessions/"+s.ID)
	if strings.Contains(page, "agent one speaks") || strings.Contains(page, "agent two speaks") || strings.Count(page, `section class="agent" data-fetch=`) != 2 {
		t.Error("the page holds its subagents' messages, or does not say where to fetch them")
	}
	_, page = get(t, h, "/sessions/"+s.ID+"?at="+said2)
	if !strings.Contains(page, `id="m-`+said2+`"`) || !strings.Contains(page, "agent two speaks") || strings.Contains(page, "agent one speaks") {
		t.Error("a permalink into the second subagent does not show it (and only it) at once")
	}
	var exp strings.Builder
	if err := ui.Export(context.Background(), &exp, st, s.ID); err != nil || !strings.Contains(exp.String(), "agent one speaks") || !strings.Contains(exp.String(), "agent two speaks") || strings.Contains(exp.String(), "data-fetch") {
		t.Errorf("the export does not hold every subagent: %v", err)
	}
}

// A permalink to a message the conversation does not hold says so above
// the conversation's end, rather than landing there silently; one it
// holds says nothing.
func TestPermalinkToAMissingMessage(t *testing.T) {
	dir := t.TempDir()
	s := conversation(t, dir, 5, 3)
	h, _ := newHandler(t, dir)
	_, body := get(t, h, "/sessions/"+s.ID+"?at=5ea4c000-dead-4000-8000-<b>x</b>")
	if !strings.Contains(body, `<p class="note missing" role="status">Message <code>5ea4c000-dead-4000-8000-&lt;b&gt;x&lt;/b&gt;</code> is not in this conversation`) {
		t.Error("no notice for a message the session does not hold")
	}
	if !strings.Contains(body, `id="m-`+s.UUID(6)+`"`) {
		t.Error("the conversation's end is not shown")
	}
	if _, body = get(t, h, "/sessions/"+s.ID+"?at="+s.UUID(1)); strings.Contains(body, `class="note missing"`) {
		t.Error("a notice for a message the session holds")
	}
}

// Each order of the list is the listing's, whichever was asked before
// (the orders are kept per listing), filtered in that order, and a
// change made in the viewer reorders them.
func TestListOrders(t *testing.T) {
	dir := t.TempDir()
	titles := []string{"delta", "alpha", "charlie", "bravo"}
	for n, title := range titles {
		s := conversation(t, dir, n, 1)
		s.Meta(t, map[string]any{"type": "custom-title", "customTitle": title + " session"})
		// Later sessions were active later.
		at := time.Date(2026, 3, 1, 10, n, 0, 0, time.UTC)
		if err := os.Chtimes(s.Path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	h, _ := newHandler(t, dir)
	order := func(path string) string {
		t.Helper()
		_, body := get(t, h, path)
		var got []string
		for _, m := range regexp.MustCompile(`">(\w+) session</a>`).FindAllStringSubmatch(body, -1) {
			got = append(got, m[1])
		}
		return strings.Join(got, " ")
	}
	for _, c := range []struct{ path, want string }{
		{"/", "bravo charlie alpha delta"},
		{"/?sort=title", "alpha bravo charlie delta"},
		{"/?sort=title&q=a+session", "alpha bravo charlie delta"},
		{"/?sort=title&q=LTA", "delta"},
		{"/", "bravo charlie alpha delta"},
		{"/?q=avo", "bravo"},
	} {
		if got := order(c.path); got != c.want {
			t.Errorf("GET %s: %q, want %q", c.path, got, c.want)
		}
	}
	form := url.Values{"title": {"echo session"}}
	if rec := post(t, h, "/sessions/"+sid(0)+"/rename?store=claude", form); rec.Code != http.StatusSeeOther {
		t.Fatalf("rename: %d %s", rec.Code, rec.Body)
	}
	if got := order("/?sort=title"); got != "alpha bravo charlie echo" {
		t.Errorf("after the rename: %q", got)
	}
	// A session written elsewhere shows in every order once the listing
	// is read again (ListTTL).
	st := stores.NewLocal(stores.Claude, dir, nil)
	h2, err := ui.New(ui.Options{Stores: []string{stores.Claude}, ListTTL: time.Millisecond,
		Open: func(context.Context, string) (sessions.Store, error) { return st, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Close(context.Background())
	h = h2
	order("/?sort=title")
	s := conversation(t, dir, 9, 1)
	s.Meta(t, map[string]any{"type": "custom-title", "customTitle": "foxtrot session"})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if got := order("/?sort=title"); got == "alpha bravo charlie echo foxtrot" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the listing read again: %q", got)
		}
	}
}

// A system row the SDK gives without content (a turn's duration) keeps
// its place and permalink but shows no empty "System" header.
func TestContentlessSystemRowsAreSlim(t *testing.T) {
	dir := t.TempDir()
	s := conversation(t, dir, 8, 1)
	sys := "5ea4c000-5555-4000-8000-000000000001"
	s.Meta(t, map[string]any{"type": "system", "subtype": "turn_duration", "durationMs": 1200, "parentUuid": s.UUID(2),
		"uuid": sys, "isSidechain": false, "timestamp": "2026-11-20T10:00:09.000Z", "cwd": cwd, "isMeta": false})
	s.Meta(t, map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "after the turn"}, "parentUuid": sys,
		"uuid": "5ea4c000-5555-4000-8000-000000000002", "isSidechain": false, "timestamp": "2026-11-20T10:00:10.000Z", "cwd": cwd,
		"userType": "external"})
	h, st := newHandler(t, dir)
	msgs, _, err := st.Messages(context.Background(), s.ID, sessions.MessagesOptions{IncludeSystem: true})
	if err != nil || !slices.ContainsFunc(msgs, func(m sessions.Message) bool { return m.UUID == sys && len(m.Message) == 0 }) {
		t.Fatalf("the SDK's messages hold no contentless system row: %v", err)
	}
	_, body := get(t, h, "/sessions/"+s.ID)
	if !strings.Contains(body, `<article class="msg system slim" id="m-`+sys+`"></article>`) {
		t.Errorf("the system row is not a slim anchor:\n%s", body)
	}
	if strings.Contains(body, ">System</a>") {
		t.Error("an empty System header is shown")
	}
}

// A download is streamed: a writer that fails before its first byte gives
// an error page; one that fails after it aborts the response, so the
// client sees a broken download, never a file cut short that looks whole.
func TestDownloadFailures(t *testing.T) {
	dir := t.TempDir()
	s := conversation(t, dir, 9, 1)
	st := stores.NewLocal(stores.Claude, dir, nil)
	h, err := ui.New(ui.Options{Stores: []string{stores.Claude}, Open: func(context.Context, string) (sessions.Store, error) { return st, nil },
		Markdown: func(context.Context, sessions.Store, string, io.Writer) error { return fmt.Errorf("no markdown today") },
		Bundle: func(sessions.Store) ui.ExportFunc {
			return func(_ context.Context, _ sessions.Store, _ string, w io.Writer) error {
				w.Write([]byte("the first bytes of a bundle"))
				return fmt.Errorf("the disk went away")
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	srv := httptest.NewServer(h)
	defer srv.Close()
	r, err := http.Get(srv.URL + "/sessions/" + s.ID + "/export?format=md&store=claude")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode == http.StatusOK || r.Header.Get("Content-Disposition") != "" || !strings.Contains(string(body), "no markdown today") {
		t.Errorf("a writer failing at once: %s %q\n%s", r.Status, r.Header.Get("Content-Disposition"), body)
	}
	// (The request itself fails when nothing was flushed yet, else the
	// body's read: either way no whole file.)
	if r, err = http.Get(srv.URL + "/sessions/" + s.ID + "/export?format=bundle&store=claude"); err == nil {
		_, err = io.ReadAll(r.Body)
		r.Body.Close()
	}
	if err == nil {
		t.Error("a writer failing after its first bytes: the download reads as whole")
	}
}

// The list asks for its rows' message counts after it is shown: /counts
// gives getSessionMessages' count of each session asked for that the list
// holds (none for an id it does not), the next page shows the counts
// kept, and a session written to since is counted again.
func TestListMessageCounts(t *testing.T) {
	dir := t.TempDir()
	conversation(t, dir, 1, 3)
	s2 := conversation(t, dir, 2, 1)
	st := stores.NewLocal(stores.Claude, dir, nil)
	h, err := ui.New(ui.Options{Stores: []string{stores.Claude}, ListTTL: time.Nanosecond,
		Open: func(context.Context, string) (sessions.Store, error) { return st, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	_, body := get(t, h, "/")
	if n := strings.Count(body, `<span class="msgs" data-count="`); n != 2 || strings.Contains(body, " messages") {
		t.Fatalf("the first page: %d rows waiting for their count\n%s", n, body)
	}
	counts := func(ids ...string) map[string]int {
		t.Helper()
		code, body := get(t, h, "/counts?id="+strings.Join(ids, "&id="))
		var m map[string]int
		if code != http.StatusOK || json.Unmarshal([]byte(body), &m) != nil {
			t.Fatalf("/counts: %d %s", code, body)
		}
		return m
	}
	want := func(id string) int {
		msgs, _, err := st.Messages(context.Background(), id, sessions.MessagesOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(msgs)
	}
	got := counts(sid(1), sid(2), sid(9))
	if len(got) != 2 || got[sid(1)] != want(sid(1)) || got[sid(2)] != want(sid(2)) || got[sid(1)] != 6 {
		t.Errorf("/counts = %v; want %d and %d, nothing for a session not listed", got, want(sid(1)), want(sid(2)))
	}
	_, body = get(t, h, "/")
	if !strings.Contains(body, " · 6 messages") || !strings.Contains(body, " · 2 messages") || strings.Contains(body, "data-count") {
		t.Errorf("the next page does not show the counts kept:\n%s", body)
	}
	s2.User(t, "one more")
	time.Sleep(2 * time.Millisecond) // the listing (ListTTL 1ns) is read again in the background
	for range 100 {
		if _, body = get(t, h, "/"); strings.Contains(body, "data-count=\""+sid(2)) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(body, "data-count=\""+sid(2)) {
		t.Fatalf("session 2, written to, is not counted again:\n%s", body)
	}
	if got := counts(sid(2)); got[sid(2)] != 3 {
		t.Errorf("session 2 after a prompt more: %v, want 3", got)
	}
	if code, _ := get(t, h, "/counts?"+strings.Repeat("id=x&", 501)); code != http.StatusBadRequest {
		t.Errorf("501 ids: %d", code)
	}
}
