package usage

import (
	"math"
	"sort"
	"strconv"
	"strings"
)

// Price is a model's price per token: the base prices, and those of the
// tokens beyond the first 200,000 of a kind in one message (zero: no tier).
type Price struct {
	Input, Output, CacheCreate, CacheRead                     float64
	InputAbove, OutputAbove, CacheCreateAbove, CacheReadAbove float64
	// Fast multiplies the price of a message sent in fast mode (0: 1).
	Fast float64
}

// Pricer finds models' prices: in the overrides (by the model's name as
// the transcripts write it), else in the built-in table. It notes which
// overrides priced a row.
type Pricer struct {
	cache     map[string]*Price
	overrides map[string]Price
	used      map[string]bool
}

// NewPricer is a Pricer over the built-in table, with overrides (per
// token) replacing the table's price of the models they name.
func NewPricer(overrides map[string]Price) *Pricer {
	return &Pricer{cache: map[string]*Price{}, overrides: overrides, used: map[string]bool{}}
}

// Lookup is the price of model, nil when neither the overrides nor the
// table have one.
func (p *Pricer) Lookup(model string) *Price {
	if pr, ok := p.cache[model]; ok {
		return pr
	}
	pr := lookup(model)
	if o, ok := p.overrides[model]; ok {
		pr = &o
	}
	p.cache[model] = pr
	return pr
}

// OverridesUsed are the models, sorted, whose override priced at least
// one row (a row with costUSD takes no price).
func (p *Pricer) OverridesUsed() []string { return sortStrings(p.used) }

// fingerprint is a hash of the overrides: costs worked out once (a
// status checkpoint's) hold for the same overrides and built-in table.
func (p *Pricer) fingerprint() uint64 {
	names := make([]string, 0, len(p.overrides))
	for name := range p.overrides {
		names = append(names, name)
	}
	sort.Strings(names)
	h := uint64(hashSeed)
	for _, name := range names {
		o := p.overrides[name]
		h = hashString(h, name)
		for _, v := range []float64{o.Input, o.Output, o.CacheCreate, o.CacheRead, o.InputAbove, o.OutputAbove, o.CacheCreateAbove, o.CacheReadAbove, o.Fast} {
			h = hashWord(h, math.Float64bits(v))
		}
	}
	return h
}

func lookup(model string) *Price {
	bare := model
	if i := strings.LastIndexByte(bare, '/'); i >= 0 {
		bare = bare[i+1:]
	}
	for _, name := range []string{model, bare} {
		if pr, ok := litellmPrices[name]; ok {
			return &pr
		}
	}
	for _, name := range []string{model, bare, dotted(undated(bare))} {
		if pr, ok := modelsDevPrices[name]; ok {
			return &pr
		}
	}
	return nil
}

// undated strips a trailing -YYYYMMDD.
func undated(m string) string {
	if i := strings.LastIndexByte(m, '-'); i >= 0 && len(m)-i == 9 {
		if _, err := strconv.Atoi(m[i+1:]); err == nil {
			return m[:i]
		}
	}
	return m
}

// dotted writes version numbers with dots: claude-3-5-haiku is
// claude-3.5-haiku.
func dotted(m string) string {
	b := []byte(m)
	for i := 1; i+1 < len(b); i++ {
		if b[i] == '-' && isDigit(b[i-1]) && isDigit(b[i+1]) {
			b[i] = '.'
		}
	}
	return string(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

const tierTokens = 200_000

func tiered(n int64, base, above float64) float64 {
	if above > 0 && n > tierTokens {
		return tierTokens*base + float64(n-tierTokens)*above
	}
	return float64(n) * base
}

// Cost is what a row cost: its costUSD when it carries one, else its
// tokens at the model's price; priced is false when the model has none.
func (p *Pricer) Cost(r *Row) (cost float64, priced bool) {
	if r.HasCost {
		return r.CostUSD, true
	}
	pr := p.Lookup(r.Model)
	if pr == nil {
		return 0, false
	}
	if _, ok := p.overrides[r.Model]; ok {
		p.used[r.Model] = true
	}
	c := tiered(r.Input, pr.Input, pr.InputAbove) + tiered(r.Output, pr.Output, pr.OutputAbove) +
		tiered(r.CacheCreate-r.CacheCreate1h, pr.CacheCreate, pr.CacheCreateAbove) +
		tiered(r.CacheCreate1h, 2*pr.Input, 2*pr.InputAbove) + tiered(r.CacheRead, pr.CacheRead, pr.CacheReadAbove)
	if r.Speed == "fast" {
		c *= fastMultiplier(r.Model, pr)
	}
	return c, true
}

// fastMultiplier is what fast mode multiplies model's price by: the
// override for its name or its normalized name's prefix, else the table's,
// else 1.
func fastMultiplier(model string, pr *Price) float64 {
	if m, ok := fastExact[model]; ok {
		return m
	}
	norm := strings.ToLower(model)
	if i := strings.LastIndexByte(norm, '/'); i >= 0 {
		norm = norm[i+1:]
	}
	norm = strings.ReplaceAll(norm, ".", "-")
	best := ""
	for prefix := range fastPrefix {
		if strings.HasPrefix(norm, prefix) && len(prefix) > len(best) {
			best = prefix
		}
	}
	if best != "" {
		return fastPrefix[best]
	}
	if pr.Fast > 0 {
		return pr.Fast
	}
	return 1
}
