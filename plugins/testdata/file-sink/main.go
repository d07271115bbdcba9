// Command file-sink is a test plugin: a sink whose writes are durable only
// after Flush (unlike webhook-sink), so the host's flush and redelivery
// paths are exercised. It appends each batch to a file followed by a
// commit line with the batch's idempotency key; on Start it cuts what
// follows the last commit line (a batch a kill interrupted, which was never
// flushed) and skips batches whose key is committed, which makes
// redelivery exactly once.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/plugins/sdk"
)

type config struct {
	Path string `json:"path"`
}

func (c *config) Validate() error {
	if c.Path == "" {
		return errors.New("path is required")
	}
	return nil
}

type sink struct {
	f    *os.File
	w    *bufio.Writer
	keys map[string]bool
}

func (s *sink) Start(_ context.Context, raw json.RawMessage) error {
	var c config
	if err := sdk.DecodeConfig(raw, &c); err != nil {
		return err
	}
	s.keys = map[string]bool{}
	committed := 0
	if b, err := os.ReadFile(c.Path); err == nil {
		off := 0
		for _, l := range strings.SplitAfter(string(b), "\n") {
			off += len(l)
			if k, ok := strings.CutPrefix(l, "#batch "); ok && strings.HasSuffix(k, "\n") {
				s.keys[strings.TrimSuffix(k, "\n")] = true
				committed = off
			}
		}
	}
	f, err := os.OpenFile(c.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := f.Truncate(int64(committed)); err != nil {
		f.Close()
		return err
	}
	s.f, s.w = f, bufio.NewWriter(f)
	return nil
}

func (s *sink) Write(ctx context.Context, entries []core.Entry) error {
	b, _ := sdk.BatchFrom(ctx)
	if s.keys[b.Key()] {
		return nil
	}
	s.keys[b.Key()] = true
	for _, e := range entries {
		s.w.Write(e.Raw)
		s.w.WriteByte('\n')
	}
	s.w.WriteString("#batch " + b.Key() + "\n")
	return nil
}

func (s *sink) Flush(context.Context) error {
	if err := s.w.Flush(); err != nil {
		return err
	}
	return s.f.Sync()
}

func (s *sink) Shutdown(ctx context.Context) error {
	if s.f == nil {
		return nil
	}
	err := s.Flush(ctx)
	s.f.Close()
	s.f = nil
	return err
}

func main() {
	sdk.ServeSink(sdk.Info{Type: "file", Version: "test", Config: &config{}}, &sink{})
}
