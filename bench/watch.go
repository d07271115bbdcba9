package main

// The watch case (go run ./bench -case watch): live intake against the
// simplest follower that does the same job, in the same run, on the same
// data.
//
//   - latency: one writer appends Claude Code-like batches (1–3 lines of
//     about 1 KB, one write each) to -watch-sessions transcripts, one batch
//     every 10 ms, -watch-batches in all. Timed from the write's return to
//     the line being durable in the sink: for scribe, watch.Watcher in this
//     process over a pipeline with the archive (jsonl, fsync batch, 10 ms
//     drain; OnAck reports each acknowledged offset), at --flush-interval
//     10 ms and at the CLI's default 50 ms; for the peer, a plain follower
//     (fsnotify on the same folders, pread of the new bytes up to the last
//     newline, one append to a copy, fsync) — no parsing, no dedup, no
//     checkpoints.
//   - hook: `scribe hook` (the built binary) for a small delta (2 lines
//     appended before each call), -watch-hooks calls alternating
//     UserPromptSubmit and Stop, wall time from start to exit; the peer is
//     `cat` reading the same event (the cost of any command hook).
//   - idle: -watch-files transcripts followed by `scribe watch`, after its
//     catch-up, CPU time and resident memory over -watch-idle; the peer is
//     GNU `tail -q -n0 -F` over the same files.
//   - catchup: -watch-catchup-sessions sessions of -watch-catchup-bytes to
//     a fresh `scribe serve` each: `scribe watch --once` (sink events/team)
//     against `scribe push --all` of the same folder; both verified by the
//     server's counts.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/watch"
)

var (
	watchParts     = flag.String("watch-parts", "latency,hook,idle,catchup", "-case watch: which parts to run")
	watchSessions  = flag.Int("watch-sessions", 20, "-case watch latency: transcripts written side by side")
	watchBatches   = flag.Int("watch-batches", 1000, "-case watch latency: batches appended (one every 10 ms)")
	watchHooks     = flag.Int("watch-hooks", 200, "-case watch hook: hook calls")
	watchFiles     = flag.Int("watch-files", 10000, "-case watch idle: files followed")
	watchIdle      = flag.Duration("watch-idle", 30*time.Second, "-case watch idle: how long to measure the idle follower")
	watchCUSess    = flag.Int("watch-catchup-sessions", 2000, "-case watch catchup: sessions")
	watchCUBytes   = flag.Int("watch-catchup-bytes", 200_000, "-case watch catchup: bytes per session")
	watchCUTimeout = flag.Duration("watch-catchup-timeout", 20*time.Minute, "-case watch catchup: bound of each run")
)

type watchRow struct {
	Part, Case, Figure, Peer, Ratio, Note string
}

func mainWatch(ctx context.Context, o options) {
	dir, err := os.MkdirTemp(o.Dir, "scribe-watch-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if !o.Keep {
		defer os.RemoveAll(dir)
	}
	bin, _, err := buildCLI(ctx, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	var rows []watchRow
	for _, part := range strings.Split(*watchParts, ",") {
		o.logf("watch: %s", part)
		var r []watchRow
		switch strings.TrimSpace(part) {
		case "latency":
			r, err = benchLatency(ctx, filepath.Join(dir, "latency"))
		case "hook":
			r, err = benchHook(ctx, bin, filepath.Join(dir, "hook"))
		case "idle":
			r, err = benchIdle(ctx, o, bin, filepath.Join(dir, "idle"))
		case "catchup":
			r, err = benchCatchUp(ctx, o, bin, filepath.Join(dir, "catchup"))
		default:
			err = fmt.Errorf("-watch-parts: unknown part %q", part)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: FAILED:", err)
			os.Exit(1)
		}
		rows = append(rows, r...)
	}
	tw := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "part\tcase\tscribe\tpeer\tratio\tnote")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Part, r.Case, r.Figure, r.Peer, r.Ratio, r.Note)
	}
	tw.Flush()
}

// latWriter appends pre-made batches and notes when each write returned.
type latWriter struct {
	mu      sync.Mutex
	pending map[string][]latMark
	lat     []time.Duration
}

type latMark struct {
	end int64
	at  time.Time
}

func (lw *latWriter) acked(path string, off int64) {
	now := time.Now()
	lw.mu.Lock()
	defer lw.mu.Unlock()
	ps := lw.pending[path]
	n := 0
	for n < len(ps) && ps[n].end <= off {
		lw.lat = append(lw.lat, now.Sub(ps[n].at))
		n++
	}
	lw.pending[path] = ps[n:]
}

func (lw *latWriter) left() int {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	n := 0
	for _, ps := range lw.pending {
		n += len(ps)
	}
	return n
}

// latBatches makes the batches: user rows of about 1 KB, 1–3 a batch,
// round robin over the files.
func latBatches(n, files int) [][]byte {
	out := make([][]byte, n)
	seq := 0
	for i := range out {
		var b bytes.Buffer
		for k := 0; k < 1+i%3; k++ {
			seq++
			fmt.Fprintf(&b, `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"%s"},"uuid":"00000000-0000-4000-8000-%012d","timestamp":"2026-01-10T11:00:02.267Z","userType":"external","entrypoint":"cli","cwd":"/home/dev/app","sessionId":"%s","version":"2.1.332"}`+"\n",
				strings.Repeat("lorem ipsum ", 75), seq, latSession(i%files))
		}
		out[i] = b.Bytes()
	}
	return out
}

func latSession(i int) string { return fmt.Sprintf("5e551011-0000-4000-8000-%012d", i) }

// writeBatches appends every batch, one every 10 ms, round robin.
func writeBatches(ctx context.Context, paths []string, batches [][]byte, lw *latWriter) error {
	sizes := make([]int64, len(paths))
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i, b := range batches {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		k := i % len(paths)
		f, err := os.OpenFile(paths[k], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		// Note the mark first: a fast follower may see the bytes before
		// Write returns.
		lw.mu.Lock()
		sizes[k] += int64(len(b))
		lw.pending[paths[k]] = append(lw.pending[paths[k]], latMark{end: sizes[k], at: time.Now()})
		lw.mu.Unlock()
		if _, err := f.Write(b); err != nil {
			f.Close()
			return err
		}
		f.Close()
	}
	return nil
}

// writeAndWait writes the batches, waits (at most 30 s) until the
// follower made every one durable, then stops it.
func writeAndWait(ctx context.Context, paths []string, batches [][]byte, lw *latWriter, stop func(), done <-chan error, who string) error {
	werr := writeBatches(ctx, paths, batches, lw)
	deadline := time.Now().Add(30 * time.Second)
	for lw.left() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		return err
	}
	if werr != nil {
		return werr
	}
	if n := lw.left(); n > 0 {
		return fmt.Errorf("latency: %s never made %d batches durable", who, n)
	}
	return nil
}

func latPaths(root string, n int) []string {
	proj := filepath.Join(root, "claude", "projects", claudedir.SanitizePath("/home/dev/app"))
	_ = os.MkdirAll(proj, 0o700)
	ps := make([]string, n)
	for i := range ps {
		ps[i] = filepath.Join(proj, latSession(i)+".jsonl")
	}
	return ps
}

func benchLatency(ctx context.Context, dir string) ([]watchRow, error) {
	batches := latBatches(*watchBatches, *watchSessions)
	var rows []watchRow
	peer, err := latencyPeer(ctx, filepath.Join(dir, "peer"), batches)
	if err != nil {
		return nil, err
	}
	for _, fi := range []time.Duration{10 * time.Millisecond, 50 * time.Millisecond} {
		s, err := latencyScribe(ctx, filepath.Join(dir, "scribe-"+fi.String()), batches, fi)
		if err != nil {
			return nil, err
		}
		rows = append(rows,
			watchRow{"latency", "p50, flush " + fi.String(), fmtDur(s.P50), fmtDur(peer.P50), ratio(s.P50, peer.P50), fmt.Sprintf("%d batches", s.Count)},
			watchRow{"latency", "p99, flush " + fi.String(), fmtDur(s.P99), fmtDur(peer.P99), ratio(s.P99, peer.P99), "goal p99 ≤ 50ms"})
	}
	return rows, nil
}

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f×", float64(a)/float64(b))
}

func latencyScribe(ctx context.Context, dir string, batches [][]byte, flushEvery time.Duration) (latencySummary, error) {
	paths := latPaths(dir, *watchSessions)
	archive := filepath.Join(dir, "archive")
	sink, err := jsonl.New(jsonl.Options{ConfigDir: archive, DrainInterval: 10 * time.Millisecond})
	if err != nil {
		return latencySummary{}, err
	}
	p, err := core.NewPipeline(core.PipelineOptions{Sinks: []core.NamedSink{{ID: core.ID{Type: "jsonl", Name: "archive"}, Sink: sink}}, Seeder: sink})
	if err != nil {
		return latencySummary{}, err
	}
	if err := p.Start(ctx); err != nil {
		return latencySummary{}, err
	}
	defer p.Shutdown(context.Background())
	st, err := watch.OpenStore(filepath.Join(dir, "state"), 0)
	if err != nil {
		return latencySummary{}, err
	}
	defer st.Close()
	lw := &latWriter{pending: map[string][]latMark{}}
	w, err := watch.New(watch.Options{Roots: []string{filepath.Join(dir, "claude", "projects")}, Store: st, Pipeline: p,
		Archives: []string{archive}, FlushInterval: flushEvery, OnAck: lw.acked})
	if err != nil {
		return latencySummary{}, err
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	time.Sleep(200 * time.Millisecond) // the first listing
	if err := writeAndWait(ctx, paths, batches, lw, cancel, done, "scribe"); err != nil {
		return latencySummary{}, err
	}
	if w.Stats.Accepted.Load() == 0 || w.Stats.Errors.Load() > 0 {
		return latencySummary{}, fmt.Errorf("latency: scribe accepted %d, errors %d", w.Stats.Accepted.Load(), w.Stats.Errors.Load())
	}
	return summarize(lw.lat), nil
}

// latencyPeer is the plain follower: events, pread, append, fsync.
func latencyPeer(ctx context.Context, dir string, batches [][]byte) (latencySummary, error) {
	paths := latPaths(dir, *watchSessions)
	copyDir := filepath.Join(dir, "copy")
	if err := os.MkdirAll(copyDir, 0o700); err != nil {
		return latencySummary{}, err
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return latencySummary{}, err
	}
	defer fw.Close()
	if err := fw.Add(filepath.Dir(paths[0])); err != nil {
		return latencySummary{}, err
	}
	lw := &latWriter{pending: map[string][]latMark{}}
	offs := map[string]int64{}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 1<<20)
		for {
			select {
			case <-pctx.Done():
				done <- nil
				return
			case ev := <-fw.Events:
				f, err := os.Open(ev.Name)
				if err != nil {
					continue
				}
				n, _ := f.ReadAt(buf, offs[ev.Name])
				f.Close()
				last := bytes.LastIndexByte(buf[:n], '\n')
				if last < 0 {
					continue
				}
				c, err := os.OpenFile(filepath.Join(copyDir, filepath.Base(ev.Name)), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
				if err != nil {
					done <- err
					return
				}
				_, err = c.Write(buf[:last+1])
				if err == nil {
					err = c.Sync()
				}
				c.Close()
				if err != nil {
					done <- err
					return
				}
				offs[ev.Name] += int64(last + 1)
				lw.acked(ev.Name, offs[ev.Name])
			}
		}
	}()
	if err := writeAndWait(ctx, paths, batches, lw, cancel, done, "the peer"); err != nil {
		return latencySummary{}, err
	}
	return summarize(lw.lat), nil
}

// writeArchiveConfig writes a configuration with an archive in dir.
func writeArchiveConfig(dir, extra string, sinks ...string) (string, error) {
	q := make([]string, len(sinks))
	for i, s := range sinks {
		q[i] = strconv.Quote(s)
	}
	hcl := fmt.Sprintf("log_level = \"warn\"\nsink \"jsonl\" \"archive\" {\n  dir = %q\n  drain_interval = \"10ms\"\n}\n%s\npipeline {\n  sinks = [%s]\n}\n", filepath.Join(dir, "archive"), extra, strings.Join(q, ", "))
	p := filepath.Join(dir, "scribe.hcl")
	return p, os.WriteFile(p, []byte(hcl), 0o600)
}

func benchHook(ctx context.Context, bin, dir string) ([]watchRow, error) {
	paths := latPaths(dir, 1)
	cfg, err := writeArchiveConfig(dir, "", "jsonl/archive")
	if err != nil {
		return nil, err
	}
	env := append(cliEnv(), "CLAUDE_CONFIG_DIR="+filepath.Join(dir, "claude"))
	batches := latBatches(*watchHooks, 1)
	var hook, peer []time.Duration
	for i := 0; i < *watchHooks; i++ {
		f, err := os.OpenFile(paths[0], os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		f.Write(batches[i])
		f.Close()
		ev, _ := json.Marshal(map[string]string{"session_id": latSession(0), "transcript_path": paths[0], "cwd": "/home/dev/app",
			"hook_event_name": []string{"UserPromptSubmit", "Stop"}[i%2]})
		for _, c := range []struct {
			argv []string
			out  *[]time.Duration
		}{{[]string{bin, "hook", "--config", cfg}, &hook}, {[]string{"cat"}, &peer}} {
			cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...)
			cmd.Env, cmd.Stdin, cmd.Stdout = env, bytes.NewReader(ev), io.Discard
			start := time.Now()
			if err := cmd.Run(); err != nil {
				return nil, fmt.Errorf("%v: %w", c.argv, err)
			}
			*c.out = append(*c.out, time.Since(start))
		}
	}
	// Verify: every line of the transcript is in the archive once.
	want, _ := os.ReadFile(paths[0])
	got, _ := os.ReadFile(filepath.Join(dir, "archive", "projects", filepath.Base(filepath.Dir(paths[0])), filepath.Base(paths[0])))
	for _, l := range bytes.Split(bytes.TrimSpace(want), []byte{'\n'}) {
		if bytes.Count(got, l) != 1 {
			return nil, fmt.Errorf("hook: a transcript line is %d times in the archive", bytes.Count(got, l))
		}
	}
	h, c := summarize(hook), summarize(peer)
	return []watchRow{
		{"hook", "p50 (small delta)", fmtDur(h.P50), fmtDur(c.P50), ratio(h.P50, c.P50), fmt.Sprintf("%d calls; peer: cat", h.Count)},
		{"hook", "p99 (small delta)", fmtDur(h.P99), fmtDur(c.P99), ratio(h.P99, c.P99), "goal p99 ≤ 50ms"},
	}, nil
}

// procStats reads a process's CPU time and resident memory.
func procStats(pid int) (cpu time.Duration, rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	cpu = time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ = 100
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(s))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && (f[0] == "VmRSS:" || f[0] == "VmHWM:") {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			if f[0] == "VmRSS:" {
				rss = v << 10
			} else {
				hwm = v << 10
			}
		}
	}
	return cpu, rss, hwm, nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func metricValue(addr, name string) (float64, bool) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

func benchIdle(ctx context.Context, o options, bin, dir string) ([]watchRow, error) {
	root := filepath.Join(dir, "claude", "projects")
	var files []string
	for i := 0; i < *watchFiles; i++ {
		proj := filepath.Join(root, fmt.Sprintf("-home-dev-p%03d", i%100))
		if err := os.MkdirAll(proj, 0o700); err != nil {
			return nil, err
		}
		p := filepath.Join(proj, latSession(i)+".jsonl")
		line := fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"hello %d"},"uuid":"00000000-0000-4000-8000-%012d","timestamp":"2026-01-10T11:00:02.267Z","cwd":"/home/dev/p%03d","sessionId":"%s"}`+"\n", i, i, i%100, latSession(i))
		if err := os.WriteFile(p, []byte(line), 0o600); err != nil {
			return nil, err
		}
		files = append(files, p)
	}
	cfg, err := writeArchiveConfig(dir, "", "jsonl/archive")
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "watch", "--config", cfg, "--metrics", addr)
	cmd.Env = append(cliEnv(), "CLAUDE_CONFIG_DIR="+filepath.Join(dir, "claude"))
	cmd.Stderr = io.Discard
	catchStart := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		n, ok1 := metricValue(addr, "scribe_watch_files_followed")
		lag, ok2 := metricValue(addr, "scribe_watch_lag_bytes")
		acc, ok3 := metricValue(addr, `scribe_watch_entries_total{result="accepted"}`)
		if ok1 && ok2 && ok3 && n >= float64(*watchFiles) && lag == 0 && acc >= float64(*watchFiles) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("idle: watch did not catch up with %d files", *watchFiles)
		}
		time.Sleep(100 * time.Millisecond)
	}
	catchUp := time.Since(catchStart)
	o.logf("watch idle: caught up with %d files in %s", *watchFiles, catchUp.Round(time.Millisecond))
	time.Sleep(5 * time.Second) // let the catch-up's garbage go
	s, err := measureIdle(cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	tail := exec.CommandContext(ctx, "tail", append([]string{"-q", "-n0", "-F"}, files...)...)
	tail.Stdout, tail.Stderr = io.Discard, io.Discard
	if err := tail.Start(); err != nil {
		return nil, fmt.Errorf("idle peer: %w", err)
	}
	defer func() { _ = tail.Process.Kill(); _ = tail.Wait() }()
	time.Sleep(2 * time.Second)
	p, err := measureIdle(tail.Process.Pid)
	if err != nil {
		return nil, err
	}
	return []watchRow{
		{"idle", fmt.Sprintf("CPU, %d files, %s", *watchFiles, *watchIdle), fmt.Sprintf("%.3f%%", s.cpuPct), fmt.Sprintf("%.3f%%", p.cpuPct), "-", "peer: tail -F on the same files"},
		{"idle", "resident memory", humanMiB(s.rss), humanMiB(p.rss), fmt.Sprintf("%.1f×", float64(s.rss)/float64(max(p.rss, 1))), fmt.Sprintf("scribe peak %s (catch-up of %d files in %s)", humanMiB(s.hwm), *watchFiles, catchUp.Round(time.Millisecond))},
	}, nil
}

type idleFigures struct {
	cpuPct   float64
	rss, hwm int64
}

func measureIdle(pid int) (idleFigures, error) {
	c0, _, _, err := procStats(pid)
	if err != nil {
		return idleFigures{}, err
	}
	time.Sleep(*watchIdle)
	c1, rss, hwm, err := procStats(pid)
	if err != nil {
		return idleFigures{}, err
	}
	return idleFigures{cpuPct: 100 * float64(c1-c0) / float64(*watchIdle), rss: rss, hwm: hwm}, nil
}

// startServe runs scribe serve with its own data folder until stop.
func startServe(ctx context.Context, bin, dir string) (addr string, stop func(), err error) {
	if addr, err = freeAddr(); err != nil {
		return "", nil, err
	}
	sum := sha256.Sum256([]byte(benchToken))
	hcl := fmt.Sprintf("server {\n  listen = %q\n  data_dir = %q\n  sync = \"2m\"\n  tokens = [{ sha256 = %q, tenant = \"bench\", scopes = [\"read\", \"write\"] }]\n}\n", addr, filepath.Join(dir, "data"), hex.EncodeToString(sum[:]))
	cfg := filepath.Join(dir, "serve.hcl")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	if err := os.WriteFile(cfg, []byte(hcl), 0o600); err != nil {
		return "", nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "serve", "--config", cfg, "--log-level", "warn")
	cmd.Env = cliEnv()
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr, stop, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("scribe serve not ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// serverTotals counts the sessions and entries a server holds (listed by
// the first hex digit of their ids: a listing returns at most 1000).
func serverTotals(addr string) (sessions int, entries int64, err error) {
	for _, prefix := range "0123456789abcdef" {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/sessions?limit=1000&id_prefix="+string(prefix), nil)
		req.Header.Set("Authorization", "Bearer "+benchToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, 0, err
		}
		var l struct {
			Data []struct {
				Entries int64 `json:"entries"`
			} `json:"data"`
			HasMore bool `json:"has_more"`
		}
		err = json.NewDecoder(resp.Body).Decode(&l)
		resp.Body.Close()
		if err != nil {
			return 0, 0, err
		}
		if l.HasMore {
			return 0, 0, fmt.Errorf("more than 1000 sessions start with %c", prefix)
		}
		for _, d := range l.Data {
			entries += d.Entries
		}
		sessions += len(l.Data)
	}
	return sessions, entries, nil
}

func benchCatchUp(ctx context.Context, o options, bin, dir string) ([]watchRow, error) {
	claude := filepath.Join(dir, "claude")
	want, err := writeCatchUpSessions(filepath.Join(claude, "projects"))
	if err != nil {
		return nil, err
	}
	env := append(cliEnv(), "CLAUDE_CONFIG_DIR="+claude)
	times := map[string]time.Duration{}
	for _, c := range []struct {
		name string
		args func(cfg string) []string
	}{
		{"watch --once", func(cfg string) []string { return []string{"watch", "--once", "--config", cfg} }},
		{"push --all", func(cfg string) []string { return []string{"push", "--all", "--config", cfg, "--no-progress"} }},
	} {
		cdir := filepath.Join(dir, strings.Fields(c.name)[0])
		addr, stop, err := startServe(ctx, bin, filepath.Join(cdir, "serve"))
		if err != nil {
			return nil, err
		}
		extra := fmt.Sprintf("sink \"events\" \"team\" {\n  base_url = %q\n  token = %q\n}\n", "http://"+addr, benchToken)
		if err := os.MkdirAll(cdir, 0o700); err != nil {
			stop()
			return nil, err
		}
		cfg, err := writeArchiveConfig(cdir, extra, "events/team")
		if err != nil {
			stop()
			return nil, err
		}
		rctx, cancel := context.WithTimeout(ctx, *watchCUTimeout)
		cmd := exec.CommandContext(rctx, bin, c.args(cfg)...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err = cmd.Run()
		times[c.name] = time.Since(start)
		cancel()
		if err != nil {
			stop()
			return nil, fmt.Errorf("%s: %v\n%s", c.name, err, tailStr(out.String()))
		}
		n, entries, err := serverTotals(addr)
		stop()
		if err != nil {
			return nil, err
		}
		if n != *watchCUSess || entries != want {
			return nil, fmt.Errorf("%s: the server holds %d sessions and %d entries, want %d and %d", c.name, n, entries, *watchCUSess, want)
		}
		o.logf("watch catchup: %s in %s", c.name, times[c.name].Round(time.Millisecond))
	}
	w, p := times["watch --once"], times["push --all"]
	mb := float64(*watchCUSess) * float64(*watchCUBytes) / (1 << 20)
	return []watchRow{{"catchup", fmt.Sprintf("%d × %d KB to scribe serve", *watchCUSess, *watchCUBytes/1000), fmtDur(w), fmtDur(p), ratio(w, p),
		fmt.Sprintf("peer: push --all; %.0f MiB, %d entries; server sync 2m", mb, want)}}, nil
}

func tailStr(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}

// writeCatchUpSessions writes the catch-up corpus and returns how many
// entries (distinct uuids) it holds.
func writeCatchUpSessions(root string) (int64, error) {
	var total int64
	for i := 0; i < *watchCUSess; i++ {
		proj := filepath.Join(root, fmt.Sprintf("-home-dev-c%02d", i%40))
		if err := os.MkdirAll(proj, 0o700); err != nil {
			return 0, err
		}
		g := newGenSession(uint64(100+i), i)
		var b bytes.Buffer
		for b.Len() < *watchCUBytes {
			line := g.next()
			e, err := core.ParseEntry(line)
			if err != nil {
				return 0, err
			}
			if e.UUID == "" {
				continue // the server keys those by their bytes; keep the count exact
			}
			b.Write(line)
			b.WriteByte('\n')
			total++
		}
		if err := os.WriteFile(filepath.Join(proj, g.id+".jsonl"), b.Bytes(), 0o600); err != nil {
			return 0, err
		}
	}
	return total, nil
}
