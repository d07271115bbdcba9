// Command pattern-guard is a scribe guard plugin that refuses persistence
// for the entries of projects whose working directory matches one of the
// configured glob patterns.
//
// A pattern is a slash-separated path glob: each segment is matched with
// Go's path.Match ('*', '?', '[a-z]'), and a segment "**" matches any number
// of segments. A pattern that matches a folder also covers everything
// below it, so "/home/*/clients/acme" refuses sessions started in
// /home/alice/clients/acme/api as well.
//
// An entry without a cwd (metadata lines, usually) is allowed, unless
// refuse_without_cwd is true.
//
// Configuration (the `config` object of the plugin's block):
//
//	config = {
//	  patterns           = ["/home/*/clients/acme", "/srv/**/secret-*"]
//	  refuse_without_cwd = false
//	}
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/plugins/sdk"
)

var version = "0.1.0"

// Config is the plugin's configuration.
type Config struct {
	Patterns         []string `json:"patterns" doc:"glob patterns of project folders whose sessions are not persisted; ** spans folders"`
	RefuseWithoutCWD bool     `json:"refuse_without_cwd" doc:"refuse entries that carry no cwd"`
}

// Validate checks every pattern.
func (c *Config) Validate() error {
	for i, p := range c.Patterns {
		if p == "" {
			return fmt.Errorf("patterns[%d] is empty", i)
		}
		for _, seg := range split(p) {
			if _, err := path.Match(seg, ""); err != nil {
				return fmt.Errorf("patterns[%d] %q: %w", i, p, err)
			}
		}
	}
	return nil
}

// Guard refuses the entries of matching projects.
type Guard struct {
	cfg      Config
	patterns [][]string
}

var _ sdk.Guard = (*Guard)(nil)

// Configure decodes the configuration.
func (g *Guard) Configure(_ context.Context, raw json.RawMessage) error {
	var cfg Config
	if err := sdk.DecodeConfig(raw, &cfg); err != nil {
		return err
	}
	g.cfg = cfg
	g.patterns = nil
	for _, p := range cfg.Patterns {
		g.patterns = append(g.patterns, split(p))
	}
	sdk.Logger().Info("pattern guard configured", "patterns", len(cfg.Patterns))
	return nil
}

// Check refuses e when its cwd, or a folder above it, matches a pattern.
func (g *Guard) Check(_ context.Context, e *core.Entry) error {
	if e.CWD == "" {
		if g.cfg.RefuseWithoutCWD {
			return core.Refusal("entry has no cwd (refuse_without_cwd)")
		}
		return nil
	}
	segs := split(path.Clean(e.CWD))
	for i, p := range g.patterns {
		for k := 0; k <= len(segs); k++ {
			if match(p, segs[:k]) {
				return core.Refusal("project %s matches pattern %q", e.CWD, g.cfg.Patterns[i])
			}
		}
	}
	return nil
}

// split cuts a path into its segments; a leading "/" is kept as the first
// segment so that absolute patterns match only absolute paths.
func split(p string) []string {
	var out []string
	if strings.HasPrefix(p, "/") {
		out = append(out, "/")
	}
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// match reports whether the pattern segments match the path segments
// exactly, "**" standing for zero or more of them.
func match(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for k := 0; k <= len(segs); k++ {
				if match(pat[1:], segs[k:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if pat[0] == "/" || segs[0] == "/" {
			if pat[0] != segs[0] {
				return false
			}
		} else if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

func main() {
	sdk.ServeGuard(sdk.Info{
		Type:        "pattern",
		Version:     version,
		Description: "refuses persistence for projects whose cwd matches configured glob patterns",
		Config:      &Config{},
	}, &Guard{})
}
