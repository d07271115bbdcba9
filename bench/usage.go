package main

// The usage case (go run ./bench -case usage): `scribe usage daily --json`
// against ccusage 20.0.24's `ccusage daily --offline --json` (its native
// binary, installed test-only in internal/ccusage by scripts/test) on the
// same generated Claude folder, in one run, both as child processes timed
// from start to exit:
//
//   - ccusage daily --offline --json (it keeps no cache: every run reads
//     every transcript);
//   - scribe usage daily --json with its usage cache deleted before each
//     run (cold: every transcript read, the cache written);
//   - the same with the cache warm (one stat per transcript, the cache
//     read; a run that had to rewrite the cache fails verification);
//   - the same with --no-cache (every transcript read, no cache written);
//   - scribe version, the process's floor.
//
// Then the status line: -usage-statusline calls of `scribe usage
// statusline` with Claude Code's statusLine JSON on stdin, one assistant
// row appended to that session before each (as Claude Code calls it after
// each message), timed one by one: p50 and p99; and, for reference,
// -usage-statusline-peer calls of `ccusage statusline` the same way.
// With -usage-statusline-base, another scribe binary's statusline (a
// baseline: main's) is timed too, its calls taking turns with this
// one's, so that both see the same folder and the same load.
//
// Every daily output is verified against ccusage's (as JSON values, costs
// within 1e-6), and the last status line against ccusage's session and
// daily reports. The corpus: -usage-sessions sessions of realistic rows
// (bench/workload.go's generator), about -usage-mb MiB, in 30 project
// folders, one session in ten with a subagent's transcript.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

var (
	usageSessions   = flag.Int("usage-sessions", 1500, "-case usage: sessions in the generated Claude folder")
	usageMB         = flag.Int("usage-mb", 200, "-case usage: size of the generated Claude folder, in MiB")
	usageStatus     = flag.Int("usage-statusline", 200, "-case usage: timed calls of scribe usage statusline")
	usageStatusPeer = flag.Int("usage-statusline-peer", 20, "-case usage: timed calls of ccusage statusline (reference)")
	usageStatusBase = flag.String("usage-statusline-base", "", "-case usage: another scribe binary (e.g. main's, built by scripts/install) whose statusline is timed with this one's, call by call on the same folder, each with its own usage cache")
)

// The usage goals (issue 29): scribe cold at most ccusage's time, warm at
// most a tenth of it; the status line's p99 at most 50 ms.
const (
	usageGoalCold   = 1.0
	usageGoalWarm   = 0.1
	usageGoalStatus = 50 * time.Millisecond
)

// Case names.
const (
	usagePeer    = "ccusage daily --offline --json"
	usageCold    = "scribe usage daily --json (cache deleted: read all, write it)"
	usageWarm    = "scribe usage daily --json (cache warm)"
	usageNoCache = "scribe usage daily --json --no-cache"
	usageGroup   = "daily"
	usageSID     = "0b5e55ed-0000-4000-8000-000000000001"
)

type usageReport struct {
	Date    string `json:"date"`
	Command string `json:"command"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	CPUs    int    `json:"cpus"`
	Dir     string `json:"dir"`
	Runs    int    `json:"runs"`
	Warmup  int    `json:"warmup_rounds"`
	CCUsage string `json:"ccusage"`
	// Load is /proc/loadavg's 1-minute figure before and after the timed
	// cases: the machine is shared, and a busy one stretches every wall
	// time (the CPU times less).
	Load       [2]string       `json:"load_average"`
	Build      time.Duration   `json:"cli_build_ns"`
	Sessions   int             `json:"sessions"`
	Files      int             `json:"files"`
	Bytes      int64           `json:"bytes"`
	Cases      []readCase      `json:"cases"`
	Statusline []statusSummary `json:"statusline"`
	Goals      []readGoal      `json:"goals"`
}

// statusSummary is one status line command over its calls.
type statusSummary struct {
	Name    string         `json:"name"`
	Command string         `json:"command"`
	Latency latencySummary `json:"latency"`
	// CPU is the calls' CPU time (user+system), which a busy machine
	// inflates less than their wall time.
	CPU  latencySummary `json:"cpu"`
	Last string         `json:"last_line"`
}

func mainUsage(ctx context.Context, o options) {
	rep, err := runUsageBench(ctx, o)
	emitReport(o, rep, err, printUsageTable, writeUsageMarkdown)
}

// usageBench is one run of the usage benchmark.
type usageBench struct {
	ctx                 context.Context
	o                   options
	rep                 *usageReport
	tmp, bin, launcher  string
	ccusage, claude     string
	cacheHome           string
	scribeEnv, peerEnv  []string
	peerDaily, peerLast []byte
}

func runUsageBench(ctx context.Context, o options) (*usageReport, error) {
	if o.Runs < 1 {
		return nil, errors.New("-runs must be at least 1")
	}
	tmp, done, err := o.workFolder("scribe-usage-bench-")
	if err != nil {
		return nil, err
	}
	defer done()
	b, err := newUsageBench(ctx, o, tmp)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := b.generate(); err != nil {
		return nil, err
	}
	o.logf("Claude folder: %d sessions, %d transcripts, %.1f MiB in %v", b.rep.Sessions, b.rep.Files, float64(b.rep.Bytes)/(1<<20), time.Since(start).Round(time.Millisecond))
	// A transcript changed less than a second ago is checked against its
	// bytes rather than trusted on its stat (usage/scan.go, racyWindow):
	// let the fresh ones settle, as a real folder's have.
	time.Sleep(1100 * time.Millisecond)
	b.rep.Load[0] = loadAverage()
	rb := &readBench{ctx: ctx, o: o, tmp: tmp, launcher: b.launcher, pr: &readPeer{}}
	group := b.dailyCases()
	if err := rb.rounds([][]*readCase{group}); err != nil {
		return nil, err
	}
	for _, c := range group {
		c.summarize()
		b.rep.Cases = append(b.rep.Cases, *c)
	}
	if err := b.statusLines(); err != nil {
		return nil, err
	}
	b.rep.Load[1] = loadAverage()
	b.rep.Goals = usageGoals(b.rep)
	return b.rep, nil
}

// newUsageBench finds ccusage's native binary and builds scribe and the
// launcher (not timed).
func newUsageBench(ctx context.Context, o options, tmp string) (*usageBench, error) {
	tmp, err := filepath.EvalSymlinks(tmp)
	if err != nil {
		return nil, err
	}
	root, err := moduleRoot(ctx)
	if err != nil {
		return nil, err
	}
	cc := filepath.Join(root, "internal", "ccusage", "node_modules", "@ccusage", "ccusage-"+runtime.GOOS+"-"+map[string]string{"amd64": "x64"}[runtime.GOARCH], "bin", "ccusage")
	v, err := runQuiet(ctx, cc, nil, "", "--version")
	if err != nil {
		return nil, fmt.Errorf("ccusage's native binary %s: %v (run scripts/test, which installs internal/ccusage)", cc, err)
	}
	b := &usageBench{ctx: ctx, o: o, tmp: tmp, ccusage: cc, claude: filepath.Join(tmp, "claude"), cacheHome: filepath.Join(tmp, "cache")}
	home := filepath.Join(tmp, "home") // empty: ccusage looks for other agents' folders there
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	b.peerEnv = append(readNodeEnv(), "HOME="+home, "CLAUDE_CONFIG_DIR="+b.claude, "TZ=UTC", "NO_COLOR=1")
	b.scribeEnv = append(cliEnv(), "XDG_CACHE_HOME="+b.cacheHome, "TZ=UTC")
	b.rep = &usageReport{
		Date: time.Now().Format("2006-01-02"), Command: o.Command, Go: runtime.Version(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, CPUs: runtime.NumCPU(), Dir: o.Dir,
		Runs: o.Runs, Warmup: o.Warmup, CCUsage: strings.TrimSpace(string(v)),
	}
	var took time.Duration
	if b.bin, took, err = buildCLI(ctx, filepath.Join(tmp, "bin")); err != nil {
		return nil, err
	}
	b.rep.Build = took
	o.logf("built ./cmd/scribe in %v", took.Round(time.Millisecond))
	if b.launcher, err = buildReadLauncher(ctx, tmp); err != nil {
		return nil, err
	}
	return b, nil
}

// generate writes the Claude folder: -usage-sessions sessions of about
// -usage-mb MiB in all, sizes spread from a fifth to twice the mean.
func (b *usageBench) generate() error {
	n := *usageSessions
	mean := int64(*usageMB) << 20 / int64(n)
	l := jsonl.Layout{ConfigDir: b.claude}
	for i := range n {
		s := newGenSession(b.o.Seed, i)
		s.cwd = fmt.Sprintf("/home/dev/src/%s-%d", projects[i%len(projects)], i%30)
		if i == 0 {
			s.id = usageSID
		}
		size := mean/5 + int64(s.r.IntN(int(mean*9/5)))
		dir := l.ProjectDir(s.cwd)
		if err := b.writeSession(claudedir.MainFile(dir, s.id), s, size); err != nil {
			return err
		}
		if i%10 == 0 {
			sub := newGenSession(b.o.Seed+1, i)
			sub.id, sub.cwd = s.id, s.cwd
			if err := b.writeSession(claudedir.AgentFile(dir, s.id, fmt.Sprintf("a%015x", i)), sub, size/4); err != nil {
				return err
			}
		}
	}
	b.rep.Sessions = n
	return nil
}

// writeSession writes about size bytes of s's lines to path.
func (b *usageBench) writeSession(path string, s *genSession, size int64) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	var buf bytes.Buffer
	for int64(buf.Len()) < size {
		buf.Write(s.next())
		buf.WriteByte('\n')
	}
	b.rep.Files++
	b.rep.Bytes += int64(buf.Len())
	return os.WriteFile(path, buf.Bytes(), 0o600)
}

// dailyCases are ccusage and scribe's daily reports: cold, warm, without
// the cache, and the floor.
func (b *usageBench) dailyCases() []*readCase {
	scribe := func(name string, extra ...string) *readCase {
		return &readCase{Group: usageGroup, Name: name, bin: b.bin, dir: b.tmp, env: b.scribeEnv,
			args: append([]string{"usage", "daily", "--json", "--config-dir", b.claude}, extra...), verify: usageSameAs(name, &b.peerDaily)}
	}
	peer := &readCase{Group: usageGroup, Name: usagePeer, bin: b.ccusage, dir: b.tmp, env: b.peerEnv,
		args: []string{"daily", "--offline", "--json"}, verify: readKeep(&b.peerDaily)}
	cacheDir := filepath.Join(b.cacheHome, "scribe", "usage")
	cold := scribe(usageCold)
	cold.prepare = func() error { return os.RemoveAll(cacheDir) }
	warm := scribe(usageWarm)
	var before map[string]time.Time
	warm.prepare = func() error {
		// Make sure it is there and current (untimed), then note it.
		if _, err := runQuiet(b.ctx, b.bin, b.scribeEnv, "", warm.args...); err != nil {
			return err
		}
		before = cacheFiles(cacheDir)
		return nil
	}
	verifyWarm := warm.verify
	warm.verify = func(out []byte) error {
		if err := verifyWarm(out); err != nil {
			return err
		}
		if after := cacheFiles(cacheDir); len(after) == 0 || fmt.Sprint(after) != fmt.Sprint(before) {
			return errors.New("the warm report rewrote the usage cache (some transcript was read again)")
		}
		return nil
	}
	floor := &readCase{Group: usageGroup, Name: readFloor, bin: b.bin, dir: b.tmp, env: b.scribeEnv, args: []string{"version"},
		verify: func(out []byte) error {
			if !bytes.HasPrefix(out, []byte("scribe ")) {
				return fmt.Errorf("printed %q", out)
			}
			return nil
		}}
	cases := []*readCase{peer, cold, warm, scribe(usageNoCache, "--no-cache"), floor}
	for _, c := range cases {
		c.Command = strings.ReplaceAll(strings.ReplaceAll(filepath.Base(c.bin)+" "+strings.Join(c.args, " "), b.tmp, "$TMP"), b.ccusage, "ccusage")
		c.Verified = true
	}
	return cases
}

// cacheFiles are the usage cache's files and their mtimes.
func cacheFiles(dir string) map[string]time.Time {
	out := map[string]time.Time{}
	paths, _ := filepath.Glob(filepath.Join(dir, "*", "usage-*.bin"))
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			out[p] = fi.ModTime()
		}
	}
	return out
}

// usageSameAs verifies scribe's report against ccusage's *want: the same
// JSON values, numbers within 1e-6.
func usageSameAs(what string, want *[]byte) func([]byte) error {
	return jsonSameAs(what, "ccusage", want, func(w, g any) string { return jsonDiffers(w, g, "$") })
}

// jsonDiffers is where two decoded JSON values first differ ("" where
// they do not): numbers may differ by 1e-6.
func jsonDiffers(want, got any, at string) string {
	if wn, ok := want.(float64); ok {
		if gn, ok := got.(float64); !ok || math.Abs(wn-gn) > 1e-6 {
			return at
		}
		return ""
	}
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if bytes.Equal(wj, gj) {
		return ""
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok || len(g) != len(w) {
			return at
		}
		for k := range w {
			if p := jsonDiffers(w[k], g[k], at+"."+k); p != "" {
				return p
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return at
		}
		for i := range w {
			if p := jsonDiffers(w[i], g[i], fmt.Sprintf("%s[%d]", at, i)); p != "" {
				return p
			}
		}
		return ""
	}
	return at
}

// loadAverage is the 1-minute load average ("?" where there is none).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}

// moduleRoot is the repository's folder (where go.mod is).
func moduleRoot(ctx context.Context) (string, error) {
	out, err := osexec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the scribe module (run from the repository)")
	}
	return filepath.Dir(gomod), nil
}

// runQuiet runs bin untimed and returns its standard output.
func runQuiet(ctx context.Context, bin string, env []string, stdin string, args ...string) ([]byte, error) {
	cmd := osexec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, tail(errb.String()))
	}
	return out, nil
}

// statusLines times the status line commands, one assistant row appended
// to the session before each call, and checks scribe's last line against
// ccusage's session and daily reports.
func (b *usageBench) statusLines() error {
	main := claudedir.MainFile(jsonl.Layout{ConfigDir: b.claude}.ProjectDir(fmt.Sprintf("/home/dev/src/%s-0", projects[0])), usageSID)
	input := fmt.Sprintf(`{"hook_event_name":"Status","session_id":%q,"transcript_path":%q,"cwd":"/home/dev/src","model":{"id":"claude-sonnet-4-5","display_name":"Sonnet"},`+
		`"workspace":{"current_dir":"/home/dev/src","project_dir":"/home/dev/src"},"version":"2.1.332","cost":{"total_cost_usd":1.5}}`, usageSID, main)
	seq := 0
	appendRow := func() error {
		seq++
		f, err := os.OpenFile(main, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(f, `{"parentUuid":null,"isSidechain":false,"type":"assistant","message":{"model":"claude-sonnet-4-5","id":"msg_bench%06d","type":"message","role":"assistant","content":[{"type":"text","text":"Done."}],"usage":{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"output_tokens":%d}},"requestId":"req_bench%06d","uuid":"b0000000-0000-4000-8000-%012d","timestamp":%q,"sessionId":%q}`+"\n",
			seq, 3+seq%40, 500+seq%900, 20000+seq, 100+seq%700, seq, seq, time.Now().UTC().Format(tsLayout), usageSID)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	cases := []*statusCase{
		{c: &readCase{Name: usageStatusName, bin: b.bin, dir: b.tmp, env: b.scribeEnv, stdin: input,
			args: []string{"usage", "statusline", "--config-dir", b.claude}}, calls: *usageStatus, scribe: true},
	}
	if *usageStatusBase != "" {
		env := append(append([]string(nil), b.scribeEnv...), "XDG_CACHE_HOME="+filepath.Join(b.tmp, "cache-base"))
		cases = append(cases, &statusCase{c: &readCase{Name: usageStatusBaseName, bin: *usageStatusBase, dir: b.tmp, env: env, stdin: input,
			args: []string{"usage", "statusline", "--config-dir", b.claude}}, calls: *usageStatus, scribe: true})
	}
	cases = append(cases, &statusCase{c: &readCase{Name: "ccusage statusline (reference)", bin: b.ccusage, dir: b.tmp, env: b.peerEnv, stdin: input,
		args: []string{"statusline"}}, calls: *usageStatusPeer})
	for _, sc := range cases {
		c := sc.c
		c.Command = strings.ReplaceAll(filepath.Base(c.bin)+" "+strings.Join(c.args, " "), b.tmp, "$TMP") + " < statusLine JSON"
		if _, err := runQuiet(b.ctx, c.bin, c.env, c.stdin, c.args...); err != nil { // untimed: caches warm
			return err
		}
	}
	// The commands take turns, call by call, while they have calls left.
	for round := 0; ; round++ {
		ran := false
		for _, sc := range cases {
			if round >= sc.calls {
				continue
			}
			ran = true
			if err := appendRow(); err != nil {
				return err
			}
			if err := sc.measure(b); err != nil {
				return err
			}
		}
		if !ran {
			break
		}
	}
	for _, sc := range cases {
		c := sc.c
		s := statusSummary{Name: c.Name, Command: c.Command, Latency: summarize(sc.lat), CPU: summarize(sc.cpu), Last: strings.TrimSpace(string(sc.last))}
		b.o.logf("%-40s %d calls: p50 %v p99 %v", c.Name, len(sc.lat), s.Latency.P50.Round(time.Millisecond), s.Latency.P99.Round(time.Millisecond))
		b.rep.Statusline = append(b.rep.Statusline, s)
		if sc.scribe { // once more, untimed, once every row is written
			out, err := runQuiet(b.ctx, c.bin, c.env, c.stdin, c.args...)
			if err != nil {
				return err
			}
			if err := b.checkStatusLine(strings.TrimSpace(string(out))); err != nil {
				return fmt.Errorf("%s: %w", c.Name, err)
			}
		}
	}
	return nil
}

// Status line case names.
const (
	usageStatusName     = "scribe usage statusline"
	usageStatusBaseName = "scribe usage statusline (-usage-statusline-base)"
)

// statusCase is one status line command and its timed calls.
type statusCase struct {
	c        *readCase
	calls    int
	scribe   bool // checked against ccusage's reports
	lat, cpu []time.Duration
	last     []byte
}

// measure times one call.
func (sc *statusCase) measure(b *usageBench) error {
	run, out, err := readMeasure(b.ctx, b.launcher, sc.c)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return fmt.Errorf("%s printed nothing", sc.c.Name)
	}
	sc.lat, sc.cpu, sc.last = append(sc.lat, run.Wall), append(sc.cpu, run.CPU), out
	return nil
}

// checkStatusLine compares scribe's line with ccusage's session and daily
// reports of the same folder.
func (b *usageBench) checkStatusLine(line string) error {
	var session, today float64
	var rep struct {
		Session []struct {
			Period    string  `json:"period"`
			TotalCost float64 `json:"totalCost"`
		} `json:"session"`
		Daily []struct {
			Period    string  `json:"period"`
			TotalCost float64 `json:"totalCost"`
		} `json:"daily"`
	}
	for _, r := range []string{"session", "daily"} {
		out, err := runQuiet(b.ctx, b.ccusage, b.peerEnv, "", r, "--offline", "--json")
		if err != nil {
			return err
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			return err
		}
	}
	for _, s := range rep.Session {
		if s.Period == usageSID {
			session = s.TotalCost
		}
	}
	for _, d := range rep.Daily {
		if d.Period == time.Now().UTC().Format("2006-01-02") {
			today = d.TotalCost
		}
	}
	if want := fmt.Sprintf("Sonnet | $%.2f session / $%.2f today | ", session, today); !strings.HasPrefix(line, want) {
		return fmt.Errorf("scribe usage statusline printed %q; ccusage's reports say %q...", line, want)
	}
	return nil
}

func usageGoals(r *usageReport) []readGoal {
	find := func(name string) *readCase {
		for i := range r.Cases {
			if r.Cases[i].Name == name {
				return &r.Cases[i]
			}
		}
		return nil
	}
	peer := find(usagePeer)
	var gs []readGoal
	for _, g := range []struct {
		name string
		goal float64
	}{{usageCold, usageGoalCold}, {usageWarm, usageGoalWarm}} {
		c := find(g.name)
		if c == nil || peer == nil || peer.Wall <= 0 {
			continue
		}
		x := float64(c.Wall) / float64(peer.Wall)
		gs = append(gs, readGoal{What: g.name, Got: fmt.Sprintf("%.2f× ccusage's time (%s vs %s; CPU %.2f×: %s vs %s)", x, fmtDur(c.Wall), fmtDur(peer.Wall),
			float64(c.CPU)/float64(peer.CPU), fmtDur(c.CPU), fmtDur(peer.CPU)),
			Goal: fmt.Sprintf("≤ %.1f×", g.goal), Met: x <= g.goal})
	}
	return append(gs, statusGoals(r)...)
}

// statusGoals are the status line's: p99 at most usageGoalStatus, and,
// with a baseline, this build's p50 and p99 over the baseline's.
func statusGoals(r *usageReport) []readGoal {
	var cur, base *statusSummary
	for i := range r.Statusline {
		switch r.Statusline[i].Name {
		case usageStatusName:
			cur = &r.Statusline[i]
		case usageStatusBaseName:
			base = &r.Statusline[i]
		}
	}
	if cur == nil {
		return nil
	}
	got := fmt.Sprintf("p99 %s (p50 %s)", fmtDur(cur.Latency.P99), fmtDur(cur.Latency.P50))
	if base != nil && base.Latency.P99 > 0 && base.Latency.P50 > 0 {
		got += fmt.Sprintf("; the baseline's p99 %s (p50 %s): %.2f× its p99, %.2f× its p50", fmtDur(base.Latency.P99), fmtDur(base.Latency.P50),
			float64(cur.Latency.P99)/float64(base.Latency.P99), float64(cur.Latency.P50)/float64(base.Latency.P50))
	}
	return []readGoal{{What: usageStatusName, Got: got, Goal: "p99 ≤ " + fmtDur(usageGoalStatus), Met: cur.Latency.P99 <= usageGoalStatus}}
}

var usageHeader = []string{"case", "wall (median)", "min–max", "CPU", "peak RSS", "case time ÷ ccusage time"}

func usageRows(r *usageReport) [][]string {
	var peer time.Duration
	for _, c := range r.Cases {
		if c.Name == usagePeer {
			peer = c.Wall
		}
	}
	var rows [][]string
	for _, c := range r.Cases {
		ratio := "–"
		if c.Name != usagePeer && c.Name != readFloor && peer > 0 {
			ratio = fmt.Sprintf("%.2f×", float64(c.Wall)/float64(peer))
		}
		rows = append(rows, []string{c.Name, fmtDur(c.Wall), fmtDur(c.WallMin) + "–" + fmtDur(c.WallMax), fmtDur(c.CPU),
			fmt.Sprintf("%.1f MB", float64(c.RSSKB)/1024), ratio})
	}
	return rows
}

func printUsageTable(w io.Writer, r *usageReport) {
	fmt.Fprintf(w, "Claude folder: %d sessions, %d transcripts, %.1f MiB; %s\n", r.Sessions, r.Files, float64(r.Bytes)/(1<<20), r.CCUsage)
	fmt.Fprintf(w, "machine: %s, %d CPUs, %s, load average %s before, %s after; %d warm-up round(s), median of %d runs, order rotated\n\n",
		r.OS, r.CPUs, r.Go, r.Load[0], r.Load[1], r.Warmup, r.Runs)
	printAligned(w, usageHeader, usageRows(r))
	fmt.Fprintln(w)
	for _, s := range r.Statusline {
		fmt.Fprintf(w, "%s: %d calls, p50 %s, p99 %s, max %s (CPU p50 %s, p99 %s); last line: %s\n", s.Name, s.Latency.Count,
			fmtDur(s.Latency.P50), fmtDur(s.Latency.P99), fmtDur(s.Latency.Max), fmtDur(s.CPU.P50), fmtDur(s.CPU.P99), s.Last)
	}
	fmt.Fprintln(w)
	printGoals(w, r.Goals)
	fmt.Fprintln(w, "every run verified: scribe's daily JSON equals ccusage's; the warm runs did not rewrite the cache; the last status line agrees with ccusage's session and daily reports")
}

// writeUsageMarkdown writes the report to dir/<date>-usage.md.
func writeUsageMarkdown(dir string, r *usageReport) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, r.Date+"-usage.md")
	var b strings.Builder
	fmt.Fprintf(&b, "# scribe usage benchmark — %s\n\n`%s`\n\n", r.Date, r.Command)
	fmt.Fprintf(&b, "- machine: %s, %d CPUs, %s; %s (its native binary); disk: the one under `%s`; load average (1 min) %s before the timed cases, %s after (a shared machine: wall times stretch with it, CPU times much less)\n",
		r.OS, r.CPUs, r.Go, r.CCUsage, r.Dir, r.Load[0], r.Load[1])
	fmt.Fprintf(&b, "- Claude folder: %d sessions (%d transcripts with the subagents'), %.1f MiB, bench/workload.go's rows (seed %d)\n",
		r.Sessions, r.Files, float64(r.Bytes)/(1<<20), 1)
	fmt.Fprintf(&b, "- every case is a child process timed from start to exit; %d untimed warm-up round(s), then %d timed runs, order rotated; medians\n\n", r.Warmup, r.Runs)
	tableMarkdown(&b, usageHeader, usageRows(r))
	b.WriteString("\n## Status line\n\nOne assistant row appended to the session before each call, as Claude Code calls the command after each message; the commands take turns call by call.\n\n| case | command | calls | p50 | p99 | max | CPU p50 | CPU p99 | last line |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, s := range r.Statusline {
		fmt.Fprintf(&b, "| %s | `%s` | %d | %s | %s | %s | %s | %s | `%s` |\n", s.Name, s.Command, s.Latency.Count, fmtDur(s.Latency.P50), fmtDur(s.Latency.P99),
			fmtDur(s.Latency.Max), fmtDur(s.CPU.P50), fmtDur(s.CPU.P99), strings.ReplaceAll(s.Last, "|", `\|`))
	}
	goalsMarkdown(&b, r.Goals)
	casesMarkdown(&b, r.Cases)
	b.WriteString("\nEvery daily output is verified: scribe's JSON equals ccusage's on the same folder (as JSON values, costs within 1e-6); a warm run that rewrote the usage cache fails verification.\n")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}
