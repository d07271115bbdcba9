//go:build !lite

package configcmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
)

// Every block of the built-in configuration (and so of example.hcl, which
// config's tests keep identical to it) decodes into its real factory.
func TestDefaultConfigDecodesIntoFactories(t *testing.T) {
	cfg, err := config.Load("", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if errs := validate(&cmdutil.Factory{}, cfg); len(errs) > 0 {
		t.Fatalf("the built-in configuration does not decode: %v", errs)
	}
	// A type that serves as several kinds (memcache, plugin) takes the same
	// options in each: one block shows them.
	seen := map[string]bool{}
	for _, c := range cfg.Components {
		seen[c.ID.Type] = true
	}
	for _, f := range cmdutil.Factories() {
		if !seen[f.Type()] {
			t.Errorf("example.hcl shows no %q block: every option must be shown with its default", f.Type())
		}
	}
}

func TestUnknownComponentTypeListsValid(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.hcl")
	hcl := "pipeline {\n  sinks = [\"kafka/main\"]\n}\nsink \"kafka\" \"main\" {}\n"
	if err := os.WriteFile(p, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	errs := validate(&cmdutil.Factory{}, cfg)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `x.hcl:4:1`) || !strings.Contains(errs[0].Error(), "valid: events, ingress, jsonl, memcache, plugin") {
		t.Fatalf("got %v", errs)
	}
	if _, err := (&cmdutil.Factory{}).FindFactory(core.KindGuard, "nope"); err == nil || !strings.Contains(err.Error(), "config, env, flag, plugin") {
		t.Fatalf("findFactory: %v", err)
	}
}
