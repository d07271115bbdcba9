package main_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/internal/testui"
)

// serveChain is a user row of session sid whose parent is parent ("" for
// the first).
func serveChain(sid, uuid, parent, text string) string {
	row := serveRow(sid, uuid, "/home/alice/shop", text)
	if parent != "" {
		row = strings.Replace(row, `"parentUuid":null`, `"parentUuid":"`+parent+`"`, 1)
	}
	return row
}

// TestUIOnServe drives the viewer of scribe serve (/ui/) in Chromium with
// two tenants: a wrong token is refused at the sign-in form; alpha signed
// in sees its sessions and not beta's, not by the list, not by an id
// address, not by search, and search lands on the message; a POST without
// the CSRF token is refused; alpha renames a session from its page, and
// an entry pushed to the server appears on the open page without a
// reload; a share link made from the session's page opens in another
// browser profile without signing in, redacted, reaching its session
// only, and stops opening once revoked or expired; alpha moves a session
// to the server's trash (gone from the list) and restores it from
// /ui/trash (back with its title); alpha's read-only token is offered no
// change and no trash page, and its POSTs are refused; beta sees
// nothing of alpha's; a foreign Host is refused.
func TestUIOnServe(t *testing.T) {
	s := startTenantsServer(t)
	const (
		sidA, sidA2, sidB = "a1a10000-0000-4000-8000-000000000001", "a1a10000-0000-4000-8000-000000000002", "b2b20000-0000-4000-8000-000000000003"
		uA4               = "a1a10000-0000-4000-8000-0000000000a4"
		secret            = "AKIAIOSFODNN7EXAMPLE"
	)
	// Alpha's sessions as Claude Code writes them, sent with scribe push;
	// beta's posted as Claude Code's remote client posts its entries.
	claude := t.TempDir()
	a := testui.NewSession(t, claude, "/home/alice/shop", sidA)
	uA1 := a.User(t, "alpha wants the flux capacitor")
	uA2 := a.AssistantUsage(t, "claude-sonnet-4-5", "msg_alpha1", map[string]any{"input_tokens": 1200, "output_tokens": 3400},
		testui.Text("the key is "+secret+" for the flux capacitor"))
	uA3 := a.User(t, "thanks, alpha out")
	a2 := testui.NewSession(t, claude, "/home/alice/shop", sidA2)
	a2.User(t, "alpha's quiet session")
	a2.Meta(t, map[string]any{"type": "custom-title", "customTitle": "Alpha's quiet session, titled"})
	pushAs(t, s, claude, tenantTokA)
	postAs(t, s, tenantTokB, sidB, []string{serveChain(sidB, "b2b20000-0000-4000-8000-0000000000c1", "", "beta's flux capacitor plans")})
	var sdkTitles []string
	for _, in := range peer.Find(t).List(t, claude, "") {
		sdkTitles = append(sdkTitles, in.SessionID+"="+in.Summary)
	}
	sort.Strings(sdkTitles)
	ctx := testui.Browser(t)
	base := s.url() + "/ui"
	ids := func() string {
		return testui.Eval[string](t, ctx, `[...document.querySelectorAll("ol.sessions a")].map(a => new URL(a.href).pathname.split("/").pop()).sort().join(" ")`)
	}
	titles := func() string {
		return testui.Eval[string](t, ctx, `[...document.querySelectorAll("ol.sessions a")].map(a => new URL(a.href).pathname.split("/").pop() + "=" + a.textContent).sort().join(" ")`)
	}
	signIn := func(t *testing.T, tok string) {
		t.Helper()
		testui.Do(t, ctx, chromedp.Navigate(base+"/login"), chromedp.WaitVisible(chromedp.CSS("input[name=token]")),
			chromedp.SetValue(chromedp.CSS("input[name=token]"), tok))
		clickAndLoad(t, ctx, "form.login button")
	}

	t.Run("sign in", func(t *testing.T) {
		testui.Do(t, ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("input[name=token]")))
		if p := testui.Eval[string](t, ctx, `location.pathname`); p != "/ui/login" {
			t.Errorf("before signing in, /ui/ goes to %s", p)
		}
		signIn(t, "not-a-token")
		if txt := testui.Eval[string](t, ctx, `document.body.innerText`); !strings.Contains(txt, "not a token of this server") {
			t.Errorf("a wrong token: %q", txt)
		}
		signIn(t, tenantTokA)
		testui.Do(t, ctx, chromedp.WaitVisible(chromedp.CSS("ol.sessions")))
		// The titles the SDK's listSessions gives the sessions pushed.
		if got, want := titles(), strings.Join(sdkTitles, " "); got != want || len(sdkTitles) != 2 {
			t.Errorf("alpha's list: %q, the SDK's titles %q", got, want)
		}
		if c := testui.Eval[string](t, ctx, `document.cookie`); c != "" {
			t.Errorf("the cookie is readable by script: %q", c)
		}
	})
	t.Run("another tenant's session", func(t *testing.T) {
		testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+sidB), chromedp.WaitReady(chromedp.CSS("main")))
		if txt := testui.Eval[string](t, ctx, `document.title + " " + document.body.innerText`); !strings.Contains(txt, "Not Found") || strings.Contains(txt, "beta") {
			t.Errorf("alpha opens beta's session: %q", txt)
		}
	})
	t.Run("rename", func(t *testing.T) {
		// A token with the write scope renames through the page's form:
		// the SDK's custom-title line, appended on the server.
		testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+sidA2), chromedp.WaitReady(chromedp.CSS("main")),
			chromedp.Evaluate[chromedp.Void](`document.querySelector("details.actions").open = true`),
			chromedp.SetValue(chromedp.CSS(`form[action*="/rename"] input[name=title]`), "Alpha's renamed session"))
		clickAndLoad(t, ctx, `form[action*="/rename"] button`)
		testui.Do(t, ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("ol.sessions")))
		if got := titles(); !strings.Contains(got, sidA2+"=Alpha's renamed session") {
			t.Errorf("after the rename the list shows %q", got)
		}
	})
	t.Run("live", func(t *testing.T) {
		// An entry pushed to the server appears on the open page, which is
		// not loaded again.
		testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+sidA), chromedp.WaitVisible(chromedp.ID("m-"+uA3)),
			chromedp.Evaluate[chromedp.Void](`window.scribeOldPage = true`))
		postAs(t, s, tenantTokA, sidA, []string{serveChain(sidA, uA4, uA3, "a late word from alpha")})
		testui.Do(t, ctx, chromedp.WaitVisible(chromedp.ID("m-"+uA4)))
		if !testui.Eval[bool](t, ctx, `window.scribeOldPage === true && document.getElementById("m-`+uA4+`").innerText.includes("a late word from alpha")`) {
			t.Error("the new entry came with a reload, or without its text")
		}
	})
	t.Run("search", func(t *testing.T) {
		testui.Do(t, ctx, chromedp.Navigate(base+"/search?q=flux+capacitor"), chromedp.WaitVisible(chromedp.CSS("ol.hits")))
		links := testui.Eval[string](t, ctx, `[...document.querySelectorAll("ol.hits a")].map(a => a.getAttribute("href")).join(" ")`)
		if !strings.Contains(links, "/ui/sessions/"+sidA+"?") || strings.Contains(links, sidB) {
			t.Errorf("alpha's search links: %q", links)
		}
		if n := testui.Eval[int](t, ctx, `document.querySelectorAll("ol.hits mark").length`); n == 0 {
			t.Error("no matched word is marked")
		}
		clickAndLoad(t, ctx, `ol.hits a[href*="`+uA2+`"]`)
		testui.Do(t, ctx, chromedp.WaitVisible(chromedp.ID("m-"+uA2)))
		if got := testui.Eval[string](t, ctx, `(document.querySelector(":target") || {}).id || ""`); got != "m-"+uA2 {
			t.Errorf("the search result lands on %q", got)
		}
	})
	usageRow := func() string {
		testui.Do(t, ctx, chromedp.Navigate(base+"/usage?since=2000-01-01&until=2099-12-31"), chromedp.WaitReady(chromedp.CSS("main.usage")))
		return testui.Eval[string](t, ctx, `(document.querySelector("#usage-totals tbody tr") || {innerText: "none"}).innerText.replace(/\s+/g, " ").trim()`)
	}
	t.Run("usage", func(t *testing.T) {
		// The tenant's usage through the server, as scribe usage counts
		// the same transcripts in the folder they were pushed from.
		var want struct {
			Totals struct{ InputTokens, OutputTokens, TotalTokens int }
		}
		scribeJSON(t, runOpts{env: []string{"HOME=" + t.TempDir()}}, &want, "usage", "daily", "--json", "--config-dir", claude)
		got := usageRow()
		if want.Totals.TotalTokens != 4600 || !strings.HasPrefix(got, "1,200 3,400 0 0 4,600 ") {
			t.Errorf("alpha's usage on serve: %q; scribe usage: %+v", got, want.Totals)
		}
	})
	var link string
	t.Run("share", func(t *testing.T) {
		testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+sidA), chromedp.WaitVisible(chromedp.CSS("details.actions")))
		status := testui.Eval[int](t, ctx, `fetch("/ui/share", {method: "POST", body: new URLSearchParams({session: "`+sidA+`", expires: "24h"})}).then(r => r.status)`)
		if status != http.StatusForbidden {
			t.Errorf("a share without the CSRF token: %d", status)
		}
		testui.Do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("details.actions").open = true`),
			chromedp.WaitVisible(chromedp.CSS("form.share button")))
		clickAndLoad(t, ctx, "form.share button")
		link = testui.Eval[string](t, ctx, `document.querySelector("table.shares code").textContent`)
		if !strings.HasPrefix(link, base+"/s/") {
			t.Fatalf("the share link %q", link)
		}
		other := isolated(t, ctx)
		testui.Do(t, other, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.ID("m-"+uA3)))
		txt := testui.Eval[string](t, other, `document.body.innerText`)
		if !strings.Contains(txt, "alpha wants the flux capacitor") || strings.Contains(txt, secret) || !strings.Contains(txt, "[REDACTED:") || !strings.Contains(txt, "for the flux capacitor") {
			t.Errorf("the shared page:\n%s", txt)
		}
		if strings.Contains(txt, "Sign out") || strings.Contains(txt, "alpha's quiet session") {
			t.Errorf("the shared page shows more than the session:\n%s", txt)
		}
		// The link reaches its session only: not another of alpha's, not
		// beta's, not the list.
		for _, u := range []string{link + "/sessions/" + sidA2 + "?store=share", link + "/sessions/" + sidB + "?store=share", link + "/sessions/" + sidB + "/window?store=share&after=" + uA1} {
			resp, err := http.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound || strings.Contains(string(body), "beta") || strings.Contains(string(body), "quiet") {
				t.Errorf("GET %s through the link: %d\n%s", u, resp.StatusCode, body)
			}
		}
		// Nor does alpha make a link to beta's session.
		status = testui.Eval[int](t, ctx, `fetch("/ui/share", {method: "POST", body: new URLSearchParams({session: "`+sidB+`", expires: "24h",
			csrf: document.querySelector("form.signout input[name=csrf]").value})}).then(r => r.status)`)
		if status != http.StatusNotFound {
			t.Errorf("alpha shares beta's session: %d", status)
		}
	})
	t.Run("revoke and expire", func(t *testing.T) {
		other := isolated(t, ctx)
		opens := func(u string) bool {
			testui.Do(t, other, chromedp.Navigate(u), chromedp.WaitReady(chromedp.CSS("main")))
			return testui.Eval[bool](t, other, `document.querySelectorAll("article.msg").length > 0`)
		}
		// A link of eight seconds, made with the page's CSRF token. (It
		// must open at first only when the first look came before it
		// expired: a loaded machine can take longer than that.)
		testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+sidA), chromedp.WaitVisible(chromedp.CSS("form.share")))
		made := time.Now()
		short := testui.Eval[string](t, ctx, `fetch("/ui/share", {method: "POST", body: new URLSearchParams({session: "`+sidA+`", expires: "8s",
			csrf: document.querySelector("form.share input[name=csrf]").value})}).then(r => r.text()).then(h => new DOMParser().parseFromString(h, "text/html").querySelector("table.shares code").textContent)`)
		if !opens(short) && time.Since(made) < 7*time.Second {
			t.Fatal("the short link does not open")
		}
		deadline := time.Now().Add(30 * time.Second)
		for opens(short) {
			if time.Now().After(deadline) {
				t.Fatal("the short link still opens 30 s after it was made")
			}
			time.Sleep(500 * time.Millisecond)
		}
		if txt := testui.Eval[string](t, other, `document.body.innerText`); !strings.Contains(txt, "expired") {
			t.Errorf("an expired link says %q", txt)
		}
		// The first link, revoked with its button.
		testui.Do(t, ctx, chromedp.Navigate(base+"/shares"), chromedp.WaitVisible(chromedp.CSS("table.shares")),
			chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll("table.shares code")].find(c => c.textContent === "`+link+`").closest("tr").classList.add("target")`))
		clickAndLoad(t, ctx, "tr.target form button")
		testui.Do(t, ctx, chromedp.WaitVisible(chromedp.CSS("tr.share.revoked")))
		if opens(link) {
			t.Error("the revoked link still opens")
		}
	})
	t.Run("downloads", func(t *testing.T) {
		testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+sidA), chromedp.WaitVisible(chromedp.ID("m-"+uA2)))
		offered := testui.Eval[string](t, ctx, `[...document.querySelectorAll("p.downloads a")].map(a => new URL(a.href).searchParams.get("format")).join(" ")`)
		if offered != "html md bundle" {
			t.Errorf("serve's viewer offers downloads %q, want html, md and bundle", offered)
		}
		md := testui.Eval[string](t, ctx, `fetch("/ui/sessions/`+sidA+`/export?format=md&store=serve/alpha").then(r => r.text())`)
		if !strings.Contains(md, "alpha wants the flux capacitor") || !strings.Contains(md, "thanks, alpha out") {
			t.Errorf("the Markdown download:\n%s", md)
		}
		// The bundle: what the server holds of the session, imported into
		// another folder.
		b64 := testui.Eval[string](t, ctx, `fetch("/ui/sessions/`+sidA+`/export?format=bundle&store=serve/alpha").then(r => r.ok ? r.arrayBuffer() : Promise.reject(r.status)).then(b => { let s = ""; new Uint8Array(b).forEach(c => s += String.fromCharCode(c)); return btoa(s); })`)
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(raw) == 0 {
			t.Fatalf("the bundle download: %v (%d bytes)", err, len(raw))
		}
		path, other := filepath.Join(t.TempDir(), "a.tar.gz"), t.TempDir()
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		env := []string{"HOME=" + t.TempDir()}
		mustScribe(t, runOpts{env: env}, "import", path, "--cwd", "/work/elsewhere", "--config-dir", other)
		if out := mustScribe(t, runOpts{env: env}, "show", sidA, "--config-dir", other); !strings.Contains(out, "alpha wants the flux capacitor") || !strings.Contains(out, "thanks, alpha out") {
			t.Errorf("the imported bundle does not show the session:\n%s", out)
		}
	})
	t.Run("fork", func(t *testing.T) {
		// A token with the write scope forks up to a message ("Fork
		// here"): the fork is posted to the server as a new session.
		testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+sidA), chromedp.WaitVisible(chromedp.ID("m-"+uA2)),
			chromedp.Evaluate[chromedp.Void](`document.querySelector('button.fork-here[data-uuid="`+uA2+`"]').click()`),
			chromedp.SetValue(chromedp.CSS(`form.fork input[name=title]`), "Alpha's fork"))
		clickAndLoad(t, ctx, `form.fork button`)
		testui.Do(t, ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("ol.sessions")))
		forkID := testui.Eval[string](t, ctx, `(([...document.querySelectorAll("ol.sessions a")].find(a => a.textContent === "Alpha's fork") || {}).pathname || "").split("/").pop()`)
		if forkID == "" || forkID == sidA || forkID == sidA2 {
			t.Fatalf("after the fork the list shows %q", titles())
		}
		testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+forkID), chromedp.WaitVisible(chromedp.CSS("article.msg")))
		text := testui.Eval[string](t, ctx, `document.querySelector("#messages").innerText`)
		if !strings.Contains(text, "alpha wants the flux capacitor") || !strings.Contains(text, "for the flux capacitor") || strings.Contains(text, "thanks, alpha out") {
			t.Errorf("the fork's conversation (up to the second message):\n%s", text)
		}
	})
	t.Run("trash", func(t *testing.T) {
		// A token with the write scope moves a session to the server's
		// trash (after the confirmation), and restores it from /ui/trash.
		testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+sidA2), chromedp.WaitReady(chromedp.CSS("main")),
			chromedp.Evaluate[chromedp.Void](`document.querySelector("details.actions").open = true`))
		clickAndLoad(t, ctx, `form[action*="/trash"] button`)
		clickAndLoad(t, ctx, `main.confirm button.danger`)
		testui.Do(t, ctx, chromedp.WaitVisible(chromedp.CSS("ol.sessions")))
		if got := ids(); strings.Contains(got, sidA2) || !strings.Contains(got, sidA) {
			t.Fatalf("after Move to trash the list shows %q", got)
		}
		clickAndLoad(t, ctx, `a.trash-link`)
		// (textContent: the list's rows are content-visibility: auto, whose
		// text innerText leaves out until the browser has drawn them.)
		if txt := testui.Eval[string](t, ctx, `location.pathname + " " + document.querySelector("main.trash").textContent`); !strings.HasPrefix(txt, "/ui/trash ") ||
			!strings.Contains(txt, "Alpha's renamed session") || !strings.Contains(txt, sidA2) {
			t.Fatalf("the trash page: %q\n%s", txt, testui.Eval[string](t, ctx, `document.documentElement.outerHTML`))
		}
		clickAndLoad(t, ctx, `li.trash-item button`)
		testui.Do(t, ctx, chromedp.WaitVisible(chromedp.CSS("ol.sessions")))
		if got := titles(); !strings.Contains(got, sidA2+"=Alpha's renamed session") {
			t.Fatalf("after Restore the list shows %q", got)
		}
	})
	signOut := func(t *testing.T) {
		t.Helper()
		testui.Do(t, ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("form.signout")))
		clickAndLoad(t, ctx, "form.signout button")
		testui.Do(t, ctx, chromedp.WaitVisible(chromedp.CSS("input[name=token]")))
		testui.Do(t, ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("input[name=token]")))
	}
	t.Run("read only", func(t *testing.T) {
		signOut(t)
		signIn(t, tenantTokARO)
		testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+sidA2), chromedp.WaitVisible(chromedp.CSS("form.signout")))
		if forms := testui.Eval[string](t, ctx, `[...document.querySelectorAll("form[method=post]")].map(f => new URL(f.action).pathname).join(" ")`); strings.Contains(forms, "/sessions/") {
			t.Errorf("a read-only token is offered %q", forms)
		}
		if acct := testui.Eval[string](t, ctx, `document.querySelector(".account").textContent`); acct != "alpha (read only)" {
			t.Errorf("the account shows %q", acct)
		}
		// A POST with the page's own CSRF token is refused all the same.
		for _, action := range []string{"rename", "tag"} {
			status := testui.Eval[int](t, ctx, `fetch("/ui/sessions/`+sidA2+`/`+action+`?store=serve/alpha", {method: "POST", body: new URLSearchParams({title: "read-only rename", tag: "ro",
				csrf: document.querySelector("form.signout input[name=csrf]").value})}).then(r => r.status)`)
			if status != http.StatusForbidden {
				t.Errorf("a read-only %s: %d", action, status)
			}
		}
		status := testui.Eval[int](t, ctx, `fetch("/ui/trash/restore?store=serve/alpha", {method: "POST", body: new URLSearchParams({ref: "`+sidA2+`",
			csrf: document.querySelector("form.signout input[name=csrf]").value})}).then(r => r.status)`)
		if status != http.StatusForbidden {
			t.Errorf("a read-only restore: %d", status)
		}
		testui.Do(t, ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("ol.sessions")))
		if got := titles(); !strings.Contains(got, sidA2+"=Alpha's renamed session") {
			t.Errorf("after the refused rename the list shows %q", got)
		}
		if testui.Eval[bool](t, ctx, `document.querySelector("a.trash-link") !== null`) {
			t.Error("a read-only token is offered the trash page")
		}
	})
	t.Run("sign out and beta", func(t *testing.T) {
		signOut(t)
		signIn(t, tenantTokB)
		testui.Do(t, ctx, chromedp.WaitVisible(chromedp.CSS("ol.sessions")))
		if got := ids(); got != sidB {
			t.Errorf("beta's list: %q", got)
		}
		testui.Do(t, ctx, chromedp.Navigate(base+"/search?q=flux"), chromedp.WaitReady(chromedp.CSS("main")))
		if links := testui.Eval[string](t, ctx, `[...document.querySelectorAll("ol.hits a")].map(a => a.getAttribute("href")).join(" ")`); strings.Contains(links, sidA) || !strings.Contains(links, sidB) {
			t.Errorf("beta's search links: %q", links)
		}
		if got := usageRow(); strings.Contains(got, "1,200") || strings.Contains(got, "4,600") {
			t.Errorf("beta's usage shows alpha's: %q", got)
		}
		for _, f := range []string{"md", "bundle"} {
			if st := testui.Eval[int](t, ctx, `fetch("/ui/sessions/`+sidA+`/export?format=`+f+`&store=serve/beta").then(r => r.status)`); st == 200 {
				t.Errorf("beta downloads alpha's session (%s)", f)
			}
		}
	})
	t.Run("foreign host", func(t *testing.T) { foreignHostRefused(t, base+"/login") })
}

// pushAs sends every session of the Claude folder claude to the server
// with scribe push, as tenant token tok.
func pushAs(t *testing.T, s *cloudServer, claude, tok string) {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "push.hcl")
	hcl := fmt.Sprintf("config_dir = %q\nlog_level = \"warn\"\nsink \"events\" \"team\" {\n  base_url = %q\n  token    = %q\n}\n", claude, s.url(), tok)
	if err := os.WriteFile(cfg, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	var rep cloudPushReport
	scribeJSON(t, runOpts{}, &rep, "push", "--all", "--json", "--no-progress", "--config", cfg)
	if rep.Stored == 0 || len(rep.Errors) > 0 {
		t.Fatalf("push: %+v", rep)
	}
}

// clickAndLoad clicks what selector finds and waits for the page it
// loads (a form's answer, a link's page). The page is asked until it is
// the new one: while it changes, a question can fail.
func clickAndLoad(t *testing.T, ctx context.Context, selector string) {
	t.Helper()
	testui.Do(t, ctx, chromedp.Evaluate[chromedp.Void](`window.scribeOldPage = true`), chromedp.Click(chromedp.CSS(selector)))
	deadline := time.Now().Add(testui.Timeout)
	for {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		done, err := chromedp.Run(qctx, chromedp.Evaluate[bool](`!window.scribeOldPage && document.readyState === "complete"`))
		cancel()
		if err == nil && done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("clicking %s loaded no page (%v)", selector, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// isolated is a tab in a browser profile of its own (no cookies of ctx's),
// closed at the end of the test.
func isolated(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	other, cancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	// The first run opens the tab, for as long as other lives: not under
	// a timeout, which would close it.
	if err := chromedp.Do(other); err != nil {
		t.Fatal(err)
	}
	return other
}
