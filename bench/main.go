// Command bench is scribe's side-by-side benchmark harness: it records the
// same JSONL transcript lines to the same disk three ways — a plain append
// (the peer), the scribe library in process, and the scribe CLI — and
// reports throughput, the ratio against the plain append, and the latency
// of every Submit call. Every scribe run is verified against the input.
//
//	go run ./bench -mb 256 -runs 3 -out bench/results
//
// See bench/README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// options are the harness's settings (the flags).
type options struct {
	MB       int
	Sessions int
	Seed     uint64
	Runs     int
	Dir      string
	Inputs   []string
	Out      string
	JSON     bool
	Profile  string
	// BlockProfile and MutexProfile, like Profile, come from the extra
	// untimed library run.
	BlockProfile string
	MutexProfile string
	// Fsync overrides the library case's fsync policy (diagnosis only).
	Fsync  string
	Warmup int
	CLI    bool
	Keep   bool
	// Progress gets one line per step; nil is silent.
	Progress io.Writer
	// Command is the command line, for the report.
	Command string
	// Case is "record" (the default) or "cloud" (bench/cloud.go), with
	// its workload size and concurrency.
	Case         string
	CloudMB      int
	CloudWorkers int
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var o options
	var inputs listFlag
	flag.IntVar(&o.MB, "mb", 256, "size of the generated workload, in MiB (ignored with -input)")
	flag.IntVar(&o.Sessions, "sessions", 20, "sessions in the generated workload")
	flag.Uint64Var(&o.Seed, "seed", 1, "seed of the generated workload (same seed, same bytes)")
	flag.IntVar(&o.Runs, "runs", 3, "timed runs of each case; the median is reported")
	flag.StringVar(&o.Dir, "dir", os.TempDir(), "folder for the temporary work folder (the disk under test)")
	flag.Var(&inputs, "input", "a JSONL transcript file to use instead of the generated workload (repeatable; extra arguments count too)")
	flag.StringVar(&o.Out, "out", "", "folder to write <date>-record.md into (default: print only)")
	flag.BoolVar(&o.JSON, "json", false, "print the results as JSON instead of a table")
	flag.StringVar(&o.Profile, "profile", "", "write a CPU profile of one extra, untimed scribe library run to this file")
	flag.StringVar(&o.BlockProfile, "blockprofile", "", "write a goroutine blocking profile of the extra library run to this file")
	flag.StringVar(&o.MutexProfile, "mutexprofile", "", "write a mutex contention profile of the extra library run to this file")
	flag.StringVar(&o.Fsync, "fsync", "batch", "fsync policy of the library case: batch (default, what is benchmarked), always or never (for diagnosis)")
	flag.IntVar(&o.Warmup, "warmup", 1, "untimed (but verified) rounds of every case before the timed runs")
	flag.BoolVar(&o.CLI, "cli", true, "include the scribe CLI case (builds ./cmd/scribe)")
	flag.BoolVar(&o.Keep, "keep", false, "keep the temporary work folder")
	flag.StringVar(&o.Case, "case", "record", "what to measure: record (the local store against a plain append), cloud (scribe serve against raw JetStream publishes; see cloud.go), read (scribe ls and show against the Claude Agent SDK; see read.go), backends (the postgres and s3 stores against COPY and PutObject; see backends.go), redact (record with the redact processor against without it, and scan MB/s; see redact.go), sealed (record into a sealed archive against a plain one; see sealed.go), watch (live intake; see watch.go), ui (the web viewer in Chromium against getSessionMessages; see ui.go) or usage (scribe usage daily and statusline against ccusage; see usage.go)")
	flag.IntVar(&o.CloudMB, "cloud-mb", 16, "-case cloud and -case backends: size of the generated workload, in MiB")
	flag.IntVar(&o.CloudWorkers, "cloud-workers", 8, "-case cloud: sessions posted side by side")
	flag.BoolVar(&timeFull, "full", false, "time the full build (scribe-full) in the CLI cases instead of the light one")
	flag.Parse()
	o.Inputs = append(inputs, flag.Args()...)
	o.Progress = os.Stderr
	o.Command = "go run ./bench " + strings.Join(os.Args[1:], " ")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.Case == "cloud" {
		mainCloud(ctx, o)
		return
	}
	if o.Case == "ui" {
		mainUI(ctx, o)
		return
	}
	if o.Case == "read" {
		mainRead(ctx, o)
		return
	}
	if o.Case == "backends" {
		mainBackends(ctx, o)
		return
	}
	if o.Case == "redact" {
		mainRedact(ctx, o)
		return
	}
	if o.Case == "watch" {
		mainWatch(ctx, o)
		return
	}
	if o.Case == "sealed" {
		mainSealed(ctx, o)
		return
	}
	if o.Case == "usage" {
		mainUsage(ctx, o)
		return
	}
	if o.Case != "record" {
		fmt.Fprintf(os.Stderr, "bench: -case %q: want record, cloud, read, backends, redact, sealed, watch or usage\n", o.Case)
		os.Exit(2)
	}
	rep, err := run(ctx, o)
	emitReport(o, rep, err, printTable, writeMarkdown)
}

// workFolder makes the run's temporary work folder under o.Dir (the
// system's temporary folder when unset); done removes it unless -keep.
func (o *options) workFolder(prefix string) (dir string, done func(), err error) {
	if o.Dir == "" {
		o.Dir = os.TempDir()
	}
	dir, err = os.MkdirTemp(o.Dir, prefix)
	if err != nil {
		return "", nil, err
	}
	if o.Keep {
		o.logf("work folder %s (kept)", dir)
		return dir, func() {}, nil
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

func (o *options) logf(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "bench: "+format+"\n", args...)
	}
}

// run prepares the workload, runs every case o.Runs times in rotating order,
// verifies each scribe run, and summarises.
func run(ctx context.Context, o options) (*report, error) {
	if o.Runs < 1 {
		return nil, errors.New("-runs must be at least 1")
	}
	if o.Dir == "" {
		o.Dir = os.TempDir()
	}
	tmp, err := os.MkdirTemp(o.Dir, "scribe-bench-")
	if err != nil {
		return nil, err
	}
	if o.Keep {
		o.logf("work folder %s (kept)", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}

	rep := &report{
		Date:     time.Now().Format("2006-01-02"),
		Command:  o.Command,
		Go:       runtime.Version(),
		OS:       runtime.GOOS + "/" + runtime.GOARCH,
		CPUs:     runtime.NumCPU(),
		Dir:      o.Dir,
		Runs:     o.Runs,
		TargetPc: targetPct,
		Warmup:   o.Warmup,
	}
	p, err := prepareWorkload(o, tmp, rep)
	if err != nil {
		return nil, err
	}
	cases := []string{casePlain, caseLibrary}
	var bin string
	if o.CLI {
		var took time.Duration
		bin, took, err = buildCLI(ctx, filepath.Join(tmp, "bin"))
		if err != nil {
			return nil, err
		}
		rep.CLIBuild = took
		o.logf("built ./cmd/scribe in %v", took.Round(time.Millisecond))
		cases = append(cases, caseCLI)
	}
	switch jsonl.FsyncPolicy(o.Fsync) {
	case "":
		o.Fsync = string(jsonl.FsyncBatch)
	case jsonl.FsyncBatch, jsonl.FsyncAlways, jsonl.FsyncNever:
	default:
		return nil, fmt.Errorf("-fsync %q: want batch, always or never", o.Fsync)
	}
	rep.Fsync = o.Fsync
	results, err := recordRounds(ctx, o, p, tmp, bin, cases)
	if err != nil {
		return nil, err
	}
	for _, name := range cases {
		cs := summarizeCase(name, p, results[name])
		if name == caseLibrary && o.Fsync != string(jsonl.FsyncBatch) {
			cs.Name += " (fsync " + o.Fsync + ")"
		}
		rep.Cases = append(rep.Cases, cs)
	}
	plain := rep.Cases[0].MiBps
	for i := range rep.Cases {
		rep.Cases[i].RatioPct = 100 * rep.Cases[i].MiBps / plain
	}

	if o.Profile != "" || o.BlockProfile != "" || o.MutexProfile != "" {
		pi, err := profiledRun(ctx, o, p, filepath.Join(tmp, "profile-library"))
		if err != nil {
			return nil, fmt.Errorf("profiled run: %w", err)
		}
		rep.Profile = pi
		o.logf("profiled library run (not in the table): %.1f MiB/s; profiles: %s", pi.MiBps, strings.Join(pi.Files, ", "))
	}
	return rep, nil
}

// prepareWorkload generates the workload (or takes -input files) and plans
// what a correct store holds.
func prepareWorkload(o options, tmp string, rep *report) (*plan, error) {
	inputs := o.Inputs
	if len(inputs) == 0 {
		if o.MB < 1 || o.Sessions < 1 {
			return nil, errors.New("-mb and -sessions must be at least 1")
		}
		if err := os.MkdirAll(filepath.Join(tmp, "input"), 0o700); err != nil {
			return nil, err
		}
		path := filepath.Join(tmp, "input", "workload.jsonl")
		start := time.Now()
		if err := generate(path, o.Sessions, int64(o.MB)<<20, o.Seed); err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
		o.logf("generated %d MiB, %d sessions, seed %d in %v", o.MB, o.Sessions, o.Seed, time.Since(start).Round(time.Millisecond))
		inputs = []string{path}
		rep.Workload.Generated = true
		rep.Workload.Seed = o.Seed
	} else {
		for i, in := range inputs {
			abs, err := filepath.Abs(in)
			if err != nil {
				return nil, err
			}
			inputs[i] = abs
		}
		rep.Workload.Inputs = inputs
	}
	cwd, err := workDir(tmp)
	if err != nil {
		return nil, err
	}
	p, err := makePlan(inputs, cwd)
	if err != nil {
		return nil, err
	}
	rep.Workload.fill(p)
	o.logf("workload: %d bytes, %d lines, %d entries to accept, %d sessions, %d transcript files",
		p.Bytes, p.Lines, p.Accepted, p.Sessions, len(p.Files))
	return p, nil
}

// recordRounds runs -warmup untimed rounds and -runs timed ones of every
// case, rotating the order so that every case takes every position, and
// verifies each run.
func recordRounds(ctx context.Context, o options, p *plan, tmp, bin string, cases []string) (map[string][]runResult, error) {
	results := map[string][]runResult{}
	for i := -o.Warmup; i < o.Runs; i++ {
		warm := i < 0
		for slot := range cases {
			name := cases[(i+o.Warmup+slot)%len(cases)]
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			dir := filepath.Join(tmp, fmt.Sprintf("run%d-%s", i+o.Warmup, slug(name)))
			res, err := recordOnce(ctx, o, p, name, bin, dir)
			label := fmt.Sprintf("run %d/%d", i+1, o.Runs)
			if warm {
				label = "warm-up"
			}
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", label, name, err)
			}
			o.logf("%-9s %-15s %8.1f MiB/s  wall %v  (verified)", label, name, mibps(p.Bytes, res.Wall), res.Wall.Round(time.Millisecond))
			if !warm {
				res.Run, res.Slot = i+1, slot
				results[name] = append(results[name], res)
			}
			if !o.Keep {
				if err := os.RemoveAll(dir); err != nil {
					return nil, err
				}
			}
		}
	}
	return results, nil
}

// recordOnce runs one case into dir and verifies what it stored.
func recordOnce(ctx context.Context, o options, p *plan, name, bin, dir string) (runResult, error) {
	// Start every case with no dirty pages of the previous one waiting to
	// be written back, and with the previous case's heap collected and
	// returned to the OS (else the runtime's scavenger does it on the next
	// case's time).
	debug.FreeOSMemory()
	syscall.Sync()
	var res runResult
	var err error
	switch name {
	case casePlain:
		if res, err = runPlain(p, dir); err == nil {
			err = verifyPlain(p, dir, &res)
		}
	case caseLibrary:
		if res, err = runLibrary(ctx, p, dir, jsonl.FsyncPolicy(o.Fsync)); err == nil {
			err = verifyStore(p, dir, &res)
		}
	case caseCLI:
		if res, err = runCLI(ctx, p, bin, dir); err == nil {
			err = verifyStore(p, dir, &res)
		}
	}
	return res, err
}

// profiledRun is one extra library run with the requested profilers on.
func profiledRun(ctx context.Context, o options, p *plan, dir string) (*profileInfo, error) {
	debug.FreeOSMemory()
	syscall.Sync()
	pi := &profileInfo{}
	if o.BlockProfile != "" {
		runtime.SetBlockProfileRate(1)
		defer runtime.SetBlockProfileRate(0)
	}
	if o.MutexProfile != "" {
		runtime.SetMutexProfileFraction(1)
		defer runtime.SetMutexProfileFraction(0)
	}
	var cpu *os.File
	if o.Profile != "" {
		f, err := os.Create(o.Profile)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		cpu = f
		pi.Files = append(pi.Files, o.Profile)
	}
	res, err := runLibrary(ctx, p, dir, jsonl.FsyncPolicy(o.Fsync))
	if cpu != nil {
		pprof.StopCPUProfile()
		if cerr := cpu.Close(); err == nil {
			err = cerr
		}
	}
	for _, pr := range []struct{ name, file string }{{"block", o.BlockProfile}, {"mutex", o.MutexProfile}} {
		if pr.file == "" || err != nil {
			continue
		}
		f, ferr := os.Create(pr.file)
		if ferr != nil {
			return nil, ferr
		}
		err = pprof.Lookup(pr.name).WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		pi.Files = append(pi.Files, pr.file)
	}
	if err == nil {
		err = verifyStore(p, dir, &res)
	}
	if err != nil {
		return nil, err
	}
	pi.Wall, pi.MiBps = res.Wall, mibps(p.Bytes, res.Wall)
	return pi, nil
}

// workDir makes the folder the CLI runs in, which names the project of
// sessions without a cwd, under its real (symlink-free) path.
func workDir(tmp string) (string, error) {
	dir := filepath.Join(tmp, "cwd")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(dir)
}

func slug(s string) string { return strings.ReplaceAll(s, " ", "-") }

func mibps(bytes int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(bytes) / (1 << 20) / d.Seconds()
}

// emitReport ends a bench: its failure (exit 1), or its report as JSON
// (-json) or a table, and its markdown in -out.
func emitReport[R any](o options, rep R, err error, print func(io.Writer, R), write func(string, R) (string, error)) {
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
		print(os.Stdout, rep)
	}
	if o.Out != "" {
		path, err := write(o.Out, rep)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "bench: wrote", path)
	}
}
