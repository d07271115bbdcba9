package usage

import (
	"sort"
	"time"
)

// Blocks is the kind of the 5-hour billing windows report.
const Blocks = "blocks"

// BlockLength is the length of a billing window.
const BlockLength = 5 * time.Hour

// BlockTokens are a block's tokens, as ccusage names them there.
type BlockTokens struct {
	InputTokens              int64 `json:"inputTokens"`
	OutputTokens             int64 `json:"outputTokens"`
	CacheCreationInputTokens int64 `json:"cacheCreationInputTokens"`
	CacheReadInputTokens     int64 `json:"cacheReadInputTokens"`
}

// Block is one 5-hour window, or the gap between two, as ccusage prints it.
// BurnRate and Projection are null: only an active block has them, and
// this report does not compute them yet.
type Block struct {
	ID            string      `json:"id"`
	StartTime     string      `json:"startTime"`
	EndTime       string      `json:"endTime"`
	ActualEndTime *string     `json:"actualEndTime"`
	IsActive      bool        `json:"isActive"`
	IsGap         bool        `json:"isGap"`
	Entries       int         `json:"entries"`
	TokenCounts   BlockTokens `json:"tokenCounts"`
	TotalTokens   int64       `json:"totalTokens"`
	CostUSD       float64     `json:"costUSD"`
	Models        []string    `json:"models"`
	BurnRate      any         `json:"burnRate"`
	Projection    any         `json:"projection"`
}

func isoMillis(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// BuildBlocks cuts deduplicated rows into 5-hour windows: a window starts
// at the hour (UTC) of its first row and takes the rows until 5 hours after
// its start, or until 5 hours pass without a row; a gap block stands for
// the time between the end of the last row's 5 hours and the next row.
func BuildBlocks(rows []Row, p *Pricer, now time.Time) []Block {
	sorted := append([]Row(nil), rows...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Time.Before(sorted[j].Time) })
	out := []Block{}
	var cur *Block
	var start, last time.Time
	seen := map[string]bool{}
	closeBlock := func() {
		if cur == nil {
			return
		}
		end := isoMillis(last)
		cur.ActualEndTime = &end
		cur.IsActive = now.Sub(last) < BlockLength && now.Before(start.Add(BlockLength))
		out = append(out, *cur)
		cur = nil
	}
	for _, r := range sorted {
		if cur != nil && (r.Time.Sub(start) > BlockLength || r.Time.Sub(last) > BlockLength) {
			closeBlock()
			if gapStart := last.Add(BlockLength); r.Time.After(gapStart) {
				out = append(out, Block{ID: "gap-" + isoMillis(gapStart), StartTime: isoMillis(gapStart), EndTime: isoMillis(r.Time),
					IsGap: true, Models: []string{}})
			}
		}
		if cur == nil {
			start = r.Time.UTC().Truncate(time.Hour)
			cur = &Block{ID: isoMillis(start), StartTime: isoMillis(start), EndTime: isoMillis(start.Add(BlockLength)), Models: []string{}}
			seen = map[string]bool{}
		}
		last = r.Time
		cur.Entries++
		cur.TokenCounts.InputTokens += r.Input
		cur.TokenCounts.OutputTokens += r.Output
		cur.TokenCounts.CacheCreationInputTokens += r.CacheCreate
		cur.TokenCounts.CacheReadInputTokens += r.CacheRead
		cur.TotalTokens += r.Total()
		if name := r.ModelName(); name != "" {
			cost, _ := p.Cost(r)
			cur.CostUSD += cost
			if !seen[name] {
				seen[name] = true
				cur.Models = append(cur.Models, name)
			}
		}
	}
	closeBlock()
	return out
}
