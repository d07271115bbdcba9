package fork

import (
	"time"
	"unicode/utf8"

	"github.com/e0dc0000/scribe/jsonv"
	"github.com/e0dc0000/scribe/transcript/internal/jsjson"
)

// JSON values, read with JavaScript's meaning (the rows the fork edits are
// jsjson.Objects).

func isStr(v []byte) bool  { return len(v) > 0 && v[0] == '"' }
func isObj(v []byte) bool  { return len(v) > 0 && v[0] == '{' }
func isArr(v []byte) bool  { return len(v) > 0 && v[0] == '[' }
func isNull(v []byte) bool { return string(v) == "null" }
func isTrue(v []byte) bool { return string(v) == "true" }

func stringOf(v []byte) (string, bool) { return jsonv.String(v) }

func strIs(v []byte, want string) bool {
	s, ok := stringOf(v)
	return ok && s == want
}

// truthy is JavaScript's truthiness of a value (nil is undefined).
func truthy(v []byte) bool {
	switch {
	case v == nil, isNull(v), string(v) == "false", string(v) == `""`:
		return false
	}
	if x, ok := jsjson.Num(v); ok {
		return x != 0
	}
	return true
}

// strictEq is JavaScript's === between two values: undefined equals
// undefined; objects and arrays are never equal.
func strictEq(a, b []byte) bool {
	switch {
	case a == nil || b == nil:
		return a == nil && b == nil
	case isStr(a) || isStr(b):
		x, xok := stringOf(a)
		y, yok := stringOf(b)
		return xok && yok && x == y
	case isObj(a) || isArr(a) || isObj(b) || isArr(b):
		return false
	}
	if x, ok := jsjson.Num(a); ok {
		y, ok := jsjson.Num(b)
		return ok && x == y
	}
	return string(a) == string(b)
}

// field is an object's member (the last one of that name), nil when v is
// not an object or has none.
func field(v []byte, key string) []byte {
	var out []byte
	if len(v) == 0 || v[0] != '{' || !jsonv.EachMember(v, func(k, val []byte) {
		if string(k) == key {
			out = val
		}
	}) {
		return nil
	}
	return out
}

// elems are an array's elements (nil when v is not an array).
func elems(v []byte) [][]byte { return jsonv.EachElem(v) }

// isoTime is Date.prototype.toISOString.
func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// lossyUTF8 decodes b as a WHATWG UTF-8 decoder does (Node's
// Buffer.toString): each maximal invalid subpart becomes U+FFFD.
func lossyUTF8(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			out = append(out, b[i])
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			out = append(out, b[i:i+size]...)
			i += size
			continue
		}
		out = append(out, "\uFFFD"...)
		i += invalidSpan(b[i:])
	}
	return out
}

// invalidSpan is the length of the maximal subpart of an ill-formed
// sequence at b[0]: its lead byte and the continuation bytes that could
// still have completed it.
func invalidSpan(b []byte) int {
	c := b[0]
	need := 0
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default:
		return 1
	}
	n := 1
	for n <= need && n < len(b) && b[n] >= lo && b[n] <= hi {
		n++
		lo, hi = 0x80, 0xBF
	}
	return n
}
