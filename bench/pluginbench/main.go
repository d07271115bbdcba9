// Command pluginbench measures entries per second through a plugin sink
// against the same sink built in, in the same run: scribe's local store
// (sinks/jsonl) in process, and the same store served as a plugin
// (jsonlplugin, built here) behind hashicorp/go-plugin's gRPC boundary.
//
//	go run ./bench/pluginbench [-entries 50000] [-runs 3] [-out bench/results]
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/plugins"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

func main() {
	entries := flag.Int("entries", 50000, "entries per run")
	runs := flag.Int("runs", 3, "runs per case (the median is reported)")
	out := flag.String("out", "", "folder for the Markdown report (bench/results)")
	flag.Parse()
	if err := run(*entries, *runs, *out); err != nil {
		fmt.Fprintln(os.Stderr, "pluginbench:", err)
		os.Exit(1)
	}
}

// workload makes n entries of ~2.5 KB over 10 sessions, in Claude Code's
// key order, with the escapes tool output carries.
func workload(n int) []core.Entry {
	out := make([]core.Entry, 0, n)
	body := strings.Repeat(`ok  \tgithub.com/acme/shop/internal/store\t0.412s\n--- FAIL: TestLogin (0.01s)\n    login_test.go:42: want \"ok\", got \"denied\"\n`, 18)
	parents := map[int]string{}
	for i := 0; i < n; i++ {
		s := i % 10
		sid := fmt.Sprintf("5e55%04d-0000-4000-8000-000000000000", s)
		u := fmt.Sprintf("%08x-1111-4000-8000-%012d", i, i)
		p := "null"
		if parents[s] != "" {
			p = `"` + parents[s] + `"`
		}
		parents[s] = u
		line := fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_%d","type":"tool_result","content":"%s"}]},"uuid":"%s","timestamp":"2026-01-10T11:00:02.267Z","userType":"external","cwd":"/home/dev/src/shop","sessionId":"%s","version":"2.1.332"}`, p, i, body, u, sid)
		e, err := core.ParseEntry([]byte(line))
		if err != nil {
			panic(err)
		}
		out = append(out, e)
	}
	return out
}

type result struct {
	wall time.Duration
	eps  float64
}

func pipelineRun(ctx context.Context, sink core.Sink, es []core.Entry) (time.Duration, error) {
	p, err := core.NewPipeline(core.PipelineOptions{Sinks: []core.NamedSink{{ID: core.MustParseID("bench/sink"), Sink: sink}}})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := p.Start(ctx); err != nil {
		return 0, err
	}
	for _, e := range es {
		if _, err := p.Submit(ctx, e); err != nil {
			return 0, err
		}
	}
	if err := p.Flush(ctx); err != nil {
		return 0, err
	}
	if err := p.Shutdown(ctx); err != nil {
		return 0, err
	}
	st := p.Stats()
	if st.Accepted != int64(len(es)) {
		return 0, fmt.Errorf("accepted %d of %d", st.Accepted, len(es))
	}
	return time.Since(start), nil
}

// countLines checks the store holds every entry once.
func countLines(root string) (int, error) {
	n := 0
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		b, err := os.ReadFile(p)
		n += strings.Count(string(b), "\n")
		return err
	})
	return n, err
}

func run(n, runs int, outDir string) error {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "scribe-pluginbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "jsonlplugin")
	build := exec.Command("go", "build", "-o", bin, "./bench/pluginbench/jsonlplugin")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build the plugin: %w", err)
	}
	raw, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(raw)
	es := workload(n)
	var bytes int64
	for _, e := range es {
		bytes += int64(len(e.Raw) + 1)
	}
	cases := map[string][]time.Duration{}
	for r := 0; r < runs; r++ {
		order := []string{"built in", "plugin"}
		if r%2 == 1 {
			order = []string{"plugin", "built in"}
		}
		for _, name := range order {
			root := filepath.Join(tmp, fmt.Sprintf("%s-%d", strings.ReplaceAll(name, " ", "-"), r))
			var sink core.Sink
			switch name {
			case "built in":
				sink, err = jsonl.New(jsonl.Options{ConfigDir: root, Fsync: jsonl.FsyncBatch})
			case "plugin":
				cfg := plugins.DefaultConfig()
				cfg.Command = bin
				cfg.SHA256 = hex.EncodeToString(sum[:])
				cfg.Config, _ = json.Marshal(map[string]string{"config_dir": root})
				if err := cfg.Validate(); err != nil {
					return err
				}
				sink, err = plugins.NewSink(core.Settings{
					ID:      core.MustParseID("plugin/bench"),
					Logger:  hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr}),
					Environ: os.Environ(),
					Host:    core.HostInfo{ConfigDir: filepath.Join(tmp, "spool-"+fmt.Sprint(r))},
				}, cfg)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			d, err := pipelineRun(ctx, sink, es)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			got, err := countLines(root)
			if err != nil || got < n {
				return fmt.Errorf("%s: the store holds %d lines, want at least %d (%v)", name, got, n, err)
			}
			cases[name] = append(cases[name], d)
			fmt.Fprintf(os.Stderr, "run %d/%d  %-8s %8.0f entries/s  %v\n", r+1, runs, name, float64(n)/d.Seconds(), d.Round(time.Millisecond))
		}
	}
	med := func(ds []time.Duration) time.Duration {
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)/2]
	}
	in, pl := med(cases["built in"]), med(cases["plugin"])
	var b strings.Builder
	fmt.Fprintf(&b, "# Plugin sink vs the same sink built in\n\n%d entries (%.1f MiB) over 10 sessions, %s, %d CPUs, median of %d runs, order alternated.\n\n", n, float64(bytes)/(1<<20), runtime.Version(), runtime.NumCPU(), runs)
	fmt.Fprintf(&b, "| case | entries/s | MiB/s | wall |\n|---|---:|---:|---:|\n")
	for _, c := range []struct {
		name string
		d    time.Duration
	}{{"jsonl built in", in}, {"jsonl as a plugin", pl}} {
		fmt.Fprintf(&b, "| %s | %.0f | %.1f | %v |\n", c.name, float64(n)/c.d.Seconds(), float64(bytes)/(1<<20)/c.d.Seconds(), c.d.Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "\nThe plugin sink runs at %.0f%% of the built-in sink's throughput.\n", 100*in.Seconds()/pl.Seconds())
	fmt.Print(b.String())
	if outDir != "" {
		p := filepath.Join(outDir, time.Now().Format("2006-01-02")+"-plugin.md")
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, "wrote", p)
	}
	return nil
}
