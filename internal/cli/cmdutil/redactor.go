package cmdutil

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/processors/redact"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// RedactorFor builds the redactor of the processor block --rules names
// (type redact; default: the first redact processor of pipeline.processors,
// else redact/default), with its marker key.
func RedactorFor(ctx context.Context, cmd *cobra.Command, cfg *config.Config, l jsonl.Layout) (*redact.Redactor, *redact.Config, core.ID, error) {
	name, _ := cmd.Flags().GetString("rules")
	return RedactorNamed(ctx, cfg, l, name, "--rules")
}

// RedactorNamed is RedactorFor with the block's name given ("" for the
// default); what names it in messages.
func RedactorNamed(ctx context.Context, cfg *config.Config, l jsonl.Layout, name, what string) (*redact.Redactor, *redact.Config, core.ID, error) {
	id := core.ID{Type: "redact", Name: "default"}
	if name != "" {
		id.Name = name
	} else {
		for _, p := range cfg.Pipeline.Processors {
			if p.Type == "redact" {
				id = p
				break
			}
		}
	}
	c := redact.DefaultConfig()
	comp, ok := cfg.Lookup(core.KindProcessor, id)
	switch {
	case ok:
		if err := comp.Decode(c); err != nil {
			return nil, nil, id, &ExitError{Code: 2, Err: err}
		}
	case name != "":
		return nil, nil, id, &ExitError{Code: 2, Err: fmt.Errorf("%s %s: no processor \"redact\" %q block in the configuration", what, name, name)}
	}
	key, err := redact.LoadKey(ctx, c.Key, l.ConfigDir, os.Environ())
	if err != nil {
		return nil, nil, id, err
	}
	r, err := redact.NewRedactor(c, key)
	if err != nil {
		return nil, nil, id, &ExitError{Code: 2, Err: fmt.Errorf("processor %s: %w", id, err)}
	}
	return r, c, id, nil
}
