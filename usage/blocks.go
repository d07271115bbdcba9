package usage

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// Blocks is the kind of the 5-hour billing windows report.
const Blocks = "blocks"

// BlockLength is the length of a billing window.
const BlockLength = 5 * time.Hour

// RecentWindow is how far back `blocks --recent` looks: the blocks that
// start within it are kept.
const RecentWindow = 3 * 24 * time.Hour

// BlockTokens are a block's tokens, as ccusage names them there.
type BlockTokens struct {
	InputTokens              int64 `json:"inputTokens"`
	OutputTokens             int64 `json:"outputTokens"`
	CacheCreationInputTokens int64 `json:"cacheCreationInputTokens"`
	CacheReadInputTokens     int64 `json:"cacheReadInputTokens"`
}

// BurnRate is how fast the active block spends, measured from its first
// message to its last.
type BurnRate struct {
	// TokensPerMinute counts every kind of token.
	TokensPerMinute float64 `json:"tokensPerMinute"`
	// TokensPerMinuteForIndicator counts input and output tokens only.
	TokensPerMinuteForIndicator float64 `json:"tokensPerMinuteForIndicator"`
	CostPerHour                 float64 `json:"costPerHour"`
}

// Projection is where the active block ends if it keeps its burn rate
// until its end: the whole minutes left (rounded), the tokens (rounded)
// and the cost (rounded to cents) by then.
type Projection struct {
	TotalTokens      int64   `json:"totalTokens"`
	TotalCost        float64 `json:"totalCost"`
	RemainingMinutes int64   `json:"remainingMinutes"`
}

// TokenLimitStatus compares the active block's projected tokens with a
// limit (`blocks --token-limit`): "exceeds" above it, "warning" above 80%
// of it, else "ok". PercentUsed is null for a limit of 0.
type TokenLimitStatus struct {
	Limit          int64    `json:"limit"`
	PercentUsed    *float64 `json:"percentUsed"`
	ProjectedUsage int64    `json:"projectedUsage"`
	Status         string   `json:"status"`
}

// Block is one 5-hour window, or the gap between two, as ccusage prints it.
// Only the active block has a burn rate and a projection (and only when
// its messages span some time); the others print null.
type Block struct {
	ID               string            `json:"id"`
	StartTime        string            `json:"startTime"`
	EndTime          string            `json:"endTime"`
	ActualEndTime    *string           `json:"actualEndTime"`
	IsActive         bool              `json:"isActive"`
	IsGap            bool              `json:"isGap"`
	Entries          int               `json:"entries"`
	TokenCounts      BlockTokens       `json:"tokenCounts"`
	TotalTokens      int64             `json:"totalTokens"`
	CostUSD          float64           `json:"costUSD"`
	Models           []string          `json:"models"`
	BurnRate         *BurnRate         `json:"burnRate"`
	Projection       *Projection       `json:"projection"`
	TokenLimitStatus *TokenLimitStatus `json:"tokenLimitStatus,omitempty"`

	start, end, first, last time.Time
	byModel                 map[string]*ModelBreakdown // the part of each model in Models
}

// Breakdown is each model's part of the block (its tokens and cost), the
// costliest first.
func (b Block) Breakdown() []ModelBreakdown {
	out := make([]ModelBreakdown, 0, len(b.Models))
	for _, name := range b.Models {
		out = append(out, *b.byModel[name])
	}
	slices.SortStableFunc(out, func(x, y ModelBreakdown) int { return cmp.Compare(y.Cost, x.Cost) })
	return out
}

// Start is when the block (or the gap) starts.
func (b Block) Start() time.Time { return b.start }

// End is when the block ends: 5 hours after its start (a gap: its next
// block's first message).
func (b Block) End() time.Time { return b.end }

func isoMillis(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// BuildBlocks cuts deduplicated rows into 5-hour windows: a window starts
// at the hour (UTC) of its first row and takes the rows until 5 hours after
// its start, or until 5 hours pass without a row; a gap block stands for
// the time between the end of the last row's 5 hours and the next row. A
// block is active when now is before its end and within 5 hours of its
// last row; the active block gets its burn rate and projection at now.
func BuildBlocks(rows []*Row, p *Pricer, now time.Time) []Block {
	return BuildBlocksOf(rows, p, now, BlockLength)
}

// BuildBlocksOf is BuildBlocks with windows of length (ccusage's blocks
// --session-length), in the order of their starts (a gap before the block
// that starts with it): a gap can start after the next block, whose start
// is its first row's hour.
func BuildBlocksOf(rows []*Row, p *Pricer, now time.Time, length time.Duration) []Block {
	ch := newBlockChain(p, now, length)
	ch.addAll(rows)
	out := ch.close()
	slices.SortStableFunc(out, func(a, b Block) int { return a.start.Compare(b.start) })
	return out
}

// blockChain cuts rows, in time order, into blocks.
type blockChain struct {
	p      *Pricer
	length time.Duration // of a block
	now    time.Time
	out    []Block
	cur    *Block
}

// newBlockChain is an empty chain of blocks of length, active at now.
func newBlockChain(p *Pricer, now time.Time, length time.Duration) *blockChain {
	return &blockChain{p: p, now: now, length: length, out: []Block{}}
}

// addAll adds rows in time order (equal times in their order): a sort of
// small keys, not of the rows.
func (ch *blockChain) addAll(rows []*Row) {
	type at struct {
		sec  int64
		nsec int32
		i    int32
	}
	order := make([]at, len(rows))
	for i := range rows {
		order[i] = at{rows[i].Time.Unix(), int32(rows[i].Time.Nanosecond()), int32(i)}
	}
	slices.SortFunc(order, func(a, b at) int {
		if c := cmp.Compare(a.sec, b.sec); c != 0 {
			return c
		}
		if c := cmp.Compare(a.nsec, b.nsec); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	for _, o := range order {
		ch.add(rows[o.i])
	}
}

// add adds the next row: to the current block, or to a new one (after a
// gap block when 5 hours passed since the current block's last row).
func (ch *blockChain) add(r *Row) {
	if cur := ch.cur; cur != nil && (r.Time.Sub(cur.start) > ch.length || r.Time.Sub(cur.last) > ch.length) {
		last := cur.last
		ch.closeBlock()
		if gapStart := last.Add(ch.length); r.Time.After(gapStart) {
			ch.out = append(ch.out, Block{ID: "gap-" + isoMillis(gapStart), StartTime: isoMillis(gapStart), EndTime: isoMillis(r.Time),
				IsGap: true, Models: []string{}, start: gapStart, end: r.Time})
		}
	}
	if ch.cur == nil {
		start := r.Time.UTC().Truncate(time.Hour)
		ch.cur = &Block{ID: isoMillis(start), StartTime: isoMillis(start), EndTime: isoMillis(start.Add(ch.length)), Models: []string{},
			start: start, end: start.Add(ch.length), first: r.Time, byModel: map[string]*ModelBreakdown{}}
	}
	cur := ch.cur
	cur.last = r.Time
	cur.Entries++
	cur.TokenCounts.InputTokens += r.Input
	cur.TokenCounts.OutputTokens += r.Output
	cur.TokenCounts.CacheCreationInputTokens += r.CacheCreate
	cur.TokenCounts.CacheReadInputTokens += r.CacheRead
	cur.TotalTokens += r.Total()
	if name := r.ModelName(); name != "" {
		cost, _ := ch.p.Cost(r)
		cur.CostUSD += cost
		m := cur.byModel[name]
		if m == nil {
			m = &ModelBreakdown{ModelName: name}
			cur.byModel[name] = m
			cur.Models = append(cur.Models, name)
		}
		m.add(r.Input, r.Output, r.CacheCreate, r.CacheRead)
		m.Cost += cost
	}
}

// closeBlock ends the current block: its actual end, whether it is
// active, and the active one's burn rate and projection.
func (ch *blockChain) closeBlock() {
	cur := ch.cur
	if cur == nil {
		return
	}
	end := isoMillis(cur.last)
	cur.ActualEndTime = &end
	cur.IsActive = ch.now.Sub(cur.last) < ch.length && ch.now.Before(cur.end)
	if cur.IsActive {
		cur.project(ch.now)
	}
	ch.out = append(ch.out, *cur)
	ch.cur = nil
}

// close ends the last block and gives them all.
func (ch *blockChain) close() []Block {
	ch.closeBlock()
	return ch.out
}

// project sets the active block's burn rate (its tokens and cost over the
// minutes from its first message to its last; none when they are at the
// same time) and its projection at now: the rate kept for the whole
// minutes left, rounded, until the block's end.
func (b *Block) project(now time.Time) {
	minutes := float64(b.last.Sub(b.first).Milliseconds()) / 60000
	if minutes <= 0 {
		return
	}
	t := b.TokenCounts
	b.BurnRate = &BurnRate{
		TokensPerMinute:             float64(b.TotalTokens) / minutes,
		TokensPerMinuteForIndicator: float64(t.InputTokens+t.OutputTokens) / minutes,
		CostPerHour:                 b.CostUSD / minutes * 60,
	}
	left := math.Round(math.Max(0, float64(b.end.Sub(now).Milliseconds())/60000))
	b.Projection = &Projection{
		TotalTokens:      int64(math.Round(float64(b.TotalTokens) + b.BurnRate.TokensPerMinute*left)),
		TotalCost:        math.Round((b.CostUSD+b.BurnRate.CostPerHour/60*left)*100) / 100,
		RemainingMinutes: int64(left),
	}
}

// TokenLimit is a `blocks --token-limit` value: a number of tokens, or
// "max" (or "") for the most tokens any finished block used.
type TokenLimit struct {
	Max    bool
	Tokens int64
}

// ParseTokenLimit reads a --token-limit value.
func ParseTokenLimit(s string) (TokenLimit, error) {
	if s == "" || s == "max" {
		return TokenLimit{Max: true}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || s[0] == '+' {
		return TokenLimit{}, fmt.Errorf("want a number of tokens or max, not %q", s)
	}
	return TokenLimit{Tokens: n}, nil
}

// ApplyTokenLimit gives the projected active block its TokenLimitStatus.
// With Max the limit is the most tokens a block that is not active used;
// when none used any there is no limit and no status.
func ApplyTokenLimit(blocks []Block, lim TokenLimit) {
	limit := lim.Tokens
	if lim.Max {
		limit = 0
		for _, b := range blocks {
			if !b.IsGap && !b.IsActive {
				limit = max(limit, b.TotalTokens)
			}
		}
		if limit == 0 {
			return
		}
	}
	for i := range blocks {
		pr := blocks[i].Projection
		if pr == nil {
			continue
		}
		st := &TokenLimitStatus{Limit: limit, ProjectedUsage: pr.TotalTokens, Status: "ok"}
		if limit > 0 {
			pct := float64(pr.TotalTokens) / float64(limit) * 100
			st.PercentUsed = &pct
		}
		switch {
		case pr.TotalTokens > limit:
			st.Status = "exceeds"
		case st.PercentUsed != nil && *st.PercentUsed > 80:
			st.Status = "warning"
		}
		blocks[i].TokenLimitStatus = st
	}
}

// ActiveBlocks keeps the active block, if any.
func ActiveBlocks(blocks []Block) []Block {
	out := []Block{}
	for _, b := range blocks {
		if b.IsActive {
			out = append(out, b)
		}
	}
	return out
}

// RecentBlocks keeps the blocks (and gaps) that start within RecentWindow
// before now, and the active one.
func RecentBlocks(blocks []Block, now time.Time) []Block {
	out := []Block{}
	cut := now.Add(-RecentWindow)
	for _, b := range blocks {
		if b.IsActive || !b.start.Before(cut) {
			out = append(out, b)
		}
	}
	return out
}

// BlocksWithin keeps the blocks (and gaps) that start on a day (YYYYMMDD,
// in loc) from since to until, both kept ("": no bound), as ccusage's
// blocks --since/--until do: the blocks are cut from every row first, so
// a kept block keeps its rows of the days before.
func BlocksWithin(blocks []Block, since, until string, loc *time.Location) []Block {
	if since == "" && until == "" {
		return blocks
	}
	out := []Block{}
	for _, b := range blocks {
		day := b.start.In(loc).Format("20060102")
		if (since == "" || day >= since) && (until == "" || day <= until) {
			out = append(out, b)
		}
	}
	return out
}
