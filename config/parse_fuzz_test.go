package config

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/spf13/pflag"
)

// FuzzConfigParse feeds arbitrary bytes to the HCL codec and to Load as a
// configuration file. Neither may panic; a file the codec decodes
// re-encodes to one that decodes to the same values. The seeds are in
// testdata/fuzz/FuzzConfigParse (and the built-in configuration).
func FuzzConfigParse(f *testing.F) {
	f.Add(Default())
	f.Fuzz(func(t *testing.T, src []byte) {
		var c HCLCodec
		first := map[string]any{}
		if err := c.Decode(src, first); err == nil {
			out, err := c.Encode(first)
			if err != nil {
				t.Fatalf("decoded but does not encode: %v", err)
			}
			second := map[string]any{}
			if err := c.Decode(out, second); err != nil {
				t.Fatalf("the encoding of what was decoded does not decode: %v\n%s", err, out)
			}
			if !reflect.DeepEqual(first, second) {
				t.Fatalf("round trip changed the values:\n%#v\n%#v", first, second)
			}
		}
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
