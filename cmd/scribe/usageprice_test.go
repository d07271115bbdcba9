package main_test

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsagePriceOverrides: the configuration's usage { price "model" }
// blocks (USD per million tokens) replace the built-in table's price of
// the models they name, with no tier above 200k tokens, in every report;
// a row's costUSD still wins; the text report names the table's date and
// the overrides it applied; a bad price is a configuration error (exit 2).
func TestUsagePriceOverrides(t *testing.T) {
	root := t.TempDir()
	dir, cfg := filepath.Join(root, "claude"), filepath.Join(root, "scribe.hcl")
	const S = "claude-sonnet-4-20250514"
	writeTrapSession(t, dir, 1, []usageTrapRow{
		{ts: "2025-09-03T10:00:00.000Z", id: "m1", req: "r1", model: S, in: 250000, out: 2000, cc: 100, cr: 1000},
		{ts: "2025-09-03T10:05:00.000Z", id: "m2", req: "r2", model: "claude-unknown-9", in: 5, out: 5},
		{ts: "2025-09-03T10:06:00.000Z", id: "m3", req: "r3", model: S, in: 10, out: 10, cost: 0.25},
		{ts: "2025-09-03T10:07:00.000Z", id: "m4", req: "r4", model: "claude-haiku-4-5-20251001", in: 1000000},
	}, nil)
	writeFile(t, cfg, "usage {\n  price \""+S+"\" {\n    input = 2\n    output = 10\n    cache_write = 4\n    cache_read = 0.5\n  }\n"+
		"  price \"claude-unknown-9\" {\n    input = 1000\n    output = 3000\n    cache_write = 0\n    cache_read = 0\n  }\n"+
		"  price \"claude-never-used\" {\n    input = 1\n    output = 1\n    cache_write = 1\n    cache_read = 1\n  }\n}\n")
	env := usageEnv(t, dir, "UTC")
	// sonnet at the overrides (no tier), unknown-9 at its override, the
	// costUSD row as it says, haiku at the table's $1 per million.
	want := (250000*2+2000*10+100*4+1000*0.5)/1e6 + (5*1000+5*3000)/1e6 + 0.25 + 1.0
	for _, kind := range []string{"daily", "weekly", "monthly", "session"} {
		out, errs, code := runScribe(t, runOpts{base: env, }, "usage", kind, "--json", "--config", cfg)
		if code != 0 {
			t.Fatalf("usage %s: exit %d\n%s", kind, code, errs)
		}
		var rep struct {
			Totals struct {
				TotalCost      float64  `json:"totalCost"`
				UnpricedModels []string `json:"unpricedModels"`
			} `json:"totals"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		if math.Abs(rep.Totals.TotalCost-want) > 1e-9 || len(rep.Totals.UnpricedModels) != 0 {
			t.Fatalf("usage %s with overrides: total %v, unpriced %v; want %v", kind, rep.Totals.TotalCost, rep.Totals.UnpricedModels, want)
		}
	}
	out, errs, code := runScribe(t, runOpts{base: env, }, "usage", "blocks", "--json", "--config", cfg)
	var blocks struct {
		Blocks []struct {
			CostUSD float64 `json:"costUSD"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal([]byte(out), &blocks); code != 0 || err != nil || len(blocks.Blocks) != 1 || math.Abs(blocks.Blocks[0].CostUSD-want) > 1e-9 {
		t.Fatalf("usage blocks with overrides: exit %d %v %s %s", code, err, out, errs)
	}
	out, _, _ = runScribe(t, runOpts{base: env, }, "usage", "daily", "--config", cfg)
	if !strings.Contains(out, "the built-in table of 2026-09-22") ||
		!strings.Contains(out, "Price overrides from the configuration applied to: "+S+", claude-unknown-9.") || strings.Contains(out, "never-used") {
		t.Fatalf("the text report does not say which overrides it applied:\n%s", out)
	}
	out, _, _ = runScribe(t, runOpts{base: env, }, "usage", "daily")
	if strings.Contains(out, "overrides") || !strings.Contains(out, "no known price, counted at $0: claude-unknown-9") {
		t.Fatalf("without overrides:\n%s", out)
	}
	for body, msg := range map[string]string{
		"usage {\n  price \"x\" {\n    input = -1\n    output = 1\n    cache_write = 1\n    cache_read = 1\n  }\n}\n":    "scribe.hcl:3:13: price \"x\": input must be a number of 0 or more",
		"usage {\n  price \"x\" {\n    input = \"a\"\n    output = 1\n    cache_write = 1\n    cache_read = 1\n  }\n}\n": "price \"x\": input: want a number (USD per million tokens), got string",
		"usage {\n  price \"x\" {\n    input = 1\n  }\n}\n":                                                              "price \"x\": output is missing",
	} {
		writeFile(t, cfg, body)
		for _, kind := range []string{"daily", "blocks", "statusline"} {
			_, errs, code := runScribe(t, runOpts{base: env, stdin: `{"session_id":"x"}`}, "usage", kind, "--config", cfg)
			if code != 2 || !strings.Contains(errs, msg) {
				t.Errorf("usage %s with %q: exit %d, want 2 and %q: %s", kind, body, code, msg, errs)
			}
		}
	}
}
