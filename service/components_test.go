package service

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
)

// HeavyTypes is exactly what the full build adds to the light one.
func TestHeavyTypes(t *testing.T) {
	got := map[core.Kind][]string{}
	for _, f := range heavyFactories() {
		got[f.Kind()] = append(got[f.Kind()], f.Type())
	}
	for kind, types := range HeavyTypes {
		want := slices.Sorted(slices.Values(types))
		if have := slices.Sorted(slices.Values(got[kind])); !slices.Equal(have, want) {
			t.Errorf("%s: heavyFactories gives %v, HeavyTypes says %v", kind, have, want)
		}
	}
	for kind := range got {
		if _, ok := HeavyTypes[kind]; !ok {
			t.Errorf("heavyFactories gives %ss (%v), HeavyTypes has none", kind, got[kind])
		}
	}
}

// FullOnly finds a full-build type where a configuration uses one (a
// pipeline sink, guard, resume loader, the sink behind a redacted sink)
// and nowhere else: the built-in configuration only declares them.
func TestFullOnly(t *testing.T) {
	load := func(hcl string) *config.Config {
		t.Helper()
		p := filepath.Join(t.TempDir(), "c.hcl")
		if err := os.WriteFile(p, []byte(hcl), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(p, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	builtin, err := config.Load("", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if kind, id, ok := FullOnly(builtin); ok {
		t.Fatalf("the built-in configuration needs the full build for %s %s", kind, id)
	}
	for name, c := range map[string]struct {
		hcl  string
		want string
	}{
		"declared only": {`log_level = "warn"`, ""},
		"pipeline sink": {`pipeline {
  sinks = ["jsonl/local", "s3/archive"]
}`, "sink s3/archive"},
		"guard": {`guard "plugin" "g" {
  command = "/bin/true"
}
pipeline {
  guards = ["plugin/g"]
}`, "guard plugin/g"},
		"resume loader": {`resume {
  loaders = ["jsonl/local", "postgres/team"]
}`, "loader postgres/team"},
		"behind a redacted sink": {`sink "redacted" "r" {
  processor = "redact/default"
  sink      = "s3/archive"
}
pipeline {
  sinks = ["jsonl/local", "redacted/r"]
}`, "sink s3/archive"},
	} {
		kind, id, ok := FullOnly(load(c.hcl))
		got := ""
		if ok {
			got = string(kind) + " " + id.String()
		}
		if got != c.want {
			t.Errorf("%s: FullOnly = %q, want %q", name, got, c.want)
		}
	}
}
