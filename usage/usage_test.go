package usage

import (
	"math"
	"reflect"
	"testing"
)

// TestParseLineBadUsage: each malformed usage is left out with its reason;
// absent cache counts are 0; a line without usage is no row and no error.
func TestParseLineBadUsage(t *testing.T) {
	const pre = `{"timestamp":"2025-09-04T01:00:00.000Z","requestId":"r","message":{"id":"m","model":"claude-haiku-4-5","usage":`
	for _, c := range []struct {
		line, reason string
		ok           bool
	}{
		{pre + `{"input_tokens":3,"output_tokens":4}}}`, "", true},
		{pre + `{"input_tokens":-3,"output_tokens":4}}}`, BadTokens, false},
		{pre + `{"input_tokens":"3","output_tokens":4}}}`, BadTokens, false},
		{pre + `{"input_tokens":3.0,"output_tokens":4}}}`, BadTokens, false},
		{pre + `{"input_tokens":1e3,"output_tokens":4}}}`, BadTokens, false},
		{pre + `{"output_tokens":4}}}`, BadTokens, false},
		{pre + `{"input_tokens":null,"output_tokens":4}}}`, BadTokens, false},
		{pre + `{"input_tokens":3,"output_tokens":4,"cache_read_input_tokens":-1}}}`, BadTokens, false},
		{pre + `{"input_tokens":99999999999999999999,"output_tokens":4}}}`, BadTokens, false},
		{`{"timestamp":"yesterday","message":{"id":"m","usage":{"input_tokens":3,"output_tokens":4}}}`, BadTimestamp, false},
		{`{"timestamp":"2025-09-04T01:00:00Z","message":{"model":null,"usage":{"input_tokens":3,"output_tokens":4}}}`, BadModel, false},
		{`{"timestamp":"2025-09-04T01:00:00Z","message":{"usage": {"input_tokens":3,"output_tokens":4}}}`, NotCompact, false},
		{`{"type":"user","message":{"content":"no usage here"}}`, "", false},
		{`not json "usage"`, "", false},
	} {
		r, ok, reason := ParseLine("s", []byte(c.line))
		if ok != c.ok || reason != c.reason {
			t.Errorf("%s: ok %v reason %q, want %v %q", c.line, ok, reason, c.ok, c.reason)
		}
		if ok && (r.Input != 3 || r.Output != 4 || r.CacheRead != 0 || r.Total() != 7) {
			t.Errorf("%s: %+v", c.line, r)
		}
	}
}

// TestDedupeKeepsTheBiggestRow: of a streamed message's rows the one with
// the most tokens counts; on a tie the first, or (preferCost) the first
// with costUSD; rows without a message id all count.
func TestDedupeKeepsTheBiggestRow(t *testing.T) {
	rows := []Row{
		{MessageID: "a", RequestID: "1", Input: 10, Output: 5},
		{MessageID: "a", RequestID: "1", Input: 10, Output: 50},
		{MessageID: "a", RequestID: "2", Input: 1},
		{MessageID: "b", RequestID: "1", Input: 7},
		{MessageID: "b", RequestID: "1", Input: 7, HasCost: true, CostUSD: 3},
		{Input: 2}, {Input: 2},
	}
	kept, dropped := Dedupe(ptrs(rows), false)
	if len(kept) != 5 || dropped != 2 || kept[0].Output != 50 || kept[2].HasCost {
		t.Fatalf("kept %+v dropped %d", kept, dropped)
	}
	kept, _ = Dedupe(ptrs(rows), true)
	if !kept[2].HasCost {
		t.Fatalf("preferCost: kept %+v", kept)
	}
	// Keys whose hashes collide are still told apart by their strings.
	for _, preferCost := range []bool{false, true} {
		want, wantDropped := Dedupe(ptrs(rows), preferCost)
		got, costFirst, gotDropped := dedupe(ptrs(rows), func(msgKey) uint64 { return 7 }, nil)
		if preferCost {
			for j, r := range costFirst {
				got[j] = r
			}
		}
		if !reflect.DeepEqual(got, want) || gotDropped != wantDropped {
			t.Fatalf("every hash alike, preferCost %v: kept %+v dropped %d, want %+v %d", preferCost, got, gotDropped, want, wantDropped)
		}
	}
}

// TestCostTiers: tokens of a kind beyond 200,000 in one message cost the
// tier's price; an hour's cache writes cost twice the input price; costUSD
// wins; an unknown model is unpriced.
func TestCostTiers(t *testing.T) {
	p := NewPricer(nil)
	c, ok := p.Cost(&Row{Model: "claude-sonnet-4-20250514", Input: 250000, CacheCreate: 1000, CacheCreate1h: 1000})
	if want := 200000*3e-6 + 50000*6e-6 + 1000*6e-6; !ok || math.Abs(c-want) > 1e-9 {
		t.Fatalf("cost %v %v, want %v", c, ok, want)
	}
	if c, ok := p.Cost(&Row{Model: "nope", HasCost: true, CostUSD: 0.25}); !ok || c != 0.25 {
		t.Fatalf("costUSD: %v %v", c, ok)
	}
	if _, ok := p.Cost(&Row{Model: "claude-unknown-9", Input: 1}); ok {
		t.Fatal("an unknown model was priced")
	}
}
