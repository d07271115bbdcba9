package usage

import (
	"sort"
	"time"
)

// Report kinds.
const (
	Daily   = "daily"
	Weekly  = "weekly"
	Monthly = "monthly"
	Session = "session"
)

// Tokens are the four kinds of token, as ccusage names them.
type Tokens struct {
	InputTokens         int64 `json:"inputTokens"`
	OutputTokens        int64 `json:"outputTokens"`
	CacheCreationTokens int64 `json:"cacheCreationTokens"`
	CacheReadTokens     int64 `json:"cacheReadTokens"`
}

func (t *Tokens) add(in, out, cc, cr int64) {
	t.InputTokens += in
	t.OutputTokens += out
	t.CacheCreationTokens += cc
	t.CacheReadTokens += cr
}

// ModelBreakdown is one model's part of a period, as ccusage prints it.
type ModelBreakdown struct {
	ModelName string `json:"modelName"`
	Tokens
	Cost           float64 `json:"cost"`
	MissingPricing bool    `json:"missingPricing,omitempty"`
}

// Period is one row of a report: a day, a month or a session.
type Period struct {
	Period string `json:"period"`
	Agent  string `json:"agent"`
	Tokens
	TotalTokens     int64            `json:"totalTokens"`
	TotalCost       float64          `json:"totalCost"`
	ModelsUsed      []string         `json:"modelsUsed"`
	ModelBreakdowns []ModelBreakdown `json:"modelBreakdowns"`
	Metadata        map[string]any   `json:"metadata"`

	last   time.Time
	models map[string]*ModelBreakdown
}

// Totals sums a report.
type Totals struct {
	Tokens
	TotalTokens    int64    `json:"totalTokens"`
	TotalCost      float64  `json:"totalCost"`
	UnpricedModels []string `json:"unpricedModels,omitempty"`
}

// sessionsWithin keeps the sessions whose last activity falls on a day
// (in UTC, whatever the time zone) from Since and before Until: ccusage's
// session report takes --until as the first day left out.
func sessionsWithin(sessions []*Period, opt Options) []*Period {
	var out []*Period
	for _, g := range sessions {
		day := g.last.UTC().Format("20060102")
		if (opt.Since == "" || day >= opt.Since) && (opt.Until == "" || day < opt.Until) {
			out = append(out, g)
		}
	}
	return out
}

// Options choose a report's rows.
type Options struct {
	Loc          *time.Location
	Since, Until string // YYYYMMDD, inclusive; "" for no bound
}

// Build makes the report of kind from deduplicated rows.
func Build(kind string, rows []*Row, p *Pricer, opt Options) ([]*Period, Totals) {
	loc := opt.Loc
	if loc == nil {
		loc = time.Local
	}
	byKey := map[string]*Period{}
	var order []*Period
	unpriced := map[string]bool{}
	var tot Totals
	var days dayKeys
	for _, r := range rows {
		day, key := days.of(kind, r.Time.In(loc))
		if kind != Session && ((opt.Since != "" && day < opt.Since) || (opt.Until != "" && day > opt.Until)) {
			continue
		}
		if kind == Session {
			key = r.Session
		}
		g := byKey[key]
		if g == nil {
			g = &Period{Period: key, Agent: "all", ModelsUsed: []string{}, ModelBreakdowns: []ModelBreakdown{}, models: map[string]*ModelBreakdown{}}
			if kind == Session {
				g.Agent = "claude"
			}
			byKey[key] = g
			order = append(order, g)
		}
		cost, priced := p.Cost(r)
		g.add(r.Input, r.Output, r.CacheCreate, r.CacheRead)
		g.TotalTokens += r.Total()
		if r.Time.After(g.last) {
			g.last = r.Time
		}
		name := r.ModelName()
		if name == "" {
			continue
		}
		g.TotalCost += cost
		m := g.models[name]
		if m == nil {
			m = &ModelBreakdown{ModelName: name}
			g.models[name] = m
			g.ModelsUsed = append(g.ModelsUsed, name)
		}
		m.add(r.Input, r.Output, r.CacheCreate, r.CacheRead)
		m.Cost += cost
		if !priced {
			m.MissingPricing = true
		}
	}
	if kind == Session {
		order = sessionsWithin(order, opt)
	}
	for _, g := range order {
		for _, name := range g.ModelsUsed {
			g.ModelBreakdowns = append(g.ModelBreakdowns, *g.models[name])
			if g.models[name].MissingPricing {
				unpriced[name] = true
			}
		}
		sort.SliceStable(g.ModelBreakdowns, func(i, j int) bool { return g.ModelBreakdowns[i].Cost > g.ModelBreakdowns[j].Cost })
		if kind == Session {
			g.Metadata = map[string]any{"lastActivity": g.last.UTC().Format("2006-01-02T15:04:05.000Z")}
		} else {
			sort.Strings(g.ModelsUsed)
			g.Metadata = map[string]any{"agents": []string{"claude"}}
		}
		tot.add(g.InputTokens, g.OutputTokens, g.CacheCreationTokens, g.CacheReadTokens)
		tot.TotalTokens += g.TotalTokens
		tot.TotalCost += g.TotalCost
	}
	if kind == Session {
		sort.SliceStable(order, func(i, j int) bool { return order[i].TotalCost > order[j].TotalCost })
	} else {
		sort.SliceStable(order, func(i, j int) bool { return order[i].Period < order[j].Period })
	}
	tot.UnpricedModels = sortStrings(unpriced)
	return order, tot
}

// dayKeys remembers the last day's keys: rows come mostly in time order,
// so most have the day of the row before.
type dayKeys struct {
	y, d     int
	m        time.Month
	day, key string
}

// of is local's day (YYYYMMDD) and the key of its period in a daily,
// weekly or monthly report.
func (k *dayKeys) of(kind string, local time.Time) (day, key string) {
	y, m, d := local.Date()
	if k.day != "" && y == k.y && m == k.m && d == k.d {
		return k.day, k.key
	}
	k.y, k.m, k.d = y, m, d
	k.day = local.Format("20060102")
	switch kind {
	case Weekly: // the Monday that starts the day's week
		k.key = local.AddDate(0, 0, -(int(local.Weekday())+6)%7).Format("2006-01-02")
	case Monthly:
		k.key = local.Format("2006-01")
	default:
		k.key = local.Format("2006-01-02")
	}
	return k.day, k.key
}
