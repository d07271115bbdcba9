package main

// -case sealed: the cost of sealing the archive at rest. The same workload
// is recorded by the library pipeline into a plain archive and into a
// sealed one (an age X25519 identity, one XChaCha20-Poly1305 frame per
// write batch), alternating, o.Runs times each; the figure is the median
// of the pairs' ratios (sealed / plain). Then every session is loaded back
// (Sink.Load: decrypted in memory for the sealed one), plain against
// sealed, in the same way.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"filippo.io/age"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

func mainSealed(ctx context.Context, o options) {
	if err := runSealedBench(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench: FAILED:", err)
		os.Exit(1)
	}
}

func runSealedBench(ctx context.Context, o options) error {
	tmp, _, p, err := pairedWorkload(o, "sealed")
	if tmp != "" {
		defer os.RemoveAll(tmp)
	}
	if err != nil {
		return err
	}
	id, err := age.GenerateX25519Identity()
	if err != nil {
		return err
	}
	keyFile := filepath.Join(tmp, "archive.key")
	if err := os.WriteFile(keyFile, []byte(id.String()+"\n"), 0o600); err != nil {
		return err
	}
	keys := seal.Options{Identity: seal.KeySource{File: keyFile}}
	opts := func(sealed bool) jsonl.Options {
		so := jsonl.Options{Fsync: jsonl.FsyncBatch}
		if sealed {
			so.Encryption = keys
		}
		return so
	}
	plain, sealed, ratios, sorted, err := pairedRuns(o, tmp, p, func(root string, with bool) (runResult, error) {
		return runLibraryWith(ctx, p, root, opts(with))
	})
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	fmt.Printf("workload: %d MiB generated, %d sessions, seed %d, %d runs each (median)\n", o.MB, o.Sessions, o.Seed, o.Runs)
	fmt.Printf("record, library pipeline:  plain %.0f MiB/s   sealed %.0f MiB/s   ratio %.0f %% (median of pairs; %.0f-%.0f %%)\n",
		median(plain), median(sealed), median(ratios), sorted[0], sorted[len(sorted)-1])

	// Load every session back from one archive of each kind.
	roots := map[bool]string{false: filepath.Join(tmp, "keep-plain"), true: filepath.Join(tmp, "keep-sealed")}
	for with, root := range roots {
		if _, err := runLibraryWith(ctx, p, root, opts(with)); err != nil {
			return fmt.Errorf("record (sealed %v): %w", with, err)
		}
	}
	files, err := jsonl.Layout{ConfigDir: roots[false]}.SessionFiles(ctx, "")
	if err != nil {
		return err
	}
	var lp, ls []float64
	for i := 0; i < o.Runs; i++ {
		for _, with := range []bool{i%2 == 0, i%2 != 0} {
			so := opts(with)
			so.ConfigDir = roots[with]
			s, err := jsonl.New(so)
			if err != nil {
				return err
			}
			start := time.Now()
			for _, f := range files {
				if _, err := s.Load(ctx, core.SessionRef{SessionID: f.SessionID, AgentID: f.AgentID}); err != nil {
					return fmt.Errorf("load %s (sealed %v): %w", f.SessionID, with, err)
				}
			}
			v := mibps(p.Bytes, time.Since(start))
			if with {
				ls = append(ls, v)
			} else {
				lp = append(lp, v)
			}
		}
	}
	var lr []float64
	for i := range ls {
		lr = append(lr, 100*ls[i]/lp[i])
	}
	fmt.Printf("load every session:        plain %.0f MiB/s   sealed %.0f MiB/s   ratio %.0f %% (median of pairs)\n",
		median(lp), median(ls), median(lr))
	return nil
}
