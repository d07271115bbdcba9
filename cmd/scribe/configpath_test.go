package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/internal/testenv"
)

// TestTildeInConfigMeansHome: the README's own archive, dir =
// "~/scribe-archive" (and config_dir = "~/.claude"), is $HOME/scribe-archive
// for record, watch and config check alike, run from any folder; no folder
// named ~ is made in the current one; ~nosuchuser is a clear error.
func TestTildeInConfigMeansHome(t *testing.T) {
	home, work := t.TempDir(), t.TempDir()
	cfg := filepath.Join(home, "scribe.hcl")
	hcl := "config_dir = \"~/.claude\"\nsink \"jsonl\" \"archive\" {\n  dir = \"~/scribe-archive\"\n}\npipeline {\n  sinks = [\"jsonl/archive\"]\n}\n"
	if err := os.WriteFile(cfg, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(cleanEnv(), "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, ".local", "state"))
	sample := filepath.Join(testenv.RepoRoot(t), "cmd", "scribe", "testdata", "sample.jsonl")
	archive := filepath.Join(home, "scribe-archive")
	archived := filepath.Join(archive, "projects", "-home-alice-src-shop", sampleSession+".jsonl")
	noTildeFolder := func(when string) {
		t.Helper()
		if _, err := os.Lstat(filepath.Join(work, "~")); err == nil {
			t.Fatalf("%s made a folder named ~ in the current folder", when)
		}
	}

	if out, _, code := runScribe(t, runOpts{base: env, dir: work, combined: true}, "record", "--config", cfg, sample); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, out)
	}
	noTildeFolder("record")
	if _, err := os.Stat(archived); err != nil {
		t.Fatalf("record did not write into $HOME/scribe-archive: %v", err)
	}

	// watch reads ~/.claude and mirrors into ~/scribe-archive, its
	// checkpoints beside the archive.
	if err := os.RemoveAll(archive); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(home, ".claude", "projects", "-home-alice-src-shop")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, sampleSession+".jsonl"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _, code := runScribe(t, runOpts{base: env, dir: work, combined: true}, "watch", "--once", "--config", cfg); code != 0 {
		t.Fatalf("watch --once: exit %d\n%s", code, out)
	}
	noTildeFolder("watch --once")
	if _, err := os.Stat(archived); err != nil {
		t.Fatalf("watch did not mirror into $HOME/scribe-archive: %v", err)
	}
	if _, err := os.Stat(filepath.Join(archive, "scribe", "watch", "checkpoints.json")); err != nil {
		t.Fatalf("watch's checkpoints are not beside the archive it wrote: %v", err)
	}

	out, _, code := runScribe(t, runOpts{base: env, dir: work, combined: true}, "config", "check", "--config", cfg)
	if code != 0 || !strings.Contains(out, `sink.jsonl/archive.dir = "~/scribe-archive" -> `+archive) ||
		!strings.Contains(out, `config_dir = "~/.claude" -> `+filepath.Join(home, ".claude")) {
		t.Fatalf("config check does not say what the paths resolved to: exit %d\n%s", code, out)
	}

	bad := filepath.Join(home, "bad.hcl")
	if err := os.WriteFile(bad, []byte(strings.Replace(hcl, "~/scribe-archive", "~nosuchuser/x", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"record", "--config", bad, sample}, {"config", "check", "--config", bad}} {
		out, _, code := runScribe(t, runOpts{base: env, dir: work, combined: true}, args...)
		if code != 2 || !strings.Contains(out, `no user "nosuchuser"`) || !strings.Contains(out, "bad.hcl:3:") {
			t.Fatalf("%s with ~nosuchuser: exit %d, want 2 and an error naming the user at its line\n%s", args[0], code, out)
		}
	}
	noTildeFolder("a refused ~nosuchuser")
}
