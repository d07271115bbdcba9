package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFind: --config, else $SCRIBE_CONFIG, else the XDG config folder's
// scribe/config.hcl, else ~/.config's, else the built-in configuration.
func TestFind(t *testing.T) {
	home, xdg := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", xdg)
	t.Setenv(FileEnv, "")
	check := func(flag string, want Found) {
		t.Helper()
		got, err := Find(flag)
		if err != nil || got != want {
			t.Fatalf("Find(%q) = %+v, %v; want %+v", flag, got, err, want)
		}
	}
	check("", Found{Source: SourceBuiltin})
	homeFile := filepath.Join(home, ".config", "scribe", "config.hcl")
	xdgFile := filepath.Join(xdg, "scribe", "config.hcl")
	for _, p := range []string{homeFile, xdgFile} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(homeFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	check("", Found{homeFile, SourceHome})
	if err := os.WriteFile(xdgFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	check("", Found{xdgFile, SourceXDG})
	t.Setenv("XDG_CONFIG_HOME", "relative")
	check("", Found{homeFile, SourceHome})
	t.Setenv(FileEnv, "~/mine.hcl")
	check("", Found{filepath.Join(home, "mine.hcl"), SourceEnv})
	check("other.hcl", Found{"other.hcl", SourceFlag})
}
