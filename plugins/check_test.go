package plugins

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CheckBinary finds what a start would run and refuses what a start would
// refuse, without running it.
func TestCheckBinary(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "my-plugin")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(plain, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := sum(t, bin)
	wrong := strings.Repeat("0", 64)
	for _, tc := range []struct {
		name, command, sha, pathEnv string
		want                        error // nil: ok
	}{
		{"absolute", bin, good, "", nil},
		{"relative to the work dir", "./my-plugin", good, "", nil},
		{"bare name in PATH", "my-plugin", good, dir, nil},
		{"bare name not in PATH", "my-plugin", good, "/nonexistent", ErrNotFound},
		{"missing", filepath.Join(dir, "gone"), good, "", ErrNotFound},
		{"not executable", plain, sum(t, plain), "", ErrNotFound},
		{"wrong sha256", bin, wrong, "", ErrChecksum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Command, cfg.SHA256 = tc.command, tc.sha
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			path, err := CheckBinary(cfg, dir, tc.pathEnv)
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("error %v", err)
			case tc.want == nil && path != bin:
				t.Errorf("path %q, want %q", path, bin)
			case tc.want != nil && !errors.Is(err, tc.want):
				t.Errorf("error %v, want %v", err, tc.want)
			}
		})
	}
	unvalidated := &Config{Command: bin, SHA256: good}
	if _, err := CheckBinary(unvalidated, dir, ""); err == nil {
		t.Error("an unvalidated configuration passed")
	}
}
