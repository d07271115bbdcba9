package config

import (
	"math"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// UsageConfig is the usage block: what `scribe usage` prices differently
// from its built-in table.
//
//	usage {
//	  price "claude-opus-4-5" {
//	    input       = 5     # USD per million tokens
//	    output      = 25
//	    cache_write = 6.25
//	    cache_read  = 0.5
//	  }
//	}
type UsageConfig struct {
	// Prices replace the built-in table's price of a model, named as the
	// transcripts name it, in file order. A file's usage block replaces
	// the built-in one whole.
	Prices []PriceOverride
}

// PriceOverride is one price "model" { ... } block: USD per million
// tokens of each kind, every one a number of 0 or more.
type PriceOverride struct {
	Model                                string
	Input, Output, CacheWrite, CacheRead float64
	// Pos is where the block is.
	Pos Pos
}

// priceAttrs are the attributes of a price block, all required.
var priceAttrs = []string{"input", "output", "cache_write", "cache_read"}

// usageBlock checks the usage block: nothing but price "model" blocks.
func (p *parser) usageBlock(b *hclsyntax.Block) *UsageConfig {
	u := &UsageConfig{Prices: []PriceOverride{}}
	for _, a := range sortedAttrs(b.Body) {
		p.addf(rangePos(a.NameRange), "unknown attribute %q in the usage block (it holds price \"model\" { ... } blocks)", a.Name)
	}
	seen := map[string]Pos{}
	for _, nb := range b.Body.Blocks {
		pos := rangePos(nb.TypeRange)
		if nb.Type != "price" {
			p.addf(pos, "unexpected block %q in the usage block (valid: price \"model\" { ... })", nb.Type)
			continue
		}
		if len(nb.Labels) != 1 || strings.TrimSpace(nb.Labels[0]) == "" {
			p.addf(pos, "a price block needs one label, the model's name as the transcripts write it: price \"claude-opus-4-5\" { ... }")
			continue
		}
		model := nb.Labels[0]
		if first, dup := seen[model]; dup {
			p.addf(pos, "duplicate price %q; the first is at %s", model, first)
			continue
		}
		seen[model] = pos
		if po, ok := p.priceBlock(nb, model, pos); ok {
			u.Prices = append(u.Prices, po)
		}
	}
	return u
}

// priceBlock checks one price block: its four prices, numbers of 0 or
// more, and nothing else.
func (p *parser) priceBlock(b *hclsyntax.Block, model string, pos Pos) (PriceOverride, bool) {
	po := PriceOverride{Model: model, Pos: pos}
	fields := map[string]*float64{"input": &po.Input, "output": &po.Output, "cache_write": &po.CacheWrite, "cache_read": &po.CacheRead}
	ok := true
	for _, nb := range b.Body.Blocks {
		p.addf(rangePos(nb.TypeRange), "price %q: unexpected block %q (valid attributes: %s)", model, nb.Type, strings.Join(priceAttrs, ", "))
		ok = false
	}
	for _, a := range sortedAttrs(b.Body) {
		dst, known := fields[a.Name]
		if !known {
			p.addf(rangePos(a.NameRange), "price %q: unknown attribute %q (valid: %s)", model, a.Name, strings.Join(priceAttrs, ", "))
			ok = false
			continue
		}
		delete(fields, a.Name)
		if !p.priceValue(a, model, dst) {
			ok = false
		}
	}
	for _, name := range priceAttrs {
		if _, missing := fields[name]; missing {
			p.addf(pos, "price %q: %s is missing (USD per million tokens; give all of %s)", model, name, strings.Join(priceAttrs, ", "))
			ok = false
		}
	}
	return po, ok
}

// priceValue reads one price: a finite number of 0 or more.
func (p *parser) priceValue(a *hclsyntax.Attribute, model string, dst *float64) bool {
	pos := rangePos(a.Expr.StartRange())
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		p.addDiags(diags)
		return false
	}
	if v.IsNull() || !v.IsWhollyKnown() || v.Type() != cty.Number {
		p.addf(pos, "price %q: %s: want a number (USD per million tokens), got %s", model, a.Name, friendly(v))
		return false
	}
	f, _ := v.AsBigFloat().Float64()
	if math.IsInf(f, 0) || math.IsNaN(f) || f < 0 {
		p.addf(pos, "price %q: %s must be a number of 0 or more (USD per million tokens), not %s", model, a.Name, v.AsBigFloat().Text('g', -1))
		return false
	}
	*dst = f
	return true
}
