package transcript

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/jsonv"
)

// JSON values

// jv is one JSON value as it appears in a line; nil when the key is absent.
type jv []byte

func (v jv) absent() bool { return v == nil }
func (v jv) isStr() bool  { return len(v) > 0 && v[0] == '"' }
func (v jv) isObj() bool  { return len(v) > 0 && v[0] == '{' }
func (v jv) isArr() bool  { return len(v) > 0 && v[0] == '[' }

// objLike is JavaScript's typeof v === "object" && v !== null.
func (v jv) objLike() bool { return v.isObj() || v.isArr() }
func (v jv) isTrue() bool  { return string(v) == "true" }

// nullish is v === undefined || v === null.
func (v jv) nullish() bool { return v == nil || string(v) == "null" }

func (v jv) str() (string, bool) {
	if !v.isStr() {
		return "", false
	}
	in := v[1 : len(v)-1]
	if bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		return string(in), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// plainInside returns the inside of the string v when it decodes to
// itself (no escape, valid UTF-8): comparing it decodes nothing.
func (v jv) plainInside() ([]byte, bool) {
	if !v.isStr() {
		return nil, false
	}
	in := v[1 : len(v)-1]
	return in, bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in)
}

// strShared is str sharing v's bytes when the string has no escapes: v
// must never change afterwards.
func (v jv) strShared() (string, bool) {
	if !v.isStr() {
		return "", false
	}
	in := v[1 : len(v)-1]
	if len(in) > 0 && bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) {
		return unsafe.String(&in[0], len(in)), true
	}
	return v.str()
}

// truthy is JavaScript's Boolean(v).
func (v jv) truthy() bool {
	if len(v) == 0 {
		return false
	}
	switch v[0] {
	case 'n', 'f':
		return false
	case 't', '{', '[':
		return true
	case '"':
		return len(v) > 2
	}
	// A number is falsy when it is zero: every mantissa digit is 0.
	for _, c := range v {
		switch {
		case c == 'e' || c == 'E':
			return false
		case c >= '1' && c <= '9':
			return true
		}
	}
	return false
}

// strictEq is JavaScript's a === b for values read from JSON (objects and
// arrays are never equal, being distinct objects).
func strictEq(a, b jv) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	switch {
	case a.isStr() && b.isStr():
		if x, ok := a.plainInside(); ok {
			if y, ok := b.plainInside(); ok {
				return string(x) == string(y)
			}
		}
		x, _ := a.str()
		y, _ := b.str()
		return x == y
	case a.objLike() || b.objLike():
		return false
	case a[0] == '-' || (a[0] >= '0' && a[0] <= '9'):
		if !(b[0] == '-' || (b[0] >= '0' && b[0] <= '9')) {
			return false
		}
		x, err1 := strconv.ParseFloat(string(a), 64)
		y, err2 := strconv.ParseFloat(string(b), 64)
		return err1 == nil && err2 == nil && x == y && !math.IsNaN(x)
	}
	return bytes.Equal(a, b) // true, false, null
}

// strEq reports whether v is the string s.
func (v jv) strEq(s string) bool {
	if !v.isStr() {
		return false
	}
	if len(v) == len(s)+2 && string(v[1:len(v)-1]) == s {
		return true
	}
	if in, ok := v.plainInside(); ok {
		return string(in) == s
	}
	x, ok := v.str()
	return ok && x == s
}

// jstr encodes s as a JSON string.
func jstr(s string) jv {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		b := make([]byte, 0, len(s)+2)
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	return core.AppendJSString(nil, s)
}

// eachField calls fn for every member of the object v, in order.
func eachField(v jv, fn func(key []byte, val jv)) bool {
	return len(v) > 0 && v[0] == '{' && jsonv.EachMember(v, func(k, val []byte) { fn(k, jv(val)) })
}

// field returns the member name of the object v (the last one when the key
// repeats, as JSON.parse keeps), or nil.
func (v jv) field(name string) jv {
	var out jv
	eachField(v, func(k []byte, val jv) {
		if string(k) == name {
			out = val
		}
	})
	return out
}

// elems returns the elements of the array v.
func (v jv) elems() []jv {
	var out []jv
	for _, e := range jsonv.EachElem(v) {
		out = append(out, e)
	}
	return out
}

// objBuilder writes a JSON object member by member.
type objBuilder struct{ b []byte }

func (o *objBuilder) add(key string, val jv) {
	if val == nil {
		return
	}
	if len(o.b) == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.b = append(o.b, jstr(key)...)
	o.b = append(o.b, ':')
	o.b = append(o.b, val...)
}

func (o *objBuilder) done() jv {
	if len(o.b) == 0 {
		return jv("{}")
	}
	return append(o.b, '}')
}

// spread is {...base, <overrides>}: base's members, minus the keys that
// drop names, with the overrides (in order) replacing or following them.
func spread(base jv, drop []string, overrides ...any) jv {
	type kv struct {
		k string
		v jv
	}
	var members []kv
	idx := map[string]int{}
	set := func(k string, v jv) {
		if i, ok := idx[k]; ok {
			members[i].v = v
			return
		}
		idx[k] = len(members)
		members = append(members, kv{k, v})
	}
	eachField(base, func(k []byte, v jv) {
		for _, d := range drop {
			if string(k) == d {
				return
			}
		}
		set(string(k), v)
	})
	for i := 0; i+1 < len(overrides); i += 2 {
		set(overrides[i].(string), overrides[i+1].(jv))
	}
	var o objBuilder
	for _, m := range members {
		o.add(m.k, m.v)
	}
	return o.done()
}
