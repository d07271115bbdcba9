package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// Case names.
const (
	casePlain   = "plain append"
	caseLibrary = "scribe library"
	caseCLI     = "scribe CLI"
)

// runResult is one timed run of one case.
type runResult struct {
	Run  int           `json:"run"`
	Slot int           `json:"slot"` // position in the run's order, from 0
	Wall time.Duration `json:"wall_ns"`
	// CPU is user+system time: of this process for the in-process cases,
	// of the child for the CLI.
	CPU time.Duration `json:"cpu_ns"`
	// OtherCPU is the CPU time the rest of the machine used meanwhile
	// (from /proc/stat, minus the case's own); -1 when unknown.
	OtherCPU    time.Duration   `json:"other_cpu_ns"`
	OutputFiles int             `json:"output_files"`
	OutputLines int64           `json:"output_lines"`
	OutputBytes int64           `json:"output_bytes"`
	Latency     *latencySummary `json:"submit_latency,omitempty"`
	// Pipeline and sink counters of the scribe cases.
	QueueWaits    int64            `json:"queue_waits,omitempty"`
	QueueWaitTime time.Duration    `json:"queue_wait_ns,omitempty"`
	SinkCounters  map[string]int64 `json:"sink_counters,omitempty"`
	Verified      bool             `json:"verified"`
}

// machineBusy returns the CPU time all processors spent busy since boot,
// from /proc/stat; ok is false where there is none.
func machineBusy() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, false
	}
	var busy int64
	// user nice system idle iowait irq softirq steal: all but idle, iowait.
	for i, v := range f[1:9] {
		if i == 3 || i == 4 {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, false
		}
		busy += n
	}
	const userHZ = 100 // USER_HZ is 100 on every Linux port Go supports
	return time.Duration(busy) * (time.Second / userHZ), true
}

// meter measures a case's wall time, its CPU and the rest of the machine's.
type meter struct {
	start        time.Time
	self0, busy0 time.Duration
	busyOK       bool
}

func startMeter() meter {
	m := meter{self0: cpuSelf()}
	m.busy0, m.busyOK = machineBusy()
	m.start = time.Now()
	return m
}

// stop fills wall, CPU (this process's, plus child) and OtherCPU.
func (m meter) stop(res *runResult, child time.Duration) {
	res.Wall = time.Since(m.start)
	self := cpuSelf() - m.self0
	res.CPU = self + child
	res.OtherCPU = -1
	if busy1, ok := machineBusy(); ok && m.busyOK {
		res.OtherCPU = max(busy1-m.busy0-self-child, 0)
	}
}

func cpuSelf() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runPlain is the peer: the same routed bytes appended to one file per
// transcript (the same paths scribe uses) through a 64 KiB buffered writer
// each, then one fsync per file and per created folder. No parsing, no
// dedup: the plan already knows where each line goes.
func runPlain(p *plan, root string) (runResult, error) {
	type pf struct {
		f  *os.File
		bw *bufio.Writer
	}
	files := make([]*pf, len(p.Files))
	dirs := map[string]bool{}
	m := startMeter()
	n := 0
	err := eachLine(p.Inputs, func(_ int, line []byte) error {
		r := p.route[n]
		n++
		if r < 0 {
			return nil
		}
		f := files[r]
		if f == nil {
			path := filepath.Join(root, p.Files[r].Rel)
			dir := filepath.Dir(path)
			if !dirs[dir] {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					return err
				}
				dirs[dir] = true
			}
			fd, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				return err
			}
			f = &pf{f: fd, bw: bufio.NewWriterSize(fd, 64<<10)}
			files[r] = f
		}
		f.bw.Write(line)
		return f.bw.WriteByte('\n')
	})
	if err != nil {
		return runResult{}, err
	}
	for _, f := range files {
		if f == nil {
			continue
		}
		if err := f.bw.Flush(); err != nil {
			return runResult{}, err
		}
		if err := f.f.Sync(); err != nil {
			return runResult{}, err
		}
		if err := f.f.Close(); err != nil {
			return runResult{}, err
		}
	}
	for dir := range dirs {
		if err := durable.SyncDir(dir); err != nil {
			return runResult{}, err
		}
	}
	var res runResult
	m.stop(&res, 0)
	if n != p.Lines {
		return res, fmt.Errorf("%s: read %d lines, the plan has %d", casePlain, n, p.Lines)
	}
	return res, nil
}

// runLibrary is scribe in process: jsonl sink (default options: fsync
// batch, 100 ms drain) as sink and seeder, the input read with
// core.Intake (regions of lines parsed in place on a worker per core, each
// entry leased: Entry.Lease, its block reused once the sinks wrote it),
// and submitted, then Flush and Shutdown. Each Submit call is timed.
func runLibrary(ctx context.Context, p *plan, root string, fsync jsonl.FsyncPolicy, procs ...core.NamedProcessor) (runResult, error) {
	return runLibraryWith(ctx, p, root, jsonl.Options{Fsync: fsync}, procs...)
}

// runLibraryWith is runLibrary with the store's options (its folder and
// default cwd are set here).
func runLibraryWith(ctx context.Context, p *plan, root string, so jsonl.Options, procs ...core.NamedProcessor) (runResult, error) {
	lat := make([]time.Duration, 0, p.Entries)
	m := startMeter()

	so.ConfigDir, so.DefaultCWD = root, p.DefaultCWD
	sink, err := jsonl.New(so)
	if err != nil {
		return runResult{}, err
	}
	pl, err := core.NewPipeline(core.PipelineOptions{
		Sinks:      []core.NamedSink{{ID: core.MustParseID("jsonl/local"), Sink: sink}},
		Seeder:     sink,
		Processors: procs,
	})
	if err != nil {
		return runResult{}, err
	}
	if err := pl.Start(ctx); err != nil {
		return runResult{}, err
	}
	rt := newRouter(len(p.Inputs))
	var ready []core.Entry
	var accepted, dups int
	submit := func(e core.Entry) error {
		t0 := time.Now()
		res, err := pl.Submit(ctx, e)
		lat = append(lat, time.Since(t0))
		if err != nil {
			return fmt.Errorf("submit: %w", err)
		}
		switch res.Status {
		case core.Accepted:
			accepted++
		case core.Duplicate:
			dups++
		default:
			return fmt.Errorf("submit: %s (%v)", res.Status, res.Reason)
		}
		return nil
	}
	// The host reads and parses on a goroutine of its own (the input's
	// lines parsed in place, no copy) and submits on this one.
	batches := make(chan parsedBatch, 8)
	go parseInputs(p.Inputs, batches)
batches:
	for b := range batches {
		if err = b.err; err != nil {
			break
		}
		for _, l := range b.lines {
			ready = rt.route(l.file, l.e, ready)
			for _, e := range ready {
				if err = submit(e); err != nil {
					break batches
				}
			}
		}
	}
	if err != nil {
		for range batches { // let the reader end
		}
		_ = pl.Shutdown(ctx)
		return runResult{}, err
	}
	if err := pl.Flush(ctx); err != nil {
		_ = pl.Shutdown(ctx)
		return runResult{}, fmt.Errorf("flush: %w", err)
	}
	if err := pl.Shutdown(ctx); err != nil {
		return runResult{}, fmt.Errorf("shutdown: %w", err)
	}
	var res runResult
	m.stop(&res, 0)

	st := pl.Stats()
	sum := summarize(lat)
	res.Latency = &sum
	res.QueueWaits, res.QueueWaitTime = st.QueueWaits, st.QueueWaitTime
	var problems []string
	if accepted != p.Accepted || st.Accepted != int64(p.Accepted) {
		problems = append(problems, fmt.Sprintf("accepted %d (stats %d), want %d", accepted, st.Accepted, p.Accepted))
	}
	if dups != p.Duplicates {
		problems = append(problems, fmt.Sprintf("%d duplicates, want %d", dups, p.Duplicates))
	}
	if len(st.Sinks) != 1 {
		problems = append(problems, fmt.Sprintf("%d sinks in stats, want 1", len(st.Sinks)))
	} else {
		ss := st.Sinks[0]
		res.SinkCounters = ss.Counters
		if ss.Written != int64(p.Accepted) || ss.Dropped != 0 || ss.WriteErrors != 0 || ss.Queued != 0 {
			problems = append(problems, fmt.Sprintf("sink wrote %d (want %d), dropped %d, write errors %d, still queued %d",
				ss.Written, p.Accepted, ss.Dropped, ss.WriteErrors, ss.Queued))
		}
		if u := ss.Counters["unrouted"]; u != 0 {
			problems = append(problems, fmt.Sprintf("sink could not route %d entries", u))
		}
	}
	if len(problems) > 0 {
		return res, fmt.Errorf("%s: %s", caseLibrary, strings.Join(problems, "; "))
	}
	return res, nil
}

// cliReport is the part of `scribe record --json` the bench checks.
type cliReport struct {
	Lines          int64            `json:"lines"`
	Accepted       int64            `json:"accepted"`
	Duplicates     int64            `json:"duplicates"`
	Refused        map[string]int64 `json:"refused"`
	MalformedCount int64            `json:"malformed_count"`
	Unroutable     int64            `json:"unroutable"`
	QueueWaits     int64            `json:"queue_waits"`
	Sinks          []core.SinkStats `json:"sinks"`
	Error          string           `json:"error"`
}

// timeFull is -full: the CLI cases time the full build (scribe-full)
// instead of the light one, for the light/full decision.
var timeFull bool

// buildCLI installs scribe into dir as users do (scripts/install: the
// light build as scribe, the full build beside it as scribe-full) and
// returns the path of scribe.
func buildCLI(ctx context.Context, dir string) (string, time.Duration, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", 0, fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", 0, fmt.Errorf("not inside the scribe module (run from the repository)")
	}
	bin := filepath.Join(dir, "scribe")
	if timeFull {
		bin = filepath.Join(dir, "scribe-full")
	}
	start := time.Now()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join("scripts", "install"), dir)
	cmd.Dir = filepath.Dir(gomod)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", 0, fmt.Errorf("scripts/install: %v\n%s", err, b)
	}
	return bin, time.Since(start), nil
}

// cliEnv is the environment without what would turn the guards on or move
// the config folder.
func cliEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "NODE_ENV", k == "CLAUDE_CODE_SKIP_PROMPT_HISTORY", k == "CLAUDE_CONFIG_DIR",
			strings.HasPrefix(k, "SCRIBE_"):
			continue
		}
		env = append(env, kv)
	}
	return env
}

// runCLI times `scribe record --config-dir <root> --json <inputs>`, from
// process start to exit.
func runCLI(ctx context.Context, p *plan, bin, root string) (runResult, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return runResult{}, err
	}
	args := append([]string{"record", "--config-dir", root, "--json"}, p.Inputs...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = p.DefaultCWD
	cmd.Env = append(cliEnv(), "PWD="+p.DefaultCWD)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	m := startMeter()
	err := cmd.Run()
	var child time.Duration
	if cmd.ProcessState != nil {
		child = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	var res runResult
	m.stop(&res, child)
	if err != nil {
		return res, fmt.Errorf("%s: %v\nstderr:\n%s\nstdout:\n%s", caseCLI, err, tail(stderr.String()), tail(stdout.String()))
	}
	var rep cliReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return res, fmt.Errorf("%s: report: %v\n%s", caseCLI, err, tail(stdout.String()))
	}
	res.QueueWaits = rep.QueueWaits
	var problems []string
	if rep.Error != "" {
		problems = append(problems, "error: "+rep.Error)
	}
	if rep.Lines != int64(p.Lines) || rep.Accepted != int64(p.Accepted) || rep.Duplicates != int64(p.Duplicates) ||
		rep.MalformedCount != int64(p.Malformed) || rep.Unroutable != int64(p.Unroutable) {
		problems = append(problems, fmt.Sprintf("lines %d accepted %d duplicates %d malformed %d unroutable %d; want %d %d %d %d %d",
			rep.Lines, rep.Accepted, rep.Duplicates, rep.MalformedCount, rep.Unroutable,
			p.Lines, p.Accepted, p.Duplicates, p.Malformed, p.Unroutable))
	}
	for id, n := range rep.Refused {
		if n > 0 {
			problems = append(problems, fmt.Sprintf("guard %s refused %d entries", id, n))
		}
	}
	if len(rep.Sinks) == 1 {
		res.SinkCounters = rep.Sinks[0].Counters
		if w := rep.Sinks[0].Written; w != int64(p.Accepted) {
			problems = append(problems, fmt.Sprintf("sink wrote %d, want %d", w, p.Accepted))
		}
	} else {
		problems = append(problems, fmt.Sprintf("%d sinks in the report, want 1", len(rep.Sinks)))
	}
	if len(problems) > 0 {
		return res, fmt.Errorf("%s: %s", caseCLI, strings.Join(problems, "; "))
	}
	return res, nil
}

func tail(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}

// verifyStore checks a scribe run's config folder against the plan: every
// transcript file it should hold, at the expected path, with exactly the
// expected uuid lines byte for byte and in order, and at least the expected
// metadata lines (the sink appends the metadata block again as files grow);
// no other transcript file.
func verifyStore(p *plan, root string, res *runResult) error {
	found := map[string]bool{}
	byRel := make(map[string]*outFile, len(p.Files))
	for _, f := range p.Files {
		byRel[f.Rel] = f
	}
	var problems []string
	projects := filepath.Join(root, "projects")
	err := filepath.WalkDir(projects, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		f := byRel[rel]
		if f == nil {
			problems = append(problems, "unexpected file "+rel)
			return nil
		}
		found[rel] = true
		var uuids, meta, n int
		var chain uint64
		res.OutputFiles++
		err = eachLineOf(path, 0, func(_ int, line []byte) error {
			n++
			res.OutputLines++
			res.OutputBytes += int64(len(line)) + 1
			e, err := core.ParseEntryOwned(line)
			if err != nil {
				return fmt.Errorf("%s line %d: %w", rel, n, err)
			}
			if e.UUID != "" {
				uuids++
				chain = chainAdd(chain, line)
			} else {
				meta++
			}
			return nil
		})
		if err != nil {
			return err
		}
		if uuids != f.UUIDLines || chain != f.Chain {
			problems = append(problems, fmt.Sprintf("%s: %d uuid lines (want %d), content matches input: %v", rel, uuids, f.UUIDLines, chain == f.Chain))
		}
		if meta < f.MetaLines {
			problems = append(problems, fmt.Sprintf("%s: %d metadata lines, want at least %d", rel, meta, f.MetaLines))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, f := range p.Files {
		if !found[f.Rel] && (f.UUIDLines > 0 || f.MetaLines > 0) {
			problems = append(problems, "missing file "+f.Rel)
		}
	}
	if len(problems) > 0 {
		if len(problems) > 10 {
			problems = append(problems[:10], fmt.Sprintf("... and %d more", len(problems)-10))
		}
		return fmt.Errorf("verification failed:\n  %s", strings.Join(problems, "\n  "))
	}
	res.Verified = true
	return nil
}

// verifyPlain checks that the peer wrote every byte it was given.
func verifyPlain(p *plan, root string, res *runResult) error {
	var problems []string
	for _, f := range p.Files {
		if f.PeerBytes == 0 {
			continue
		}
		fi, err := os.Stat(filepath.Join(root, f.Rel))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		res.OutputFiles++
		res.OutputBytes += fi.Size()
		if fi.Size() != f.PeerBytes {
			problems = append(problems, fmt.Sprintf("%s: %d bytes, want %d", f.Rel, fi.Size(), f.PeerBytes))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: verification failed: %s", casePlain, strings.Join(problems, "; "))
	}
	res.Verified = true
	return nil
}

// latencySummary holds Submit latency percentiles.
type latencySummary struct {
	Count int           `json:"count"`
	P50   time.Duration `json:"p50_ns"`
	P99   time.Duration `json:"p99_ns"`
	P999  time.Duration `json:"p99_9_ns"`
	Max   time.Duration `json:"max_ns"`
	Mean  time.Duration `json:"mean_ns"`
}

func summarize(lat []time.Duration) latencySummary {
	if len(lat) == 0 {
		return latencySummary{}
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	q := func(f float64) time.Duration {
		i := int(f*float64(len(s))+0.5) - 1
		return s[min(max(i, 0), len(s)-1)]
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return latencySummary{Count: len(s), P50: q(0.50), P99: q(0.99), P999: q(0.999), Max: s[len(s)-1], Mean: sum / time.Duration(len(s))}
}

// parsedBatch is a run of parsed input lines, or the error that ended the
// input.
type parsedBatch struct {
	lines []parsedLine
	err   error
}

type parsedLine struct {
	file int
	e    core.Entry
}

// parseInputs reads the files with core.Intake (regions parsed in place on
// a worker per core, each entry holding a reference on its block's lease;
// blank and malformed lines are skipped: the plan counts them) and sends
// the entries on a region at a time, in input order.
func parseInputs(files []string, out chan<- parsedBatch) {
	defer close(out)
	for fi, name := range files {
		f, err := os.Open(name)
		if err != nil {
			out <- parsedBatch{err: err}
			return
		}
		err = core.Intake(context.Background(), f, 0, func(lines []core.Line) error {
			cur := make([]parsedLine, 0, len(lines))
			for _, l := range lines {
				if !l.Blank && l.Err == nil {
					cur = append(cur, parsedLine{file: fi, e: l.Entry})
				}
			}
			out <- parsedBatch{lines: cur}
			return nil
		})
		f.Close()
		if err != nil {
			out <- parsedBatch{err: fmt.Errorf("read %s: %w", name, err)}
			return
		}
	}
}
