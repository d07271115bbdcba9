// Command jsonlplugin serves scribe's own local store (sinks/jsonl) as a
// sink plugin, so the plugin benchmark compares the same sink built in and
// behind the plugin boundary.
package main

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/plugins/sdk"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

type config struct {
	ConfigDir string `json:"config_dir"`
}

func (c *config) Validate() error {
	if c.ConfigDir == "" {
		return errors.New("config_dir is required")
	}
	return nil
}

// store adapts jsonl.Sink to the SDK's Sink (config arrives in Start).
type store struct{ s *jsonl.Sink }

func (p *store) Start(ctx context.Context, raw json.RawMessage) error {
	var c config
	if err := sdk.DecodeConfig(raw, &c); err != nil {
		return err
	}
	s, err := jsonl.New(jsonl.Options{ConfigDir: c.ConfigDir, Fsync: jsonl.FsyncBatch})
	if err != nil {
		return err
	}
	p.s = s
	return s.Start(ctx)
}

func (p *store) Write(ctx context.Context, es []core.Entry) error { return p.s.Write(ctx, es) }
func (p *store) Flush(ctx context.Context) error                  { return p.s.Flush(ctx) }
func (p *store) Shutdown(ctx context.Context) error {
	if p.s == nil {
		return nil
	}
	return p.s.Shutdown(ctx)
}

func main() {
	sdk.ServeSink(sdk.Info{Type: "jsonl-store", Version: "1", Description: "scribe's local store as a plugin (benchmark)", Config: &config{}}, &store{})
}
