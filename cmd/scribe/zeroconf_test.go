package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/internal/testenv"
)

// lastSampleUUID is the last message of testdata/sample.jsonl.
const lastSampleUUID = "1f0a7c52-8a7e-4c1e-9f3a-0b1c2d3e4f04"

// zeroConfEnv is a user with no scribe configuration at all: a home
// folder of its own (no XDG variables), Claude's folder at ~/.claude
// holding the sample session, its transcript last written 40 days ago
// (past Claude Code's 30-day cleanupPeriodDays).
func zeroConfEnv(t *testing.T) (env []string, home, work, transcript string) {
	t.Helper()
	home, work = t.TempDir(), t.TempDir()
	env = append(cleanEnv(), "HOME="+home, "SCRIBE_LOG_LEVEL=warn")
	proj := filepath.Join(home, ".claude", "projects", "-home-alice-src-shop")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "cmd", "scribe", "testdata", "sample.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	transcript = filepath.Join(proj, sampleSession+".jsonl")
	if err := os.WriteFile(transcript, b, 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-40 * 24 * time.Hour)
	if err := os.Chtimes(transcript, old, old); err != nil {
		t.Fatal(err)
	}
	return env, home, work, transcript
}

// TestWatchWithNoConfigurationMirrorsIntoTheDefaultArchive: with no
// configuration at all, watch --once mirrors ~/.claude into
// ~/.local/share/scribe/archive (or $XDG_DATA_HOME/scribe/archive);
// config check shows that path resolved; doctor names the session Claude
// Code's sweep is about to delete and says the archive holds it; once the
// sweep (here: rm) took it from ~/.claude, ls --from jsonl/archive still
// lists it and resume finds it there.
func TestWatchWithNoConfigurationMirrorsIntoTheDefaultArchive(t *testing.T) {
	env, home, work, transcript := zeroConfEnv(t)
	archive := filepath.Join(home, ".local", "share", "scribe", "archive")

	out, _, code := runScribe(t, runOpts{base: env, dir: work, combined: true}, "config", "check")
	if code != 0 || !strings.Contains(out, `path sink.jsonl/archive.dir = "$XDG_DATA_HOME/scribe/archive" -> `+archive) ||
		!strings.Contains(out, "file: built-in only") {
		t.Fatalf("config check does not show the built-in archive's resolved path and the file in use: exit %d\n%s", code, out)
	}

	if out, _, code := runScribe(t, runOpts{base: env, dir: work, combined: true}, "watch", "--once"); code != 0 {
		t.Fatalf("watch --once with no configuration: exit %d, want 0\n%s", code, out)
	}
	archived := filepath.Join(archive, "projects", "-home-alice-src-shop", sampleSession+".jsonl")
	if got := mustReadFile(t, archived); !strings.Contains(string(got), lastSampleUUID) {
		t.Fatalf("the default archive's copy lacks the transcript's last message:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(home, ".claude", "scribe")); err == nil {
		t.Fatal("watch wrote into the folder it follows")
	}

	out, _, code = runScribe(t, runOpts{base: env, dir: work, combined: true}, "doctor")
	if code != 0 || !strings.Contains(out, sampleSession) || !strings.Contains(out, "jsonl/archive") || strings.Contains(out, "NOWHERE") {
		t.Fatalf("doctor does not name the session past cleanupPeriodDays as held by jsonl/archive: exit %d\n%s", code, out)
	}

	if err := os.Remove(transcript); err != nil {
		t.Fatal(err)
	}
	out, _, code = runScribe(t, runOpts{base: env, dir: work, combined: true}, "ls", "--all", "--from", "jsonl/archive")
	if code != 0 || !strings.Contains(out, sampleSession[:8]) {
		t.Fatalf("ls --from jsonl/archive does not list the session deleted from ~/.claude: exit %d\n%s", code, out)
	}
	out, _, code = runScribe(t, runOpts{base: env, dir: work, combined: true}, "resume", "--json", sampleSession)
	if code != 0 || !strings.Contains(out, "jsonl/archive") {
		t.Fatalf("resume does not fall back to the built-in archive: exit %d\n%s", code, out)
	}

	// $XDG_DATA_HOME moves it; the service unit carries it.
	xdg := filepath.Join(home, "xdg-data")
	envX := append(append([]string{}, env...), "XDG_DATA_HOME="+xdg)
	if out, _, code := runScribe(t, runOpts{base: envX, dir: work, combined: true}, "watch", "--once"); code != 0 {
		t.Fatalf("watch --once with XDG_DATA_HOME: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(xdg, "scribe", "archive", "scribe", "watch", "checkpoints.json")); err != nil {
		t.Fatalf("watch did not use $XDG_DATA_HOME/scribe/archive: %v", err)
	}
	out, _, code = runScribe(t, runOpts{base: envX, dir: work, combined: true}, "watch", "--print-service")
	if code != 0 || strings.Contains(out, "--config") || !strings.Contains(out, "Environment=XDG_DATA_HOME="+xdg) {
		t.Fatalf("watch --print-service with no configuration: exit %d\n%s", code, out)
	}
	out, _, code = runScribe(t, runOpts{base: env, dir: work, combined: true}, "hooks", "install")
	settings := string(mustReadFile(t, filepath.Join(home, ".claude", "settings.json")))
	if code != 0 || strings.Contains(out, "warning") || !strings.Contains(settings, " hook") || strings.Contains(settings, "--config") {
		t.Fatalf("hooks install with no configuration: exit %d, want 0, no warning and no --config\n%s\n%s", code, out, settings)
	}
}

// TestHookWithNoConfigurationMirrorsIntoTheDefaultArchive: the hook, as
// Claude Code runs it after `hooks install` with no configuration, records
// the transcript into the default archive.
func TestHookWithNoConfigurationMirrorsIntoTheDefaultArchive(t *testing.T) {
	env, home, _, transcript := zeroConfEnv(t)
	ev := `{"session_id":"` + sampleSession + `","hook_event_name":"Stop","transcript_path":"` + transcript + `","cwd":"/home/alice/src/shop"}`
	if out, errs, code := runScribe(t, runOpts{base: env, stdin: ev}, "hook"); code != 0 || out != "" {
		t.Fatalf("hook: exit %d, stdout %q\n%s", code, out, errs)
	}
	archived := filepath.Join(home, ".local", "share", "scribe", "archive", "projects", "-home-alice-src-shop", sampleSession+".jsonl")
	if got := mustReadFile(t, archived); !strings.Contains(string(got), lastSampleUUID) {
		log, _ := os.ReadFile(filepath.Join(home, ".local", "share", "scribe", "archive", "scribe", "watch", "hook.log"))
		t.Fatalf("the hook did not mirror into the default archive:\n%s\nhook.log:\n%s", got, log)
	}
}

// TestConfigurationFoundWhereUsersKeepOne: with no --config, scribe reads
// $SCRIBE_CONFIG, else $XDG_CONFIG_HOME/scribe/config.hcl, else
// ~/.config/scribe/config.hcl, over the built-in configuration; --config
// wins over all; config path and config check say which.
func TestConfigurationFoundWhereUsersKeepOne(t *testing.T) {
	env, home, work, _ := zeroConfEnv(t)
	write := func(path, dir string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		hcl := "sink \"jsonl\" \"archive\" {\n  dir = \"" + dir + "\"\n}\npipeline {\n  sinks = [\"jsonl/archive\"]\n}\n"
		if err := os.WriteFile(path, []byte(hcl), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(env []string, file, source, archive string) {
		t.Helper()
		out, _, code := runScribe(t, runOpts{base: env, dir: work, combined: true}, "config", "path")
		want := "built-in only"
		if file != "" {
			want = file + " (" + source + ", over the built-in configuration)"
		}
		if code != 0 || strings.TrimSpace(out) != want {
			t.Fatalf("config path: exit %d, %q; want %q", code, out, want)
		}
		out, _, code = runScribe(t, runOpts{base: env, dir: work, combined: true}, "config", "check")
		if code != 0 || !strings.Contains(out, "file: "+want) || !strings.Contains(out, "-> "+archive) {
			t.Fatalf("config check does not say the file in use (%s) or the archive it sets (%s): exit %d\n%s", want, archive, code, out)
		}
		if out, _, code := runScribe(t, runOpts{base: env, dir: work, combined: true}, "watch", "--once"); code != 0 {
			t.Fatalf("watch --once: exit %d\n%s", code, out)
		}
		if _, err := os.Stat(filepath.Join(archive, "projects", "-home-alice-src-shop", sampleSession+".jsonl")); err != nil {
			t.Fatalf("watch did not use the archive of %s: %v", want, err)
		}
	}
	expect(env, "", "", filepath.Join(home, ".local", "share", "scribe", "archive"))

	homeFile := filepath.Join(home, ".config", "scribe", "config.hcl")
	write(homeFile, "~/home-archive")
	expect(env, homeFile, "~/.config/scribe/config.hcl", filepath.Join(home, "home-archive"))

	xdg := filepath.Join(home, "xdg")
	xdgFile := filepath.Join(xdg, "scribe", "config.hcl")
	write(xdgFile, "~/xdg-archive")
	envX := append(append([]string{}, env...), "XDG_CONFIG_HOME="+xdg)
	expect(envX, xdgFile, "$XDG_CONFIG_HOME/scribe/config.hcl", filepath.Join(home, "xdg-archive"))

	envFile := filepath.Join(home, "elsewhere.hcl")
	write(envFile, "~/env-archive")
	envE := append(append([]string{}, envX...), "SCRIBE_CONFIG="+envFile)
	expect(envE, envFile, "$SCRIBE_CONFIG", filepath.Join(home, "env-archive"))

	flagFile := filepath.Join(home, "flag.hcl")
	write(flagFile, "~/flag-archive")
	out, _, code := runScribe(t, runOpts{base: envE, dir: work, combined: true}, "config", "path", "--config", flagFile)
	if code != 0 || !strings.HasPrefix(out, flagFile+" (--config,") {
		t.Fatalf("config path --config: exit %d\n%s", code, out)
	}

	// $SCRIBE_CONFIG is pinned into what scribe sets up to run later.
	out, _, code = runScribe(t, runOpts{base: envE, dir: work, combined: true}, "watch", "--print-service")
	if code != 0 || !strings.Contains(out, "--config "+envFile) {
		t.Fatalf("watch --print-service does not pin $SCRIBE_CONFIG: exit %d\n%s", code, out)
	}

	// A $SCRIBE_CONFIG that does not exist is an error, as --config's is.
	envBad := append(append([]string{}, env...), "SCRIBE_CONFIG="+filepath.Join(home, "nope.hcl"))
	if out, _, code := runScribe(t, runOpts{base: envBad, dir: work, combined: true}, "ls"); code != 2 || !strings.Contains(out, "nope.hcl") {
		t.Fatalf("ls with a missing $SCRIBE_CONFIG: exit %d, want 2 naming it\n%s", code, out)
	}
}
