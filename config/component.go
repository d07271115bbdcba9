package config

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/e0dc0000/scribe/core"
)

// Decode fills dst, a non-nil pointer such as Factory.DefaultConfig returns
// (already holding the defaults), from the block's attributes. Attributes
// the block does not set keep their defaults.
//
// An unknown option or a value of the wrong type is reported at the
// attribute's position with the component and what is valid:
//
//	example.hcl:12:3: sink "jsonl/local": unknown option "fsink" (valid: fsync, drain_interval, reappend_bytes, lock_wait)
//
// Then, if dst implements core.Validator, Validate's error is returned
// prefixed with the position of the attribute the message starts with
// (`fsync "sometimes": want always, batch or never` is reported at fsync),
// else of the block, and the component (and wrapped, so errors.Is and
// errors.As see it). Every problem found is returned, joined; see DecodeAll.
func (c Component) Decode(dst any) error {
	return joinErrors(c.DecodeAll(dst))
}

// DecodeAll is Decode returning every problem of the block, in file order:
// each unknown option, each top-level option of the wrong type, and when
// no option has the wrong type, Validate's error. When there is a problem,
// dst may be partly filled.
func (c Component) DecodeAll(dst any) []*Error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return []*Error{{Pos: c.Range, Msg: fmt.Sprintf("%s: Decode needs a non-nil pointer, got %T", c.label(), dst)}}
	}
	body := []byte(c.Body)
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}

	// Look for unknown options first: encoding/json says which name was
	// unknown but not where it was.
	var tree any
	td := json.NewDecoder(bytes.NewReader(body))
	td.UseNumber()
	if err := td.Decode(&tree); err != nil {
		return []*Error{{Pos: c.Range, Msg: fmt.Sprintf("%s: %v", c.label(), err), err: err}}
	}
	var errs []*Error
	c.checkUnknown(rv.Type().Elem(), tree, "", &errs)

	// Then the types: after each type error, the top-level option it is in
	// is left out and the rest decoded again, so each is reported.
	unknown := len(errs)
	top := bodyValues(body)
	for range len(top) + 1 {
		dec := json.NewDecoder(bytes.NewReader(body))
		if unknown == 0 {
			dec.DisallowUnknownFields()
		}
		err := dec.Decode(dst)
		if err == nil {
			break
		}
		e, path := c.decodeError(err, rv.Type().Elem(), tree)
		errs = append(errs, e)
		key, _, _ := strings.Cut(path, ".")
		if _, ok := top[key]; !ok || path == "" {
			break
		}
		delete(top, key)
		body, _ = json.Marshal(top)
	}

	// Paths are expanded (~, ~user) before Validate sees them.
	if len(errs) == unknown {
		if perrs := c.expandPaths(dst); len(perrs) > 0 {
			errs = append(errs, perrs...)
			unknown = -1 // Validate would judge a path left as written
		}
	}

	// With only unknown options, dst holds every known one: Validate can
	// judge them.
	if v, ok := dst.(core.Validator); ok && len(errs) == unknown {
		if err := v.Validate(); err != nil {
			errs = append(errs, &Error{Pos: c.validatePos(err.Error()), Msg: c.label() + ": " + err.Error(), err: err})
		}
	}
	return sortErrors(errs)
}

// validatePos finds the attribute a Validate message starts with
// ("fsync ...", "rules[1].var: ...", "token and token_file: ..."): the
// longest leading path of it the block sets, else the block.
func (c Component) validatePos(msg string) Pos {
	end := strings.IndexFunc(msg, func(r rune) bool {
		return !(r == '_' || r == '-' || r == '.' || r == '[' || r == ']' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	})
	if end < 0 {
		end = len(msg)
	}
	lead := strings.Trim(strings.NewReplacer("[", ".", "]", "").Replace(msg[:end]), ".")
	parts := strings.Split(lead, ".")
	for n := len(parts); n > 0; n-- {
		if p, ok := c.attrs[strings.Join(parts[:n], ".")]; ok {
			return p
		}
	}
	return c.Range
}

// label names the block in messages: `sink "jsonl/local"`, or just
// `server` for an unlabelled block.
func (c Component) label() string {
	if c.ID == (core.ID{}) {
		return string(c.Kind)
	}
	return fmt.Sprintf("%s %q", c.Kind, c.ID)
}

// pos returns the position of path, or the block's when it is unknown.
func (c Component) pos(path string) Pos {
	if p, ok := c.attrs[path]; ok {
		return p
	}
	return c.Range
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// customDecoded reports whether values of t decode themselves.
func customDecoded(t reflect.Type) bool {
	return t.Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)
}

// checkUnknown walks a decoded JSON value against the Go type it is decoded
// into and adds to errs every object key, in file order, that the type has
// no field for.
func (c Component) checkUnknown(t reflect.Type, v any, path string, errs *[]*Error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if customDecoded(t) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return // a type error; encoding/json reports it
		}
		fields := jsonFields(t)
		for _, k := range c.keysInOrder(obj, path) {
			f, ok := lookupField(fields, k)
			sub := joinPath(path, k)
			if !ok {
				*errs = append(*errs, &Error{Pos: c.pos(sub), Msg: fmt.Sprintf("%s: unknown option %q (valid: %s)",
					c.label(), displayPath(sub), strings.Join(fieldNames(fields), ", "))})
				continue
			}
			c.checkUnknown(f.typ, obj[k], sub, errs)
		}
	case reflect.Slice, reflect.Array:
		list, ok := v.([]any)
		if !ok {
			return
		}
		for i, e := range list {
			c.checkUnknown(t.Elem(), e, joinPath(path, strconv.Itoa(i)), errs)
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		for _, k := range c.keysInOrder(obj, path) {
			c.checkUnknown(t.Elem(), obj[k], joinPath(path, k), errs)
		}
	}
}

// keysInOrder returns obj's keys in file order where known, then by name.
func (c Component) keysInOrder(obj map[string]any, path string) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		pi, oki := c.attrs[joinPath(path, keys[i])]
		pj, okj := c.attrs[joinPath(path, keys[j])]
		switch {
		case oki && okj && (pi.Line != pj.Line || pi.Column != pj.Column):
			if pi.Line != pj.Line {
				return pi.Line < pj.Line
			}
			return pi.Column < pj.Column
		case oki != okj:
			return oki
		}
		return keys[i] < keys[j]
	})
	return keys
}

// decodeError locates an encoding/json error in the block, and returns the
// path of the option it is about ("" when unknown).
func (c Component) decodeError(err error, t reflect.Type, tree any) (*Error, string) {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		path := c.findPath(tree, strings.Split(te.Field, "."), jsonKind(te.Value))
		return &Error{Pos: c.pos(path), Msg: fmt.Sprintf("%s: option %q: want %s, got %s",
			c.label(), displayPath(path), describeType(te.Type), te.Value), err: err}, path
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		// Not expected: checkUnknown runs first. Kept as a fallback.
		if n, uerr := strconv.Unquote(name); uerr == nil {
			name = n
		}
		return &Error{Pos: c.pos(name), Msg: fmt.Sprintf("%s: unknown option %q (valid: %s)",
			c.label(), name, strings.Join(fieldNames(jsonFields(derefType(t))), ", "))}, name
	}
	return &Error{Pos: c.Range, Msg: fmt.Sprintf("%s: %v", c.label(), err), err: err}, ""
}

// findPath turns encoding/json's field path (object keys only: no list
// indexes or map keys, and Go names for embedded structs) into a path of
// the block, preferring the value whose JSON kind is the one the error
// names.
func (c Component) findPath(v any, fields []string, kind string) string {
	var first, match string
	var walk func(v any, rest []string, path string)
	walk = func(v any, rest []string, path string) {
		if match != "" {
			return
		}
		if len(rest) == 0 {
			if first == "" {
				first = path
			}
			if p, ok := c.findKind(v, kind, path); ok {
				match = p
			}
			return
		}
		switch x := v.(type) {
		case map[string]any:
			found := false
			for _, k := range c.keysInOrder(x, path) {
				if strings.EqualFold(k, rest[0]) {
					found = true
					walk(x[k], rest[1:], joinPath(path, k))
				}
			}
			if !found {
				// The Go name of an embedded struct: not a key.
				walk(v, rest[1:], path)
			}
		case []any:
			for i, e := range x {
				walk(e, rest, joinPath(path, strconv.Itoa(i)))
			}
		}
	}
	walk(v, fields, "")
	switch {
	case match != "":
		return match
	case first != "":
		return first
	}
	return strings.Join(fields, ".")
}

// findKind returns the shallowest value at or under path whose JSON kind
// is kind (any kind when kind is ""), breadth first, in file order.
func (c Component) findKind(v any, kind, path string) (string, bool) {
	type node struct {
		v    any
		path string
	}
	level := []node{{v, path}}
	for len(level) > 0 {
		var next []node
		for _, n := range level {
			if kind == "" || jsonKindOf(n.v) == kind {
				return n.path, true
			}
			switch x := n.v.(type) {
			case []any:
				for i, e := range x {
					next = append(next, node{e, joinPath(n.path, strconv.Itoa(i))})
				}
			case map[string]any:
				for _, k := range c.keysInOrder(x, n.path) {
					next = append(next, node{x[k], joinPath(n.path, k)})
				}
			}
		}
		level = next
	}
	return "", false
}

// jsonKind maps UnmarshalTypeError.Value ("number 1.5", "string") to a kind.
func jsonKind(value string) string {
	k, _, _ := strings.Cut(value, " ")
	switch k {
	case "string", "number", "bool", "array", "object":
		return k
	}
	return ""
}

func jsonKindOf(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64, json.Number:
		return "number"
	case bool:
		return "bool"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return ""
}

// describeType names a Go type the way a config author thinks of it.
func describeType(t reflect.Type) string {
	t = derefType(t)
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "a whole number >= 0"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// displayPath renders "rules.1.var" as "rules[1].var".
func displayPath(path string) string {
	var b strings.Builder
	for i, part := range strings.Split(path, ".") {
		if _, err := strconv.Atoi(part); err == nil && i > 0 {
			b.WriteString("[" + part + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(part)
	}
	return b.String()
}

// field is a JSON field of a struct.
type field struct {
	name string
	typ  reflect.Type
}

// jsonFields lists the fields encoding/json decodes into t, in declaration
// order, flattening embedded structs the way encoding/json does (a field
// less deeply embedded hides one deeper with the same name).
func jsonFields(t reflect.Type) []field {
	type candidate struct {
		field
		depth int
	}
	var all []candidate
	var walk func(t reflect.Type, depth int)
	walk = func(t reflect.Type, depth int) {
		if depth > 8 {
			return
		}
		for i := 0; i < t.NumField(); i++ {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if sf.Anonymous && name == "" {
				if et := derefType(sf.Type); et.Kind() == reflect.Struct {
					walk(et, depth+1)
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			all = append(all, candidate{field{name: name, typ: sf.Type}, depth})
		}
	}
	walk(t, 0)
	best := map[string]int{}
	for _, c := range all {
		k := strings.ToLower(c.name)
		if d, ok := best[k]; !ok || c.depth < d {
			best[k] = c.depth
		}
	}
	var out []field
	for _, c := range all {
		k := strings.ToLower(c.name)
		if d, ok := best[k]; ok && d == c.depth {
			out = append(out, c.field)
			delete(best, k)
		}
	}
	return out
}

// lookupField matches a key the way encoding/json does: exactly, else
// case-insensitively.
func lookupField(fields []field, key string) (field, bool) {
	for _, f := range fields {
		if f.name == key {
			return f, true
		}
	}
	for _, f := range fields {
		if strings.EqualFold(f.name, key) {
			return f, true
		}
	}
	return field{}, false
}

func fieldNames(fields []field) []string {
	out := make([]string, len(fields))
	for i, f := range fields {
		out[i] = f.name
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}
