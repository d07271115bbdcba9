package main_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/e0dc0000/scribe/internal/testui"
)

// hostileProject and hostileModel are a project folder and a model name
// that would run script if the usage page let them through.
const (
	hostileProject = "/home/carol/<img src=x onerror=window.pwned=1>"
	hostileModel   = "<img src=x onerror=window.pwned=2>"
)

// usageFixture writes sessions that carry usage: two projects (one
// named as markup), two models and one unknown as markup, two days, a
// message streamed over two rows.
func usageFixture(t *testing.T, dir string) (shop, carol *testui.Session) {
	t.Helper()
	u := func(in, out, cw, cr int) map[string]any {
		return map[string]any{"input_tokens": in, "output_tokens": out, "cache_creation_input_tokens": cw, "cache_read_input_tokens": cr}
	}
	shop = testui.NewSession(t, dir, uiCwd, uiSID(20))
	shop.At(time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC))
	shop.User(t, "Add a cart")
	shop.AssistantUsage(t, "claude-sonnet-4-5", "msg_u1", u(10, 5, 1000, 20000), testui.Text("Streaming…"))
	shop.AssistantUsage(t, "claude-sonnet-4-5", "msg_u1", u(10, 300, 1000, 20000), testui.Text("Done: the cart."))
	shop.User(t, "And tests")
	shop.AssistantUsage(t, "claude-opus-4-1", "msg_u2", u(3, 800, 5000, 40000), testui.Text("Tests added."))
	carol = testui.NewSession(t, dir, hostileProject, uiSID(21))
	carol.At(time.Date(2026, 1, 11, 12, 0, 0, 0, time.UTC))
	carol.User(t, "Hello "+testui.Hostile)
	carol.AssistantUsage(t, "claude-opus-4-1", "msg_u3", u(7, 120, 3000, 9000), testui.Text("Hi."))
	carol.AssistantUsage(t, hostileModel, "msg_u4", u(1, 2, 3, 4), testui.Text("Odd model."))
	return shop, carol
}

// usageFigures are a report's tokens and cost as the page's cells and
// the JSON name them.
type usageFigures struct {
	Input       int64   `json:"inputTokens"`
	Output      int64   `json:"outputTokens"`
	CacheCreate int64   `json:"cacheCreationTokens"`
	CacheRead   int64   `json:"cacheReadTokens"`
	Total       int64   `json:"totalTokens"`
	Cost        float64 `json:"totalCost"`
}

// cellsJS reads the usage cells of the table with id into usageFigures.
func cellsJS(id string) string {
	return fmt.Sprintf(`(() => { const v = k => Number(document.querySelector("#%s td[data-kind=" + k + "]").dataset.value);
		return {inputTokens: v("input"), outputTokens: v("output"), cacheCreationTokens: v("cacheCreate"), cacheReadTokens: v("cacheRead"),
			totalTokens: v("total"), totalCost: v("cost")}; })()`, id)
}

// sameFigures fails unless got's tokens equal want's and the costs are
// within 1e-6.
func sameFigures(t *testing.T, what string, got, want usageFigures) {
	t.Helper()
	c1, c2 := got.Cost, want.Cost
	got.Cost, want.Cost = 0, 0
	if got != want || math.Abs(c1-c2) > 1e-6 {
		got.Cost, want.Cost = c1, c2
		t.Errorf("%s: the page shows %+v, scribe usage %+v", what, got, want)
	}
	if want.Total == 0 || c2 == 0 {
		t.Errorf("%s: scribe usage counts nothing: the fixture carries no usage", what)
	}
}

// TestUIUsageInBrowser: the usage page's totals are scribe usage daily
// --json's for the same days, a session page's usage is its row of
// scribe usage session --json, and markup in project and model names runs
// nothing.
func TestUIUsageInBrowser(t *testing.T) {
	ctx := testui.Browser(t)
	dir := t.TempDir()
	shop, _ := usageFixture(t, dir)
	env := runOpts{}
	var daily struct {
		Totals usageFigures `json:"totals"`
	}
	scribeJSON(t, env, &daily, "usage", "daily", "--json", "--since", "2026-01-01", "--until", "2026-01-31", "--config-dir", dir)
	var bySession struct {
		Session []struct {
			Period string `json:"period"`
			usageFigures
		} `json:"session"`
	}
	scribeJSON(t, env, &bySession, "usage", "session", "--json", "--config-dir", dir)
	addr := startUI(t, dir)
	base := strings.SplitN(addr, "/?", 2)[0]
	testui.Do(t, ctx, chromedp.Navigate(addr), chromedp.WaitVisible(chromedp.CSS("ol.sessions")),
		chromedp.Click(chromedp.CSS("a.usage-link")), chromedp.WaitVisible(chromedp.ID("usage-totals")))
	testui.Do(t, ctx, chromedp.Navigate(base+"/usage?since=2026-01-01&until=2026-01-31"), chromedp.WaitVisible(chromedp.CSS("svg.daily")))
	sameFigures(t, "the usage page's totals", testui.Eval[usageFigures](t, ctx, cellsJS("usage-totals")), daily.Totals)
	if n := testui.Eval[int](t, ctx, `document.querySelectorAll("svg.daily g.bar").length`); n != 2 {
		t.Errorf("the daily chart has %d bars, want 2 (two days)", n)
	}
	if n := testui.Eval[int](t, ctx, `document.querySelectorAll("#usage-projects tbody tr").length`); n != 2 {
		t.Errorf("the projects' table has %d rows, want 2", n)
	}
	if got := testui.Eval[string](t, ctx, `document.querySelector("#usage-projects").textContent`); !strings.Contains(got, "<img src=x onerror=window.pwned=1>") {
		t.Errorf("the hostile project's name is not shown as text: %q", got)
	}
	testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+shop.ID), chromedp.WaitVisible(chromedp.ID("usage-session")))
	var want *usageFigures
	for i := range bySession.Session {
		if bySession.Session[i].Period == shop.ID {
			want = &bySession.Session[i].usageFigures
		}
	}
	if want == nil {
		t.Fatalf("scribe usage session has no row for %s", shop.ID)
	}
	sameFigures(t, "the session page's usage", testui.Eval[usageFigures](t, ctx, cellsJS("usage-session")), *want)
	if got := testui.Eval[string](t, ctx, `document.querySelector(".usage-models").textContent`); got != "claude-opus-4-1, claude-sonnet-4-5" && got != "claude-sonnet-4-5, claude-opus-4-1" {
		t.Errorf("the session page's models: %q", got)
	}
	// At a small phone's width the usage pages stay as wide as the phone
	// (their tables scroll inside themselves).
	testui.Do(t, ctx, chromedp.EmulateViewport(300, 640, chromedp.EmulateScale(2), chromedp.EmulateMobile))
	for _, p := range []string{"/sessions/" + shop.ID, "/usage?since=2000-01-01&until=2099-12-31"} {
		testui.Do(t, ctx, chromedp.Navigate(base+p), chromedp.WaitVisible(chromedp.CSS("table")))
		if w := testui.Eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 300 {
			t.Errorf("%s at phone width is %d px wide", p, w)
		}
	}
	testui.Do(t, ctx, chromedp.EmulateViewport(1200, 900))
	testui.Do(t, ctx, chromedp.Navigate(base+"/sessions/"+uiSID(21)), chromedp.WaitVisible(chromedp.ID("usage-session")))
	if testui.Eval[bool](t, ctx, `window.pwned !== undefined`) {
		t.Errorf("a hostile name ran script")
	}
	testui.Do(t, ctx, chromedp.Navigate(base+"/usage?since=2026-01-01&until=2026-01-31"), chromedp.WaitVisible(chromedp.CSS("svg.daily")), chromedp.Sleep(300*time.Millisecond))
	if testui.Eval[bool](t, ctx, `window.pwned !== undefined`) || testui.Eval[int](t, ctx, `document.querySelectorAll("img").length`) != 0 {
		t.Errorf("a hostile project or model name ran script or made an element")
	}
}
