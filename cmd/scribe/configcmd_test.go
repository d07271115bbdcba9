package main_test

// The configuration end to end through the built binary: a file layers
// over the built-in configuration (its guards stay), refusals say where
// the value that caused them came from, and `scribe config check`
// reports every problem at its line, plugin binaries and token files
// included.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeConfig writes an HCL file into a fresh folder and returns its path.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "scribe.hcl")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A file holding only log_level records into the local store, as the
// built-in configuration does.
func TestConfigOneLineFileRecords(t *testing.T) {
	cfg := writeConfig(t, "log_level = \"warn\"\n")
	dir := t.TempDir()
	r, stderr, code := runRecord(t, nil, lines(5), "--config", cfg, "--config-dir", dir)
	if code != 0 || r.Accepted != 5 {
		t.Fatalf("exit %d, report %+v, stderr %s", code, r, stderr)
	}
	if len(r.Sinks) != 1 || r.Sinks[0].ID != "jsonl/local" || r.Sinks[0].Written != 5 {
		t.Errorf("sinks %+v, want the built-in jsonl/local with 5 written", r.Sinks)
	}
	if got := uuidsIn(t, mustRead(t, sessionFile(dir)), false); len(got) != 5 {
		t.Errorf("the local store holds %d entries, want 5", len(got))
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A file that does not list guards keeps the built-in ones: each refuses,
// nothing is written, and the report names the guard and why. A
// cleanup_period_days = 0 refusal names where the 0 came from.
func TestConfigFileKeepsTheGuards(t *testing.T) {
	cfg := writeConfig(t, "log_level = \"warn\"\n")
	zero := writeConfig(t, "log_level = \"warn\"\ncleanup_period_days = 0\n")
	for _, tc := range []struct {
		name  string
		cfg   string
		env   []string
		args  []string
		guard string
		why   string
	}{
		{"--no-session-persistence", cfg, nil, []string{"--no-session-persistence"}, "flag/default", "--no-session-persistence was given"},
		{"NODE_ENV=test", cfg, []string{"NODE_ENV=test"}, nil, "env/default", "NODE_ENV=test"},
		{"SCRIBE_CLEANUP_PERIOD_DAYS=0", cfg, []string{"SCRIBE_CLEANUP_PERIOD_DAYS=0"}, nil, "config/default",
			"cleanup_period_days = 0 (from env SCRIBE_CLEANUP_PERIOD_DAYS)"},
		{"SCRIBE_CLEANUP_PERIOD_DAYS=0 without a file", "", []string{"SCRIBE_CLEANUP_PERIOD_DAYS=0"}, nil, "config/default",
			"cleanup_period_days = 0 (from env SCRIBE_CLEANUP_PERIOD_DAYS)"},
		{"cleanup_period_days = 0 in the file", zero, nil, nil, "config/default",
			"cleanup_period_days = 0 (from " + zero + ":2:23)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"--config-dir", dir}
			if tc.cfg != "" {
				args = append(args, "--config", tc.cfg)
			}
			r, stderr, code := runRecord(t, tc.env, lines(5), append(args, tc.args...)...)
			if code != 0 || r.Accepted != 0 || r.Refused[tc.guard] != 5 {
				t.Fatalf("exit %d, report %+v, stderr %s", code, r, stderr)
			}
			if !strings.Contains(r.RefusedReasons[tc.guard], tc.why) {
				t.Errorf("%s refused with %q, want it to say %q", tc.guard, r.RefusedReasons[tc.guard], tc.why)
			}
			if _, err := os.Stat(filepath.Join(dir, "projects")); !os.IsNotExist(err) {
				t.Fatalf("something was written: %v", err)
			}
		})
	}
}

// checkOut is what `scribe config check --json` prints.
type checkOut struct {
	File     string `json:"file"`
	OK       bool   `json:"ok"`
	Problems []struct {
		Pos     string `json:"pos"`
		Message string `json:"message"`
	} `json:"problems"`
	Warnings []struct {
		Pos     string `json:"pos"`
		Message string `json:"message"`
	} `json:"warnings"`
}

// configCheck runs `scribe config check --config path` (text, then --json)
// and returns stderr of the text run, the JSON report and the exit codes.
func configCheck(t *testing.T, path string) (string, checkOut, int) {
	t.Helper()
	_, stderr, code := cloudRun(t, "", "config", "check", "--config", path)
	out, _, jcode := cloudRun(t, "", "config", "check", "--config", path, "--json")
	var rep checkOut
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("config check --json printed %q: %v", out, err)
	}
	if jcode != code {
		t.Errorf("exit %d with --json, %d without", jcode, code)
	}
	return stderr, rep, code
}

// Three problems in three places are all reported, each at its line (a
// bad fsync at the attribute, not at 1:1).
func TestConfigCheckReportsEveryProblemAtItsLine(t *testing.T) {
	path := writeConfig(t, `log_level = "loud"

sink "jsonl" "local" {
  fsync = "sometimes"
}

guard "flag" "default" {
  colour = "red"
}
`)
	stderr, rep, code := configCheck(t, path)
	want := []struct{ pos, msg string }{
		{path + ":1:14", `log_level "loud" is not valid`},
		{path + ":4:3", `sink "jsonl/local": fsync "sometimes": want always, batch or never`},
		{path + ":8:3", `guard "flag/default": unknown option "colour"`},
	}
	if code != 2 || rep.OK || len(rep.Problems) != len(want) || rep.File != path {
		t.Fatalf("exit %d, report %+v\nstderr %s", code, rep, stderr)
	}
	for i, w := range want {
		p := rep.Problems[i]
		if p.Pos != w.pos || !strings.HasPrefix(p.Message, w.msg) {
			t.Errorf("problem %d: %s: %s\nwant %s: %s...", i, p.Pos, p.Message, w.pos, w.msg)
		}
		if !strings.Contains(stderr, w.pos+": "+w.msg) {
			t.Errorf("stderr does not say %s: %s\n%s", w.pos, w.msg, stderr)
		}
	}
}

// A plugin in use is checked before anything runs: its binary must exist
// and have the configured sha256. A plugin block not in use is not.
func TestConfigCheckPluginBinaries(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "audit-sink")
	content := []byte("#!/bin/sh\nexit 0\n")
	if err := os.WriteFile(bin, content, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	good := hex.EncodeToString(sum[:])
	wrong := strings.Repeat("ab", 32)
	block := func(command, sha string) string {
		return fmt.Sprintf("pipeline {\n  sinks = [\"jsonl/local\", \"plugin/audit\"]\n}\n\nsink \"plugin\" \"audit\" {\n  command = %q\n  sha256  = %q\n}\n", command, sha)
	}

	_, rep, code := configCheck(t, writeConfig(t, block(bin, good)))
	if code != 0 || !rep.OK || len(rep.Problems) != 0 {
		t.Fatalf("a good plugin: exit %d, %+v", code, rep)
	}

	missing := filepath.Join(dir, "no-such-sink")
	path := writeConfig(t, block(missing, good))
	_, rep, code = configCheck(t, path)
	if code != 2 || len(rep.Problems) != 1 || rep.Problems[0].Pos != path+":6:3" ||
		!strings.Contains(rep.Problems[0].Message, "plugin binary not found") || !strings.Contains(rep.Problems[0].Message, missing) {
		t.Fatalf("a missing binary: exit %d, %+v", code, rep)
	}

	path = writeConfig(t, block(bin, wrong))
	_, rep, code = configCheck(t, path)
	if code != 2 || len(rep.Problems) != 1 || rep.Problems[0].Pos != path+":7:3" ||
		!strings.Contains(rep.Problems[0].Message, "sha256 mismatch") || !strings.Contains(rep.Problems[0].Message, good) {
		t.Fatalf("a wrong sha256: exit %d, %+v", code, rep)
	}

	// Declared but not in use: its binary does not matter.
	unused := strings.Replace(block(missing, wrong), `sinks = ["jsonl/local", "plugin/audit"]`, `sinks = ["jsonl/local"]`, 1)
	if _, rep, code = configCheck(t, writeConfig(t, unused)); code != 0 || !rep.OK {
		t.Fatalf("an unused plugin block: exit %d, %+v", code, rep)
	}
}

// The token file of a network sink or loader in use must be readable and
// hold a token.
func TestConfigCheckTokenFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(good, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := func(sinkToken, loaderToken string) string {
		return fmt.Sprintf(`pipeline {
  sinks = ["jsonl/local", "events/mine"]
}
resume {
  loaders = ["jsonl/local", "cloud/mine"]
}
sink "events" "mine" {
  base_url   = "http://127.0.0.1:1"
  token_file = %q
}
loader "cloud" "mine" {
  base_url   = "http://127.0.0.1:1"
  token_file = %q
}
`, sinkToken, loaderToken)
	}
	if _, rep, code := configCheck(t, writeConfig(t, file(good, good))); code != 0 || !rep.OK {
		t.Fatalf("good token files: exit %d, %+v", code, rep)
	}
	missing := filepath.Join(dir, "missing")
	path := writeConfig(t, file(missing, empty))
	_, rep, code := configCheck(t, path)
	if code != 2 || len(rep.Problems) != 2 {
		t.Fatalf("exit %d, %+v", code, rep)
	}
	if p := rep.Problems[0]; p.Pos != path+":9:3" || !strings.Contains(p.Message, `sink "events/mine": token_file`) || !strings.Contains(p.Message, "no such file") {
		t.Errorf("missing token file: %+v", p)
	}
	if p := rep.Problems[1]; p.Pos != path+":13:3" || !strings.Contains(p.Message, `loader "cloud/mine": token_file`) || !strings.Contains(p.Message, "empty") {
		t.Errorf("empty token file: %+v", p)
	}
}

// `guards = []` is allowed but warned about, at its line, on stderr.
func TestConfigCheckWarnsWhenGuardsLeave(t *testing.T) {
	path := writeConfig(t, "log_level = \"warn\"\npipeline {\n  guards = []\n}\n")
	stderr, rep, code := configCheck(t, path)
	if code != 0 || !rep.OK || len(rep.Warnings) != 1 || rep.Warnings[0].Pos != path+":3:12" {
		t.Fatalf("exit %d, %+v", code, rep)
	}
	want := "warning: " + path + ":3:12: pipeline.guards leaves out the built-in persistence guards env/default, flag/default, config/default"
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr %q\nwant it to say %q", stderr, want)
	}
	// And then nothing refuses: the file said so.
	r, _, code := runRecord(t, []string{"NODE_ENV=test"}, lines(3), "--config", path, "--config-dir", t.TempDir())
	if code != 0 || r.Accepted != 3 || len(r.Refused) != 0 {
		t.Errorf("with guards = [] under NODE_ENV=test: exit %d, %+v", code, r)
	}
}
