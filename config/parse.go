package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/e0dc0000/scribe/core"
)

// Error is one problem found in the configuration.
type Error struct {
	// Pos is where in the file the problem is; zero when the value came from
	// an environment variable or a flag.
	Pos Pos
	// Source names the environment variable or flag the value came from
	// ("env SCRIBE_LOG_LEVEL", "flag --log-level"); "" for the file.
	Source string
	// Msg says what is wrong and what is valid.
	Msg string

	// err is the error Msg was made from, when there is one to unwrap.
	err error
}

// Unwrap returns the error the problem was made from, if any.
func (e *Error) Unwrap() error { return e.err }

// Error returns "file:line:col: msg" or "source: msg".
func (e *Error) Error() string {
	switch {
	case e.Source != "":
		return e.Source + ": " + e.Msg
	case e.Pos.Line == 0 && e.Pos.File != "":
		return e.Pos.File + ": " + e.Msg
	case e.Pos.Line == 0:
		return e.Msg
	default:
		return e.Pos.String() + ": " + e.Msg
	}
}

// blockKinds are the valid top-level block types, in documentation order.
var blockKinds = []string{"pipeline", "resume", "watch", "usage", string(core.KindSink), string(core.KindLoader), string(core.KindGuard), string(core.KindProcessor), string(KindServer)}

func isComponentKind(s string) bool {
	return s == string(core.KindSink) || s == string(core.KindLoader) || s == string(core.KindGuard) || s == string(core.KindProcessor)
}

// fileValue is a typed top-level setting read from the file.
type fileValue struct {
	pos  Pos   // position of the value
	val  any   // string, int, bool or []core.ID
	elem []Pos // for lists: position of each element
}

// parsed is what the file says, before layering.
type parsed struct {
	values     map[string]fileValue // by setting key
	components []Component
	server     *Component
	usage      *UsageConfig
	// broken holds the blocks (refKey) that were declared with a problem
	// (reported) and left out, so references to them are not reported twice.
	broken map[string]bool
}

// parser walks one file and collects every problem it finds.
type parser struct {
	errs []*Error
}

func (p *parser) addf(pos Pos, format string, args ...any) {
	p.errs = append(p.errs, &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (p *parser) addDiags(diags hcl.Diagnostics) {
	p.errs = append(p.errs, diagErrors(diags)...)
}

// sorted returns the errors ordered by position.
func (p *parser) sorted() []*Error { return sortErrors(p.errs) }

// sortErrors orders errors by position, stable for equal ones.
func sortErrors(errs []*Error) []*Error {
	sort.SliceStable(errs, func(i, j int) bool {
		a, b := errs[i].Pos, errs[j].Pos
		if ad, bd := a.File == DefaultName, b.File == DefaultName; ad != bd {
			return bd // the file's problems before the built-in configuration's
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return errs
}

// diagErrors turns hcl's error diagnostics into Errors.
func diagErrors(diags hcl.Diagnostics) []*Error {
	var out []*Error
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		msg := d.Summary
		if d.Detail != "" {
			msg += "; " + d.Detail
		}
		e := &Error{Msg: msg}
		if d.Subject != nil {
			e.Pos = toPos(d.Subject.Start, d.Subject.Filename)
		}
		out = append(out, e)
	}
	return out
}

func toPos(p hcl.Pos, file string) Pos {
	return Pos{File: file, Line: p.Line, Column: p.Column}
}

func rangePos(r hcl.Range) Pos { return toPos(r.Start, r.Filename) }

// parseHCL parses src as the file name. Syntax errors come back as hcl
// diagnostics; the body is then nil.
func parseHCL(src []byte, name string) (*hclsyntax.Body, []*Error) {
	f, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, sortErrors(diagErrors(diags))
	}
	return f.Body.(*hclsyntax.Body), nil
}

// sortedAttrs returns a body's attributes in file order.
func sortedAttrs(body *hclsyntax.Body) []*hclsyntax.Attribute {
	out := make([]*hclsyntax.Attribute, 0, len(body.Attributes))
	for _, a := range body.Attributes {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SrcRange.Start.Byte < out[j].SrcRange.Start.Byte })
	return out
}

// parseFile checks the whole file and extracts settings and components.
func parseFile(body *hclsyntax.Body) (*parsed, []*Error) {
	p := &parser{}
	out := &parsed{values: map[string]fileValue{}, broken: map[string]bool{}}

	for _, a := range sortedAttrs(body) {
		if s, ok := settingFor("", a.Name); ok {
			p.setting(out, s, a)
			continue
		}
		if slicesContains(blockKinds, a.Name) {
			p.addf(rangePos(a.NameRange), "%s is a block, not an attribute: write %s { ... }", a.Name, blockExample(a.Name))
			continue
		}
		p.addf(rangePos(a.NameRange), "unknown attribute %q (valid attributes: %s; valid blocks: %s)",
			a.Name, strings.Join(validNames(""), ", "), strings.Join(blockKinds, ", "))
	}

	// single are the blocks a file has at most one of, by type.
	single := map[string]*hclsyntax.Block{}
	declared := map[core.Kind]map[core.ID]Pos{}
	for _, b := range body.Blocks {
		pos := rangePos(b.TypeRange)
		switch {
		case isSingleBlock(b.Type):
			if first := single[b.Type]; first != nil {
				p.addf(pos, "duplicate %s block; the first is at %s", b.Type, rangePos(first.TypeRange))
				continue
			}
			single[b.Type] = b
			if len(b.Labels) != 0 {
				p.addf(rangePos(b.LabelRanges[0]), "the %s block takes no labels: write %s { ... }", b.Type, b.Type)
			}
			switch b.Type {
			case "usage":
				out.usage = p.usageBlock(b)
			case string(KindServer):
				c := Component{Kind: KindServer, Range: pos, attrs: map[string]Pos{}}
				if p.blockBody(&c, b) {
					out.server = &c
				}
			default:
				p.settingsBlock(out, b)
			}
		case isComponentKind(b.Type):
			c, ok := p.component(b)
			if !ok {
				if c.ID != (core.ID{}) {
					out.broken[refKey(c.Kind, c.ID)] = true
				}
				continue
			}
			if declared[c.Kind] == nil {
				declared[c.Kind] = map[core.ID]Pos{}
			}
			if first, dup := declared[c.Kind][c.ID]; dup {
				p.addf(pos, "duplicate %s %q; the first is at %s", c.Kind, c.ID, first)
				continue
			}
			declared[c.Kind][c.ID] = c.Range
			out.components = append(out.components, c)
		default:
			if _, isAttr := settingFor("", b.Type); isAttr {
				p.addf(pos, "%s is an attribute, not a block: write %s = ...", b.Type, b.Type)
				continue
			}
			p.addf(pos, "unknown block type %q (valid blocks: %s)", b.Type, strings.Join(blockKinds, ", "))
		}
	}
	return out, p.sorted()
}

// isSingleBlock says whether a block type is one a file has at most one
// of, without labels.
func isSingleBlock(kind string) bool {
	return kind == "pipeline" || kind == "resume" || kind == "watch" || kind == "usage" || kind == string(KindServer)
}

func blockExample(kind string) string {
	if isSingleBlock(kind) {
		return kind
	}
	return kind + ` "type" "name"`
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// settingsBlock checks the body of a block of settings (pipeline, resume).
func (p *parser) settingsBlock(out *parsed, b *hclsyntax.Block) {
	for _, a := range sortedAttrs(b.Body) {
		s, ok := settingFor(b.Type, a.Name)
		if !ok {
			p.addf(rangePos(a.NameRange), "unknown attribute %q in the %s block (valid: %s)",
				a.Name, b.Type, strings.Join(validNames(b.Type), ", "))
			continue
		}
		p.setting(out, s, a)
	}
	for _, nb := range b.Body.Blocks {
		p.addf(rangePos(nb.TypeRange), "unexpected block %q in the %s block (valid attributes: %s)",
			nb.Type, b.Type, strings.Join(validNames(b.Type), ", "))
	}
}

// setting evaluates one top-level setting and checks its type and value.
func (p *parser) setting(out *parsed, s setting, a *hclsyntax.Attribute) {
	pos := rangePos(a.Expr.StartRange())
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		p.addDiags(diags)
		return
	}
	if v.IsNull() {
		return // null means unset
	}
	if !v.IsWhollyKnown() {
		p.addf(pos, "%s: the value must be a literal", s.key())
		return
	}
	fv := fileValue{pos: pos}
	switch s.kind {
	case kindString:
		if v.Type() != cty.String {
			p.addf(pos, "%s: want %s, got %s", s.key(), s.kind, friendlyType(v.Type()))
			return
		}
		fv.val = v.AsString()
	case kindBool:
		if v.Type() != cty.Bool {
			p.addf(pos, "%s: want %s, got %s", s.key(), s.kind, friendlyType(v.Type()))
			return
		}
		fv.val = v.True()
	case kindInt:
		if v.Type() != cty.Number {
			p.addf(pos, "%s: want %s, got %s", s.key(), s.kind, friendlyType(v.Type()))
			return
		}
		n, err := ctyInt(v)
		if err != nil {
			p.addf(pos, "%s: %v", s.key(), err)
			return
		}
		fv.val = n
	case kindIDs:
		ids, elems, ok := p.idList(s, a, v)
		if !ok {
			return
		}
		fv.val, fv.elem = ids, elems
	}
	if err := checkValue(s, fv.val); err != nil {
		p.addf(pos, "%v", err)
		return
	}
	out.values[s.key()] = fv
}

// ctyInt returns a whole cty number as an int.
func ctyInt(v cty.Value) (int, error) {
	f := v.AsBigFloat()
	if !f.IsInt() {
		return 0, fmt.Errorf("want a whole number, got %s", f.Text('g', -1))
	}
	i, acc := f.Int64()
	if acc != big.Exact || i > math.MaxInt || i < math.MinInt {
		return 0, fmt.Errorf("%s is out of range", f.Text('g', -1))
	}
	return int(i), nil
}

// idList checks a list of "type/name" strings.
func (p *parser) idList(s setting, a *hclsyntax.Attribute, v cty.Value) ([]core.ID, []Pos, bool) {
	pos := rangePos(a.Expr.StartRange())
	t := v.Type()
	if !t.IsTupleType() && !t.IsListType() && !t.IsSetType() {
		p.addf(pos, "%s: want %s, got %s", s.key(), s.kind, friendlyType(t))
		return nil, nil, false
	}
	// Element positions, when the list is written out literally.
	var exprs []hclsyntax.Expression
	if tc, ok := unwrapParens(a.Expr).(*hclsyntax.TupleConsExpr); ok && len(tc.Exprs) == v.LengthInt() {
		exprs = tc.Exprs
	}
	ids := []core.ID{}
	var elems []Pos
	seen := map[core.ID]bool{}
	ok := true
	i := 0
	for it := v.ElementIterator(); it.Next(); i++ {
		_, ev := it.Element()
		epos := pos
		if exprs != nil {
			epos = rangePos(exprs[i].StartRange())
		}
		if ev.IsNull() || ev.Type() != cty.String {
			p.addf(epos, "%s[%d]: want a \"type/name\" string, got %s", s.key(), i, friendly(ev))
			ok = false
			continue
		}
		id, err := core.ParseID(ev.AsString())
		if err != nil {
			p.addf(epos, "%s[%d]: %v", s.key(), i, err)
			ok = false
			continue
		}
		if seen[id] {
			p.addf(epos, "%s: %q is listed twice", s.key(), id)
			ok = false
			continue
		}
		seen[id] = true
		ids = append(ids, id)
		elems = append(elems, epos)
	}
	return ids, elems, ok
}

func friendly(v cty.Value) string {
	if v.IsNull() {
		return "null"
	}
	return friendlyType(v.Type())
}

// friendlyType names a cty type the way a config author thinks of it.
func friendlyType(t cty.Type) string {
	switch {
	case t.IsTupleType() || t.IsListType() || t.IsSetType():
		return "list"
	case t.IsObjectType() || t.IsMapType():
		return "object"
	}
	return t.FriendlyName()
}

func unwrapParens(e hclsyntax.Expression) hclsyntax.Expression {
	for {
		pe, ok := e.(*hclsyntax.ParenthesesExpr)
		if !ok {
			return e
		}
		e = pe.Expression
	}
}

// component checks a labelled block and turns its body into JSON.
func (p *parser) component(b *hclsyntax.Block) (Component, bool) {
	pos := rangePos(b.TypeRange)
	if len(b.Labels) != 2 {
		p.addf(pos, "a %s block needs two labels, its type and its name: %s \"type\" \"name\" { ... } (got %d)",
			b.Type, b.Type, len(b.Labels))
		return Component{}, false
	}
	id, err := core.ParseID(b.Labels[0] + "/" + b.Labels[1])
	if err != nil {
		p.addf(rangePos(b.LabelRanges[0]), "%s block: %v", b.Type, err)
		return Component{}, false
	}
	c := Component{Kind: core.Kind(b.Type), ID: id, Range: pos, attrs: map[string]Pos{}}
	ok := p.blockBody(&c, b)
	return c, ok
}

// blockBody turns the attributes of a component or server block into c's
// JSON body and records their positions. It is false when the block has a
// problem (reported).
func (p *parser) blockBody(c *Component, b *hclsyntax.Block) bool {
	ok := true
	where := "a component block"
	if c.Kind == KindServer {
		where = "the server block"
	}
	for _, nb := range b.Body.Blocks {
		p.addf(rangePos(nb.TypeRange), "%s: nested blocks are not supported in %s; write %s = { ... } instead",
			c.label(), where, nb.Type)
		ok = false
	}

	var buf bytes.Buffer
	buf.WriteByte('{')
	written := 0
	for _, a := range sortedAttrs(b.Body) {
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			p.addDiags(diags)
			ok = false
			continue
		}
		g, err := ctyToGo(v)
		if err != nil {
			p.addf(rangePos(a.Expr.StartRange()), "%s: option %q: %v", c.label(), a.Name, err)
			ok = false
			continue
		}
		c.attrs[a.Name] = rangePos(a.NameRange)
		recordPositions(a.Expr, a.Name, c.attrs)
		k, _ := json.Marshal(a.Name)
		val, err := json.Marshal(g)
		if err != nil {
			p.addf(rangePos(a.Expr.StartRange()), "%s: option %q: %v", c.label(), a.Name, err)
			ok = false
			continue
		}
		if written > 0 {
			buf.WriteByte(',')
		}
		written++
		c.keys = append(c.keys, a.Name)
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(val)
	}
	buf.WriteByte('}')
	c.Body = json.RawMessage(buf.Bytes())
	return ok
}

// recordPositions stores the position of every object key and list element
// written literally inside expr, under path.
func recordPositions(expr hclsyntax.Expression, path string, attrs map[string]Pos) {
	switch e := unwrapParens(expr).(type) {
	case *hclsyntax.TupleConsExpr:
		for i, el := range e.Exprs {
			sub := path + "." + strconv.Itoa(i)
			attrs[sub] = rangePos(el.StartRange())
			recordPositions(el, sub, attrs)
		}
	case *hclsyntax.ObjectConsExpr:
		for _, item := range e.Items {
			key, ok := objectKey(item.KeyExpr)
			if !ok {
				continue
			}
			sub := path + "." + key
			attrs[sub] = rangePos(item.KeyExpr.StartRange())
			recordPositions(item.ValueExpr, sub, attrs)
		}
	}
}

// objectKey returns the literal name of an object constructor key.
func objectKey(e hclsyntax.Expression) (string, bool) {
	if k, ok := e.(*hclsyntax.ObjectConsKeyExpr); ok {
		if !k.ForceNonLiteral {
			if kw := hcl.ExprAsKeyword(k.Wrapped); kw != "" {
				return kw, true
			}
		}
		e = k.Wrapped
	}
	v, diags := e.Value(nil)
	if diags.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return "", false
	}
	return v.AsString(), true
}

// ctyToGo converts a cty value to the Go value encoding/json would produce:
// string, json.Number, bool, nil, []any or map[string]any.
func ctyToGo(v cty.Value) (any, error) {
	if !v.IsKnown() {
		return nil, fmt.Errorf("the value must be a literal")
	}
	if v.IsNull() {
		return nil, nil
	}
	v, _ = v.Unmark()
	t := v.Type()
	switch {
	case t == cty.String:
		return v.AsString(), nil
	case t == cty.Bool:
		return v.True(), nil
	case t == cty.Number:
		return ctyNumber(v.AsBigFloat())
	case t.IsListType() || t.IsTupleType() || t.IsSetType():
		out := make([]any, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			g, err := ctyToGo(ev)
			if err != nil {
				return nil, err
			}
			out = append(out, g)
		}
		return out, nil
	case t.IsMapType() || t.IsObjectType():
		out := make(map[string]any, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			g, err := ctyToGo(ev)
			if err != nil {
				return nil, err
			}
			out[k.AsString()] = g
		}
		return out, nil
	default:
		return nil, fmt.Errorf("values of type %s are not supported", friendlyType(t))
	}
}

// ctyNumber renders a number for JSON: integral values as integers.
func ctyNumber(f *big.Float) (json.Number, error) {
	if f.IsInf() {
		return "", fmt.Errorf("number is infinite")
	}
	if f.IsInt() {
		i, _ := f.Int(nil)
		return json.Number(i.String()), nil
	}
	return json.Number(f.Text('g', -1)), nil
}
