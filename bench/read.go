package main

// The read case (go run ./bench -case read): scribe's read path against the
// real Claude Agent SDK, in one run, on the same data, both as child
// processes timed from start to exit, with their peak RSS (rusage Maxrss).
//
//   - ls: listSessions of one project of -read-sessions sessions of about
//     -read-bytes each (internal/peer/gen-corpus.mjs bulk, seed 1):
//     `node peer.mjs list <cfg> <cwd> --compact` against
//     `scribe ls --project <cwd> --json --no-index` (reads every file), the
//     same with the sessions index warm (made by untimed runs before; a
//     timed run that had to rewrite it fails verification), and, for
//     reference, with the index deleted before each run (read every file
//     and write the index).
//   - show: getSessionMessages of internal/gen.LargeSession (about 100 MB,
//     400 subagents, a compact boundary near the end):
//     `node peer.mjs messages <cfg> <id> --compact` against
//     `scribe show <id> --json`. To show that scribe's memory follows what
//     comes after the boundary and not the file's size, scribe also reads a
//     file of the same size with the boundary near the start (the same
//     generator without the boundary, one inserted after the first line)
//     and a small one (about 6 MB, still over the 5 MiB where the skip
//     starts) with the boundary near the end.
//   - show with no boundary: the same generator with no compact boundary at
//     all, about 50 MB and about 200 MB, so that the whole file is the
//     conversation: the SDK's getSessionMessages against `scribe show
//     --json`, which must give the same JSON.
//
// scribe is built once (go build ./cmd/scribe, not timed). Every output is
// verified: scribe's ls and show JSON equal the SDK's (as JSON values); the
// other show files give a well-formed conversation starting at their
// boundary. After -warmup untimed rounds, each case runs -runs times, the
// order rotating every round; the tables show medians.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/internal/gen"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

var (
	readSessions = flag.Int("read-sessions", 2000, "-case read: sessions in the ls corpus")
	readBytes    = flag.Int("read-bytes", 200_000, "-case read: bytes per session of the ls corpus")
	readSmall    = flag.Int("read-small-progress", 2000, "-case read: progress rows of the small show file (2000 ≈ 6 MB)")
	readNB       = flag.String("read-no-boundary", "17000,68000", "-case read: progress rows of each session with no boundary (17000 ≈ 50 MB, 68000 ≈ 200 MB)")
)

// The read goals (issue 3).
const (
	readGoalLsNoIndex = 20 // scribe ls --no-index at most 1/20 of the SDK's time
	readGoalLsIndex   = 50 // with the index warm, 1/50
	readGoalLsRSS     = 4  // at most 1/4 of the SDK's peak memory
	readGoalShow      = 10 // show at most 1/10 of the SDK's time
	// readGoalShowGrowth: scribe's RSS may grow by at most this share of
	// the bytes added before the boundary.
	readGoalShowGrowth = 0.05
	// With no boundary at all (issue 11): at most 1/10 of the SDK's time
	// and 1/4 of its peak memory.
	readGoalNBShow = 10
	readGoalNBRSS  = 4
)

const readShowCwd = "/home/dev/src/app"

// readNBSizes parses -read-no-boundary.
func readNBSizes() ([]int, error) {
	var out []int
	for _, f := range strings.Split(*readNB, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-read-no-boundary: %q is not a count of progress rows", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// Case names.
const (
	readLsSDK      = "SDK listSessions"
	readLsNoIndex  = "scribe ls --no-index"
	readLsWarm     = "scribe ls (index warm)"
	readLsCold     = "scribe ls (index deleted: read all, write it)"
	readShowSDK    = "SDK getSessionMessages"
	readShowEnd    = "scribe show (boundary near the end)"
	readShowStart  = "scribe show (same size, boundary near the start)"
	readShowSmall  = "scribe show (small file, boundary near the end)"
	readFloor      = "scribe version (the process's floor, for reference)"
	readGroupLs    = "ls"
	readGroupShow  = "show"
	readSDKPrefix  = "SDK"
	readIndexCheck = "index not rewritten"
)

// readRun is one timed child process.
type readRun struct {
	Run   int           `json:"run"`
	Slot  int           `json:"slot"`
	Wall  time.Duration `json:"wall_ns"`
	CPU   time.Duration `json:"cpu_ns"`
	RSSKB int64         `json:"max_rss_kb"`
}

// readCase is one case over its runs.
type readCase struct {
	Group    string        `json:"group"`
	Name     string        `json:"name"`
	Command  string        `json:"command"`
	Wall     time.Duration `json:"median_wall_ns"`
	WallMin  time.Duration `json:"min_wall_ns"`
	WallMax  time.Duration `json:"max_wall_ns"`
	CPU      time.Duration `json:"median_cpu_ns"`
	RSSKB    int64         `json:"median_max_rss_kb"`
	Verified bool          `json:"verified"`
	Note     string        `json:"note,omitempty"`
	Runs     []readRun     `json:"runs"`

	// how to run it (stdin: its standard input, "" for none); prepare
	// runs untimed before each run.
	bin     string
	args    []string
	stdin   string
	dir     string
	env     []string
	prepare func() error
	verify  func(out []byte) error
}

type readGoal struct {
	What string `json:"what"`
	Got  string `json:"got"`
	Goal string `json:"goal"`
	Met  bool   `json:"met"`
}

// readFile is one generated session with no boundary.
type readFile struct {
	Group     string `json:"group"`
	Bytes     int64  `json:"bytes"`
	Progress  int    `json:"progress_rows"`
	Subagents int    `json:"subagents"`
}

type readReport struct {
	Date       string        `json:"date"`
	Command    string        `json:"command"`
	Go         string        `json:"go"`
	OS         string        `json:"os"`
	CPUs       int           `json:"cpus"`
	Dir        string        `json:"dir"`
	Runs       int           `json:"runs"`
	Warmup     int           `json:"warmup_rounds"`
	Node       string        `json:"node"`
	SDK        string        `json:"sdk"`
	Build      time.Duration `json:"cli_build_ns"`
	LsSessions int           `json:"ls_sessions"`
	LsBytes    int64         `json:"ls_bytes"`
	ShowFile   int64         `json:"show_bytes"`
	Boundary   int64         `json:"show_boundary_offset"`
	StartFile  int64         `json:"show_start_bytes"`
	SmallFile  int64         `json:"show_small_bytes"`
	SmallBound int64         `json:"show_small_boundary_offset"`
	Subagents  int           `json:"show_subagents"`
	NoBoundary []readFile    `json:"no_boundary"`
	Cases      []readCase    `json:"cases"`
	Goals      []readGoal    `json:"goals"`
}

func mainRead(ctx context.Context, o options) {
	rep, err := runReadBench(ctx, o)
	emitReport(o, rep, err, printReadTable, writeReadMarkdown)
}

// readPeer is node and the pinned SDK in internal/peer.
type readPeer struct {
	node, nodeVersion, dir, version string
}

func findReadPeer(ctx context.Context) (*readPeer, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return nil, errors.New("not inside the scribe module (run from the repository)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, errors.New("node is not on PATH (the read case runs the Claude Agent SDK)")
	}
	dir := filepath.Join(filepath.Dir(gomod), "internal", "peer")
	raw, err := os.ReadFile(filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-agent-sdk", "package.json"))
	if err != nil {
		return nil, fmt.Errorf("the Claude Agent SDK is not installed in %s/node_modules (run scripts/test, or npm ci --omit=optional there)", dir)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		return nil, err
	}
	v, _ := exec.CommandContext(ctx, node, "--version").Output()
	return &readPeer{node: node, nodeVersion: "node " + strings.TrimSpace(string(v)), dir: dir, version: pkg.Version}, nil
}

// readNodeEnv is the environment for node, without what could point the
// SDK elsewhere.
func readNodeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "CLAUDE_CONFIG_DIR", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
			"NODE_OPTIONS", "CLAUDE_CODE_PROJECT_DIR_NAME", "PEER_SDK", "CLAUDE_CODE_DISABLE_PRECOMPACT_SKIP":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// readBench is one run of the read benchmark: where it works, the binaries
// it times and the SDK's answers every scribe run is checked against.
type readBench struct {
	ctx                context.Context
	o                  options
	pr                 *readPeer
	rep                *readReport
	tmp, bin, launcher string
	peerMjs            string
	nodeEnv, scribeEnv []string
}

func runReadBench(ctx context.Context, o options) (*readReport, error) {
	if o.Runs < 1 {
		return nil, errors.New("-runs must be at least 1")
	}
	pr, err := findReadPeer(ctx)
	if err != nil {
		return nil, err
	}
	tmp, done, err := o.workFolder("scribe-read-bench-")
	if err != nil {
		return nil, err
	}
	defer done()
	b, err := newReadBench(ctx, o, pr, tmp)
	if err != nil {
		return nil, err
	}
	ls, err := b.lsCases()
	if err != nil {
		return nil, err
	}
	show, err := b.showCases()
	if err != nil {
		return nil, err
	}
	groups := [][]*readCase{ls, show}
	nbs, err := readNBSizes()
	if err != nil {
		return nil, err
	}
	for _, progress := range nbs {
		g, err := b.noBoundaryCases(progress)
		if err != nil {
			return nil, err
		}
		groups = append(groups, g)
	}
	if err := b.rounds(groups); err != nil {
		return nil, err
	}
	for _, g := range groups {
		for _, c := range g {
			c.summarize()
			b.rep.Cases = append(b.rep.Cases, *c)
		}
	}
	b.rep.Goals = readGoals(b.rep)
	return b.rep, nil
}

// newReadBench builds scribe and the launcher into tmp (not timed).
func newReadBench(ctx context.Context, o options, pr *readPeer, tmp string) (*readBench, error) {
	tmp, err := filepath.EvalSymlinks(tmp)
	if err != nil {
		return nil, err
	}
	b := &readBench{ctx: ctx, o: o, pr: pr, tmp: tmp, peerMjs: filepath.Join(pr.dir, "peer.mjs"),
		nodeEnv: readNodeEnv(), scribeEnv: cliEnv()}
	b.rep = &readReport{
		Date: time.Now().Format("2006-01-02"), Command: o.Command, Go: runtime.Version(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, CPUs: runtime.NumCPU(), Dir: o.Dir,
		Runs: o.Runs, Warmup: o.Warmup, Node: pr.nodeVersion, SDK: pr.version,
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

// readSameAs verifies scribe's output against the SDK's answer *want (as
// JSON values).
func readSameAs(what string, want *[]byte) func([]byte) error {
	return jsonSameAs(what, "the SDK", want, func(w, g any) string {
		if reflect.DeepEqual(g, w) {
			return ""
		}
		return "$"
	})
}

// jsonSameAs verifies scribe's output against peer's answer *want: both
// decoded, differs says where they differ ("" where they do not).
func jsonSameAs(what, peer string, want *[]byte, differs func(want, got any) string) func([]byte) error {
	return func(out []byte) error {
		if *want == nil {
			return fmt.Errorf("%s: no answer of %s to compare with", what, peer)
		}
		var g, w any
		if err := json.Unmarshal(out, &g); err != nil {
			return fmt.Errorf("%s: %v: %.300s", what, err, out)
		}
		if err := json.Unmarshal(*want, &w); err != nil {
			return fmt.Errorf("%s: %s: %v", what, peer, err)
		}
		if at := differs(w, g); at != "" {
			return fmt.Errorf("%s differs from %s's answer at %s:\nscribe: %.500s\n%s: %.500s", what, peer, at, out, peer, *want)
		}
		return nil
	}
}

// readKeep keeps the SDK's answer in *dst.
func readKeep(dst *[]byte) func([]byte) error {
	return func(out []byte) error {
		if !json.Valid(out) {
			return fmt.Errorf("the SDK printed no JSON: %.300s", out)
		}
		*dst = bytes.Clone(out)
		return nil
	}
}

// lsCases makes the ls corpus (gen-corpus.mjs bulk) and its cases: the SDK,
// scribe without the index, with it warm, with it deleted, and the floor.
func (b *readBench) lsCases() ([]*readCase, error) {
	ctx, pr := b.ctx, b.pr
	lsCfg := filepath.Join(b.tmp, "ls", "cfg")
	lsCwd := filepath.Join(b.tmp, "ls", "proj")
	if err := os.MkdirAll(lsCwd, 0o700); err != nil {
		return nil, err
	}
	start := time.Now()
	gc := exec.CommandContext(ctx, pr.node, filepath.Join(pr.dir, "gen-corpus.mjs"), "bulk", lsCfg, lsCwd,
		fmt.Sprint(*readSessions), fmt.Sprint(*readBytes), "1")
	gc.Dir, gc.Env = pr.dir, b.nodeEnv
	genOut, err := gc.Output()
	if err != nil {
		return nil, fmt.Errorf("gen-corpus.mjs bulk: %v", err)
	}
	var bulk struct {
		Sessions   int   `json:"sessions"`
		TotalBytes int64 `json:"totalBytes"`
	}
	if err := json.Unmarshal(genOut, &bulk); err != nil {
		return nil, fmt.Errorf("gen-corpus.mjs bulk printed %q: %v", genOut, err)
	}
	b.rep.LsSessions, b.rep.LsBytes = bulk.Sessions, bulk.TotalBytes
	b.o.logf("ls corpus: %d sessions, %.1f MiB in %v", bulk.Sessions, float64(bulk.TotalBytes)/(1<<20), time.Since(start).Round(time.Millisecond))

	var sdkList []byte
	index := jsonl.Layout{ConfigDir: lsCfg}.IndexFile()
	var indexBefore os.FileInfo
	lsArgs := []string{"ls", "--config-dir", lsCfg, "--project", lsCwd, "--json"}
	scribe := func(name string, args []string) *readCase {
		return &readCase{Group: readGroupLs, Name: name, bin: b.bin, dir: lsCwd, env: b.scribeEnv, args: args}
	}
	sdk := &readCase{Group: readGroupLs, Name: readLsSDK, bin: pr.node, dir: pr.dir, env: b.nodeEnv,
		args: []string{b.peerMjs, "list", lsCfg, lsCwd, "--compact"}, verify: readKeep(&sdkList)}
	noIndex := scribe(readLsNoIndex, append(slices.Clone(lsArgs), "--no-index"))
	noIndex.verify = readSameAs("ls --no-index", &sdkList)
	warm := scribe(readLsWarm, lsArgs)
	warm.prepare = func() error {
		// Make sure it is there and current (untimed), then note it.
		c := exec.CommandContext(ctx, b.bin, lsArgs...)
		c.Env = b.scribeEnv
		if err := c.Run(); err != nil {
			return err
		}
		indexBefore, err = os.Stat(index)
		return err
	}
	warm.verify = func(out []byte) error {
		if err := readSameAs("ls (index warm)", &sdkList)(out); err != nil {
			return err
		}
		after, err := os.Stat(index)
		if err != nil || !os.SameFile(after, indexBefore) || !after.ModTime().Equal(indexBefore.ModTime()) {
			return fmt.Errorf("%s: the warm listing rewrote the index (some file was read again)", readIndexCheck)
		}
		return nil
	}
	cold := scribe(readLsCold, lsArgs)
	cold.prepare = func() error {
		if err := os.Remove(index); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	cold.verify = func(out []byte) error {
		if err := readSameAs("ls (index deleted)", &sdkList)(out); err != nil {
			return err
		}
		if _, err := os.Stat(index); err != nil {
			return fmt.Errorf("the listing wrote no index: %v", err)
		}
		return nil
	}
	floor := scribe(readFloor, []string{"version"})
	floor.verify = func(out []byte) error {
		if !bytes.HasPrefix(out, []byte("scribe ")) {
			return fmt.Errorf("printed %q", out)
		}
		return nil
	}
	return b.named([]*readCase{sdk, noIndex, warm, cold, floor}), nil
}

// named fills every case's command line.
func (b *readBench) named(cases []*readCase) []*readCase {
	for _, c := range cases {
		c.Command = readCommandLine(c.bin, c.args, b.tmp, b.pr.dir)
		c.Verified = true
	}
	return cases
}

// large writes a gen.LargeSession into its own config folder.
func (b *readBench) large(name string, lo gen.LargeOptions) (string, gen.LargeResult, error) {
	cfg := filepath.Join(b.tmp, name, "cfg")
	lo.CWD = readShowCwd
	lo.Seed = 1
	res, err := gen.LargeSession(jsonl.Layout{ConfigDir: cfg}.ProjectDir(readShowCwd), lo)
	return cfg, res, err
}

// showCases makes the three boundary files and their cases: the SDK and
// scribe on the large file with the boundary near the end, scribe alone on
// the same size with it near the start and on a small file.
func (b *readBench) showCases() ([]*readCase, error) {
	start := time.Now()
	endCfg, endRes, err := b.large("show-end", gen.LargeOptions{})
	if err != nil {
		return nil, err
	}
	startCfg, startRes, err := b.large("show-start", gen.LargeOptions{NoBoundary: true})
	if err != nil {
		return nil, err
	}
	summaryUUID, err := readBoundaryNearStart(startRes.Path, startRes.SessionID, readShowCwd)
	if err != nil {
		return nil, err
	}
	smallCfg, smallRes, err := b.large("show-small", gen.LargeOptions{Progress: *readSmall})
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(startRes.Path)
	if err != nil {
		return nil, err
	}
	rep := b.rep
	rep.ShowFile, rep.Boundary, rep.Subagents = endRes.Size, endRes.BoundaryOffset, len(endRes.AgentIDs)
	rep.StartFile, rep.SmallFile, rep.SmallBound = fi.Size(), smallRes.Size, smallRes.BoundaryOffset
	b.o.logf("show files: %.1f MB (boundary at %.1f MB), %.1f MB (boundary near the start), %.1f MB, in %v",
		float64(endRes.Size)/1e6, float64(endRes.BoundaryOffset)/1e6, float64(fi.Size())/1e6, float64(smallRes.Size)/1e6,
		time.Since(start).Round(time.Millisecond))

	var sdkMsgs []byte
	show := func(name, cfg, id string, verify func([]byte) error) *readCase {
		return &readCase{Group: readGroupShow, Name: name, bin: b.bin, dir: b.tmp, env: b.scribeEnv,
			args: []string{"show", "--config-dir", cfg, id, "--json"}, verify: verify}
	}
	return b.named([]*readCase{
		{Group: readGroupShow, Name: readShowSDK, bin: b.pr.node, dir: b.pr.dir, env: b.nodeEnv,
			args: []string{b.peerMjs, "messages", endCfg, endRes.SessionID, "--compact"}, verify: readKeep(&sdkMsgs)},
		show(readShowEnd, endCfg, endRes.SessionID, readSameAs("show --json", &sdkMsgs)),
		show(readShowStart, startCfg, startRes.SessionID, readStartsAt(summaryUUID, len(startRes.AgentIDs))),
		show(readShowSmall, smallCfg, smallRes.SessionID, readConversation(1)),
	}), nil
}

// noBoundaryCases makes a session with no compact boundary at all (every
// row is the conversation's) of `progress` progress rows and its two
// cases: the SDK and scribe, whose JSON must equal the SDK's.
func (b *readBench) noBoundaryCases(progress int) ([]*readCase, error) {
	start := time.Now()
	cfg, res, err := b.large(fmt.Sprintf("no-boundary-%d", progress), gen.LargeOptions{NoBoundary: true, Progress: progress})
	if err != nil {
		return nil, err
	}
	group := fmt.Sprintf("no boundary, %.0f MB", float64(res.Size)/1e6)
	b.rep.NoBoundary = append(b.rep.NoBoundary, readFile{Group: group, Bytes: res.Size, Progress: progress, Subagents: len(res.AgentIDs)})
	b.o.logf("%s: %.1f MB, no boundary, in %v", group, float64(res.Size)/1e6, time.Since(start).Round(time.Millisecond))
	var sdkMsgs []byte
	return b.named([]*readCase{
		{Group: group, Name: readSDKPrefix + " getSessionMessages (" + group + ")", bin: b.pr.node, dir: b.pr.dir, env: b.nodeEnv,
			args: []string{b.peerMjs, "messages", cfg, res.SessionID, "--compact"}, verify: readKeep(&sdkMsgs)},
		{Group: group, Name: "scribe show (" + group + ")", bin: b.bin, dir: b.tmp, env: b.scribeEnv,
			args: []string{"show", "--config-dir", cfg, res.SessionID, "--json"}, verify: readSameAs("show --json, "+group, &sdkMsgs)},
	}), nil
}

// rounds runs every group: -warmup untimed rounds, then -runs timed ones.
// The SDK cases go first in the first round so that every scribe run has
// an answer to be checked against; after that the order rotates within
// each group.
func (b *readBench) rounds(groups [][]*readCase) error {
	o := b.o
	for i := -o.Warmup; i < o.Runs; i++ {
		warm := i < 0
		for _, g := range groups {
			for slot := range g {
				c := g[(max(i, 0)+slot)%len(g)]
				if err := b.ctx.Err(); err != nil {
					return err
				}
				if c.prepare != nil {
					if err := c.prepare(); err != nil {
						return fmt.Errorf("%s: prepare: %w", c.Name, err)
					}
				}
				run, out, err := readMeasure(b.ctx, b.launcher, c)
				if err == nil {
					err = c.verify(out)
				}
				label := fmt.Sprintf("run %d/%d", i+1, o.Runs)
				if warm {
					label = "warm-up"
				}
				if err != nil {
					return fmt.Errorf("%s, %s: %w", label, c.Name, err)
				}
				o.logf("%-9s %-50s wall %8v  peak RSS %6.1f MB  (verified)", label, c.Name, run.Wall.Round(time.Millisecond), float64(run.RSSKB)/1024)
				if !warm {
					run.Run, run.Slot = i+1, slot
					c.Runs = append(c.Runs, run)
				}
			}
		}
	}
	return nil
}

func (c *readCase) summarize() {
	var walls, cpus []time.Duration
	var rss []int64
	for _, r := range c.Runs {
		walls, cpus, rss = append(walls, r.Wall), append(cpus, r.CPU), append(rss, r.RSSKB)
	}
	if len(walls) == 0 {
		return
	}
	c.Wall, c.CPU = medianDur(walls), medianDur(cpus)
	c.WallMin, c.WallMax = slices.Min(walls), slices.Max(walls)
	slices.Sort(rss)
	c.RSSKB = rss[(len(rss)-1)/2]
}

func readCommandLine(bin string, args []string, tmp, peerDir string) string {
	s := filepath.Base(bin) + " " + strings.Join(args, " ")
	s = strings.ReplaceAll(s, filepath.Join(peerDir, "peer.mjs"), "internal/peer/peer.mjs")
	return strings.ReplaceAll(s, tmp, "$TMP")
}

// readBoundaryNearStart turns a transcript without a boundary into one
// with a compact boundary (and its summary) right after its first line,
// the first row re-parented to the summary: the same conversation, all of
// it after the boundary. It returns the summary's uuid.
func readBoundaryNearStart(path, sessionID, cwd string) (string, error) {
	in, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer in.Close()
	br := bufio.NewReaderSize(in, 1<<20)
	first, err := br.ReadBytes('\n')
	if err != nil {
		return "", err
	}
	row, err := br.ReadBytes('\n')
	if err != nil {
		return "", err
	}
	const boundary, summary = "b0000000-0000-4000-8000-00000000b0b0", "b0000000-0000-4000-8000-00000000c0c0"
	fixed := bytes.Replace(row, []byte(`"parentUuid":null`), []byte(`"parentUuid":"`+summary+`"`), 1)
	if bytes.Equal(fixed, row) {
		return "", errors.New("the first row has no null parentUuid")
	}
	out, err := os.OpenFile(path+".tmp", os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	defer out.Close()
	bw := bufio.NewWriterSize(out, 1<<20)
	env := fmt.Sprintf(`"userType":"external","entrypoint":"cli","cwd":%q,"sessionId":%q,"version":"2.1.332","gitBranch":"main"`, cwd, sessionID)
	bw.Write(first)
	fmt.Fprintf(bw, `{"parentUuid":null,"logicalParentUuid":null,"isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","isMeta":false,"timestamp":"2026-01-10T10:59:58.000Z","uuid":%q,"level":"info","compactMetadata":{"trigger":"auto","preTokens":167012},%s}`+"\n", boundary, env)
	fmt.Fprintf(bw, `{"parentUuid":%q,"isSidechain":false,"type":"user","message":{"role":"user","content":%q},"isVisibleInTranscriptOnly":true,"isCompactSummary":true,"uuid":%q,"timestamp":"2026-01-10T10:59:59.000Z",%s}`+"\n",
		boundary, "This session is being continued from a previous conversation that ran out of context. "+strings.Repeat("Summary of the earlier work. ", 50), summary, env)
	bw.Write(fixed)
	if _, err := io.Copy(bw, br); err != nil {
		return "", err
	}
	if err := bw.Flush(); err != nil {
		return "", err
	}
	if err := out.Close(); err != nil {
		return "", err
	}
	return summary, os.Rename(path+".tmp", path)
}

// readStartsAt verifies a conversation that begins with the summary and
// holds at least the subagent calls and their results.
func readStartsAt(uuid string, agents int) func([]byte) error {
	return func(out []byte) error {
		var msgs []struct {
			UUID string `json:"uuid"`
		}
		if err := json.Unmarshal(out, &msgs); err != nil {
			return err
		}
		if len(msgs) < 2*agents || msgs[0].UUID != uuid {
			return fmt.Errorf("%d messages, first %v; want at least %d, starting at the summary %s", len(msgs), msgs[:min(1, len(msgs))], 2*agents, uuid)
		}
		return nil
	}
}

// readConversation verifies a well-formed, non-empty conversation.
func readConversation(atLeast int) func([]byte) error {
	return func(out []byte) error {
		var msgs []json.RawMessage
		if err := json.Unmarshal(out, &msgs); err != nil {
			return err
		}
		if len(msgs) < atLeast {
			return fmt.Errorf("%d messages", len(msgs))
		}
		return nil
	}
}

var readHeader = []string{"case", "wall (median)", "min–max", "CPU", "peak RSS", "SDK time ÷ case time", "case RSS ÷ SDK RSS"}
