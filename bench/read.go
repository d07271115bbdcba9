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
	"strings"
	"time"

	"github.com/e0dc0000/scribe/internal/gen"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

var (
	readSessions = flag.Int("read-sessions", 2000, "-case read: sessions in the ls corpus")
	readBytes    = flag.Int("read-bytes", 200_000, "-case read: bytes per session of the ls corpus")
	readSmall    = flag.Int("read-small-progress", 2000, "-case read: progress rows of the small show file (2000 ≈ 6 MB)")
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
)

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

	// how to run it; prepare runs untimed before each run.
	bin     string
	args    []string
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
	Cases      []readCase    `json:"cases"`
	Goals      []readGoal    `json:"goals"`
}

func mainRead(ctx context.Context, o options) {
	rep, err := runReadBench(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: FAILED:", err)
		os.Exit(1)
	}
	if o.JSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	} else {
		printReadTable(os.Stdout, rep)
	}
	if o.Out != "" {
		path, err := writeReadMarkdown(o.Out, rep)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "bench: wrote", path)
	}
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

func runReadBench(ctx context.Context, o options) (*readReport, error) {
	if o.Runs < 1 {
		return nil, errors.New("-runs must be at least 1")
	}
	if o.Dir == "" {
		o.Dir = os.TempDir()
	}
	pr, err := findReadPeer(ctx)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(o.Dir, "scribe-read-bench-")
	if err != nil {
		return nil, err
	}
	if o.Keep {
		o.logf("work folder %s (kept)", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	tmp, err = filepath.EvalSymlinks(tmp)
	if err != nil {
		return nil, err
	}
	rep := &readReport{
		Date: time.Now().Format("2006-01-02"), Command: o.Command, Go: runtime.Version(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, CPUs: runtime.NumCPU(), Dir: o.Dir,
		Runs: o.Runs, Warmup: o.Warmup, Node: pr.nodeVersion, SDK: pr.version,
	}
	bin, took, err := buildCLI(ctx, filepath.Join(tmp, "bin"))
	if err != nil {
		return nil, err
	}
	rep.Build = took
	o.logf("built ./cmd/scribe in %v", took.Round(time.Millisecond))
	launcher, err := buildReadLauncher(ctx, tmp)
	if err != nil {
		return nil, err
	}

	// The ls corpus.
	lsCfg := filepath.Join(tmp, "ls", "cfg")
	lsCwd := filepath.Join(tmp, "ls", "proj")
	if err := os.MkdirAll(lsCwd, 0o700); err != nil {
		return nil, err
	}
	start := time.Now()
	gc := exec.CommandContext(ctx, pr.node, filepath.Join(pr.dir, "gen-corpus.mjs"), "bulk", lsCfg, lsCwd,
		fmt.Sprint(*readSessions), fmt.Sprint(*readBytes), "1")
	gc.Dir, gc.Env = pr.dir, readNodeEnv()
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
	rep.LsSessions, rep.LsBytes = bulk.Sessions, bulk.TotalBytes
	o.logf("ls corpus: %d sessions, %.1f MiB in %v", bulk.Sessions, float64(bulk.TotalBytes)/(1<<20), time.Since(start).Round(time.Millisecond))

	// The show files, each in its own config folder.
	showCwd := "/home/dev/src/app"
	large := func(name string, lo gen.LargeOptions) (string, gen.LargeResult, error) {
		cfg := filepath.Join(tmp, name, "cfg")
		lo.CWD = showCwd
		lo.Seed = 1
		res, err := gen.LargeSession(jsonl.Layout{ConfigDir: cfg}.ProjectDir(showCwd), lo)
		return cfg, res, err
	}
	start = time.Now()
	endCfg, endRes, err := large("show-end", gen.LargeOptions{})
	if err != nil {
		return nil, err
	}
	startCfg, startRes, err := large("show-start", gen.LargeOptions{NoBoundary: true})
	if err != nil {
		return nil, err
	}
	summaryUUID, err := readBoundaryNearStart(startRes.Path, startRes.SessionID, showCwd)
	if err != nil {
		return nil, err
	}
	smallCfg, smallRes, err := large("show-small", gen.LargeOptions{Progress: *readSmall})
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(startRes.Path)
	if err != nil {
		return nil, err
	}
	rep.ShowFile, rep.Boundary, rep.Subagents = endRes.Size, endRes.BoundaryOffset, len(endRes.AgentIDs)
	rep.StartFile, rep.SmallFile, rep.SmallBound = fi.Size(), smallRes.Size, smallRes.BoundaryOffset
	o.logf("show files: %.1f MB (boundary at %.1f MB), %.1f MB (boundary near the start), %.1f MB, in %v",
		float64(endRes.Size)/1e6, float64(endRes.BoundaryOffset)/1e6, float64(fi.Size())/1e6, float64(smallRes.Size)/1e6,
		time.Since(start).Round(time.Millisecond))

	// The SDK's answers, once, to verify every run against.
	var sdkList, sdkMsgs []byte
	nodeEnv, scribeEnv := readNodeEnv(), cliEnv()
	peerMjs := filepath.Join(pr.dir, "peer.mjs")
	sameAs := func(what string, want *[]byte) func([]byte) error {
		return func(out []byte) error {
			if *want == nil {
				return fmt.Errorf("%s: no SDK answer to compare with", what)
			}
			var g, w any
			if err := json.Unmarshal(out, &g); err != nil {
				return fmt.Errorf("%s: %v: %.300s", what, err, out)
			}
			if err := json.Unmarshal(*want, &w); err != nil {
				return fmt.Errorf("%s: SDK: %v", what, err)
			}
			if !reflect.DeepEqual(g, w) {
				return fmt.Errorf("%s differs from the SDK's answer:\nscribe: %.500s\nSDK:    %.500s", what, out, *want)
			}
			return nil
		}
	}
	keep := func(dst *[]byte) func([]byte) error {
		return func(out []byte) error {
			if !json.Valid(out) {
				return fmt.Errorf("the SDK printed no JSON: %.300s", out)
			}
			*dst = bytes.Clone(out)
			return nil
		}
	}
	index := jsonl.Layout{ConfigDir: lsCfg}.IndexFile()
	var indexBefore os.FileInfo
	lsArgs := []string{"ls", "--config-dir", lsCfg, "--project", lsCwd, "--json"}
	cases := []*readCase{
		{Group: readGroupLs, Name: readLsSDK, bin: pr.node, dir: pr.dir, env: nodeEnv,
			args: []string{peerMjs, "list", lsCfg, lsCwd, "--compact"}, verify: keep(&sdkList)},
		{Group: readGroupLs, Name: readLsNoIndex, bin: bin, dir: lsCwd, env: scribeEnv,
			args: append(slices.Clone(lsArgs), "--no-index"), verify: sameAs("ls --no-index", &sdkList)},
		{Group: readGroupLs, Name: readLsWarm, bin: bin, dir: lsCwd, env: scribeEnv, args: lsArgs,
			prepare: func() error {
				// Make sure it is there and current (untimed), then note it.
				c := exec.CommandContext(ctx, bin, lsArgs...)
				c.Env = scribeEnv
				if err := c.Run(); err != nil {
					return err
				}
				indexBefore, err = os.Stat(index)
				return err
			},
			verify: func(out []byte) error {
				if err := sameAs("ls (index warm)", &sdkList)(out); err != nil {
					return err
				}
				after, err := os.Stat(index)
				if err != nil || !os.SameFile(after, indexBefore) || !after.ModTime().Equal(indexBefore.ModTime()) {
					return fmt.Errorf("%s: the warm listing rewrote the index (some file was read again)", readIndexCheck)
				}
				return nil
			}},
		{Group: readGroupLs, Name: readLsCold, bin: bin, dir: lsCwd, env: scribeEnv, args: lsArgs,
			prepare: func() error {
				if err := os.Remove(index); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
				return nil
			},
			verify: func(out []byte) error {
				if err := sameAs("ls (index deleted)", &sdkList)(out); err != nil {
					return err
				}
				if _, err := os.Stat(index); err != nil {
					return fmt.Errorf("the listing wrote no index: %v", err)
				}
				return nil
			}},
		{Group: readGroupLs, Name: readFloor, bin: bin, dir: lsCwd, env: scribeEnv, args: []string{"version"},
			verify: func(out []byte) error {
				if !bytes.HasPrefix(out, []byte("scribe ")) {
					return fmt.Errorf("printed %q", out)
				}
				return nil
			}},
		{Group: readGroupShow, Name: readShowSDK, bin: pr.node, dir: pr.dir, env: nodeEnv,
			args: []string{peerMjs, "messages", endCfg, endRes.SessionID, "--compact"}, verify: keep(&sdkMsgs)},
		{Group: readGroupShow, Name: readShowEnd, bin: bin, dir: tmp, env: scribeEnv,
			args:   []string{"show", "--config-dir", endCfg, endRes.SessionID, "--json"},
			verify: sameAs("show --json", &sdkMsgs)},
		{Group: readGroupShow, Name: readShowStart, bin: bin, dir: tmp, env: scribeEnv,
			args:   []string{"show", "--config-dir", startCfg, startRes.SessionID, "--json"},
			verify: readStartsAt(summaryUUID, len(startRes.AgentIDs))},
		{Group: readGroupShow, Name: readShowSmall, bin: bin, dir: tmp, env: scribeEnv,
			args:   []string{"show", "--config-dir", smallCfg, smallRes.SessionID, "--json"},
			verify: readConversation(1)},
	}
	for _, c := range cases {
		c.Command = readCommandLine(c.bin, c.args, tmp, pr.dir)
		c.Verified = true
	}

	// The SDK cases go first in the first round so that every scribe run
	// has an answer to be checked against; after that the order rotates.
	groups := [][]*readCase{cases[:5], cases[5:]}
	for i := -o.Warmup; i < o.Runs; i++ {
		warm := i < 0
		for _, g := range groups {
			for slot := range g {
				c := g[(max(i, 0)+slot)%len(g)]
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				if c.prepare != nil {
					if err := c.prepare(); err != nil {
						return nil, fmt.Errorf("%s: prepare: %w", c.Name, err)
					}
				}
				run, out, err := readMeasure(ctx, launcher, c)
				if err == nil {
					err = c.verify(out)
				}
				label := fmt.Sprintf("run %d/%d", i+1, o.Runs)
				if warm {
					label = "warm-up"
				}
				if err != nil {
					return nil, fmt.Errorf("%s, %s: %w", label, c.Name, err)
				}
				o.logf("%-9s %-50s wall %8v  peak RSS %6.1f MB  (verified)", label, c.Name, run.Wall.Round(time.Millisecond), float64(run.RSSKB)/1024)
				if !warm {
					run.Run, run.Slot = i+1, slot
					c.Runs = append(c.Runs, run)
				}
			}
		}
	}
	for _, c := range cases {
		c.summarize()
		rep.Cases = append(rep.Cases, *c)
	}
	rep.Goals = readGoals(rep)
	return rep, nil
}

// readMeasure runs a case once through the launcher, which reports the
// child's wall time (start to exit), CPU and peak RSS.
func readMeasure(ctx context.Context, launcher string, c *readCase) (readRun, []byte, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return readRun{}, nil, err
	}
	defer pr.Close()
	cmd := exec.CommandContext(ctx, launcher, append([]string{c.bin}, c.args...)...)
	cmd.Dir, cmd.Env = c.dir, c.env
	cmd.ExtraFiles = []*os.File{pw}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return readRun{}, nil, err
	}
	report, rerr := io.ReadAll(pr)
	err = cmd.Wait()
	var r struct {
		Error   string `json:"error"`
		Wall    int64  `json:"wall_ns"`
		CPU     int64  `json:"cpu_ns"`
		MaxRSS  int64  `json:"max_rss_kb"`
		Started bool   `json:"started"`
	}
	if rerr == nil {
		rerr = json.Unmarshal(report, &r)
	}
	switch {
	case err != nil || rerr != nil || r.Error != "":
		return readRun{}, nil, fmt.Errorf("%s: %v %v %s\nstderr:\n%s", c.Command, err, rerr, r.Error, tail(errb.String()))
	case !r.Started:
		return readRun{}, nil, fmt.Errorf("%s: the launcher did not start it", c.Command)
	}
	return readRun{Wall: time.Duration(r.Wall), CPU: time.Duration(r.CPU), RSSKB: r.MaxRSS}, out.Bytes(), nil
}

// readLauncherSource is a tiny program that runs a command and reports its
// rusage on fd 3. The measured processes are its children, not the
// harness's: Linux carries the address space's high-water mark over execve,
// and Go starts children with vfork, so a child of this (large) process
// would report at least this process's peak RSS. The launcher's own peak
// is a couple of MB, below anything measured.
const readLauncherSource = `package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	rep := map[string]any{}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	rep["wall_ns"] = time.Since(start).Nanoseconds()
	if ps := cmd.ProcessState; ps != nil {
		rep["started"] = true
		rep["cpu_ns"] = (ps.UserTime() + ps.SystemTime()).Nanoseconds()
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			rep["max_rss_kb"] = ru.Maxrss
		}
	}
	if err != nil {
		rep["error"] = err.Error()
	}
	json.NewEncoder(os.NewFile(3, "report")).Encode(rep)
}
`

// buildReadLauncher builds the launcher into tmp/bin.
func buildReadLauncher(ctx context.Context, tmp string) (string, error) {
	src := filepath.Join(tmp, "launcher")
	if err := os.MkdirAll(src, 0o700); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module launcher\n\ngo 1.22\n"), 0o600); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(readLauncherSource), 0o600); err != nil {
		return "", err
	}
	bin := filepath.Join(tmp, "bin", "launcher")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the launcher: %v\n%s", err, b)
	}
	return bin, nil
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
