package service

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/server"
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

// TestEveryPathOptionIsMarked: an option whose name says it is a file or
// a folder (dir, *_dir, file, *_file, *_creds, a plugin's command) carries
// the config:"path" tag (or config:"command" for a program and its
// arguments), so that config expands ~ in it (config.ExpandHome): a
// component added later cannot take "~/x" as a folder named ~.
func TestEveryPathOptionIsMarked(t *testing.T) {
	pathLike := func(name string) bool {
		return name == "dir" || name == "file" || name == "command" || strings.HasSuffix(name, "_dir") ||
			strings.HasSuffix(name, "_file") || strings.HasSuffix(name, "_creds")
	}
	var walk func(owner string, typ reflect.Type)
	walk = func(owner string, typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct {
			return
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if pathLike(name) && f.Tag.Get(config.PathTag) == "" {
				t.Errorf("%s: option %q (%s.%s) names a file or folder but has no config:\"path\" tag", owner, name, typ, f.Name)
			}
			walk(owner, f.Type)
		}
	}
	for _, f := range Builtin() {
		walk(string(f.Kind())+" "+f.Type(), reflect.TypeOf(f.DefaultConfig()))
	}
	walk("server", reflect.TypeOf(server.DefaultConfig()))
}
