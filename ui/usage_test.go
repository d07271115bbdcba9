package ui_test

import (
	"context"
	"math"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	xhtml "golang.org/x/net/html"

	"github.com/e0dc0000/scribe/internal/testui"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/stores"
	"github.com/e0dc0000/scribe/ui"
)

// hostileModel is a model name that would run script if the page let it
// through.
const hostileModel = `<script>window.pwned=1</script><img src=x onerror=alert(1)>`

// usageReport is what the fake Usage function gives: four days (one
// without usage), two sessions, blocks with a gap and an active one.
func usageReport() *ui.UsageReport {
	tok := func(n int64) ui.UsageTokens {
		return ui.UsageTokens{Input: n, Output: 2 * n, CacheCreate: 3 * n, CacheRead: 4 * n, Total: 10 * n}
	}
	at := func(d, h int) time.Time { return time.Date(2026, 1, d, h, 0, 0, 0, time.UTC) }
	return &ui.UsageReport{UsageTokens: tok(7), Cost: 7, Unpriced: []string{hostileModel},
		Days: []ui.UsageDay{
			{Day: "2026-01-08", UsageTokens: tok(1), Cost: 1, Models: []ui.UsageModel{{Model: "claude-a", Cost: 0.75}, {Model: hostileModel, Cost: 0.25}}},
			{Day: "2026-01-10", UsageTokens: tok(4), Cost: 4, Models: []ui.UsageModel{{Model: "claude-a", Cost: 4}}},
			{Day: "2026-01-11", UsageTokens: tok(2), Cost: 2, Models: []ui.UsageModel{{Model: hostileModel, Cost: 2}}},
		},
		Sessions: []ui.UsageSession{
			{ID: sid(1), UsageTokens: tok(5), Cost: 5, Models: []ui.UsageModel{{Model: "claude-a", Cost: 5}}},
			{ID: sid(2), UsageTokens: tok(2), Cost: 2, Models: []ui.UsageModel{{Model: hostileModel, Cost: 2}}},
		},
		Blocks: []ui.UsageBlock{
			{Start: at(8, 9), End: at(8, 14), UsageTokens: tok(1), Cost: 1, Models: []string{"claude-a", hostileModel}},
			{Start: at(8, 14), End: at(10, 9), Gap: true},
			{Start: at(10, 9), End: at(10, 14), UsageTokens: tok(4), Cost: 4, Models: []string{"claude-a"}},
			{Start: at(11, 9), End: at(11, 14), Active: true, UsageTokens: tok(2), Cost: 2, Models: []string{hostileModel}},
		}}
}

// usageHandler serves dir with a fake Usage function; asked records the
// queries it got.
func usageHandler(t *testing.T, dir string, asked *[]ui.UsageQuery) *ui.Handler {
	t.Helper()
	st := stores.NewLocal(stores.Claude, dir, nil)
	h, err := ui.New(ui.Options{Stores: []string{stores.Claude}, Open: func(context.Context, string) (sessions.Store, error) { return st, nil },
		Usage: func(_ context.Context, _ sessions.Store, q ui.UsageQuery) (*ui.UsageReport, error) {
			*asked = append(*asked, q)
			rep := usageReport()
			if q.Session != "" {
				for _, s := range rep.Sessions {
					if s.ID == q.Session {
						return &ui.UsageReport{UsageTokens: s.UsageTokens, Cost: s.Cost, Sessions: []ui.UsageSession{s}}, nil
					}
				}
				return &ui.UsageReport{}, nil
			}
			return rep, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

// usageFixture serves session 1 (of folder shop) and a hostile session 2
// with the fake Usage function.
func usageFixture(t *testing.T) (*ui.Handler, *[]ui.UsageQuery) {
	t.Helper()
	dir := t.TempDir()
	conversation(t, dir, 1, 1)
	testui.HostileSession(t, dir, "/home/bob/app", sid(2))
	var asked []ui.UsageQuery
	return usageHandler(t, dir, &asked), &asked
}

// find is every element under n whose tag is tag and whose class list
// holds class ("" for any).
func find(n *xhtml.Node, tag, class string) []*xhtml.Node {
	var out []*xhtml.Node
	for d := range n.Descendants() {
		if d.Type == xhtml.ElementNode && d.Data == tag && (class == "" || strings.Contains(" "+attr(d, "class")+" ", " "+class+" ")) {
			out = append(out, d)
		}
	}
	return out
}

func numAttr(t *testing.T, n *xhtml.Node, key string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(attr(n, key), 64)
	if err != nil {
		t.Fatalf("<%s %s=%q>: %v", n.Data, key, attr(n, key), err)
	}
	return v
}

func near(a, b float64) bool { return math.Abs(a-b) < 0.02 }

// The usage page draws a bar per day with usage (its models stacked, the
// heights in proportion to the costs, a day without usage left empty), a
// bar per project (widths in proportion, the sessions summed by the
// listing's project) and a bar per 5-hour block (the active one marked, a
// gap drawn as a gap), each chart with a table of its figures; the range
// asked for reaches the Usage function.
func TestUsagePageCharts(t *testing.T) {
	h, asked := usageFixture(t)
	code, body := get(t, h, "/usage?since=2026-01-08&until=2026-01-11")
	if code != http.StatusOK {
		t.Fatalf("GET /usage: %d\n%s", code, body)
	}
	if len(*asked) != 1 || (*asked)[0] != (ui.UsageQuery{Since: "20260108", Until: "20260111"}) {
		t.Errorf("Usage asked %+v, want since 20260108 until 20260111", *asked)
	}
	doc, err := xhtml.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	checkDaily(t, doc)
	checkProjects(t, doc)
	checkBlocks(t, doc)
	if cells := find(find(doc, "table", "usage-totals")[0], "td", "n"); len(cells) != 6 || attr(cells[5], "data-value") != "7" || attr(cells[4], "data-value") != "70" {
		t.Errorf("the totals' cells are not the report's (cost 7, 70 tokens)")
	}
	if rows := find(find(doc, "table", "usage-days")[0], "tr", ""); len(rows) != 4 {
		t.Errorf("the days' table has %d rows, want a header and 3 days", len(rows))
	}
}

func checkDaily(t *testing.T, doc *xhtml.Node) {
	t.Helper()
	svg := oneChart(t, doc, "daily")
	bars := find(svg, "g", "bar")
	if len(bars) != 3 {
		t.Fatalf("%d day bars, want 3 (the days with usage)", len(bars))
	}
	want := []float64{1, 4, 2}
	var x []float64
	for i, b := range bars {
		h := 0.0
		for _, r := range find(b, "rect", "") {
			h += numAttr(t, r, "height")
		}
		if !near(h, want[i]/4*180) {
			t.Errorf("day %d: bar %.2f high, want %.2f (cost %v of the most, 4)", i, h, want[i]/4*180, want[i])
		}
		x = append(x, numAttr(t, find(b, "rect", "")[0], "x"))
	}
	if slot := x[2] - x[1]; !near(x[1]-x[0], 2*slot) {
		t.Errorf("bars at x %v: the day without usage (2026-01-09) keeps no empty place", x)
	}
	if segs := find(bars[0], "rect", ""); len(segs) != 2 || !near(numAttr(t, segs[0], "height"), 0.75/4*180) {
		t.Errorf("the first day's bar is not its two models stacked (0.75 and 0.25)")
	}
	if items := find(find(doc, "ul", "legend")[0], "li", ""); len(items) != 2 || textOf(items[1]) != "claude-a" {
		t.Errorf("the legend is not the two models")
	}
}

func checkProjects(t *testing.T, doc *xhtml.Node) {
	t.Helper()
	svg := oneChart(t, doc, "projects")
	rects := find(svg, "rect", "")
	if len(rects) != 2 {
		t.Fatalf("%d project bars, want 2", len(rects))
	}
	if w0, w1 := numAttr(t, rects[0], "width"), numAttr(t, rects[1], "width"); !near(w1/w0, 2.0/5) {
		t.Errorf("project bars %v and %v wide, want in proportion 5:2", w0, w1)
	}
	cells := find(find(doc, "table", "usage-projects")[0], "td", "")
	if len(cells) < 2 || textOf(cells[0]) != "shop" {
		t.Errorf("the costliest project is not shop (session 1's folder)")
	}
}

func checkBlocks(t *testing.T, doc *xhtml.Node) {
	t.Helper()
	svg := oneChart(t, doc, "blocks")
	rects := find(svg, "rect", "block")
	if len(rects) != 3 || len(find(svg, "line", "gap")) != 1 {
		t.Fatalf("%d block bars and %d gaps, want 3 and 1", len(rects), len(find(svg, "line", "gap")))
	}
	for i, c := range []float64{1, 4, 2} {
		if h := numAttr(t, rects[i], "height"); !near(h, c/4*180) {
			t.Errorf("block %d: %.2f high, want %.2f", i, h, c/4*180)
		}
	}
	if active := find(svg, "rect", "active"); len(active) != 1 || active[0] != rects[2] {
		t.Errorf("the active block is not the one marked")
	}
}

// oneChart is the page's chart of class (it fails unless there is
// exactly one).
func oneChart(t *testing.T, doc *xhtml.Node, class string) *xhtml.Node {
	t.Helper()
	svg := find(doc, "svg", class)
	if len(svg) != 1 {
		t.Fatalf("%d %s charts, want 1", len(svg), class)
	}
	return svg[0]
}

// textOf is the text under n.
func textOf(n *xhtml.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == xhtml.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

// Model and project names are text: a hostile one runs nothing, in the
// charts, their titles, the legend and the tables.
func TestUsagePageHostileNames(t *testing.T) {
	h, _ := usageFixture(t)
	_, body := get(t, h, "/usage?since=2026-01-08&until=2026-01-11")
	checkInert(t, "usage", body)
	doc, _ := xhtml.Parse(strings.NewReader(body))
	if !strings.Contains(textOf(doc), hostileModel) || !strings.Contains(textOf(doc), "<svg onload=window.pwned=1>") {
		t.Errorf("the hostile model and project names are not shown as text")
	}
	_, page := get(t, h, "/sessions/"+sid(2))
	checkInert(t, "session", page)
}

// A session's page shows its usage (the Usage function's figures for it)
// and its models; the header links the usage page. Without a Usage
// function there is neither.
func TestSessionPageShowsUsage(t *testing.T) {
	dir := t.TempDir()
	conversation(t, dir, 1, 1)
	var asked []ui.UsageQuery
	h := usageHandler(t, dir, &asked)
	_, body := get(t, h, "/sessions/"+sid(1))
	// The page says where its usage is counted; the conversation does
	// not wait for it.
	if !strings.Contains(body, `<dd class="usage-slot" data-fetch="/sessions/`+sid(1)+`/usage?store=claude">`) || strings.Contains(body, "usage-session") {
		t.Fatalf("the session page does not leave its usage to a fetch")
	}
	_, part := get(t, h, "/sessions/"+sid(1)+"/usage?store=claude")
	doc, _ := xhtml.Parse(strings.NewReader(part))
	tables := find(doc, "table", "usage-session")
	if len(tables) != 1 {
		t.Fatalf("the session page shows no usage table")
	}
	cells := find(tables[0], "td", "n")
	if len(cells) != 6 || attr(cells[0], "data-value") != "5" || attr(cells[4], "data-value") != "50" || attr(cells[5], "data-value") != "5" {
		t.Errorf("the session's usage cells are not its figures (5 input, 50 in all, $5)")
	}
	if !strings.Contains(body, `href="/usage?store=claude"`) {
		t.Errorf("the header does not link the usage page")
	}
	if code, _ := get(t, h, "/usage?since=2026-13-01"); code != http.StatusBadRequest {
		t.Errorf("a bad day: %d, want 400", code)
	}
	plain, _ := newHandler(t, dir)
	if code, _ := get(t, plain, "/usage"); code != http.StatusNotFound {
		t.Errorf("/usage without a Usage function: %d, want 404", code)
	}
	if _, body := get(t, plain, "/sessions/"+sid(1)); strings.Contains(body, "usage-slot") || strings.Contains(body, "/usage?") {
		t.Errorf("without a Usage function the page still shows usage")
	}
}

// A session the listing leaves out counts under the project of the folder
// holding it: the path the listing gives that folder's other sessions,
// else the folder's name; only one whose folder is not known counts
// under "(unknown)".
func TestUsageProjectsOfUnlistedSessions(t *testing.T) {
	dir := t.TempDir()
	conversation(t, dir, 1, 1)
	st := stores.NewLocal(stores.Claude, dir, nil)
	infos, err := st.List(context.Background(), sessions.ListOptions{})
	if err != nil || len(infos) != 1 {
		t.Fatalf("List: %v, %v", infos, err)
	}
	folder := filepath.Base(infos[0].ProjectDir)
	tok := ui.UsageTokens{Input: 1, Total: 1}
	rep := &ui.UsageReport{UsageTokens: ui.UsageTokens{Input: 10, Total: 10}, Cost: 10, Sessions: []ui.UsageSession{
		{ID: sid(1), Project: folder, UsageTokens: tok, Cost: 1},
		{ID: sid(3), Project: folder, UsageTokens: tok, Cost: 2}, // not listed, same folder
		{ID: sid(4), Project: "-home-carol-lib", UsageTokens: tok, Cost: 3},
		{ID: sid(5), UsageTokens: tok, Cost: 4},
	}}
	h, err := ui.New(ui.Options{Stores: []string{stores.Claude}, Open: func(context.Context, string) (sessions.Store, error) { return st, nil },
		Usage: func(context.Context, sessions.Store, ui.UsageQuery) (*ui.UsageReport, error) { return rep, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	_, body := get(t, h, "/usage")
	doc, err := xhtml.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tr := range find(find(doc, "table", "usage-projects")[0], "tr", "") {
		cells := find(tr, "td", "")
		if len(cells) == 0 {
			continue
		}
		got[textOf(cells[0])] = attr(cells[len(cells)-1], "data-value")
	}
	want := map[string]string{filepath.Base(cwd): "3", "-home-carol-lib": "3", "(unknown)": "4"}
	if len(got) != len(want) {
		t.Fatalf("projects %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("project %q costs %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
}
