package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/e0dc0000/scribe/core"
)

// builtin loads the built-in configuration alone.
func builtin(t *testing.T) *Config {
	t.Helper()
	cfg, err := Load("", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// body decodes a component's body as a plain JSON object.
func body(t *testing.T, c Component) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := json.Unmarshal(c.Body, &m); err != nil {
		t.Fatalf("%s: body %s: %v", c.label(), c.Body, err)
	}
	return m
}

func lookup(t *testing.T, cfg *Config, kind core.Kind, id string) Component {
	t.Helper()
	c, ok := cfg.Lookup(kind, core.MustParseID(id))
	if !ok {
		t.Fatalf("%s %s is not in the configuration", kind, id)
	}
	return c
}

// A file with one setting keeps everything else of the built-in
// configuration: the sinks, the guards, the loaders and every block.
func TestLayerOneLineFileKeepsTheDefaults(t *testing.T) {
	path := writeFile(t, t.TempDir(), "scribe.hcl", "log_level = \"warn\"\n")
	cfg, err := Load(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	def := builtin(t)
	if cfg.LogLevel != "warn" {
		t.Errorf("log_level = %q, want warn", cfg.LogLevel)
	}
	for name, pair := range map[string][2]any{
		"pipeline.sinks":      {cfg.Pipeline.Sinks, def.Pipeline.Sinks},
		"pipeline.guards":     {cfg.Pipeline.Guards, def.Pipeline.Guards},
		"resume.loaders":      {cfg.Resume.Loaders, def.Resume.Loaders},
		"cleanup_period_days": {cfg.CleanupPeriodDays, def.CleanupPeriodDays},
		"pipeline.queue_size": {cfg.Pipeline.QueueSize, def.Pipeline.QueueSize},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%s = %v, the built-in configuration has %v", name, pair[0], pair[1])
		}
	}
	if len(cfg.Pipeline.Guards) != 3 || len(cfg.Pipeline.Sinks) == 0 {
		t.Fatalf("guards %v, sinks %v", cfg.Pipeline.Guards, cfg.Pipeline.Sinks)
	}
	if len(cfg.Components) != len(def.Components) {
		t.Errorf("%d components, the built-in configuration has %d", len(cfg.Components), len(def.Components))
	}
	for _, c := range def.Components {
		got := lookup(t, cfg, c.Kind, c.ID.String())
		if string(got.Body) != string(c.Body) {
			t.Errorf("%s: body %s, built-in %s", c.label(), got.Body, c.Body)
		}
	}
	if cfg.Server == nil || string(cfg.Server.Body) != string(def.Server.Body) {
		t.Errorf("server block %v, built-in %v", cfg.Server, def.Server)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %v", cfg.Warnings)
	}
}

// A block the file gives changes only the attributes it sets; a list or
// an object in it replaces the built-in one whole; a new block adds a
// component, and the file's blocks come first.
func TestLayerBlockOverrideKeepsTheOtherAttributes(t *testing.T) {
	file := `sink "jsonl" "local" {
  fsync = "always"
}

guard "env" "default" {
  rules = [{ var = "CI" }]
}

sink "jsonl" "second" {
  lock_wait = "5s"
}
`
	path := writeFile(t, t.TempDir(), "scribe.hcl", file)
	cfg, err := Load(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	def := builtin(t)

	local := lookup(t, cfg, core.KindSink, "jsonl/local")
	got, want := body(t, local), body(t, lookup(t, def, core.KindSink, "jsonl/local"))
	if got["fsync"] != "always" {
		t.Errorf("fsync = %v, want always", got["fsync"])
	}
	want["fsync"] = "always"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("jsonl/local body %v\nwant the built-in one with fsync changed: %v", got, want)
	}
	if local.Range != (Pos{File: path, Line: 1, Column: 1}) {
		t.Errorf("jsonl/local at %v, want the file's block", local.Range)
	}
	if p, ok := local.AttrPos("fsync"); !ok || p != (Pos{File: path, Line: 2, Column: 3}) {
		t.Errorf("AttrPos(fsync) = %v, %t", p, ok)
	}
	if p, ok := local.AttrPos("reappend_bytes"); !ok || p.File != DefaultName {
		t.Errorf("AttrPos(reappend_bytes) = %v, %t; want the built-in position", p, ok)
	}

	rules := body(t, lookup(t, cfg, core.KindGuard, "env/default"))["rules"]
	if !reflect.DeepEqual(rules, []any{map[string]any{"var": "CI"}}) {
		t.Errorf("env/default rules = %v: the file's list must replace the built-in one", rules)
	}
	env := lookup(t, cfg, core.KindGuard, "env/default")
	if _, ok := env.AttrPos("rules.1"); ok {
		t.Error("a position of the built-in rules[1] survived the file's list")
	}

	second := lookup(t, cfg, core.KindSink, "jsonl/second")
	if b := body(t, second); !reflect.DeepEqual(b, map[string]any{"lock_wait": "5s"}) {
		t.Errorf("jsonl/second body %v", b)
	}
	if len(cfg.Components) != len(def.Components)+1 {
		t.Errorf("%d components, want the %d built-in ones and jsonl/second", len(cfg.Components), len(def.Components))
	}
	var order []string
	for _, c := range cfg.Components[:3] {
		order = append(order, c.ID.String())
	}
	if want := []string{"jsonl/local", "env/default", "jsonl/second"}; !reflect.DeepEqual(order, want) {
		t.Errorf("first components %v, want the file's in file order %v", order, want)
	}
	// The lists the file does not give are the built-in ones.
	if !reflect.DeepEqual(cfg.Pipeline.Guards, def.Pipeline.Guards) || !reflect.DeepEqual(cfg.Pipeline.Sinks, def.Pipeline.Sinks) {
		t.Errorf("guards %v, sinks %v", cfg.Pipeline.Guards, cfg.Pipeline.Sinks)
	}

	for key, want := range map[string]string{
		"sink.jsonl/local.fsync":           path + ":2:3",
		"sink.jsonl/local.reappend_bytes":  BuiltinOrigin,
		"sink.jsonl/local.no_such":         BuiltinOrigin, // the component's own default
		"sink.jsonl/local":                 path + ":1:1",
		"guard.env/default.rules.0.var":    path + ":6:14",
		"sink.memcache/recent.max_bytes":   BuiltinOrigin,
		"sink.jsonl/nope.fsync":            "",
		"pipeline.guards":                  BuiltinOrigin,
		"no_such_setting":                  "",
		"loader.summary/default":           BuiltinOrigin,
		"sink.not-an-id.fsync":             "",
		"guard.flag/default.flags":         BuiltinOrigin,
		"sink.jsonl/second.lock_wait":      path + ":10:3",
		"sink.jsonl/second.drain_interval": BuiltinOrigin,
	} {
		if got := cfg.Origin(key); got != want {
			t.Errorf("Origin(%q) = %q, want %q", key, got, want)
		}
	}
}

// Persistence guards leave only when the file says so, and then there is
// a warning at the line that says it.
func TestLayerGuardsLeaveOnlyWhenTheFileSaysSo(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, file string
		env        []string
		guards     string
		warning    string // "" for none
	}{
		{name: "not listed", file: "sink \"jsonl\" \"local\" {}\n", guards: "[env/default flag/default config/default]"},
		{name: "other pipeline settings", file: "pipeline {\n  queue_size = 8\n}\n", guards: "[env/default flag/default config/default]"},
		{name: "empty list", file: "log_level = \"warn\"\npipeline {\n  guards = []\n}\n", guards: "[]",
			warning: "removed.hcl:3:12: pipeline.guards leaves out the built-in persistence guards env/default, flag/default, config/default: entries are recorded even when"},
		{name: "some", file: "pipeline {\n  guards = [\"env/default\"]\n}\n", guards: "[env/default]",
			warning: "removed.hcl:2:12: pipeline.guards leaves out the built-in persistence guards flag/default, config/default"},
		{name: "one", file: "pipeline {\n  guards = [\"flag/default\", \"env/default\"]\n}\n", guards: "[flag/default env/default]",
			warning: "removed.hcl:2:12: pipeline.guards leaves out the built-in persistence guard config/default:"},
		{name: "by env", file: "log_level = \"warn\"\n", env: []string{"SCRIBE_PIPELINE_GUARDS=env/default"}, guards: "[env/default]",
			warning: "env SCRIBE_PIPELINE_GUARDS: pipeline.guards leaves out the built-in persistence guards flag/default, config/default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, dir, "removed.hcl", tt.file)
			cfg, err := Load(path, tt.env, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(cfg.Pipeline.Guards); got != tt.guards {
				t.Errorf("guards %s, want %s", got, tt.guards)
			}
			var got []string
			for _, w := range cfg.Warnings {
				got = append(got, strings.ReplaceAll(w.Error(), dir+"/", ""))
			}
			switch {
			case tt.warning == "" && len(got) != 0:
				t.Errorf("warnings %q, want none", got)
			case tt.warning != "" && (len(got) != 1 || !strings.HasPrefix(got[0], tt.warning)):
				t.Errorf("warnings %q, want one starting %q", got, tt.warning)
			}
		})
	}
}

// Env beats the file and a flag beats env, and Origin says which won.
func TestLayerOrigins(t *testing.T) {
	file := "cleanup_period_days = 7\nlog_level = \"warn\"\n"
	path := writeFile(t, t.TempDir(), "scribe.hcl", file)
	newFlags := func(args ...string) *pflag.FlagSet {
		fs := pflag.NewFlagSet("scribe", pflag.ContinueOnError)
		AddFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return fs
	}
	tests := []struct {
		name   string
		env    []string
		flags  *pflag.FlagSet
		days   int
		origin string
	}{
		{"file", nil, nil, 7, path + ":1:23"},
		{"env beats file", []string{"SCRIBE_CLEANUP_PERIOD_DAYS=0"}, nil, 0, "env SCRIBE_CLEANUP_PERIOD_DAYS"},
		{"flag beats env", []string{"SCRIBE_CLEANUP_PERIOD_DAYS=0"}, newFlags("--cleanup-period-days=3"), 3, "flag --cleanup-period-days"},
		{"unset flag does not count", []string{"SCRIBE_CLEANUP_PERIOD_DAYS=0"}, newFlags(), 0, "env SCRIBE_CLEANUP_PERIOD_DAYS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(path, tt.env, tt.flags)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.CleanupPeriodDays != tt.days {
				t.Errorf("cleanup_period_days = %d, want %d", cfg.CleanupPeriodDays, tt.days)
			}
			if got := cfg.Origin("cleanup_period_days"); got != tt.origin {
				t.Errorf("Origin(cleanup_period_days) = %q, want %q", got, tt.origin)
			}
			if got := cfg.Origin("log_level"); got != path+":2:14" {
				t.Errorf("Origin(log_level) = %q", got)
			}
			if got := cfg.Origin("resume.max_age"); got != BuiltinOrigin {
				t.Errorf("Origin(resume.max_age) = %q", got)
			}
		})
	}
	// The built-in configuration alone: everything is built in.
	def := builtin(t)
	for _, s := range settings {
		if got := def.Origin(s.key()); got != BuiltinOrigin {
			t.Errorf("built-in Origin(%s) = %q", s.key(), got)
		}
	}
}

// Check goes on after a problem: every problem comes back, each at its own
// line, and so does the configuration as far as it could be read.
func TestCheckReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	file := `log_level = "loud"
pipeline {
  sinks = ["jsonl/local", "s3/missing"]
}
sink "jsonl" "local" {
  fsync = "always"
}
guard "env" "broken" {
  rule {
    var = "X"
  }
}
resume {
  loaders = ["env/broken"]
  max_age = "soon"
}
`
	path := writeFile(t, dir, "bad.hcl", file)
	cfg, errs := Check(path, []string{"SCRIBE_PIPELINE_QUEUE_SIZE=none"}, nil)
	if cfg == nil {
		t.Fatal("Check returned no configuration")
	}
	var got []string
	for _, e := range errs {
		got = append(got, strings.ReplaceAll(e.Error(), dir+"/", ""))
	}
	want := []string{
		`bad.hcl:1:14: log_level "loud" is not valid`,
		`bad.hcl:9:3: guard "env/broken": nested blocks are not supported`,
		`bad.hcl:15:14: resume.max_age "soon" is not a duration`,
		`env SCRIBE_PIPELINE_QUEUE_SIZE: pipeline.queue_size: want a whole number`,
		`bad.hcl:3:28: pipeline.sinks: unknown sink "s3/missing"`,
		`bad.hcl:14:15: resume.loaders: unknown loader "env/broken"`,
	}
	if len(got) != len(want) {
		t.Fatalf("%d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d: %s\nwant it to start %s", i, got[i], want[i])
		}
	}
	// Bad values fall back to the built-in ones; good ones are taken.
	if cfg.LogLevel != "info" || cfg.Resume.MaxAge.String() != "6h0m0s" || cfg.Pipeline.QueueSize != 4096 {
		t.Errorf("log_level %q, max_age %v, queue_size %d", cfg.LogLevel, cfg.Resume.MaxAge, cfg.Pipeline.QueueSize)
	}
	if b := body(t, lookup(t, cfg, core.KindSink, "jsonl/local")); b["fsync"] != "always" {
		t.Errorf("jsonl/local %v", b)
	}
	if _, ok := cfg.Lookup(core.KindGuard, core.MustParseID("env/broken")); ok {
		t.Error("the broken block is in the configuration")
	}
	// Load says the same, joined.
	if _, err := Load(path, []string{"SCRIBE_PIPELINE_QUEUE_SIZE=none"}, nil); err == nil || strings.Count(err.Error(), "\n") != len(want)-1 {
		t.Errorf("Load: %v", err)
	}
	// A syntax error stops everything: there is no configuration to check.
	if cfg, errs := Check(writeFile(t, dir, "syntax.hcl", "log_level = \n"), nil, nil); cfg != nil || len(errs) == 0 {
		t.Errorf("syntax error: %v, %v", cfg, errs)
	}
}

// DecodeAll reports every unknown option and every option of the wrong
// type of a block, each at its line.
func TestDecodeAllReportsEveryProblem(t *testing.T) {
	c, dir := loadComponent(t, "  mood = \"x\"\n  count = \"many\"\n  mode = 3\n  colour = 1\n")
	errs := c.DecodeAll(defaults())
	var got []string
	for _, e := range errs {
		got = append(got, strings.ReplaceAll(e.Error(), dir, ""))
	}
	want := []string{
		`c.hcl:2:3: sink "test/Main": unknown option "mood"`,
		`c.hcl:3:3: sink "test/Main": option "count": want a whole number, got string`,
		`c.hcl:4:3: sink "test/Main": option "mode": want a string, got number`,
		`c.hcl:5:3: sink "test/Main": unknown option "colour"`,
	}
	if len(got) != len(want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d: %s\nwant it to start %s", i, got[i], want[i])
		}
	}
}

// Unknown options do not hide what Validate says of the known ones.
func TestDecodeAllValidatesBesideUnknownOptions(t *testing.T) {
	c, dir := loadComponent(t, "  moed = 1\n  mode = \"slow\"\n")
	errs := c.DecodeAll(defaults())
	var got []string
	for _, e := range errs {
		got = append(got, strings.ReplaceAll(e.Error(), dir, ""))
	}
	want := []string{
		`c.hcl:2:3: sink "test/Main": unknown option "moed" (valid: shared, mode, count, rules, tags)`,
		`c.hcl:3:3: sink "test/Main": mode must be fast or safe`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A Validate message is placed at the attribute it starts with, also in a
// list, and at the block when it names none the block sets.
func TestValidateErrorAtItsAttribute(t *testing.T) {
	for _, tc := range []struct{ msg, want string }{
		{`mode "slow": want fast or safe`, "c.hcl:3:3"},
		{`rules[1].var: required`, "c.hcl:4:29"},
		{`rules[1]: bad`, "c.hcl:4:27"},
		{`rules: too many`, "c.hcl:4:3"},
		{`count and mode: set one`, "c.hcl:2:3"},
		{`base_url: required`, "c.hcl:1:1"},
		{`something else went wrong`, "c.hcl:1:1"},
	} {
		c, dir := loadComponent(t, "  count = 1\n  mode = \"slow\"\n  rules = [{ var = \"A\" }, { var = \"\" }]\n")
		if got := strings.TrimPrefix(c.validatePos(tc.msg).String(), dir); got != tc.want {
			t.Errorf("%q: at %s, want %s", tc.msg, got, tc.want)
		}
	}
}
