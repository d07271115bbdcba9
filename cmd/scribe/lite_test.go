package main_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/internal/testenv"
)

// The light build (scripts/install's scribe) and the full one (scribe-full
// beside it). Every other test of this package runs the light build, so
// each command it hands over is tested through the hand-over; these tests
// check the hand-over itself.

// The light build links none of the large dependencies; the full build
// does (which shows the check can fail).
func TestLightBuildLeavesOutHeavyModules(t *testing.T) {
	lite := testenv.BuildScribe(t)
	full := filepath.Join(filepath.Dir(lite), "scribe-full")
	heavy := []string{"github.com/aws/aws-sdk-go-v2", "github.com/jackc/pgx", "github.com/nats-io/nats-server",
		"google.golang.org/grpc", "github.com/hashicorp/go-plugin", "modernc.org/sqlite",
		"github.com/yuin/goldmark", "github.com/alecthomas/chroma/v2"}
	mods := func(bin string) string {
		out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
		if err != nil {
			t.Fatalf("go version -m %s: %v\n%s", bin, err, out)
		}
		return string(out)
	}
	lm, fm := mods(lite), mods(full)
	for _, m := range heavy {
		if strings.Contains(lm, "\t"+m) {
			t.Errorf("the light build links %s", m)
		}
		if !strings.Contains(fm, "\t"+m) {
			t.Errorf("the full build does not link %s: is the list still right?", m)
		}
	}
	out, _, code := runScribe(t, runOpts{bin: lite}, "version")
	if code != 0 || !strings.Contains(out, "light build; full build: "+full) {
		t.Fatalf("scribe version (light) = %q, exit %d", out, code)
	}
	out, _, _ = runScribe(t, runOpts{bin: full}, "version")
	if !strings.Contains(out, "(full build)") {
		t.Fatalf("scribe-full version = %q", out)
	}
}

// The light build's help is the full build's: the command list, and the
// help of each command the full build runs (asked both ways).
func TestLightHelpIsFull(t *testing.T) {
	lite := testenv.BuildScribe(t)
	full := filepath.Join(filepath.Dir(lite), "scribe-full")
	env := cleanEnv()
	cases := [][]string{{"--help"}, {"help"}}
	for _, c := range []string{"config", "copy", "demo", "plugin", "plugins", "s3", "search", "serve", "token", "ui"} {
		cases = append(cases, []string{c, "--help"}, []string{"help", c})
	}
	cases = append(cases, []string{"config", "check", "--help"}, []string{"token", "new", "--help"})
	for _, args := range cases {
		lo, le, lc := runScribe(t, runOpts{bin: lite, base: env}, args...)
		fo, fe, fc := runScribe(t, runOpts{bin: full, base: env}, args...)
		if lo != fo || le != fe || lc != fc {
			t.Errorf("scribe %s differs between the builds:\nlight (exit %d):\n%s%s\nfull (exit %d):\n%s%s", strings.Join(args, " "), lc, lo, le, fc, fo, fe)
		}
	}
}

// A configuration that puts a full-build component to use runs in the
// full build, standard input included (the hook has read it before it
// loads the configuration); one that only declares such blocks (the
// built-in configuration declares postgres, s3 and plugin examples) stays
// in the light build. --log-level debug says when the command is handed
// over.
func TestLightHandsOverForTheConfiguration(t *testing.T) {
	lite := testenv.BuildScribe(t)
	dir := t.TempDir()
	claude := filepath.Join(dir, "claude")
	archive := filepath.Join(dir, "archive")
	proj := filepath.Join(claude, "projects", "-home-dev-app")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	sid := "11111111-1111-4111-8111-111111111111"
	transcript := filepath.Join(proj, sid+".jsonl")
	line := `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"hello"},"uuid":"22222222-2222-4222-8222-222222222222","timestamp":"2026-01-10T11:00:02.267Z","userType":"external","cwd":"/home/dev/app","sessionId":"` + sid + `","version":"2.1.332"}` + "\n"
	if err := os.WriteFile(transcript, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	// The s3 loader is created, never asked: nothing listens on port 1.
	cfg := filepath.Join(dir, "heavy.hcl")
	hcl := `sink "jsonl" "archive" {
  dir            = "` + archive + `"
  drain_interval = "10ms"
}
sink "s3" "x" {
  bucket     = "b"
  endpoint   = "http://127.0.0.1:1"
  path_style = true
}
pipeline {
  sinks = ["jsonl/archive"]
}
resume {
  loaders = ["jsonl/archive", "s3/x"]
}
`
	if err := os.WriteFile(cfg, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(cleanEnv(), "CLAUDE_CONFIG_DIR="+claude, "AWS_ACCESS_KEY_ID=a", "AWS_SECRET_ACCESS_KEY=b")
	ev, _ := json.Marshal(map[string]string{"session_id": sid, "transcript_path": transcript, "cwd": "/home/dev/app", "hook_event_name": "Stop"})
	out, stderr, code := runScribe(t, runOpts{bin: lite, base: env, stdin: string(ev)}, "hook", "--config", cfg, "--log-level", "debug")
	if code != 0 || out != "" {
		t.Fatalf("scribe hook: exit %d, stdout %q, stderr %s", code, out, stderr)
	}
	if !strings.Contains(stderr, "the configuration's loader s3/x: handing the command to ") {
		t.Fatalf("the hook was not handed over: %s", stderr)
	}
	got, err := os.ReadFile(filepath.Join(archive, "projects", "-home-dev-app", sid+".jsonl"))
	if err != nil || string(got) != line {
		t.Fatalf("the full build's hook did not get the event: archive %q, %v; stderr %s", got, err, stderr)
	}

	// The built-in configuration declares heavy blocks without using them.
	_, stderr, code = runScribe(t, runOpts{bin: lite, base: env}, "ls", "--log-level", "debug")
	if code != 0 || strings.Contains(stderr, "handing the command") {
		t.Fatalf("ls with the built-in configuration: exit %d, %s", code, stderr)
	}
	// A --from store of a full-build type.
	_, stderr, _ = runScribe(t, runOpts{bin: lite, base: env}, "ls", "--config", cfg, "--from", "s3/x", "--log-level", "debug")
	if !strings.Contains(stderr, "handing the command to ") {
		t.Fatalf("ls --from s3/x was not handed over: %s", stderr)
	}
}

// A light build alone (scribe-full missing) runs every command it holds
// and refuses the others with exit 2 and how to install both.
func TestLightWithoutFull(t *testing.T) {
	lite := testenv.BuildScribe(t)
	alone := filepath.Join(t.TempDir(), "scribe")
	b, err := os.ReadFile(lite)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(cleanEnv(), "CLAUDE_CONFIG_DIR="+t.TempDir(), "PATH=/usr/bin:/bin")
	if out, stderr, code := runScribe(t, runOpts{bin: alone, base: env}, "ls", "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("ls without scribe-full: exit %d, %q, %s", code, out, stderr)
	}
	out, _, _ := runScribe(t, runOpts{bin: alone, base: env}, "version")
	if !strings.Contains(out, "scribe-full not found") {
		t.Fatalf("version without scribe-full = %q", out)
	}
	for _, args := range [][]string{{"serve"}, {"search", "x"}, {"config", "check"}} {
		_, stderr, code := runScribe(t, runOpts{bin: alone, base: env}, args...)
		if code != 2 || !strings.Contains(stderr, "scribe-full") || !strings.Contains(stderr, "scripts/install") {
			t.Errorf("scribe %s without scribe-full: exit %d, %s", strings.Join(args, " "), code, stderr)
		}
	}
	// A light build installed as scribe-full by mistake: refused, not
	// handed on for ever.
	if err := os.WriteFile(filepath.Join(filepath.Dir(alone), "scribe-full"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runScribe(t, runOpts{bin: alone, base: env}, "serve"); code != 2 || !strings.Contains(stderr, "is a light build") {
		t.Fatalf("serve with a light scribe-full: exit %d, %s", code, stderr)
	}
}
