package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
)

// FuzzConfigParse feeds arbitrary bytes to Load as a configuration file:
// it may not panic. The seeds are in
// testdata/fuzz/FuzzConfigParse (and the built-in configuration).
func FuzzConfigParse(f *testing.F) {
	f.Add(Default())
	f.Fuzz(func(t *testing.T, src []byte) {
		p := filepath.Join(t.TempDir(), "scribe.hcl")
		if err := os.WriteFile(p, src, 0o600); err != nil {
			t.Fatal(err)
		}
		fs := pflag.NewFlagSet("fuzz", pflag.ContinueOnError)
		AddFlags(fs)
		if cfg, err := Load(p, nil, fs); err == nil && cfg == nil {
			t.Fatal("Load returned neither a configuration nor an error")
		}
	})
}
