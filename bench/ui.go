package main

// The ui case (go run ./bench -case ui): the web viewer in Chromium
// against the Claude Agent SDK's getSessionMessages, on the same sessions,
// in one run.
//
//   - session: the time from navigating to /sessions/<id> (scribe ui, the
//     full build, in headless Chromium through chromedp; measured by the
//     page: performance.now() when it holds) until the
//     session's last message (the last uuid the SDK returns) is in the
//     viewport, against `node peer.mjs messages <cfg> <id> --compact` timed
//     from start to exit: the work any viewer built on the SDK's reader
//     does before it can draw. Two sessions of internal/gen.LargeSession:
//     about 100 MB with a compact boundary near its end (400 subagents),
//     and about 50 MB with no boundary. The page's DOM nodes and JS heap
//     (performance.memory, precise) are read once the message is in view.
//     The first navigation is reported apart (the server's first read of
//     the session's subagents); the table shows the median of the rest,
//     and of visits made with the transcript touched just before each
//     (cache cold: the viewer keeps a conversation it rebuilt while its
//     file is unchanged, so these read the whole transcript again).
//   - list: navigating to / over -ui-list-sessions sessions
//     (gen-corpus.mjs bulk) until the table is drawn: the first time (the
//     sessions index is built) and then (the listing kept by the server).
//
// Every case is verified: the page shows the SDK's last message, and the
// list the number of sessions the corpus has.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/e0dc0000/scribe/internal/gen"
	"github.com/e0dc0000/scribe/internal/testui"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

var (
	uiListSessions = flag.Int("ui-list-sessions", 10000, "-case ui: sessions in the list corpus")
	uiListOnly     = flag.Bool("ui-list-only", false, "-case ui: measure the list only (no sessions, no SDK; for diagnosis)")
	uiTimeline     = flag.Bool("ui-timeline", false, "-case ui: print each visit's Navigation Timing (request, response, parsed, loaded, painted) to stderr, for diagnosis")
	uiBin          = flag.String("ui-bin", "", "-case ui: the scribe build to measure (scripts/install's folder holds it and scribe-full) instead of this tree's: another commit's, to compare")
)

// The ui goals (issue 28).
const (
	uiGoalRatio  = 4    // the last message in view in at most 1/4 of the SDK's read time
	uiGoalDOM    = 5000 // DOM nodes of a session page at most
	uiGoalHeapMB = 64   // JS heap of a session page at most, MB
	uiGoalList   = 100 * time.Millisecond
)

// uiSession is one session's figures.
type uiSession struct {
	Name     string        `json:"name"`
	Bytes    int64         `json:"bytes"`
	Messages int           `json:"sdk_messages"`
	SDK      time.Duration `json:"sdk_median_ns"`
	First    time.Duration `json:"ui_first_ns"`
	UI       time.Duration `json:"ui_median_ns"`
	// Cold is the page's median with the transcript touched before each
	// visit, so that the viewer's read cache cannot answer: what a
	// session's first visit costs the server.
	Cold time.Duration `json:"ui_cold_median_ns"`
	// Server is the page's HTML from request to its last byte
	// (Navigation Timing), of the last run.
	Server   time.Duration   `json:"server_ns"`
	DOM      int             `json:"dom_nodes"`
	HeapMB   float64         `json:"js_heap_mb"`
	SDKRuns  []time.Duration `json:"sdk_runs_ns"`
	UIRuns   []time.Duration `json:"ui_runs_ns"`
	ColdRuns []time.Duration `json:"ui_cold_runs_ns"`
}

type uiReport struct {
	Date       string        `json:"date"`
	Command    string        `json:"command"`
	Go         string        `json:"go"`
	OS         string        `json:"os"`
	CPUs       int           `json:"cpus"`
	Runs       int           `json:"runs"`
	Node       string        `json:"node"`
	SDK        string        `json:"sdk"`
	Chromium   string        `json:"chromium"`
	Sessions   []uiSession   `json:"sessions"`
	ListN      int           `json:"list_sessions"`
	ListFirst  time.Duration `json:"list_first_ns"`
	ListWarm   time.Duration `json:"list_median_ns"`
	ListDOM    int           `json:"list_dom_nodes"`
	ListServer time.Duration `json:"list_server_ns"`
	// ListPaint is the list's first contentful paint (Paint Timing: from
	// the navigation's start until the browser painted the page, its
	// rows with it), median.
	ListPaint time.Duration `json:"list_first_paint_ns"`
	// ListFloor is the viewer's smallest page, measured as the list is.
	ListFloor time.Duration `json:"list_floor_ns"`
	Goals     []readGoal    `json:"goals"`
}

func mainUI(ctx context.Context, o options) {
	rep, err := runUIBench(ctx, o)
	emitReport(o, rep, err, printUITable, writeUIMarkdown)
}

// uiBench is one run of the ui benchmark.
type uiBench struct {
	ctx                context.Context
	o                  options
	pr                 *readPeer
	tmp, bin, launcher string
	browser            context.Context
}

func runUIBench(ctx context.Context, o options) (*uiReport, error) {
	if o.Runs < 1 {
		return nil, errors.New("-runs must be at least 1")
	}
	chromium := testui.FindChromium()
	if chromium == "" {
		return nil, errors.New("no Chromium on PATH (apt-get install chromium)")
	}
	pr, err := findReadPeer(ctx)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(o.Dir, "scribe-ui-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	b := &uiBench{ctx: ctx, o: o, pr: pr, tmp: tmp}
	if b.bin = *uiBin; b.bin == "" {
		if b.bin, _, err = buildCLI(ctx, filepath.Join(tmp, "bin")); err != nil {
			return nil, err
		}
	}
	if b.launcher, err = buildReadLauncher(ctx, tmp); err != nil {
		return nil, err
	}
	browser, stop, err := testui.NewBrowser(chromium, filepath.Join(tmp, "browser"))
	if err != nil {
		return nil, err
	}
	defer stop()
	b.browser = browser
	v, _ := exec.CommandContext(ctx, chromium, "--version").Output()
	rep := &uiReport{Date: time.Now().Format("2006-01-02"), Command: o.Command, Go: runtime.Version(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, CPUs: runtime.NumCPU(), Runs: o.Runs, Node: pr.nodeVersion,
		SDK: pr.version, Chromium: strings.TrimSpace(string(v))}
	if !*uiListOnly {
		if err := b.sessions(rep); err != nil {
			return nil, err
		}
	}
	if err := b.list(rep); err != nil {
		return nil, err
	}
	rep.Goals = uiGoals(rep)
	return rep, nil
}

// sessions generates the two large sessions and measures each.
func (b *uiBench) sessions(rep *uiReport) error {
	cfg := filepath.Join(b.tmp, "sessions")
	dir := jsonl.Layout{ConfigDir: cfg}.ProjectDir(readShowCwd)
	base, stop, err := b.serve(cfg)
	if err != nil {
		return err
	}
	defer stop()
	for _, s := range []struct {
		name string
		lo   gen.LargeOptions
	}{
		{"100 MB, boundary near the end", gen.LargeOptions{CWD: readShowCwd, Seed: 1}},
		{"50 MB, no boundary", gen.LargeOptions{CWD: readShowCwd, Seed: 2, NoBoundary: true, Progress: 17000}},
	} {
		res, err := gen.LargeSession(dir, s.lo)
		if err != nil {
			return err
		}
		b.o.logf("ui: %s: %.1f MB", s.name, float64(res.Size)/1e6)
		us, err := b.session(base, cfg, res.SessionID, res.Path)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		us.Name, us.Bytes = s.name, res.Size
		rep.Sessions = append(rep.Sessions, *us)
	}
	return nil
}

// session times the SDK and the page on one session, alternating.
func (b *uiBench) session(base, cfg, id, path string) (*uiSession, error) {
	us := &uiSession{}
	sdk := &readCase{Name: "SDK getSessionMessages", bin: b.pr.node, dir: b.pr.dir, env: readNodeEnv(),
		args: []string{filepath.Join(b.pr.dir, "peer.mjs"), "messages", cfg, id, "--compact"}}
	sdk.Command = readCommandLine(sdk.bin, sdk.args, b.tmp, b.pr.dir)
	var last string
	for run := 0; run <= b.o.Runs; run++ {
		r, out, err := readMeasure(b.ctx, b.launcher, sdk)
		if err != nil {
			return nil, err
		}
		var msgs []struct {
			UUID string `json:"uuid"`
		}
		if err := json.Unmarshal(out, &msgs); err != nil || len(msgs) == 0 {
			return nil, fmt.Errorf("the SDK's messages: %v (%d)", err, len(msgs))
		}
		last, us.Messages = msgs[len(msgs)-1].UUID, len(msgs)
		took, err := b.visit(base+"/sessions/"+id, lastInView(last))
		if err != nil {
			return nil, err
		}
		if run == 0 {
			us.First = took // the server reads the session's subagents once
			continue
		}
		us.SDKRuns, us.UIRuns = append(us.SDKRuns, r.Wall), append(us.UIRuns, took)
		// Touched, then left longer than the viewer's racy window, as a
		// session no one writes: the cold visit reads it again and keeps
		// it, for the next run's visit.
		now := time.Now()
		if err := os.Chtimes(path, now, now); err != nil {
			return nil, err
		}
		time.Sleep(jsonl.RacyWindow + 100*time.Millisecond)
		if took, err = b.visit(base+"/sessions/"+id, lastInView(last)); err != nil {
			return nil, err
		}
		us.ColdRuns = append(us.ColdRuns, took)
	}
	us.SDK, us.UI, us.Cold = medianDur(us.SDKRuns), medianDur(us.UIRuns), medianDur(us.ColdRuns)
	var err error
	if us.Server, err = serverTime(b.browser); err != nil {
		return nil, err
	}
	if us.DOM, err = chromedp.Run(b.browser, chromedp.Evaluate[int](`document.getElementsByTagName("*").length`)); err != nil {
		return nil, err
	}
	heap, err := chromedp.Run(b.browser, chromedp.Evaluate[float64](`performance.memory.usedJSHeapSize`))
	us.HeapMB = heap / 1e6
	return us, err
}

// serverTime is the shown page's HTML from request to last byte.
func serverTime(ctx context.Context) (time.Duration, error) {
	ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => { const n = performance.getEntriesByType("navigation")[0]; return n.responseEnd - n.requestStart; })()`))
	return time.Duration(ms * float64(time.Millisecond)), err
}

// lastInView is the script true once the message uuid is in the viewport.
func lastInView(uuid string) string {
	return `(() => { const e = document.getElementById("m-` + uuid + `"); if (!e) return false;
		const r = e.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; })()`
}

// visit navigates the browser to u from another page of the viewer (its
// style sheet: a page of the same site, as a reader going from the list
// to a session; from about:blank every visit would start a renderer
// process) and returns the time from the navigation's start until the
// script ready is true in a frame the browser showed, as the page
// measures it: a script given to the new document before its own checks
// ready at each animation frame and notes performance.now() at the start
// of the frame after the first where it holds (that frame rendered and
// handed on: the time comes out at or after the page's first contentful
// paint, which Chromium stamps when the frame is presented), or at that
// paint when it comes later; no DevTools protocol round trip after the
// load event counts.
func (b *uiBench) visit(u, ready string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(b.browser, 2*time.Minute)
	defer cancel()
	from := u[:strings.Index(u[len("http://"):], "/")+len("http://")] + "/static/ui.css"
	if err := chromedp.Do(ctx, chromedp.Navigate(from)); err != nil {
		return 0, err
	}
	watch := `(() => { const ready = () => (` + ready + `);
		const tick = () => { if (ready()) { requestAnimationFrame(() => { window.benchReady = performance.now(); }); return; } requestAnimationFrame(tick); };
		requestAnimationFrame(tick); })()`
	added, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: watch})
	if err != nil {
		return 0, err
	}
	defer func() {
		_, _ = chromedp.Call(b.browser, page.RemoveScriptToEvaluateOnNewDocument, page.RemoveScriptToEvaluateOnNewDocumentParams{Identifier: added.Identifier})
	}()
	if err := chromedp.Do(ctx, chromedp.Navigate(u), chromedp.WaitReady(chromedp.CSS("main"))); err != nil {
		return 0, err
	}
	// Nothing is seen before the first contentful paint: the later of the
	// two.
	ms, err := chromedp.Run(ctx, chromedp.Poll[float64](`(() => { const p = performance.getEntriesByName("first-contentful-paint")[0];
		return !!window.benchReady && !!p && Math.max(window.benchReady, p.startTime); })()`, chromedp.WithPollingTimeout(2*time.Minute)))
	if *uiTimeline {
		tl, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const n = performance.getEntriesByType("navigation")[0]; const f = (performance.getEntriesByName("first-contentful-paint")[0]||{}).startTime; return JSON.stringify({reqStart:n.requestStart|0, respStart:n.responseStart|0, respEnd:n.responseEnd|0, domInt:n.domInteractive|0, dcl:n.domContentLoadedEventEnd|0, load:n.loadEventEnd|0, fcp:f|0, size:n.transferSize}); })()`))
		fmt.Fprintf(os.Stderr, "bench: ui: %s ready=%.0f %s\n", u[strings.LastIndex(u, "/"):], ms, tl)
	}
	return time.Duration(ms * float64(time.Millisecond)), err
}

// floor is the same measure on the viewer's smallest page (the error
// page of a session that does not exist: the header, a line, the same
// style sheet and script), median of the runs: what any page of the
// viewer costs the browser on this machine.
func (b *uiBench) floor(base string) (time.Duration, error) {
	var runs []time.Duration
	for run := 0; run <= b.o.Runs; run++ {
		took, err := b.visit(base+"/sessions/00000000-0000-4000-8000-000000000000", `!!document.querySelector("main.error")`)
		if err != nil {
			return 0, fmt.Errorf("the error page: %w", err)
		}
		if run > 0 {
			runs = append(runs, took)
		}
	}
	return medianDur(runs), nil
}

// firstPaint waits for the shown page's first contentful paint and
// returns its time from the navigation's start.
func firstPaint(browser context.Context) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(browser, time.Minute)
	defer cancel()
	ms, err := chromedp.Run(ctx, chromedp.Poll[float64](`(performance.getEntriesByName("first-contentful-paint")[0] || {}).startTime || false`))
	return time.Duration(ms * float64(time.Millisecond)), err
}

// list measures the sessions list over the bulk corpus.
func (b *uiBench) list(rep *uiReport) error {
	cfg, cwd := filepath.Join(b.tmp, "list"), filepath.Join(b.tmp, "list-proj")
	gc := exec.CommandContext(b.ctx, b.pr.node, filepath.Join(b.pr.dir, "gen-corpus.mjs"), "bulk", cfg, cwd,
		fmt.Sprint(*uiListSessions), "3000", "1")
	gc.Dir, gc.Env = b.pr.dir, readNodeEnv()
	if out, err := gc.CombinedOutput(); err != nil {
		return fmt.Errorf("gen-corpus.mjs bulk: %v\n%s", err, tail(string(out)))
	}
	base, stop, err := b.serve(cfg)
	if err != nil {
		return err
	}
	defer stop()
	rep.ListN = *uiListSessions
	want := fmt.Sprintf(`document.querySelector("p.count") && document.querySelector("p.count").textContent.includes("of %d sessions")`, rep.ListN)
	var runs, paints []time.Duration
	for run := 0; run <= b.o.Runs; run++ {
		took, err := b.visit(base+"/", want)
		if err != nil {
			return fmt.Errorf("the list: %w", err)
		}
		paint, err := firstPaint(b.browser)
		if err != nil {
			return fmt.Errorf("the list's first paint: %w", err)
		}
		if run == 0 {
			rep.ListFirst = took
		} else {
			runs, paints = append(runs, took), append(paints, paint)
		}
	}
	rep.ListWarm, rep.ListPaint = medianDur(runs), medianDur(paints)
	if rep.ListServer, err = serverTime(b.browser); err != nil {
		return err
	}
	if rep.ListDOM, err = chromedp.Run(b.browser, chromedp.Evaluate[int](`document.getElementsByTagName("*").length`)); err != nil {
		return err
	}
	rep.ListFloor, err = b.floor(base)
	return err
}

// serve runs scribe ui over the Claude folder cfg, signs the browser in
// and returns its address; stop ends it.
func (b *uiBench) serve(cfg string) (string, func(), error) {
	cmd := exec.CommandContext(b.ctx, b.bin, "ui", "--no-open", "--listen", "127.0.0.1:0", "--config-dir", cfg)
	cmd.Env = append(cliEnv(), "HOME="+filepath.Join(b.tmp, "home"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	addr, err := printedAddress(out)
	if err != nil {
		stop()
		return "", nil, err
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	ctx, cancel := context.WithTimeout(b.browser, time.Minute)
	defer cancel()
	// Signed in through the style sheet's address, so that the first
	// listing is the list case's first visit.
	if err := chromedp.Do(ctx, chromedp.Navigate(strings.Replace(addr, "/?token=", "/static/ui.css?token=", 1))); err != nil {
		stop()
		return "", nil, err
	}
	return strings.SplitN(addr, "/?", 2)[0], stop, nil
}

// printedAddress reads scribe ui's output up to the address it prints.
func printedAddress(r io.Reader) (string, error) {
	re := regexp.MustCompile(`http://127\.0\.0\.1:\d+/\?token=[0-9a-f]+`)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if m := re.FindString(sc.Text()); m != "" {
			return m, nil
		}
	}
	return "", errors.New("scribe ui printed no address")
}

func uiGoals(r *uiReport) []readGoal {
	var gs []readGoal
	for _, s := range r.Sessions {
		ratio := float64(s.SDK) / float64(max(s.UI, 1))
		cold := float64(s.SDK) / float64(max(s.Cold, 1))
		gs = append(gs,
			readGoal{What: s.Name + ": last message in view vs getSessionMessages", Got: fmt.Sprintf("%s vs %s (1/%.1f)", fmtDur(s.UI), fmtDur(s.SDK), ratio),
				Goal: fmt.Sprintf("≤ 1/%d", uiGoalRatio), Met: ratio >= uiGoalRatio},
			readGoal{What: s.Name + ": the same, the read cache cold (transcript touched)", Got: fmt.Sprintf("%s vs %s (1/%.1f)", fmtDur(s.Cold), fmtDur(s.SDK), cold),
				Goal: fmt.Sprintf("≤ 1/%d", uiGoalRatio), Met: cold >= uiGoalRatio},
			readGoal{What: s.Name + ": DOM nodes", Got: fmt.Sprint(s.DOM), Goal: fmt.Sprintf("≤ %d", uiGoalDOM), Met: s.DOM <= uiGoalDOM},
			readGoal{What: s.Name + ": JS heap", Got: fmt.Sprintf("%.1f MB", s.HeapMB), Goal: fmt.Sprintf("≤ %d MB", uiGoalHeapMB), Met: s.HeapMB <= uiGoalHeapMB})
	}
	return append(gs,
		readGoal{What: fmt.Sprintf("list of %d sessions, first page's HTML (listing kept)", r.ListN), Got: fmtDur(r.ListServer),
			Goal: "≤ " + fmtDur(uiGoalList), Met: r.ListServer <= uiGoalList},
		readGoal{What: fmt.Sprintf("list of %d sessions, first page drawn (listing kept)", r.ListN), Got: fmtDur(r.ListWarm),
			Goal: "≤ " + fmtDur(uiGoalList), Met: r.ListWarm <= uiGoalList})
}

func uiRows(r *uiReport) [][]string {
	var rows [][]string
	for _, s := range r.Sessions {
		rows = append(rows, []string{s.Name, fmt.Sprint(s.Messages), fmtDur(s.SDK), fmtDur(s.First), fmtDur(s.UI), fmtDur(s.Cold), fmtDur(s.Server),
			fmt.Sprintf("1/%.1f", float64(s.SDK)/float64(max(s.UI, 1))), fmt.Sprintf("1/%.1f", float64(s.SDK)/float64(max(s.Cold, 1))),
			fmt.Sprint(s.DOM), fmt.Sprintf("%.1f MB", s.HeapMB)})
	}
	return append(rows, []string{fmt.Sprintf("list, %d sessions", r.ListN), "", "", fmtDur(r.ListFirst), fmtDur(r.ListWarm), "", fmtDur(r.ListServer), "", "", fmt.Sprint(r.ListDOM), ""},
		[]string{fmt.Sprintf("list, %d sessions: first contentful paint", r.ListN), "", "", "", fmtDur(r.ListPaint), "", "", "", "", "", ""},
		[]string{"the viewer's smallest page (a 404)", "", "", "", fmtDur(r.ListFloor), "", "", "", "", "", ""})
}

var uiHeader = []string{"case", "SDK messages", "SDK getSessionMessages", "page, first", "page, median", "page, cache cold", "its HTML", "page / SDK", "cold / SDK", "DOM nodes", "JS heap"}

func printUITable(w io.Writer, r *uiReport) {
	fmt.Fprintln(w, strings.Join(uiHeader, " | "))
	for _, row := range uiRows(r) {
		fmt.Fprintln(w, strings.Join(row, " | "))
	}
	for _, g := range r.Goals {
		fmt.Fprintf(w, "goal: %s: %s (%s) met=%v\n", g.What, g.Got, g.Goal, g.Met)
	}
}

func writeUIMarkdown(dir string, r *uiReport) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, r.Date+"-ui.md")
	var b strings.Builder
	fmt.Fprintf(&b, "# scribe ui benchmark — %s\n\n`%s`\n\n", r.Date, r.Command)
	fmt.Fprintf(&b, "- machine: %s, %d CPUs, %s; %s; Claude Agent SDK %s; %s (headless, chromedp)\n", r.OS, r.CPUs, r.Go, r.Node, r.SDK, r.Chromium)
	fmt.Fprintf(&b, "- sessions: internal/gen.LargeSession (seed 1: boundary near the end, 400 subagents; seed 2: no boundary, 17000 progress rows); list: gen-corpus.mjs bulk, %d sessions of about 3 KB\n", r.ListN)
	fmt.Fprintf(&b, "- page: from the navigation's start (from a page of the viewer) until the SDK's last message is in the viewport, as the page measures it (performance.now() at the animation frame after the first frame where it is, by a script given to the document before its own, or the first contentful paint when later); its HTML: request to last byte (Navigation Timing); SDK: `node peer.mjs messages <cfg> <id> --compact` from start to exit; 1 first round, then %d runs; medians. Page, cache cold: the same visit with the transcript touched just before (its stamp changed), so the viewer reads and rebuilds it as on a session's first visit; its HTML is that visit's\n\n", r.Runs)
	writeTableAndGoals(&b, uiHeader, uiRows(r), r.Goals)
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}
