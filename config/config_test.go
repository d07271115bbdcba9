package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/e0dc0000/scribe/core"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./config/ -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}

// dump renders a Config for golden files.
func dump(c *Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "file: %q\n", c.File)
	fmt.Fprintf(&b, "config_dir: %q\n", c.ConfigDir)
	fmt.Fprintf(&b, "cleanup_period_days: %d\n", c.CleanupPeriodDays)
	fmt.Fprintf(&b, "log_level: %q\n", c.LogLevel)
	fmt.Fprintf(&b, "log_json: %t\n", c.LogJSON)
	fmt.Fprintf(&b, "pipeline.sinks: %v\n", c.Pipeline.Sinks)
	fmt.Fprintf(&b, "pipeline.guards: %v\n", c.Pipeline.Guards)
	fmt.Fprintf(&b, "pipeline.queue_size: %d\n", c.Pipeline.QueueSize)
	comps := c.Components
	if c.Server != nil {
		comps = append(append([]Component{}, comps...), *c.Server)
	}
	for _, comp := range comps {
		fmt.Fprintf(&b, "%s at %s\n", comp.label(), comp.Range)
		fmt.Fprintf(&b, "  body: %s\n", comp.Body)
		paths := make([]string, 0, len(comp.attrs))
		for p := range comp.attrs {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			fmt.Fprintf(&b, "  %s at %s\n", p, comp.attrs[p])
		}
	}
	return b.String()
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDefaultIsExample(t *testing.T) {
	example, err := os.ReadFile(filepath.Join("..", "example.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(example, Default()) {
		t.Fatal("example.hcl and config/default.hcl differ: copy example.hcl to config/default.hcl")
	}
}

func TestLoadDefault(t *testing.T) {
	cfg, err := Load("", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "default.golden", dump(cfg))

	// The file's settings are the built-in defaults, but for the pipeline
	// lists, which default to empty.
	for _, s := range settings {
		if s.kind == kindIDs {
			continue
		}
		var got any
		switch s.key() {
		case "config_dir":
			got = cfg.ConfigDir
		case "cleanup_period_days":
			got = cfg.CleanupPeriodDays
		case "log_level":
			got = cfg.LogLevel
		case "log_json":
			got = cfg.LogJSON
		case "pipeline.queue_size":
			got = cfg.Pipeline.QueueSize
		case "resume.max_age":
			got = cfg.Resume.MaxAge.String()
			if got == "6h0m0s" {
				got = "6h"
			}
		case "resume.continue_text":
			got = cfg.Resume.ContinueText
		case "watch.max_line_bytes":
			got = cfg.Watch.MaxLineBytes
		case "pipeline.overflow_wait":
			got = strings.TrimSuffix(cfg.Pipeline.OverflowWait.String(), "0m0s")
		case "pipeline.retry_for":
			got = strings.TrimSuffix(cfg.Pipeline.RetryFor.String(), "0s")
		}
		if got != s.def {
			t.Errorf("default.hcl sets %s = %v, the built-in default is %v", s.key(), got, s.def)
		}
	}

	// Default returns a copy.
	d := Default()
	d[0] = 'X'
	if Default()[0] == 'X' {
		t.Error("Default returned the embedded slice")
	}
}

// The default, written to a file and loaded from there, gives the same
// Config but for File and the positions' file name.
func TestLoadDefaultFromFile(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "scribe.hcl", string(Default()))
	fromFile, err := Load(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	embedded, err := Load("", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fromFile.File != path {
		t.Errorf("File = %q, want %q", fromFile.File, path)
	}
	got := strings.ReplaceAll(dump(fromFile), path, DefaultName)
	got = strings.Replace(got, fmt.Sprintf("file: %q", DefaultName), `file: ""`, 1)
	if want := dump(embedded); got != want {
		t.Errorf("loaded from a file:\n%s\nembedded:\n%s", got, want)
	}
}

const minimal = `
log_level = "warn"

pipeline {
  sinks  = ["jsonl/local"]
  guards = ["env/default"]
}

sink "jsonl" "local" {}
guard "env" "default" {}
`

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		env   []string
		flags []string
	}{
		{name: "syntax", file: "log_level = \"info\npipeline {\n"},
		{name: "syntax_brace", file: "pipeline {\n  queue_size = 1\n"},
		{name: "unknown_attribute", file: "log_level = \"info\"\ncolour = \"red\"\n"},
		{name: "unknown_block", file: "sinks \"jsonl\" \"local\" {}\n"},
		{name: "block_as_attribute", file: "pipeline = {}\n"},
		{name: "attribute_as_block", file: "log_level {}\n"},
		{name: "wrong_type_queue_size", file: "pipeline {\n  queue_size = \"x\"\n}\n"},
		{name: "wrong_type_log_json", file: "log_json = 3\n"},
		{name: "wrong_type_config_dir", file: "config_dir = [\"a\"]\n"},
		{name: "fractional", file: "cleanup_period_days = 1.5\n"},
		{name: "bad_log_level", file: "log_level = \"verbose\"\n"},
		{name: "queue_size_zero", file: "pipeline {\n  queue_size = 0\n}\n"},
		{name: "cleanup_negative", file: "cleanup_period_days = -1\n"},
		{name: "variable", file: "log_level = var.level\n"},
		{name: "pipeline_unknown_attribute", file: "pipeline {\n  sink = []\n}\n"},
		{name: "pipeline_labels", file: "pipeline \"main\" {}\n"},
		{name: "pipeline_twice", file: "pipeline {}\npipeline {}\n"},
		{name: "one_label", file: "sink \"jsonl\" {}\n"},
		{name: "three_labels", file: "guard \"env\" \"a\" \"b\" {}\n"},
		{name: "bad_label", file: "sink \"jsonl\" \"lo cal\" {}\n"},
		{name: "duplicate_id", file: "sink \"jsonl\" \"local\" {}\n\nsink \"jsonl\" \"local\" {\n  fsync = \"never\"\n}\n"},
		{name: "nested_block", file: "guard \"env\" \"default\" {\n  rule {\n    var = \"X\"\n  }\n}\n"},
		{name: "component_variable", file: "sink \"jsonl\" \"local\" {\n  fsync = local.x\n}\n"},
		{name: "ids_not_list", file: "pipeline {\n  sinks = \"jsonl/local\"\n}\nsink \"jsonl\" \"local\" {}\n"},
		{name: "ids_bad_elements", file: "pipeline {\n  sinks = [1, \"nope\", \"a/b\", \"a/b\"]\n}\n"},
		{name: "unknown_refs", file: "pipeline {\n  sinks  = [\"jsonl/local\", \"jsonl/locl\"]\n  guards = [\"env/strict\"]\n}\nsink \"jsonl\" \"local\" {}\n"},
		{name: "ref_wrong_kind", file: "pipeline {\n  sinks = [\"env/default\"]\n}\nsink \"jsonl\" \"local\" {}\nguard \"env\" \"default\" {}\n"},
		{name: "server_labels", file: "server \"main\" {}\n"},
		{name: "server_twice", file: "server {}\nserver {\n  listen = \":1\"\n}\n"},
		{name: "server_nested_block", file: "server {\n  tokens {\n    tenant = \"a\"\n  }\n}\n"},
		{name: "server_variable", file: "server {\n  listen = var.x\n}\n"},
		{name: "server_as_attribute", file: "server = {}\n"},
		{name: "many", file: "colour = 1\nlog_level = \"loud\"\npipeline {\n  queue_size = -5\n}\nloader \"x\" {}\n"},
		{name: "env_bad_values", file: minimal, env: []string{
			"SCRIBE_PIPELINE_QUEUE_SIZE=x", "SCRIBE_LOG_LEVEL=verbose", "SCRIBE_LOG_JSON=maybe", "SCRIBE_CLEANUP_PERIOD_DAYS=-2",
		}},
		{name: "env_unknown_ref", file: minimal, env: []string{"SCRIBE_PIPELINE_SINKS=jsonl/local, s3/cloud"}},
		{name: "flag_bad_values", file: minimal, flags: []string{"--log-level=loud", "--pipeline-queue-size=0", "--pipeline-guards=env/default,flag/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeFile(t, dir, tt.name+".hcl", tt.file)
			var fs *pflag.FlagSet
			if tt.flags != nil {
				fs = pflag.NewFlagSet("scribe", pflag.ContinueOnError)
				AddFlags(fs)
				if err := fs.Parse(tt.flags); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := Load(path, tt.env, fs)
			if err == nil {
				t.Fatalf("no error; got\n%s", dump(cfg))
			}
			got := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "") + "\n"
			golden(t, filepath.Join("errors", tt.name+".golden"), got)
		})
	}
}

func TestLoadErrorIsError(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "c.hcl", "\n  log_json = 3\n")
	_, err := Load(path, nil, nil)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("%T is not *Error", err)
	}
	if want := (Pos{File: path, Line: 2, Column: 14}); e.Pos != want {
		t.Errorf("Pos = %v, want %v", e.Pos, want)
	}
}

func TestLoadUnreadable(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.hcl")
	_, err := Load(missing, nil, nil)
	if err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	_, err = Load(dir, nil, nil)
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("directory: %v", err)
	}
}

func TestPrecedence(t *testing.T) {
	file := `
config_dir          = "/from/file"
cleanup_period_days = 7
log_level           = "warn"
log_json            = false

pipeline {
  sinks      = ["jsonl/local"]
  guards     = ["env/default"]
  queue_size = 10
}

sink "jsonl" "local" {}
sink "jsonl" "other" {}
guard "env" "default" {}
guard "flag" "default" {}
`
	type want struct {
		configDir string
		days      int
		level     string
		json      bool
		sinks     string
		guards    string
		queue     int
	}
	fromFile := want{"/from/file", 7, "warn", false, "[jsonl/local]", "[env/default]", 10}
	tests := []struct {
		name  string
		env   []string
		flags []string // nil: no FlagSet
		want  want
	}{
		{name: "file", want: fromFile},
		{name: "other env vars are ignored", env: []string{"PATH=/bin", "SCRIBE_UNKNOWN=1", "LOG_LEVEL=debug", "broken"}, want: fromFile},
		{name: "empty env is unset", env: []string{"SCRIBE_LOG_LEVEL=", "SCRIBE_CONFIG_DIR="}, want: fromFile},
		{
			name: "env beats file",
			env: []string{
				"SCRIBE_CONFIG_DIR=/from/env", "SCRIBE_CLEANUP_PERIOD_DAYS=0", "SCRIBE_LOG_LEVEL=debug",
				"SCRIBE_LOG_JSON=true", "SCRIBE_PIPELINE_SINKS=jsonl/other,jsonl/local",
				"SCRIBE_PIPELINE_GUARDS=flag/default", "SCRIBE_PIPELINE_QUEUE_SIZE=20",
			},
			want: want{"/from/env", 0, "debug", true, "[jsonl/other jsonl/local]", "[flag/default]", 20},
		},
		{name: "last env entry wins", env: []string{"SCRIBE_LOG_LEVEL=debug", "SCRIBE_LOG_LEVEL=error"},
			want: want{"/from/file", 7, "error", false, "[jsonl/local]", "[env/default]", 10}},
		{
			name:  "unchanged flags do not count",
			env:   []string{"SCRIBE_LOG_LEVEL=debug"},
			flags: []string{},
			want:  want{"/from/file", 7, "debug", false, "[jsonl/local]", "[env/default]", 10},
		},
		{
			name: "changed flag beats env",
			env:  []string{"SCRIBE_LOG_LEVEL=debug", "SCRIBE_CONFIG_DIR=/from/env", "SCRIBE_PIPELINE_QUEUE_SIZE=20"},
			flags: []string{
				"--log-level=trace", "--config-dir=/from/flag", "--log-json", "--cleanup-period-days=3",
				"--pipeline-sinks=jsonl/other", "--pipeline-guards=", "--pipeline-queue-size=30",
			},
			want: want{"/from/flag", 3, "trace", true, "[jsonl/other]", "[]", 30},
		},
		{
			name:  "changed flag beats file, env untouched elsewhere",
			env:   []string{"SCRIBE_PIPELINE_QUEUE_SIZE=20"},
			flags: []string{"--log-level=error"},
			want:  want{"/from/file", 7, "error", false, "[jsonl/local]", "[env/default]", 20},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "scribe.hcl", file)
			var fs *pflag.FlagSet
			if tt.flags != nil {
				fs = pflag.NewFlagSet("scribe", pflag.ContinueOnError)
				AddFlags(fs)
				// Flags of other settings, and flags with defaults that
				// differ from the file, must not leak in.
				fs.Lookup("log-level").DefValue = "off"
				_ = fs.Lookup("log-level").Value.Set("off")
				fs.String("config", "", "another command's flag")
				if err := fs.Parse(tt.flags); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := Load(path, tt.env, fs)
			if err != nil {
				t.Fatal(err)
			}
			got := want{cfg.ConfigDir, cfg.CleanupPeriodDays, cfg.LogLevel, cfg.LogJSON,
				fmt.Sprint(cfg.Pipeline.Sinks), fmt.Sprint(cfg.Pipeline.Guards), cfg.Pipeline.QueueSize}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// Flags registered by the caller with other types still work.
func TestCallerFlags(t *testing.T) {
	path := writeFile(t, t.TempDir(), "scribe.hcl", minimal)
	fs := pflag.NewFlagSet("scribe", pflag.ContinueOnError)
	fs.String("pipeline-queue-size", "", "")
	fs.String("log-json", "", "")
	fs.String("log-level", "info", "")
	if err := fs.Parse([]string{"--pipeline-queue-size=12", "--log-json=1"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, nil, fs)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Pipeline.QueueSize != 12 || !cfg.LogJSON || cfg.LogLevel != "warn" {
		t.Errorf("got queue_size %d, log_json %t, log_level %q", cfg.Pipeline.QueueSize, cfg.LogJSON, cfg.LogLevel)
	}

	fs = pflag.NewFlagSet("scribe", pflag.ContinueOnError)
	fs.String("pipeline-queue-size", "", "")
	if err := fs.Parse([]string{"--pipeline-queue-size=lots"}); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path, nil, fs)
	want := `flag --pipeline-queue-size: pipeline.queue_size: want a whole number, got "lots"`
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}

func TestLoadComponents(t *testing.T) {
	file := `# components keep their labels' case and their order
pipeline {
  sinks  = ["JSONL/Local-Store", "s3/Archive_2"]
  guards = ["Env/CI"]
}

sink "JSONL" "Local-Store" {
  Fsync      = "always"
  extra      = { Nested = ["a", 1, 2.5, true, null], "quoted key" = { deep = -3 } }
  big        = 12345678901234567890
  expr       = 2 * 3
  template   = "x-${"y"}"
  heredoc    = <<EOT
line
EOT
}
guard "Env" "CI" {
  rules = [
    { var = "CI" },
  ]
}
sink "s3" "Archive_2" {}
loader "jsonl" "Local-Store" {}
sink "other" "unused" {}
`
	path := writeFile(t, t.TempDir(), "mixed.hcl", file)
	cfg, err := Load(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The built-in blocks come after the file's; default.golden shows them.
	fileOnly := *cfg
	fileOnly.Components = nil
	for _, c := range cfg.Components {
		if c.Range.File == path {
			fileOnly.Components = append(fileOnly.Components, c)
		}
	}
	fileOnly.Server = nil
	got := strings.ReplaceAll(dump(&fileOnly), path, "mixed.hcl")
	golden(t, "components.golden", got)

	c, ok := cfg.Lookup(core.KindSink, core.MustParseID("JSONL/Local-Store"))
	if !ok {
		t.Fatal("Lookup: JSONL/Local-Store not found")
	}
	if _, ok := cfg.Lookup(core.KindSink, core.MustParseID("jsonl/local-store")); ok {
		t.Error("Lookup ignored case")
	}
	if p, ok := c.AttrPos("extra.Nested.1"); !ok || p.Line != 9 {
		t.Errorf("AttrPos(extra.Nested.1) = %v, %t", p, ok)
	}
}

func TestServerBlock(t *testing.T) {
	type token struct {
		SHA256 string   `json:"sha256"`
		Tenant string   `json:"tenant"`
		Scopes []string `json:"scopes"`
	}
	// Some of the server's options (package server owns the real struct).
	// The file's server block is merged over the built-in one, whose other
	// options this struct does not know: fileProblems leaves those out.
	type serverConfig struct {
		Listen          string  `json:"listen"`
		Replicas        int     `json:"replicas"`
		MaxBodyBytes    int     `json:"max_body_bytes"`
		DuplicateWindow string  `json:"duplicate_window"`
		Tokens          []token `json:"tokens"`
	}
	dir := t.TempDir()
	// fileProblems decodes the server block and returns the problems found
	// in the file at path.
	fileProblems := func(c *Component, dst *serverConfig, path string) []string {
		var out []string
		for _, e := range c.DecodeAll(dst) {
			if e.Pos.File == path {
				out = append(out, strings.ReplaceAll(e.Error(), dir+string(filepath.Separator), ""))
			}
		}
		return out
	}

	path := writeFile(t, dir, "ok.hcl", `server {
  listen   = "127.0.0.1:9000"
  tokens = [
    { sha256 = "ab", tenant = "acme", scopes = ["read"] },
  ]
}
`)
	cfg, err := Load(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server == nil || cfg.Server.Kind != KindServer || cfg.Server.Range.Line != 1 {
		t.Fatalf("Server = %+v", cfg.Server)
	}
	got := serverConfig{Replicas: 1}
	if errs := fileProblems(cfg.Server, &got, path); len(errs) > 0 {
		t.Fatal(errs)
	}
	if got.Listen != "127.0.0.1:9000" || got.Replicas != 1 || len(got.Tokens) != 1 || got.Tokens[0].Tenant != "acme" {
		t.Errorf("decoded %+v", got)
	}
	// What the file does not set is the built-in block's.
	if got.DuplicateWindow != "2m" || got.MaxBodyBytes != 8388608 {
		t.Errorf("the built-in server settings were lost: %+v", got)
	}
	if o := cfg.Origin("server.listen"); o != path+":2:3" {
		t.Errorf("Origin(server.listen) = %q", o)
	}
	if o := cfg.Origin("server.duplicate_window"); o != BuiltinOrigin {
		t.Errorf("Origin(server.duplicate_window) = %q", o)
	}
	const valid = "valid: listen, replicas, max_body_bytes, duplicate_window, tokens"

	tests := []struct{ name, file, want string }{
		{"unknown option", "server {\n  listn = \"x\"\n}\n",
			`bad.hcl:2:3: server: unknown option "listn" (` + valid + `)`},
		{"wrong type", "server {\n  replicas = \"three\"\n}\n",
			`bad.hcl:2:3: server: option "replicas": want a whole number, got string`},
		{"unknown token field", "server {\n  tokens = [\n    { tenant = \"a\", sha = \"b\" },\n  ]\n}\n",
			`bad.hcl:3:21: server: unknown option "tokens[0].sha" (valid: sha256, tenant, scopes)`},
	}
	for _, tt := range tests {
		path := writeFile(t, dir, "bad.hcl", tt.file)
		cfg, err := Load(path, nil, nil)
		if err != nil {
			t.Fatalf("%s: Load: %v", tt.name, err)
		}
		errs := fileProblems(cfg.Server, &serverConfig{}, path)
		if len(errs) != 1 || errs[0] != tt.want {
			t.Errorf("%s:\n got %q\nwant %s", tt.name, errs, tt.want)
		}
	}

	// No server block: the built-in one.
	cfg, err = Load(writeFile(t, dir, "none.hcl", minimal), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got = serverConfig{}
	if cfg.Server == nil || fileProblems(cfg.Server, &got, path) != nil || got.Listen != "127.0.0.1:8787" || cfg.Server.Range.File != DefaultName {
		t.Errorf("Server = %+v without a server block, decoded %+v", cfg.Server, got)
	}
}

func TestResumeBlock(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "r.hcl")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("resume {\n  loaders = [\"jsonl/local\", \"summary/default\"]\n  max_age = \"0s\"\n}\nsink \"jsonl\" \"local\" {}\nloader \"summary\" \"default\" {}\n")
	cfg, err := Load(ok, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Resume.Loaders) != 2 || cfg.Resume.Loaders[0].String() != "jsonl/local" || cfg.Resume.MaxAge != 0 || cfg.Resume.ContinueText == "" {
		t.Fatalf("resume %+v", cfg.Resume)
	}
	for body, want := range map[string]string{
		"resume {\n  loaders = [\"cloud/other\"]\n}\n": "r.hcl:2:15: resume.loaders: unknown loader \"cloud/other\"",
		"resume {\n  max_age = \"soon\"\n}\n":          "r.hcl:2:14: resume.max_age \"soon\" is not a duration",
		"resume {\n  continue_text = \" \"\n}\n":       "resume.continue_text must not be empty",
		"resume {\n  loader = []\n}\n":                 "unknown attribute \"loader\" in the resume block (valid: loaders, max_age, continue_text)",
		"resume \"x\" {}\n":                            "the resume block takes no labels",
		"resume {}\nresume {}\n":                       "duplicate resume block",
	} {
		_, err := Load(write(body), nil, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", body, err, want)
		}
	}
}

// The built-in configuration is parsed without its comment lines: the same
// settings, blocks and positions as the whole text, with no heredoc or
// block comment a blanked line could have been part of.
func TestDefaultParsedWithoutCommentsIsTheSame(t *testing.T) {
	if bytes.Contains(defaultHCL, []byte("<<")) || bytes.Contains(defaultHCL, []byte("/*")) {
		t.Fatal("default.hcl holds a heredoc or a block comment: blankCommentLines cannot be used on it")
	}
	src := defaultSource()
	if got, want := bytes.Count(src, []byte("\n")), bytes.Count(defaultHCL, []byte("\n")); got != want {
		t.Fatalf("%d lines without comments, %d with", got, want)
	}
	if len(src) >= len(defaultHCL)*2/3 {
		t.Errorf("without comments %d of %d bytes: the comment lines were not emptied", len(src), len(defaultHCL))
	}
	whole, errs := parseSource(defaultHCL, DefaultName)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	blanked, errs := parseSource(src, DefaultName)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if !reflect.DeepEqual(whole, blanked) {
		t.Fatalf("parsed without comments:\n%#v\nwith:\n%#v", blanked, whole)
	}
	if got := string(blankCommentLines([]byte("a = 1\n  # c\n\t#d\nb = \"#x\" # e\n#"))); got != "a = 1\n\n\nb = \"#x\" # e\n" {
		t.Fatalf("blankCommentLines: %q", got)
	}
}
