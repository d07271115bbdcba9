// Package jsjson is JSON as JavaScript reads and writes it, where
// transcript and transcript/fork both need it: an object edited the way an
// object spread edits it and laid out the way JSON.stringify lays it out,
// arrays and booleans written compactly, and a number as Number reads it.
package jsjson

import (
	"errors"
	"iter"
	"math"
	"sort"
	"strconv"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/jsonv"
)

// Object is a JSON object as an ordered member list, edited the way a
// JavaScript object spread edits: Set keeps a key's place or appends it;
// a nil value is undefined, kept in place but left out when written.
type Object struct {
	keys []string
	vals [][]byte
	at   map[string]int
}

// New is an empty object.
func New() *Object { return &Object{at: map[string]int{}} }

// Parse parses an object; a repeated key keeps its first place and its
// last value, as JSON.parse does.
func Parse(b []byte) (*Object, bool) {
	o := New()
	if !jsonv.EachMember(b, func(k, v []byte) { o.Set(string(k), v) }) {
		return nil, false
	}
	return o, true
}

// Get is k's value, nil when o has none (or it is undefined).
func (o *Object) Get(k string) []byte {
	if j, ok := o.at[k]; ok {
		return o.vals[j]
	}
	return nil
}

// Set sets k to the JSON value v (nil: undefined).
func (o *Object) Set(k string, v []byte) {
	if j, ok := o.at[k]; ok {
		o.vals[j] = v
		return
	}
	o.at[k] = len(o.keys)
	o.keys = append(o.keys, k)
	o.vals = append(o.vals, v)
}

// Members yields o's keys and values in order, undefined ones (nil)
// included.
func (o *Object) Members() iter.Seq2[string, []byte] {
	return func(yield func(string, []byte) bool) {
		for j, k := range o.keys {
			if !yield(k, o.vals[j]) {
				return
			}
		}
	}
}

// SetString sets k to the JSON string s (escaped as JSON.stringify
// escapes it).
func (o *Object) SetString(k, s string) { o.Set(k, core.AppendJSString(nil, s)) }

// Clone is a copy of o that edits apart from it (the values' bytes are
// shared).
func (o *Object) Clone() *Object {
	c := &Object{keys: append([]string(nil), o.keys...), vals: append([][]byte(nil), o.vals...), at: make(map[string]int, len(o.at))}
	for k, v := range o.at {
		c.at[k] = v
	}
	return c
}

// Bytes writes the object as JSON.stringify would lay it out: array-index
// keys first in numeric order, then the others in order.
func (o *Object) Bytes() []byte {
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
		if _, ok := arrayIndex(k); ok {
			index = append(index, j)
		}
	}
	if len(index) > 0 {
		sort.SliceStable(index, func(a, c int) bool {
			x, _ := arrayIndex(o.keys[index[a]])
			y, _ := arrayIndex(o.keys[index[c]])
			return x < y
		})
		for _, j := range index {
			emit(j)
		}
	}
	for j, k := range o.keys {
		if _, ok := arrayIndex(k); !ok {
			emit(j)
		}
	}
	return append(b, '}')
}

// arrayIndex reports a key JavaScript orders as an array index.
func arrayIndex(k string) (uint64, bool) {
	if k == "" || len(k) > 10 || (len(k) > 1 && k[0] == '0') {
		return 0, false
	}
	v, err := strconv.ParseUint(k, 10, 64)
	if err != nil || v > math.MaxUint32-1 {
		return 0, false
	}
	return v, true
}

// Array is the JSON array of the values els, written compactly.
func Array(els [][]byte) []byte {
	b := []byte{'['}
	for i, el := range els {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, el...)
	}
	return append(b, ']')
}

// Bool is JSON's true or false.
func Bool(v bool) []byte {
	if v {
		return []byte("true")
	}
	return []byte("false")
}

// Num is the value of the JSON number v as JavaScript's Number reads it
// (±Inf beyond float64's range); false when v is not a number.
func Num(v []byte) (float64, bool) {
	if len(v) == 0 || !(v[0] == '-' || v[0] >= '0' && v[0] <= '9') {
		return 0, false
	}
	x, err := strconv.ParseFloat(string(v), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return x, true
}
