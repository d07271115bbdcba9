package main_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/e0dc0000/scribe/internal/testenv"
	"github.com/e0dc0000/scribe/internal/testui"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/stores"
)

// scribe ui, driven through the binary in a headless Chromium
// (internal/testui: skipped without Chromium unless
// SCRIBE_REQUIRE_CHROMIUM=1, which scripts/test sets). With
// SCRIBE_UI_SCREENSHOTS=DIR the pages are saved there as PNGs.

const uiCwd = "/home/alice/src/shop"

func uiSID(n int) string { return fmt.Sprintf("3c2a107b-5d4e-4f6a-9b8c-%012d", n) }

// startUI runs scribe ui --no-open on a free loopback port over the
// Claude folder dir and returns the address it printed (with its token).
func startUI(t *testing.T, dir string) string {
	t.Helper()
	bin := testenv.BuildScribe(t)
	cmd := exec.Command(bin, "ui", "--no-open", "--listen", "127.0.0.1:0", "--config-dir", dir)
	cmd.Env = cleanEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{64}`).FindString(sc.Text()); m != "" {
				found <- m
			}
		}
		close(found)
	}()
	select {
	case u, ok := <-found:
		if !ok {
			t.Fatalf("scribe ui printed no address; stderr:\n%s", stderr.String())
		}
		return u
	case <-time.After(30 * time.Second):
		t.Fatalf("scribe ui printed no address in 30 s; stderr:\n%s", stderr.String())
	}
	return ""
}

// uiFixture writes the sessions the browser tests look at: five short
// ones (two titled), a long one, a hostile one and one with an edit and a
// subagent.
func uiFixture(t *testing.T, dir string) (long, hostile, rich *testui.Session) {
	t.Helper()
	for n := range 5 {
		s := testui.NewSession(t, dir, uiCwd, uiSID(n))
		s.User(t, fmt.Sprintf("Short session %d: say hello", n))
		s.Assistant(t, testui.Text("Hello."))
		if n%2 == 1 {
			s.Meta(t, map[string]any{"type": "custom-title", "customTitle": fmt.Sprintf("Titled session %d", n)})
		}
	}
	long = testui.NewSession(t, dir, uiCwd, uiSID(10))
	for i := range 250 {
		long.User(t, fmt.Sprintf("long prompt %d", i))
		long.Assistant(t, testui.Text(fmt.Sprintf("long answer %d with `code` and **bold**", i)))
	}
	hostile = testui.HostileSession(t, dir, uiCwd, uiSID(11))
	rich = testui.NewSession(t, dir, uiCwd, uiSID(12))
	rich.User(t, "Fix the login bug in auth.ts")
	rich.Assistant(t, testui.Text("Let me look.\n\n```go\nfunc check(a, b string) bool {\n\treturn a == b\n}\n```"),
		testui.ToolUse("toolu_e1", "Edit", map[string]any{"file_path": "/home/alice/src/shop/auth.ts",
			"old_string": "if (hash == stored) {\n  return true;\n}", "new_string": "if (timingSafeEqual(hash, stored)) {\n  return true;\n}"}),
		testui.ToolUse("toolu_t1", "Task", map[string]any{"description": "find the handler", "subagent_type": "Explore", "prompt": "Search the codebase for the login handler"}))
	rich.User(t, []map[string]any{testui.ToolResult("toolu_e1", "The file was updated."), testui.ToolResult("toolu_t1", "It is in src/auth.ts:42")})
	rich.Assistant(t, testui.Text("Fixed: the compare is constant-time now."))
	agent := rich.Agent(t, "a1b2c3d4e5f6a7b8c", "toolu_t1")
	agent.User(t, "Search the codebase for the login handler")
	agent.Assistant(t, testui.Text("The handler is in src/auth.ts:42."))
	return long, hostile, rich
}

// TestUIInBrowser drives scribe ui in Chromium: the token, the list with
// the store's titles, the last message in view, a permalink to an early
// message, a hostile transcript that runs nothing, a line appended that
// shows up live, changes refused without the CSRF token.
func TestUIInBrowser(t *testing.T) {
	ctx := testui.Browser(t)
	dir := t.TempDir()
	long, hostile, rich := uiFixture(t, dir)
	addr := startUI(t, dir)
	base := strings.SplitN(addr, "/?", 2)[0]
	shots := os.Getenv("SCRIBE_UI_SCREENSHOTS")
	shot := func(name string) {
		if shots != "" {
			testui.Screenshot(t, ctx, filepath.Join(shots, name+".png"))
		}
	}
	var dialogs atomic.Int32
	go func() {
		for _, err := range chromedp.Events(ctx, page.JavascriptDialogOpening) {
			if err != nil {
				return
			}
			dialogs.Add(1)
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()

	// The token, exchanged for the cookie every subtest goes on with.
	testui.Do(t, ctx, chromedp.Navigate(addr), chromedp.WaitVisible(chromedp.CSS("ol.sessions")))
	if loc := testui.Eval[string](t, ctx, `location.href`); loc != base+"/" {
		t.Errorf("after the token the address is %q, want it without the token", loc)
	}
	if c := testui.Eval[string](t, ctx, `document.cookie`); c != "" {
		t.Errorf("the cookie is readable by script: %q", c)
	}
	t.Run("list", func(t *testing.T) {
		st := stores.NewLocal(stores.Claude, dir, nil)
		infos, err := st.List(context.Background(), sessions.ListOptions{IncludeWorktrees: true, IncludeProgrammatic: true})
		if err != nil {
			t.Fatal(err)
		}
		shown := testui.Eval[map[string]string](t, ctx, `Object.fromEntries([...document.querySelectorAll("ol.sessions a")].map(a => [new URL(a.href).pathname.split("/").pop(), a.textContent]))`)
		if len(shown) != len(infos) {
			t.Errorf("the list shows %d sessions, the store has %d", len(shown), len(infos))
		}
		for _, in := range infos {
			if shown[in.SessionID] != in.Summary {
				t.Errorf("session %s: the list says %q, Store.List %q", in.SessionID, shown[in.SessionID], in.Summary)
			}
		}
		// Each row's message count arrives after the list is shown.
		testui.Do(t, ctx, chromedp.Poll[chromedp.Void](`document.querySelectorAll("ol.sessions span.msgs[data-count]").length === 0`))
		if got := testui.Eval[string](t, ctx, `[...document.querySelectorAll("ol.sessions li")].find(li => li.querySelector("a").getAttribute("href").includes("`+long.ID+`")).querySelector("small").textContent`); !strings.Contains(got, " · 500 messages") {
			t.Errorf("the long session's facts: %q, want its 500 messages", got)
		}
		shot("list")
		testui.Do(t, ctx, chromedp.SendKeys(chromedp.ID("q"), "titled"),
			chromedp.Poll[chromedp.Void](`document.querySelectorAll("ol.sessions a").length === 2`))
		if got := testui.Eval[string](t, ctx, `[...document.querySelectorAll("ol.sessions a")].map(a => a.textContent).sort().join(", ")`); got != "Titled session 1, Titled session 3" {
			t.Errorf("filtered as typed: %q", got)
		}
	})
	t.Run("last message in view", func(t *testing.T) {
		last := "m-" + long.UUID(500)
		testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+long.ID), chromedp.WaitVisible(chromedp.ID(last)))
		if !inView(t, ctx, last) {
			t.Errorf("the last message is not in the viewport")
		}
		if n := testui.Eval[int](t, ctx, `document.querySelectorAll("article.msg").length`); n > 200 {
			t.Errorf("the page holds %d messages of 500", n)
		}
		shot("session-long")
		// Scrolling up fetches the earlier messages by itself, and the page
		// keeps at most 250 of them, dropping the far end.
		first := "m-" + long.UUID(1)
		testui.Do(t, ctx, chromedp.Poll[chromedp.Void](`(window.scrollTo(0, 0), !!document.getElementById("`+first+`"))`,
			chromedp.WithPollingInterval(50*time.Millisecond)))
		if n := testui.Eval[int](t, ctx, `document.querySelectorAll("article.msg").length`); n > 250 {
			t.Errorf("scrolled to the start, the page holds %d messages", n)
		}
		if !testui.Eval[bool](t, ctx, `!!document.querySelector("a.more.later") && !document.getElementById("`+last+`")`) {
			t.Error("scrolled to the start, the page still holds the end")
		}
		testui.Do(t, ctx, chromedp.Poll[chromedp.Void](`(window.scrollTo(0, document.documentElement.scrollHeight), !!document.getElementById("`+last+`"))`,
			chromedp.WithPollingInterval(50*time.Millisecond)))
		// k and j step through the messages.
		testui.Do(t, ctx, chromedp.KeyEvent("k"), chromedp.KeyEvent("k"))
		up := testui.Eval[string](t, ctx, `(document.querySelector("article.msg.current") || {}).id || ""`)
		testui.Do(t, ctx, chromedp.KeyEvent("j"))
		down := testui.Eval[string](t, ctx, `(document.querySelector("article.msg.current") || {}).id || ""`)
		if up == "" || down == "" || up == down || !inView(t, ctx, down) {
			t.Errorf("k k then j: %q then %q", up, down)
		}
	})
	t.Run("permalink", func(t *testing.T) {
		target := "m-" + long.UUID(120)
		testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+long.ID+"#"+target), chromedp.WaitVisible(chromedp.ID(target)))
		testui.Do(t, ctx, chromedp.Poll[chromedp.Void](`location.search.includes("at=")`))
		if !inView(t, ctx, target) {
			t.Errorf("the permalinked message is not in the viewport: top %v of %v", testui.Eval[float64](t, ctx, `document.getElementById("`+target+`").getBoundingClientRect().top`),
				testui.Eval[float64](t, ctx, `window.innerHeight`))
		}
		if got := testui.Eval[string](t, ctx, `(document.querySelector(":target") || {}).id || ""`); got != target {
			t.Errorf(":target is %q, want %q", got, target)
		}
		// Loading earlier messages keeps the reader where they were.
		before := testui.Eval[float64](t, ctx, `document.getElementById("`+target+`").getBoundingClientRect().top`)
		// (A script's click: chromedp.Click would scroll to the link first.)
		testui.Do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector("a.more.earlier").click()`),
			chromedp.WaitReady(chromedp.ID("m-"+long.UUID(1))))
		after := testui.Eval[float64](t, ctx, `document.getElementById("`+target+`").getBoundingClientRect().top`)
		if d := after - before; d > 2 || d < -2 {
			t.Errorf("loading earlier messages moved the reader by %.0f px", d)
		}
	})
	t.Run("search", func(t *testing.T) {
		// The full-text index of the Claude folder; the result lands on the
		// message, deep in its session.
		testui.Do(t, ctx, chromedp.Navigate(base+`/search?q="long+prompt+120"`), chromedp.WaitVisible(chromedp.CSS("ol.hits")))
		if got := testui.Eval[string](t, ctx, `[...document.querySelectorAll("ol.hits mark")].map(m => m.textContent).join(" ")`); got != "long prompt 120" {
			t.Errorf("the marked words: %q", got)
		}
		target := "m-" + long.UUID(241)
		clickAndLoad(t, ctx, `ol.hits a[href$="#`+target+`"]`)
		testui.Do(t, ctx, chromedp.WaitVisible(chromedp.ID(target)))
		if got := testui.Eval[string](t, ctx, `(document.querySelector(":target") || {}).id || ""`); got != target || !inView(t, ctx, target) {
			t.Errorf("the search result lands on %q", got)
		}
		shot("search")
	})
	t.Run("find in the page", func(t *testing.T) {
		testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+rich.ID), chromedp.WaitVisible(chromedp.ID("find")),
			chromedp.SendKeys(chromedp.ID("find"), "timingsafeequal"),
			chromedp.Poll[chromedp.Void](`document.querySelectorAll("#messages mark.find").length > 0`))
		if got := testui.Eval[string](t, ctx, `[...document.querySelectorAll("#messages mark.find")].map(m => m.textContent).join(" ")`); got != "timingSafeEqual" {
			t.Errorf("the matches: %q", got)
		}
		if !testui.Eval[bool](t, ctx, `document.querySelector("mark.find.now").closest("details").open`) {
			t.Error("the match is left folded")
		}
		shot("find")
		testui.Do(t, ctx, chromedp.Evaluate[chromedp.Void](`const f = document.getElementById("find"); f.value = ""; f.dispatchEvent(new Event("input"))`),
			chromedp.Poll[chromedp.Void](`document.querySelectorAll("mark.find").length === 0`))
		if !testui.Eval[bool](t, ctx, `document.querySelector("details.tool[data-tool=Edit] .diff .add").textContent.includes("timingSafeEqual(hash, stored)")`) {
			t.Error("the text is not whole again once the find is cleared")
		}
		// Words only a subagent's messages hold, its call never opened: the
		// find fetches it and lands there, the call opened.
		if testui.Eval[bool](t, ctx, `!!document.querySelector("details.tool[data-tool=Task]").open`) {
			t.Fatal("the Task call is open before the find")
		}
		testui.Do(t, ctx, chromedp.SendKeys(chromedp.ID("find"), "handler is in"),
			chromedp.Poll[chromedp.Void](`document.querySelectorAll("#messages mark.find").length > 0`, chromedp.WithPollingTimeout(20*time.Second)))
		if !testui.Eval[bool](t, ctx, `document.querySelector("mark.find.now").closest("section.agent") !== null && document.querySelector("details.tool[data-tool=Task]").open`) {
			t.Error("the match in the subagent is not the one shown, or its call is left folded")
		}
	})
	t.Run("find changed while fetching", func(t *testing.T) {
		// The subagent's fetch held back; a first find starts it, a second
		// (other words, only the subagent holds them) begins while it is
		// under way: it waits for the fetch rather than searching without.
		testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+rich.ID), chromedp.WaitVisible(chromedp.ID("find")),
			chromedp.Evaluate[chromedp.Void](`(() => {
				const f = window.fetch;
				window.fetch = (u, o) => String(u).includes("/inline") ? new Promise(r => setTimeout(r, 1500)).then(() => f(u, o)) : f(u, o);
			})()`),
			chromedp.Evaluate[chromedp.Void](`const f = document.getElementById("find"); f.value = "no such words"; f.dispatchEvent(new Event("input"))`),
			chromedp.Poll[chromedp.Void](`document.getElementById("find").form.querySelector(".found").textContent.startsWith("searching")`),
			chromedp.Evaluate[chromedp.Void](`const g = document.getElementById("find"); g.value = "handler is in"; g.dispatchEvent(new Event("input"))`),
			chromedp.Poll[chromedp.Void](`!document.querySelector("section.agent[data-fetch]") && document.querySelector("section.agent").textContent.includes("The handler is in")`,
				chromedp.WithPollingTimeout(20*time.Second)),
			chromedp.Poll[chromedp.Void](`!document.getElementById("find").form.querySelector(".found").textContent.startsWith("searching")`))
		if n := testui.Eval[int](t, ctx, `document.querySelectorAll("#messages mark.find").length`); n == 0 {
			t.Errorf("the find begun while the subagent was fetched found nothing: %q",
				testui.Eval[string](t, ctx, `document.getElementById("find").form.querySelector(".found").textContent`))
		}
	})
	t.Run("hostile", func(t *testing.T) {
		for _, p := range []string{"/", "/sessions/" + hostile.ID} {
			testui.Do(t, ctx, chromedp.Navigate(base+p), chromedp.WaitReady(chromedp.CSS("main")),
				chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("details").forEach(d => d.open = true)`),
				chromedp.Sleep(300*time.Millisecond)) // let anything that could run, run
			if pwned := testui.Eval[bool](t, ctx, `window.pwned !== undefined`); pwned {
				t.Errorf("%s: the transcript's script ran", p)
			}
			if n := testui.Eval[int](t, ctx, `document.querySelectorAll("main script, main iframe, main style, main svg, [onerror], [onload], a[href^='javascript:' i], a[href^='data:' i]").length`); n != 0 {
				t.Errorf("%s: %d elements came from the transcript", p, n)
			}
			if !testui.Eval[bool](t, ctx, `document.body.innerText.includes("<script>window.pwned=1</script>")`) {
				t.Errorf("%s: the markup is not shown as text", p)
			}
		}
		shot("hostile")
		if n := dialogs.Load(); n != 0 {
			t.Errorf("%d dialogs opened", n)
		}
	})
	t.Run("fork here", func(t *testing.T) {
		testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+rich.ID), chromedp.WaitReady(chromedp.CSS("button.fork-here")),
			// (A script's click: chromedp.Click would scroll to it first.)
			chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("button.fork-here")[1].click()`))
		want := testui.Eval[string](t, ctx, `document.querySelectorAll("button.fork-here")[1].dataset.uuid`)
		got := testui.Eval[string](t, ctx, `document.querySelector("form.fork input[name=up_to]").value`)
		if want == "" || got != want || !testui.Eval[bool](t, ctx, `document.querySelector("details.actions").open`) {
			t.Errorf("fork here: up_to %q, want %q, or the actions closed", got, want)
		}
	})
	t.Run("rich", func(t *testing.T) {
		testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+rich.ID), chromedp.WaitVisible(chromedp.CSS("details.tool")),
			chromedp.Evaluate[chromedp.Void](`document.querySelectorAll("details.tool").forEach(d => d.open = true)`))
		if got := testui.Eval[string](t, ctx, `document.querySelector("details.tool[data-tool=Edit] .diff .add").textContent`); !strings.Contains(got, "+ if (timingSafeEqual(hash, stored)) {") {
			t.Errorf("the edit's added line: %q", got)
		}
		// The subagent's messages, fetched once its call was opened.
		testui.Do(t, ctx, chromedp.Poll[chromedp.Void](`document.querySelector("details.tool[data-tool=Task] section.agent").innerText.includes("The handler is in src/auth.ts:42.")`,
			chromedp.WithPollingTimeout(20*time.Second)))
		if n := testui.Eval[int](t, ctx, `document.querySelectorAll(".md .chroma").length`); n != 1 {
			t.Errorf("%d highlighted code blocks, want 1", n)
		}
		shot("rich")
		emulateMedia(t, ctx, &emulation.MediaFeature{Name: "prefers-color-scheme", Value: "dark"})
		if bg := testui.Eval[string](t, ctx, `getComputedStyle(document.body).backgroundColor`); bg != "rgb(13, 17, 23)" {
			t.Errorf("dark mode background %q", bg)
		}
		shot("rich-dark")
		testui.Do(t, ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2), chromedp.EmulateMobile))
		if w := testui.Eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
			t.Errorf("at phone width the page is %d px wide", w)
		}
		shot("rich-phone")
		testui.Do(t, ctx, chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("ol.sessions")))
		shot("list-phone")
		emulateMedia(t, ctx)
		testui.Do(t, ctx, chromedp.EmulateViewport(1200, 900))
	})
	t.Run("live", func(t *testing.T) {
		testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+rich.ID), chromedp.WaitVisible(chromedp.CSS("article.msg")),
			chromedp.Evaluate[chromedp.Void](`window.marker = 42`), chromedp.Sleep(1500*time.Millisecond))
		uuid := rich.User(t, "A line appended while the page is open")
		testui.Do(t, ctx, chromedp.WaitVisible(chromedp.ID("m-"+uuid)))
		if m := testui.Eval[int](t, ctx, `window.marker || 0`); m != 42 {
			t.Error("the page was reloaded")
		}
		if n := testui.Eval[int](t, ctx, `document.querySelectorAll("#m-`+uuid+`").length`); n != 1 {
			t.Errorf("the new message is in the page %d times", n)
		}
	})
	t.Run("live while scrolled up", func(t *testing.T) {
		// 240 messages, all in the page once scrolled to the start; the
		// reader stays there while 20 more arrive live: past the cap of 250
		// the new end goes (a "later" link), not the messages they read.
		tall := testui.NewSession(t, dir, uiCwd, uiSID(13))
		for i := range 120 {
			tall.User(t, fmt.Sprintf("tall prompt %d", i))
			tall.Assistant(t, testui.Text(fmt.Sprintf("tall answer %d", i)))
		}
		first := "m-" + tall.UUID(1)
		testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+tall.ID), chromedp.WaitVisible(chromedp.CSS("article.msg")),
			chromedp.Poll[chromedp.Void](`(window.scrollTo(0, 0), !!document.getElementById("`+first+`") && !document.querySelector("a.more"))`,
				chromedp.WithPollingInterval(50*time.Millisecond)),
			chromedp.Sleep(1500*time.Millisecond)) // the live connection made
		top := testui.Eval[float64](t, ctx, `document.getElementById("`+first+`").getBoundingClientRect().top`)
		for i := range 20 {
			tall.User(t, fmt.Sprintf("tall live %d", i))
		}
		testui.Do(t, ctx, chromedp.Poll[chromedp.Void](`!!document.querySelector("a.more.later") && !document.querySelector("a.more[data-loading]")`,
			chromedp.WithPollingTimeout(20*time.Second)))
		if !testui.Eval[bool](t, ctx, `!!document.getElementById("`+first+`")`) {
			t.Fatal("the message the reader was at is gone")
		}
		if now := testui.Eval[float64](t, ctx, `document.getElementById("`+first+`").getBoundingClientRect().top`); now-top > 2 || now-top < -2 {
			t.Errorf("messages that arrived live moved the reader by %.0f px", now-top)
		}
		if n := testui.Eval[int](t, ctx, `document.querySelectorAll("article.msg").length`); n > 250 {
			t.Errorf("the page holds %d messages", n)
		}
	})
	t.Run("refused", func(t *testing.T) {
		// In the browser, with the cookie: a POST without the token.
		status := testui.Eval[int](t, ctx, `fetch("/sessions/`+rich.ID+`/rename", {method: "POST", body: new URLSearchParams({title: "Hijacked"})}).then(r => r.status)`)
		if status != http.StatusForbidden {
			t.Errorf("POST without the CSRF token: %d", status)
		}
		status = testui.Eval[int](t, ctx, `fetch("/sessions/`+rich.ID+`/rename", {method: "POST", body: new URLSearchParams({title: "Renamed in the browser", csrf: document.querySelector("input[name=csrf]").value})}).then(r => r.status)`)
		if status != http.StatusOK {
			t.Errorf("POST with the token: %d", status)
		}
		if info, _ := stores.NewLocal(stores.Claude, dir, nil).Info(context.Background(), rich.ID); info == nil || info.Summary != "Renamed in the browser" {
			t.Errorf("after the rename: %+v", info)
		}
		// Without the cookie: no token, a wrong one, the used one; a
		// foreign Host with the cookie's browser.
		for _, u := range []string{base + "/", base + "/?token=" + strings.Repeat("0", 64), addr} {
			resp, err := http.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
				t.Errorf("GET %s without the cookie: %d", u, resp.StatusCode)
			}
		}
		foreignHostRefused(t, base+"/")
	})
}

// foreignHostRefused fails unless a GET of u with a foreign Host (the
// same port: a name rebound to the server's address) gets 403.
func foreignHostRefused(t *testing.T, u string) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	port := regexp.MustCompile(`:\d+`).FindString(strings.TrimPrefix(u, "http://"))
	req.Host = "rebound.example" + port
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a foreign Host: %d", resp.StatusCode)
	}
}

// inView reports whether the element with that id is within the viewport.
func inView(t *testing.T, ctx context.Context, id string) bool {
	t.Helper()
	return testui.Eval[bool](t, ctx, `(() => { const r = document.getElementById("`+id+`").getBoundingClientRect();
		return r.top >= 0 && r.top < window.innerHeight; })()`)
}

// emulateMedia sets the media features the page sees (none: the
// browser's own).
func emulateMedia(t *testing.T, ctx context.Context, features ...*emulation.MediaFeature) {
	t.Helper()
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: features}); err != nil {
		t.Fatalf("emulate %v: %v", features, err)
	}
}
