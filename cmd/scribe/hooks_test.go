package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/internal/testenv"
)

func runScribe(t *testing.T, env []string, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(testenv.BuildScribe(t), args...)
	cmd.Env, cmd.Dir = env, dir
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// scribeCommands lists the hook commands of every event in a settings file.
func scribeCommands(t *testing.T, path string) map[string][]string {
	t.Helper()
	var s struct {
		Hooks map[string][]struct {
			Hooks []struct{ Command string } `json:"hooks"`
		} `json:"hooks"`
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s is not JSON any more: %v\n%s", path, err, b)
	}
	out := map[string][]string{}
	for ev, gs := range s.Hooks {
		for _, g := range gs {
			for _, h := range g.Hooks {
				out[ev] = append(out[ev], h.Command)
			}
		}
	}
	return out
}

func TestHooksInstallMergesKeepsAndIsIdempotent(t *testing.T) {
	for name, before := range map[string]string{
		"other hooks": `{"model":"opus","hooks":{"Stop":[{"matcher":"","hooks":[{"type":"command","command":"notify-send done"}]}],"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"guard.sh"}]}]},"env":{"A":"1"}}`,
		"no hooks":    `{"model":"opus"}`,
		"no file":     "",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			settings := filepath.Join(dir, "settings.json")
			if before != "" {
				if err := os.WriteFile(settings, []byte(before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			env := append(os.Environ(), "CLAUDE_CONFIG_DIR="+dir)
			if out, code := runScribe(t, env, dir, "hooks", "install", "--dry-run"); code != 0 || !strings.Contains(out, "would change") {
				t.Fatalf("dry run: exit %d\n%s", code, out)
			}
			if b, _ := os.ReadFile(settings); string(b) != before {
				t.Fatal("--dry-run changed the file")
			}
			if out, code := runScribe(t, env, dir, "hooks", "install"); code != 0 {
				t.Fatalf("install: exit %d\n%s", code, out)
			}
			cmds := scribeCommands(t, settings)
			for _, ev := range hookEvents {
				if n := len(cmds[ev]); n < 1 || !strings.HasSuffix(cmds[ev][n-1], "scribe hook") {
					t.Fatalf("%s has no scribe hook: %v", ev, cmds[ev])
				}
			}
			first, _ := os.ReadFile(settings)
			if out, code := runScribe(t, env, dir, "hooks", "install"); code != 0 || !strings.Contains(out, "nothing to change") {
				t.Fatalf("second install: exit %d\n%s", code, out)
			}
			if again, _ := os.ReadFile(settings); !bytes.Equal(again, first) {
				t.Fatal("a second install changed the file")
			}
			if before != "" {
				if bak, _ := os.ReadFile(settings + ".scribe.bak"); string(bak) != before {
					t.Fatalf("backup holds %q, want the original", bak)
				}
			}
			if out, code := runScribe(t, env, dir, "hooks", "uninstall"); code != 0 {
				t.Fatalf("uninstall: exit %d\n%s", code, out)
			}
			after := scribeCommands(t, settings)
			var want map[string][]string
			if before != "" {
				want = scribeCommandsOf(t, before)
			}
			if len(after) != len(want) {
				t.Fatalf("after uninstall: %v, want the hooks from before: %v", after, want)
			}
			for ev, cs := range want {
				if strings.Join(after[ev], "|") != strings.Join(cs, "|") {
					t.Fatalf("after uninstall %s: %v, want %v", ev, after[ev], cs)
				}
			}
			if strings.Contains(before, `"env"`) {
				b, _ := os.ReadFile(settings)
				if !strings.Contains(string(b), `"A": "1"`) || !strings.Contains(string(b), `"model": "opus"`) {
					t.Fatalf("other settings lost:\n%s", b)
				}
			}
		})
	}
}

func scribeCommandsOf(t *testing.T, content string) map[string][]string {
	p := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return scribeCommands(t, p)
}

func TestHooksInstallRefusesMalformedSettings(t *testing.T) {
	dir := t.TempDir()
	settings := filepath.Join(dir, "settings.json")
	bad := `{"hooks": {"Stop": [ {"hooks": [}]}`
	if err := os.WriteFile(settings, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "CLAUDE_CONFIG_DIR="+dir)
	for _, sub := range []string{"install", "uninstall"} {
		out, code := runScribe(t, env, dir, "hooks", sub)
		if code != 2 || !strings.Contains(out, "not valid JSON") || !strings.Contains(out, "nothing changed") {
			t.Fatalf("hooks %s on a malformed file: exit %d\n%s", sub, code, out)
		}
		if b, _ := os.ReadFile(settings); string(b) != bad {
			t.Fatalf("hooks %s changed a malformed file", sub)
		}
		if _, err := os.Stat(settings + ".scribe.bak"); err == nil {
			t.Fatal("a backup was written although nothing changed")
		}
	}
}

func TestHooksInstallProjectScope(t *testing.T) {
	dir := t.TempDir()
	env := append(os.Environ(), "CLAUDE_CONFIG_DIR="+filepath.Join(dir, "claude"))
	if out, code := runScribe(t, env, dir, "hooks", "install", "--scope", "project"); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if cmds := scribeCommands(t, filepath.Join(dir, ".claude", "settings.json")); len(cmds) != len(hookEvents) {
		t.Fatalf("project settings: %v", cmds)
	}
	if _, code := runScribe(t, env, dir, "hooks", "install", "--scope", "team"); code != 2 {
		t.Fatalf("--scope team: exit %d, want 2", code)
	}
}

// TestHooksInstallCarriesTheConfigAndWarns: the installed hook reads the
// configuration install was given; a configuration the hook cannot
// record with (the built-in one writes into the watched folder) is
// installed with a warning.
func TestHooksInstallCarriesTheConfigAndWarns(t *testing.T) {
	dir := t.TempDir()
	env := append(os.Environ(), "CLAUDE_CONFIG_DIR="+dir)
	out, code := runScribe(t, env, dir, "hooks", "install")
	if code != 0 || !strings.Contains(out, "warning: scribe hook will record nothing") {
		t.Fatalf("install with the built-in configuration: exit %d, no warning:\n%s", code, out)
	}
	if _, code := runScribe(t, env, dir, "hooks", "uninstall"); code != 0 {
		t.Fatal("uninstall failed")
	}
	cfg := filepath.Join(dir, "my config.hcl")
	hcl := "sink \"jsonl\" \"archive\" {\n  dir = \"" + filepath.Join(dir, "archive") + "\"\n}\npipeline {\n  sinks = [\"jsonl/archive\"]\n}\n"
	if err := os.WriteFile(cfg, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code = runScribe(t, env, dir, "hooks", "install", "--config", cfg)
	if code != 0 || strings.Contains(out, "warning") {
		t.Fatalf("install with an archive: exit %d\n%s", code, out)
	}
	for ev, cmds := range scribeCommands(t, filepath.Join(dir, "settings.json")) {
		if len(cmds) != 1 || !strings.HasSuffix(cmds[0], " hook --config '"+cfg+"'") {
			t.Fatalf("%s runs %v, want the hook with --config %s", ev, cmds, cfg)
		}
	}
	// Installing again with the same configuration changes nothing; with
	// another, scribe's entries are replaced, not doubled.
	if out, _ := runScribe(t, env, dir, "hooks", "install", "--config", cfg); !strings.Contains(out, "nothing to change") {
		t.Fatalf("second install:\n%s", out)
	}
	if out, code := runScribe(t, env, dir, "hooks", "install"); code != 0 || !strings.Contains(out, "updated Stop") {
		t.Fatalf("install with another configuration: exit %d\n%s", code, out)
	}
	for ev, cmds := range scribeCommands(t, filepath.Join(dir, "settings.json")) {
		if len(cmds) != 1 || strings.Contains(cmds[0], "--config") {
			t.Fatalf("%s runs %v after the update, want one hook without --config", ev, cmds)
		}
	}
}
