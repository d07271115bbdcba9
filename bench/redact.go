package main

// -case redact: the cost of redaction. The same workload is recorded by
// the library pipeline into the local store with the redact processor
// (built-in rules) and without it, alternating, o.Runs times each; the
// ratio of the medians is the figure (goal: on >= 50 % of off). Then the
// Redactor's scan speed (what `scribe scan` and the processor do per
// line) on the workload, and on a secret-dense transcript (the test
// corpus: every tool output holds a credential).

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/processors/redact"
	"github.com/e0dc0000/scribe/processors/redact/redacttest"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

func mainRedact(ctx context.Context, o options) {
	if err := runRedactBench(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench: FAILED:", err)
		os.Exit(1)
	}
}

func runRedactBench(ctx context.Context, o options) error {
	tmp, path, p, err := pairedWorkload(o, "redact")
	if tmp != "" {
		defer os.RemoveAll(tmp)
	}
	if err != nil {
		return err
	}
	red, err := redact.NewRedactor(redact.DefaultConfig(), []byte("bench key: 32 bytes, not secret"))
	if err != nil {
		return err
	}
	proc := core.NamedProcessor{ID: core.MustParseID("redact/default"), Processor: redact.New(core.MustParseID("redact/default"), red)}
	off, on, ratios, sorted, err := pairedRuns(o, tmp, p, func(root string, with bool) (runResult, error) {
		var procs []core.NamedProcessor
		if with {
			procs = append(procs, proc)
		}
		return runLibrary(ctx, p, root, jsonl.FsyncBatch, procs...)
	})
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	fmt.Printf("workload: %d MiB generated, %d sessions, seed %d, %d runs each (median)\n", o.MB, o.Sessions, o.Seed, o.Runs)
	fmt.Printf("record, library pipeline:  redaction off %.0f MiB/s   on %.0f MiB/s   ratio %.0f %% (median of pairs; %.0f-%.0f %%; goal 50 %%)\n",
		median(off), median(on), median(ratios), sorted[0], sorted[len(sorted)-1])
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	v, n := scanSpeed(red, b)
	fmt.Printf("scan, the workload:        %.0f MiB/s (%d findings)\n", v, n)
	dense := bytes.Repeat(redacttest.Transcript("00000000-0000-4000-8000-000000000001", "/home/ada/src/shop", redacttest.Secrets(1)), 200)
	v, n = scanSpeed(red, dense)
	fmt.Printf("scan, secret-dense corpus: %.0f MiB/s (%d findings)\n", v, n)
	return nil
}

// scanSpeed scans every line of data with a fresh memory of secrets.
func scanSpeed(red *redact.Redactor, data []byte) (float64, int) {
	n := 0
	start := time.Now()
	for _, line := range bytes.Split(data, []byte("\n")) {
		n += len(red.Scan(line))
	}
	return mibps(int64(len(data)), time.Since(start)), n
}

// pairedWorkload makes a folder for a paired case (the caller removes
// it) and the generated workload in it, planned.
func pairedWorkload(o options, name string) (tmp, path string, p *plan, err error) {
	if tmp, err = os.MkdirTemp(o.Dir, "scribe-bench-"+name+"-"); err != nil {
		return "", "", nil, err
	}
	path = filepath.Join(tmp, "workload.jsonl")
	if err = generate(path, o.Sessions, int64(o.MB)<<20, o.Seed); err != nil {
		return tmp, "", nil, fmt.Errorf("generate: %w", err)
	}
	cwd, err := workDir(tmp)
	if err == nil {
		p, err = makePlan([]string{path}, cwd)
	}
	return tmp, path, p, err
}

// pairedRuns records the plan o.Runs times (after o.Warmup) without and
// with the thing measured, one pair at a time in alternating order, each
// into a fresh folder under tmp. The machine is shared: each pair (one run
// with, one without, back to back) gives a ratio (with/without, in %), and
// the median ratio is the figure; sorted holds the ratios in order.
func pairedRuns(o options, tmp string, p *plan, run func(root string, with bool) (runResult, error)) (off, on, ratios, sorted []float64, err error) {
	for i := -o.Warmup; i < o.Runs; i++ {
		for _, with := range []bool{i%2 == 0, i%2 != 0} {
			root := filepath.Join(tmp, fmt.Sprintf("run-%d-%v", i, with))
			res, err := run(root, with)
			if err != nil {
				return nil, nil, nil, nil, fmt.Errorf("with %v: %w", with, err)
			}
			os.RemoveAll(root)
			if i < 0 {
				continue
			}
			v := mibps(p.Bytes, res.Wall)
			if with {
				on = append(on, v)
			} else {
				off = append(off, v)
			}
		}
	}
	for i := range on {
		ratios = append(ratios, 100*on[i]/off[i])
	}
	sorted = append([]float64(nil), ratios...)
	sort.Float64s(sorted)
	return off, on, ratios, sorted, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
