// Command embed is an example Go host that embeds scribe through package
// service: it loads an HCL configuration (layered over the built-in one),
// builds the pipeline, submits the JSONL entries it reads on stdin, makes
// them durable, and prints what the pipeline did as JSON.
//
//	go run ./examples/embed -config scribe.hcl < transcript.jsonl
//
// Everything a host needs is here: config.Load, service.Build, Start,
// Pipeline.Submit, Pipeline.Flush, Close (which always runs, and stops any
// plugin process the configuration started).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/service"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func run() (err error) {
	cfgPath := flag.String("config", "", "HCL configuration file (default: the built-in configuration)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cfg, err := config.Load(*cfgPath, os.Environ(), nil)
	if err != nil {
		return err
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "embed", Level: hclog.LevelFromString(cfg.LogLevel), Output: os.Stderr})
	svc, err := service.Build(ctx, service.Options{Config: cfg, Logger: log, Args: os.Args[1:]})
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if cerr := svc.Close(cctx); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := svc.Start(ctx); err != nil {
		return err
	}

	// core.Intake reads stdin in regions of whole lines and parses them in
	// place on a worker per core, in order; each entry holds a reference
	// on its block, which Submit gives back once the sinks wrote it.
	outcomes := map[string]int{}
	var seq int64
	err = core.Intake(ctx, os.Stdin, 0, func(lines []core.Line) error {
		for _, l := range lines {
			seq++
			if l.Blank || l.Err != nil {
				outcomes["malformed"]++
				continue
			}
			e := l.Entry
			e.Seq = seq
			res, serr := svc.Pipeline.Submit(ctx, e)
			if serr != nil {
				return fmt.Errorf("line %d: %w", seq, serr)
			}
			outcomes[res.Status.String()]++
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	err = nil // a signal ends the intake; what was submitted is flushed below
	fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := svc.Pipeline.Flush(fctx); err != nil {
		return err
	}
	out := struct {
		ConfigDir string         `json:"config_dir"`
		Outcomes  map[string]int `json:"outcomes"`
		Durable   int64          `json:"durable_lines"`
		Stats     core.Stats     `json:"stats"`
	}{svc.Host.ConfigDir, outcomes, svc.Pipeline.Acked(seq), svc.Pipeline.Stats()}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
