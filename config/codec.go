package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/spf13/viper"
	"github.com/zclconf/go-cty/cty"
)

// HCLCodec is a viper codec for HCL2 files (viper 1.20 dropped its own).
//
// Decode keeps the attributes and the unlabelled blocks (as nested maps);
// labelled blocks are left out, because viper lower-cases keys and would
// damage names. Expressions are evaluated without variables or functions.
// Numbers become int64 when whole and in range, else float64.
//
// Encode writes maps as unlabelled blocks and everything else as
// attributes, in key order.
type HCLCodec struct{}

var _ viper.Codec = HCLCodec{}

// Decode implements viper.Decoder.
func (HCLCodec) Decode(b []byte, v map[string]any) error {
	body, errs := parseHCL(b, "")
	if len(errs) > 0 {
		return joinErrors(errs)
	}
	return decodeBody(body, v)
}

func decodeBody(body *hclsyntax.Body, m map[string]any) error {
	for _, a := range sortedAttrs(body) {
		val, diags := a.Expr.Value(nil)
		if diags.HasErrors() {
			return joinErrors(diagErrors(diags))
		}
		if val.IsNull() {
			continue
		}
		g, err := ctyToGo(val)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", rangePos(a.Expr.StartRange()), a.Name, err)
		}
		m[a.Name] = numbersToGo(g)
	}
	for _, b := range body.Blocks {
		if len(b.Labels) > 0 {
			continue
		}
		sub, ok := m[b.Type].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[b.Type] = sub
		}
		if err := decodeBody(b.Body, sub); err != nil {
			return err
		}
	}
	return nil
}

// numbersToGo replaces json.Numbers by int64 or float64.
func numbersToGo(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = numbersToGo(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = numbersToGo(x[k])
		}
	}
	return v
}

// Encode implements viper.Encoder.
func (HCLCodec) Encode(v map[string]any) ([]byte, error) {
	var b strings.Builder
	if err := encodeBody(&b, v, ""); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

func encodeBody(b *strings.Builder, m map[string]any, indent string) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var blocks []string
	for _, k := range keys {
		if !hclsyntax.ValidIdentifier(k) {
			return fmt.Errorf("cannot encode %q: not a valid HCL identifier", k)
		}
		if _, ok := asStringMap(m[k]); ok {
			blocks = append(blocks, k)
			continue
		}
		b.WriteString(indent + k + " = ")
		if err := encodeValue(b, m[k]); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		b.WriteByte('\n')
	}
	for i, k := range blocks {
		if i > 0 || len(blocks) < len(keys) {
			b.WriteByte('\n')
		}
		sub, _ := asStringMap(m[k])
		b.WriteString(indent + k + " {\n")
		if err := encodeBody(b, sub, indent+"  "); err != nil {
			return fmt.Errorf("%s.%w", k, err)
		}
		b.WriteString(indent + "}\n")
	}
	return nil
}

func asStringMap(v any) (map[string]any, bool) {
	switch x := v.(type) {
	case map[string]any:
		return x, true
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = e
		}
		return out, true
	}
	return nil, false
}

// encodeValue writes v as an HCL expression.
func encodeValue(b *strings.Builder, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
		return nil
	case string:
		b.WriteString(quoteHCL(x))
		return nil
	case bool:
		b.WriteString(strconv.FormatBool(x))
		return nil
	case json.Number:
		if _, err := cty.ParseNumberVal(x.String()); err != nil {
			return err
		}
		b.WriteString(x.String())
		return nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(rv.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		b.WriteString(strconv.FormatUint(rv.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return errors.New("cannot encode a NaN or infinite number")
		}
		b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	case reflect.String:
		b.WriteString(quoteHCL(rv.String()))
	case reflect.Bool:
		b.WriteString(strconv.FormatBool(rv.Bool()))
	case reflect.Slice, reflect.Array:
		b.WriteByte('[')
		for i := 0; i < rv.Len(); i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := encodeValue(b, rv.Index(i).Interface()); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		b.WriteByte(']')
	case reflect.Map:
		keys := make([]string, 0, rv.Len())
		vals := map[string]any{}
		for it := rv.MapRange(); it.Next(); {
			k := fmt.Sprint(it.Key().Interface())
			keys = append(keys, k)
			vals[k] = it.Value().Interface()
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			if hclsyntax.ValidIdentifier(k) {
				b.WriteString(k)
			} else {
				b.WriteString(quoteHCL(k))
			}
			b.WriteString(" = ")
			if err := encodeValue(b, vals[k]); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
		b.WriteByte('}')
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			b.WriteString("null")
			return nil
		}
		return encodeValue(b, rv.Elem().Interface())
	default:
		return fmt.Errorf("cannot encode a %T", v)
	}
	return nil
}

// quoteHCL returns s as an HCL quoted string, with template sequences
// ("${", "%{") escaped.
func quoteHCL(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case (r == '$' || r == '%') && strings.HasPrefix(s[i+1:], "{"):
			b.WriteRune(r)
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// newViper returns a viper instance that reads HCL with HCLCodec.
func newViper() *viper.Viper {
	reg := viper.NewCodecRegistry()
	// RegisterCodec never fails for DefaultCodecRegistry.
	_ = reg.RegisterCodec("hcl", HCLCodec{})
	v := viper.NewWithOptions(viper.WithCodecRegistry(reg))
	v.SetConfigType("hcl")
	return v
}

// joinErrors joins Errors into one error ("" lines never occur).
func joinErrors(errs []*Error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	list := make([]error, len(errs))
	for i, e := range errs {
		list[i] = e
	}
	return errors.Join(list...)
}
