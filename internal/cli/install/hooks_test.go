package install

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
		"empty lists": "{\r\n    \"hooks\": {\r\n        \"Stop\": [],\r\n        \"PreToolUse\": [{\"hooks\": []}]\r\n    }\r\n}\r\n",
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
			// An event list that was empty goes with scribe's group.
			back := strings.Replace(before, "\r\n        \"Stop\": [],", "", 1)
			if before != "" {
				if b, _ := os.ReadFile(settings); string(b) != back {
					t.Fatalf("install then uninstall changed the file:\n%q\nwant\n%q", b, back)
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
	// The built-in configuration mirrors into its archive; a pipeline
	// that lists the local store (the watched folder) records nothing.
	local := filepath.Join(dir, "local.hcl")
	if err := os.WriteFile(local, []byte("pipeline {\n  sinks = [\"jsonl/local\"]\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := runScribe(t, env, dir, "hooks", "install", "--config", local)
	if code != 0 || !strings.Contains(out, "warning: scribe hook will record nothing") {
		t.Fatalf("install with jsonl/local as the sink: exit %d, no warning:\n%s", code, out)
	}
	if _, code := runScribe(t, env, dir, "hooks", "uninstall", "--config", local); code != 0 {
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

// hooksEnv is an environment whose HOME and CLAUDE_CONFIG_DIR are dir.
func hooksEnv(dir string) []string {
	return append(os.Environ(), "HOME="+dir, "CLAUDE_CONFIG_DIR="+dir, "SCRIBE_LOG_LEVEL=warn")
}

func writeSettings(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantFile(t *testing.T, path, want, when string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Fatalf("%s: %s holds\n%s\nwant, byte for byte,\n%s", when, path, b, want)
	}
}

// userSettings is a settings.json as a user writes it: tabs, a command
// with && and quotes, unicode as it is and escaped, keys in no order, a
// compact line, and hooks of the user's own, one of them a look-alike of
// scribe's.
const userSettings = "{\n" +
	"\t\"zeta\": \"last key first\",\n" +
	"\t\"hooks\": {\n" +
	"\t\t\"Stop\": [\n" +
	"\t\t\t{\"matcher\": \"\", \"hooks\": [{\"type\": \"command\", \"command\": \"make lint && echo \\\"done <ok>\\\"\"}]},\n" +
	"\t\t\t{\"hooks\": [{\"type\": \"command\", \"command\": \"~/bin/scribe-notify hook --sound\", \"timeout\": 10}]}\n" +
	"\t\t],\n" +
	"\t\t\"PreToolUse\": [{\"matcher\":\"Bash\",\"hooks\":[{\"type\":\"command\",\"command\":\"guard.sh\"}]}]\n" +
	"\t},\n" +
	"\t\"statusLine\": {\"type\": \"command\", \"command\": \"echo 'é ☃ \\u00e9' && date\"},\n" +
	"\t\"alpha\": 1.50\n" +
	"}\n"

// installOverUserSettings runs hooks install over userSettings in a
// temporary CLAUDE_CONFIG_DIR.
func installOverUserSettings(t *testing.T) (dir, settings string, env []string) {
	t.Helper()
	dir = t.TempDir()
	settings = filepath.Join(dir, "settings.json")
	writeSettings(t, settings, userSettings)
	env = hooksEnv(dir)
	if out, code := runScribe(t, env, dir, "hooks", "install"); code != 0 {
		t.Fatalf("install: exit %d\n%s", code, out)
	}
	return dir, settings, env
}

// TestHooksRoundTripIsByteForByte: install changes only what it adds (the
// user's escapes, tabs, key order and look-alike hook stay as written);
// uninstall gives the original file back byte for byte.
func TestHooksRoundTripIsByteForByte(t *testing.T) {
	dir, settings, env := installOverUserSettings(t)
	b, _ := os.ReadFile(settings)
	for _, line := range strings.SplitAfter(userSettings, "\n") {
		if line != "" && !strings.Contains(string(b), line) && !strings.HasPrefix(line, "\t\t\t{\"hooks\"") && !strings.HasPrefix(line, "\t\t\"PreToolUse") {
			t.Fatalf("install changed the user's line %q:\n%s", line, b)
		}
	}
	if strings.Contains(string(b), `\u0026`) || !strings.Contains(string(b), "\n\t\t\t\t\"hooks\": [\n") {
		t.Fatalf("install re-escaped or did not follow the file's tabs:\n%s", b)
	}
	cmds := scribeCommands(t, settings)
	if got := cmds["Stop"]; len(got) != 3 || got[0] != `make lint && echo "done <ok>"` || got[1] != "~/bin/scribe-notify hook --sound" || !strings.HasSuffix(got[2], "scribe hook") {
		t.Fatalf("Stop after install: %q; want the user's two hooks untouched and scribe's after them", got)
	}
	if got := cmds["Interrupt"]; len(got) != 1 || !strings.HasSuffix(got[0], "scribe hook") {
		t.Fatalf("Interrupt after install: %q, want scribe's hook", got)
	}
	if out, code := runScribe(t, env, dir, "hooks", "uninstall"); code != 0 {
		t.Fatalf("uninstall: exit %d\n%s", code, out)
	}
	wantFile(t, settings, userSettings, "install then uninstall")
}

// TestHooksLeaveLookAlikesAlone: hooks that are not exactly what install
// writes (a user's scribe-notify, scribe's command with a matcher or
// more handlers, or with other arguments) are neither replaced by install
// nor removed by uninstall.
func TestHooksLeaveLookAlikesAlone(t *testing.T) {
	dir := t.TempDir()
	settings := filepath.Join(dir, "settings.json")
	exe := testenv.BuildScribe(t)
	before := `{
  "hooks": {
    "Stop": [
      {"hooks": [{"type": "command", "command": "~/bin/scribe-notify hook --sound", "timeout": 10}]},
      {"hooks": [{"type": "command", "command": "/usr/local/bin/scribe-notify hook", "timeout": 10}]},
      {"hooks": [{"type": "command", "command": "` + exe + ` hook --sound", "timeout": 10}]},
      {"matcher": "", "hooks": [{"type": "command", "command": "` + exe + ` hook", "timeout": 10}]},
      {"hooks": [{"type": "command", "command": "` + exe + ` hook", "timeout": 10}, {"type": "command", "command": "say done"}]}
    ],
    "SessionEnd": [
      {"hooks": [{"type": "command", "command": "scribe hook", "timeout": 10}]}
    ]
  }
}
`
	writeSettings(t, settings, before)
	env := hooksEnv(dir)
	if out, code := runScribe(t, env, dir, "hooks", "install"); code != 0 || strings.Contains(out, "updated") {
		t.Fatalf("install: exit %d (an \"updated\" means a look-alike was taken for scribe's)\n%s", code, out)
	}
	cmds := scribeCommands(t, settings)
	if n := len(cmds["Stop"]); n != 7 {
		t.Fatalf("Stop after install holds %d hooks, want the user's 6 and scribe's: %q", n, cmds["Stop"])
	}
	if n := len(cmds["SessionEnd"]); n != 2 || cmds["SessionEnd"][0] != "scribe hook" {
		t.Fatalf("SessionEnd after install: %q", cmds["SessionEnd"])
	}
	if out, code := runScribe(t, env, dir, "hooks", "uninstall"); code != 0 {
		t.Fatalf("uninstall: exit %d\n%s", code, out)
	}
	wantFile(t, settings, before, "install then uninstall with look-alike hooks")
	if out, code := runScribe(t, env, dir, "hooks", "uninstall"); code != 0 || !strings.Contains(out, "nothing to change") {
		t.Fatalf("uninstall with only look-alikes left: exit %d\n%s", code, out)
	}
	wantFile(t, settings, before, "a second uninstall")
}

// TestHooksWriteThroughASymlink: a settings.json that is a link into a
// dotfiles folder stays a link; its target gets scribe's hooks and, after
// uninstall, its original content back; --dry-run writes nothing.
func TestHooksWriteThroughASymlink(t *testing.T) {
	dir := t.TempDir()
	dotfiles := filepath.Join(dir, "dotfiles", "claude")
	claude := filepath.Join(dir, "claude")
	for _, d := range []string{dotfiles, claude} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(dotfiles, "settings.json")
	link := filepath.Join(claude, "settings.json")
	writeSettings(t, target, userSettings)
	if err := os.Symlink("../dotfiles/claude/settings.json", link); err != nil {
		t.Fatal(err)
	}
	env := append(hooksEnv(dir), "CLAUDE_CONFIG_DIR="+claude)
	isLink := func(when string) {
		t.Helper()
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%s: %s is no longer a symbolic link (%v)", when, link, err)
		}
	}
	if out, code := runScribe(t, env, dir, "hooks", "install", "--dry-run"); code != 0 || !strings.Contains(out, "would change") {
		t.Fatalf("install --dry-run: exit %d\n%s", code, out)
	}
	isLink("after --dry-run")
	wantFile(t, target, userSettings, "after --dry-run")
	if ents, _ := os.ReadDir(claude); len(ents) != 1 {
		t.Fatalf("--dry-run wrote files: %v", ents)
	}
	if out, code := runScribe(t, env, dir, "hooks", "install"); code != 0 {
		t.Fatalf("install: exit %d\n%s", code, out)
	}
	isLink("after install")
	if cmds := scribeCommands(t, target); len(cmds["Stop"]) != 3 || len(cmds["SessionStart"]) != 1 {
		t.Fatalf("the link's target lacks scribe's hooks: %v", cmds)
	}
	wantFile(t, link+".scribe.bak", userSettings, "the backup")
	if out, code := runScribe(t, env, dir, "hooks", "uninstall"); code != 0 {
		t.Fatalf("uninstall: exit %d\n%s", code, out)
	}
	isLink("after uninstall")
	wantFile(t, target, userSettings, "install then uninstall through a link")
}

// TestHooksKeepEveryBackup: each change keeps what the file held in a new
// backup; the first one, the user's original, is never overwritten.
func TestHooksKeepEveryBackup(t *testing.T) {
	dir, settings, env := installOverUserSettings(t)
	installed, _ := os.ReadFile(settings)
	cfg := filepath.Join(dir, "other.hcl")
	writeSettings(t, cfg, "log_level = \"warn\"\n")
	if out, code := runScribe(t, env, dir, "hooks", "install", "--config", cfg); code != 0 || !strings.Contains(out, "updated Stop") {
		t.Fatalf("second install: exit %d\n%s", code, out)
	}
	wantFile(t, settings+".scribe.bak", userSettings, "after two installs, the first backup")
	wantFile(t, settings+".scribe.bak.1", string(installed), "after two installs, the second backup")
	if out, code := runScribe(t, env, dir, "hooks", "uninstall"); code != 0 {
		t.Fatalf("uninstall: exit %d\n%s", code, out)
	}
	wantFile(t, settings, userSettings, "install, install again with another configuration, uninstall")
	wantFile(t, settings+".scribe.bak", userSettings, "after uninstall, the first backup")
}

// TestHooksRefuseDuplicateKeys: Claude Code reads only the last of two
// keys; install would report success for hooks Claude Code never sees. A
// key twice where scribe edits is refused, naming it, and nothing is
// written.
func TestHooksRefuseDuplicateKeys(t *testing.T) {
	for name, content := range map[string]string{
		"hooks twice": `{"hooks": {"Stop": []}, "model": "opus", "hooks": {"PreToolUse": []}}`,
		"event twice": `{"hooks": {"Stop": [], "PreToolUse": [], "Stop": [{"hooks": []}]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			settings := filepath.Join(dir, "settings.json")
			writeSettings(t, settings, content)
			key := map[string]string{"hooks twice": `"hooks"`, "event twice": `"Stop"`}[name]
			for _, sub := range []string{"install", "uninstall"} {
				out, code := runScribe(t, hooksEnv(dir), dir, "hooks", sub)
				if code != 2 || !strings.Contains(out, key) || !strings.Contains(out, "twice") || !strings.Contains(out, "nothing changed") {
					t.Fatalf("hooks %s: exit %d, want 2 and a message naming %s\n%s", sub, code, key, out)
				}
				wantFile(t, settings, content, "hooks "+sub+" refused")
				if ents, _ := os.ReadDir(dir); len(ents) != 1 {
					t.Fatalf("hooks %s wrote beside the file: %v", sub, ents)
				}
			}
		})
	}
}

// FuzzEditHooks: on any settings.json, install gives valid JSON holding
// scribe's hook for every event; uninstall after it gives valid JSON and,
// when the file had no scribe group, no empty event list and no empty
// object at the top or in "hooks" (those come back as {}, without the
// blanks they held, or go), the original bytes.
func FuzzEditHooks(f *testing.F) {
	for _, s := range []string{
		"", "{}", `{"model":"opus"}`, userSettings,
		"{\r\n    \"a\": 1,\r\n    \"hooks\": {\r\n        \"Stop\": [{\"hooks\": []}]\r\n    }\r\n}\r\n",
		"{\n  \"hooks\": {\"Stop\": [{\"hooks\":[]}]},\n  \"b\": [1, 2]\n}",
		`  {"hooks" : {"PreToolUse":[ {"matcher":"x"} ] } }  `,
	} {
		f.Add(s)
	}
	const command = "/usr/bin/scribe hook"
	names := []string{"scribe"}
	f.Fuzz(func(t *testing.T, in string) {
		out, _, err := editHooks([]byte(in), true, command, names)
		if err != nil {
			return
		}
		var s struct {
			Hooks map[string]json.RawMessage `json:"hooks"`
		}
		if err := json.Unmarshal(out, &s); err != nil {
			t.Fatalf("install made invalid JSON: %v\n%q", err, out)
		}
		for _, ev := range hookEvents {
			var groups []json.RawMessage
			if err := json.Unmarshal(s.Hooks[ev], &groups); err != nil {
				t.Fatalf("install left %s without a list: %v\n%q", ev, err, out)
			}
			found := false
			for _, raw := range groups {
				var g struct {
					Hooks []struct{ Command string } `json:"hooks"`
				}
				_ = json.Unmarshal(raw, &g)
				for _, h := range g.Hooks {
					found = found || h.Command == command
				}
			}
			if !found {
				t.Fatalf("install left %s without scribe's hook:\n%q", ev, out)
			}
		}
		back, _, err := editHooks(out, false, command, names)
		if err != nil || !json.Valid(back) {
			t.Fatalf("uninstall after install: %v\n%q", err, back)
		}
		if strings.TrimSpace(in) == "" || strings.Contains(in, "scribe") {
			return
		}
		var orig struct {
			Hooks *map[string]json.RawMessage `json:"hooks"`
		}
		var top map[string]json.RawMessage
		if json.Unmarshal([]byte(in), &orig) != nil || json.Unmarshal([]byte(in), &top) != nil || len(top) == 0 {
			return
		}
		if orig.Hooks != nil {
			if len(*orig.Hooks) == 0 {
				return
			}
			for _, ev := range hookEvents {
				if v, ok := (*orig.Hooks)[ev]; ok && strings.Join(strings.Fields(string(v)), "") == "[]" {
					return
				}
			}
		}
		if string(back) != in {
			t.Fatalf("install then uninstall:\n%q\nwant\n%q", back, in)
		}
	})
}
