package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageBlock: price overrides are read in file order, in USD per
// million tokens; the built-in configuration has none; every mistake is an
// error at its file:line.
func TestUsageBlock(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "u.hcl")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	def, err := Load("", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(def.Usage.Prices) != 0 {
		t.Fatalf("the built-in configuration overrides prices: %+v", def.Usage)
	}
	cfg, err := Load(write("usage {\n  price \"claude-x\" {\n    input = 3\n    output = 15\n    cache_write = 3.75\n    cache_read = 0.3\n  }\n"+
		"  price \"anthropic/claude-y\" {\n    input = 0\n    output = 1e1\n    cache_write = 0\n    cache_read = 0\n  }\n}\n"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Usage.Prices
	if len(p) != 2 || p[0].Model != "claude-x" || p[0].Input != 3 || p[0].Output != 15 || p[0].CacheWrite != 3.75 || p[0].CacheRead != 0.3 ||
		p[0].Pos.Line != 2 || p[1].Model != "anthropic/claude-y" || p[1].Output != 10 {
		t.Fatalf("prices %+v", p)
	}
	price := func(body string) string { return "usage {\n  price \"claude-x\" {\n" + body + "  }\n}\n" }
	all := "    output = 1\n    cache_write = 1\n    cache_read = 1\n"
	for body, want := range map[string]string{
		price("    input = -1\n" + all):                  "u.hcl:3:13: price \"claude-x\": input must be a number of 0 or more (USD per million tokens), not -1",
		price("    input = \"3\"\n" + all):               "price \"claude-x\": input: want a number (USD per million tokens), got string",
		price("    input = null\n" + all):                "price \"claude-x\": input: want a number",
		price("    input = [1]\n" + all):                 "price \"claude-x\": input: want a number (USD per million tokens), got list",
		price("    input = var.x\n" + all):               "u.hcl:3:13: Variables not allowed",
		price(all):                                       "u.hcl:2:3: price \"claude-x\": input is missing",
		price("    input = 1\n    inputs = 2\n" + all):   "u.hcl:4:5: price \"claude-x\": unknown attribute \"inputs\" (valid: input, output, cache_write, cache_read)",
		price("    input = 1\n" + all + "    tier {}\n"): "price \"claude-x\": unexpected block \"tier\"",
		"usage {\n  price {}\n}\n":                       "u.hcl:2:3: a price block needs one label",
		"usage {\n  price \"a\" \"b\" {}\n}\n":           "a price block needs one label",
		"usage {\n  currency = \"EUR\"\n}\n":             "u.hcl:2:3: unknown attribute \"currency\" in the usage block",
		"usage {\n  model \"x\" {}\n}\n":                 "unexpected block \"model\" in the usage block",
		"usage \"x\" {}\n":                               "the usage block takes no labels",
		"usage {}\nusage {}\n":                           "duplicate usage block",
		"usage = {}\n":                                   "usage is a block, not an attribute",
		price("    input = 1\n"+all) + "usage {}\n":      "duplicate usage block",
		strings.Replace(price("    input = 1\n"+all), "}\n}\n", "}\n  price \"claude-x\" {\n    input = 1\n"+all+"  }\n}\n", 1): "u.hcl:8:3: duplicate price \"claude-x\"; the first is at",
	} {
		_, err := Load(write(body), nil, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", body, err, want)
		}
	}
}
