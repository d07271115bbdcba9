package transcript

import (
	"errors"
	"math"
	"sort"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/jsonv"
)

// JSON values, read and written with JavaScript's meaning

// fkObj is a JSON object as an ordered member list, edited the way a
// JavaScript object spread edits: set keeps a key's place or appends it;
// a nil value is undefined, kept in place but left out when written.
type fkObj struct {
	keys []string
	vals [][]byte
	at   map[string]int
}

func newFkObj() *fkObj { return &fkObj{at: map[string]int{}} }

// fkParseObj parses an object; a repeated key keeps its first place and
// its last value, as JSON.parse does.
func fkParseObj(b []byte) (*fkObj, bool) {
	o := newFkObj()
	if !jsonv.EachMember(b, func(k, v []byte) { o.set(string(k), v) }) {
		return nil, false
	}
	return o, true
}

func (o *fkObj) get(k string) []byte {
	if j, ok := o.at[k]; ok {
		return o.vals[j]
	}
	return nil
}

func (o *fkObj) set(k string, v []byte) {
	if j, ok := o.at[k]; ok {
		o.vals[j] = v
		return
	}
	o.at[k] = len(o.keys)
	o.keys = append(o.keys, k)
	o.vals = append(o.vals, v)
}

// setString sets k to the JSON string s (escaped as JSON.stringify
// escapes it).
func (o *fkObj) setString(k, s string) { o.set(k, core.AppendJSString(nil, s)) }

func (o *fkObj) clone() *fkObj {
	c := &fkObj{keys: append([]string(nil), o.keys...), vals: append([][]byte(nil), o.vals...), at: make(map[string]int, len(o.at))}
	for k, v := range o.at {
		c.at[k] = v
	}
	return c
}

// bytes writes the object as JSON.stringify would lay it out: array-index
// keys first in numeric order, then the others in order.
func (o *fkObj) bytes() []byte {
	n := 2
	for j, k := range o.keys {
		n += len(k) + len(o.vals[j]) + 4
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	count := 0
	emit := func(j int) {
		if o.vals[j] == nil {
			return
		}
		if count > 0 {
			b = append(b, ',')
		}
		count++
		b = core.AppendJSString(b, o.keys[j])
		b = append(b, ':')
		b = append(b, o.vals[j]...)
	}
	var index []int
	for j, k := range o.keys {
		if _, ok := fkArrayIndex(k); ok {
			index = append(index, j)
		}
	}
	if len(index) > 0 {
		sort.SliceStable(index, func(a, c int) bool {
			x, _ := fkArrayIndex(o.keys[index[a]])
			y, _ := fkArrayIndex(o.keys[index[c]])
			return x < y
		})
		for _, j := range index {
			emit(j)
		}
	}
	for j, k := range o.keys {
		if _, ok := fkArrayIndex(k); !ok {
			emit(j)
		}
	}
	return append(b, '}')
}

// fkArrayIndex reports a key JavaScript orders as an array index.
func fkArrayIndex(k string) (uint64, bool) {
	if k == "" || len(k) > 10 || (len(k) > 1 && k[0] == '0') {
		return 0, false
	}
	v, err := strconv.ParseUint(k, 10, 64)
	if err != nil || v > math.MaxUint32-1 {
		return 0, false
	}
	return v, true
}

func fkArray(els [][]byte) []byte {
	b := []byte{'['}
	for i, el := range els {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, el...)
	}
	return append(b, ']')
}

func fkIsStr(v []byte) bool  { return len(v) > 0 && v[0] == '"' }
func fkIsObj(v []byte) bool  { return len(v) > 0 && v[0] == '{' }
func fkIsArr(v []byte) bool  { return len(v) > 0 && v[0] == '[' }
func fkIsNull(v []byte) bool { return string(v) == "null" }
func fkIsTrue(v []byte) bool { return string(v) == "true" }

// fkBool is JSON's true or false.
func fkBool(v bool) []byte {
	if v {
		return fkTrue
	}
	return fkFalse
}

func fkStr(v []byte) (string, bool) { return jsonv.String(v) }

func fkStrIs(v []byte, want string) bool {
	s, ok := fkStr(v)
	return ok && s == want
}

func fkNum(v []byte) (float64, bool) {
	if len(v) == 0 || !(v[0] == '-' || v[0] >= '0' && v[0] <= '9') {
		return 0, false
	}
	x, err := strconv.ParseFloat(string(v), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return x, true
}

// fkTruthy is JavaScript's truthiness of a value (nil is undefined).
func fkTruthy(v []byte) bool {
	switch {
	case v == nil, fkIsNull(v), string(v) == "false", string(v) == `""`:
		return false
	}
	if x, ok := fkNum(v); ok {
		return x != 0
	}
	return true
}

// fkSame is JavaScript's === between two values: undefined equals
// undefined; objects and arrays are never equal.
func fkSame(a, b []byte) bool {
	switch {
	case a == nil || b == nil:
		return a == nil && b == nil
	case fkIsStr(a) || fkIsStr(b):
		x, xok := fkStr(a)
		y, yok := fkStr(b)
		return xok && yok && x == y
	case fkIsObj(a) || fkIsArr(a) || fkIsObj(b) || fkIsArr(b):
		return false
	}
	if x, ok := fkNum(a); ok {
		y, ok := fkNum(b)
		return ok && x == y
	}
	return string(a) == string(b)
}

// fkField is an object's member (the last one of that name), nil when v is
// not an object or has none.
func fkField(v []byte, key string) []byte {
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

// fkElems are an array's elements (nil when v is not an array).
func fkElems(v []byte) [][]byte { return jsonv.EachElem(v) }

// fkISOTime is Date.prototype.toISOString.
func fkISOTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// fkLossyUTF8 decodes b as a WHATWG UTF-8 decoder does (Node's
// Buffer.toString): each maximal invalid subpart becomes U+FFFD.
func fkLossyUTF8(b []byte) []byte {
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
		i += fkInvalidSpan(b[i:])
	}
	return out
}

// fkInvalidSpan is the length of the maximal subpart of an ill-formed
// sequence at b[0]: its lead byte and the continuation bytes that could
// still have completed it.
func fkInvalidSpan(b []byte) int {
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
