package usage

import (
	"slices"
	"time"
)

// SessionEntry is one message of a session's report (ccusage's session
// --id): its tokens, its model as the row names it ("unknown" when none)
// and the costUSD the row carries (0 when none).
type SessionEntry struct {
	Timestamp           string  `json:"timestamp"`
	InputTokens         int64   `json:"inputTokens"`
	OutputTokens        int64   `json:"outputTokens"`
	CacheCreationTokens int64   `json:"cacheCreationTokens"`
	CacheReadTokens     int64   `json:"cacheReadTokens"`
	CostUSD             float64 `json:"costUSD"`
	Model               string  `json:"model"`
}

// SessionUsage is one session's report, as ccusage's session --id --json
// prints it: its messages in time order and their totals (the cost as the
// other reports count it).
type SessionUsage struct {
	SessionID   string         `json:"sessionId"`
	TotalCost   float64        `json:"totalCost"`
	TotalTokens int64          `json:"totalTokens"`
	Entries     []SessionEntry `json:"entries"`
}

// SessionOf is the report of session id from deduplicated rows: its
// messages on the days (in opt.Loc) from opt.Since to opt.Until, both
// kept; nil when it has none.
func SessionOf(rows []*Row, p *Pricer, id string, opt Options) *SessionUsage {
	loc := opt.Loc
	if loc == nil {
		loc = time.Local
	}
	var mine []*Row
	for _, r := range rows {
		if r.Session != id {
			continue
		}
		day := r.Time.In(loc).Format("20060102")
		if (opt.Since == "" || day >= opt.Since) && (opt.Until == "" || day <= opt.Until) {
			mine = append(mine, r)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	slices.SortStableFunc(mine, func(a, b *Row) int { return a.Time.Compare(b.Time) })
	out := &SessionUsage{SessionID: id, Entries: make([]SessionEntry, 0, len(mine))}
	for _, r := range mine {
		e := SessionEntry{Timestamp: isoMillis(r.Time), InputTokens: r.Input, OutputTokens: r.Output,
			CacheCreationTokens: r.CacheCreate, CacheReadTokens: r.CacheRead, Model: r.Model}
		if e.Model == "" {
			e.Model = "unknown"
		}
		if r.HasCost {
			e.CostUSD = r.CostUSD
		}
		out.Entries = append(out.Entries, e)
		out.TotalTokens += r.Total()
		if r.ModelName() != "" {
			cost, _ := p.Cost(r)
			out.TotalCost += cost
		}
	}
	return out
}
