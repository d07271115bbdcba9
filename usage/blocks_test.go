package usage

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestActiveBlockProjection: ccusage 20.0.24's figures for two rows ten
// minutes apart in the block that ends at 10:00, asked at 05:43:36.7 (as
// it printed them): the rate over the minutes from the first row to the
// last, the minutes left rounded, the tokens and the cost (to cents) at
// that rate by the end.
func TestActiveBlockProjection(t *testing.T) {
	now := time.Date(2026, 12, 7, 5, 43, 36, 700_000_000, time.UTC)
	row := func(ago time.Duration, id string) Row {
		return Row{Time: now.Add(-ago), MessageID: id, Model: "claude-sonnet-4-20250514", Input: 1000, Output: 1000}
	}
	blocks := BuildBlocks(ptrs([]Row{row(20*time.Minute, "a"), row(10*time.Minute, "b"), {Time: now.Add(-30 * time.Hour), Input: 5, Output: 5, Model: "x"}}), NewPricer(nil), now)
	if len(blocks) != 3 || blocks[0].BurnRate != nil || blocks[0].Projection != nil || !blocks[1].IsGap {
		t.Fatalf("blocks %+v", blocks)
	}
	b := blocks[2]
	if !b.IsActive || b.StartTime != "2026-12-07T05:00:00.000Z" || b.BurnRate == nil || b.Projection == nil {
		t.Fatalf("active block %+v", b)
	}
	if br := *b.BurnRate; br.TokensPerMinute != 400 || br.TokensPerMinuteForIndicator != 400 || math.Abs(br.CostPerHour-0.216) > 1e-12 {
		t.Fatalf("burn rate %+v", br)
	}
	if pr := *b.Projection; pr.RemainingMinutes != 256 || pr.TotalTokens != 106400 || pr.TotalCost != 0.96 {
		t.Fatalf("projection %+v", pr)
	}
	// The same rows at one second: no rate, no projection.
	one := BuildBlocks(ptrs([]Row{row(10*time.Minute, "a"), row(10*time.Minute, "b")}), NewPricer(nil), now)
	if one[0].BurnRate != nil || one[0].Projection != nil || !one[0].IsActive {
		t.Fatalf("rows at one time: %+v", one[0])
	}

	for _, c := range []struct {
		limit      int64
		status     string
		percentNil bool
	}{{13301, "ok", false}, {13300, "ok", false}, {13299, "warning", false}, {10640, "warning", false}, {10639, "exceeds", false}, {0, "exceeds", true}} {
		bs := append([]Block(nil), blocks...)
		bs[2].TokenLimitStatus = nil
		ApplyTokenLimit(bs, TokenLimit{Tokens: c.limit * 10})
		st := bs[2].TokenLimitStatus
		if st == nil || st.Status != c.status || (st.PercentUsed == nil) != c.percentNil || st.ProjectedUsage != 106400 || bs[0].TokenLimitStatus != nil {
			t.Errorf("limit %d: %+v, want %s", c.limit*10, st, c.status)
		}
	}
	ApplyTokenLimit(blocks, TokenLimit{Max: true}) // the most any finished block used: 10
	if st := blocks[2].TokenLimitStatus; st == nil || st.Limit != 10 || st.Status != "exceeds" {
		t.Fatalf("--token-limit max: %+v", st)
	}
	if got := RecentBlocks(blocks, now); len(got) != 3 {
		t.Fatalf("recent: %d blocks", len(got))
	}
	if got := RecentBlocks(blocks, now.Add(3*24*time.Hour-29*time.Hour)); len(got) != 2 || got[1].StartTime != b.StartTime {
		t.Fatalf("recent, 3 days after the first block started, minus one hour: %+v", got)
	}
	if got := ActiveBlocks(blocks); len(got) != 1 || got[0].StartTime != b.StartTime {
		t.Fatalf("active: %+v", got)
	}
	for in, want := range map[string]TokenLimit{"": {Max: true}, "max": {Max: true}, "500000": {Tokens: 500000}, "0": {}} {
		if got, err := ParseTokenLimit(in); err != nil || got != want {
			t.Errorf("ParseTokenLimit(%q) = %+v, %v", in, got, err)
		}
	}
	for _, in := range []string{"MAX", "-1", "+5", "1.5", "1e3", "lots", "99999999999999999999"} {
		if _, err := ParseTokenLimit(in); err == nil {
			t.Errorf("ParseTokenLimit(%q): no error", in)
		}
	}
}

// TestPriceOverrides: an override replaces the table's price of the model
// it names (exactly that name), with no tier; OverridesUsed names the
// overrides that priced a row, costUSD rows not counted.
func TestPriceOverrides(t *testing.T) {
	p := NewPricer(map[string]Price{"claude-sonnet-4-20250514": {Input: 1e-6, Output: 2e-6, CacheCreate: 3e-6, CacheRead: 4e-6}, "never": {}})
	c, ok := p.Cost(&Row{Model: "claude-sonnet-4-20250514", Input: 300000, Output: 10, CacheCreate: 100, CacheCreate1h: 40, CacheRead: 1000})
	if want := 300000*1e-6 + 10*2e-6 + 60*3e-6 + 40*2e-6 + 1000*4e-6; !ok || math.Abs(c-want) > 1e-12 {
		t.Fatalf("overridden cost %v, want %v", c, want)
	}
	if c, _ := p.Cost(&Row{Model: "anthropic/claude-sonnet-4-20250514", Input: 1000}); math.Abs(c-1000*3e-6) > 1e-12 {
		t.Fatalf("another name of the model took the override: %v", c)
	}
	if got := p.OverridesUsed(); len(got) != 1 || got[0] != "claude-sonnet-4-20250514" {
		t.Fatalf("overrides used %v", got)
	}
	q := NewPricer(map[string]Price{"m": {Input: 1}})
	if c, _ := q.Cost(&Row{Model: "m", HasCost: true, CostUSD: 0.5, Input: 9}); c != 0.5 || len(q.OverridesUsed()) != 0 {
		t.Fatalf("a costUSD row: %v, used %v", c, q.OverridesUsed())
	}
}

// TestStatusOfIsTheReports: the status line's figures are the session
// report's total for the session, the daily report's for today (its own
// choice among equal rows: the first with costUSD) and the blocks
// report's active block, on rows with streamed copies, ties with and
// without costUSD, other sessions, other days and unpriced models.
func TestStatusOfIsTheReports(t *testing.T) {
	now := time.Date(2026, 12, 6, 23, 30, 0, 0, time.UTC)
	loc := time.FixedZone("UTC+2", 2*3600) // where it is already the 7th, since 22:00 UTC
	r := rand.New(rand.NewPCG(1, 2))
	var rows []Row
	for i := range 3000 {
		row := Row{Session: fmt.Sprintf("s%d", r.IntN(4)), Time: now.Add(-time.Duration(r.IntN(40*60)) * time.Minute),
			MessageID: fmt.Sprintf("m%d", r.IntN(1500)), RequestID: "r", Model: []string{"claude-sonnet-4-20250514", "claude-x", Synthetic, ""}[r.IntN(4)],
			Input: int64(r.IntN(3)) * 1000, Output: int64(r.IntN(2)) * 500}
		if i%5 == 0 {
			row.MessageID = ""
		}
		if r.IntN(4) == 0 {
			row.HasCost, row.CostUSD = true, float64(r.IntN(100))/100
		}
		rows = append(rows, row)
	}
	p := NewPricer(nil)
	st := StatusOf(ptrs(rows), p, "s2", now, loc)

	session, _ := Dedupe(ptrs(rows), false)
	periods, _ := Build(Session, session, p, Options{Loc: loc})
	var wantSession float64
	for _, g := range periods {
		if g.Period == "s2" {
			wantSession = g.TotalCost
		}
	}
	daily, _ := Dedupe(ptrs(rows), true)
	day := now.In(loc).Format("20060102")
	_, tot := Build(Daily, daily, p, Options{Loc: loc, Since: day, Until: day})
	var wantBlock *Block
	for _, b := range BuildBlocks(session, p, now) {
		if b.IsActive {
			wantBlock = &b
		}
	}
	if st.SessionCost != wantSession || st.TodayCost != tot.TotalCost || wantBlock == nil || !reflect.DeepEqual(st.Block, wantBlock) {
		t.Fatalf("status %+v (block %+v)\nwant session %v, today %v, block %+v", st, st.Block, wantSession, tot.TotalCost, wantBlock)
	}
	if ties, _ := Dedupe(ptrs(rows), false); reflect.DeepEqual(ties, daily) {
		t.Fatal("the rows hold no tie the two deduplications decide differently")
	}
}
