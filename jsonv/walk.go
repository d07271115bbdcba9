package jsonv

import (
	"bytes"
	"iter"
)

// Members yields the key (as written, with its quotes) and the value of
// each member of obj, a checked object, in order.
func Members(obj []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func(key, val []byte) bool) {
		i := Space(obj, 1)
		for i < len(obj) && obj[i] == '"' {
			ke, _ := StringEnd(obj, i)
			if ke < 0 {
				return
			}
			vs := Space(obj, Space(obj, ke)+1)
			ve := Skip(obj, vs) // checked before: Skip finds the same end, faster
			if ve < 0 || !yield(obj[i:ke], obj[vs:ve]) {
				return
			}
			if i = Space(obj, ve); i < len(obj) && obj[i] == ',' {
				i = Space(obj, i+1)
			}
		}
	}
}

// Elems yields each element of arr, a checked array, in order.
func Elems(arr []byte) iter.Seq[[]byte] {
	return func(yield func(el []byte) bool) {
		i := Space(arr, 1)
		for i < len(arr) && arr[i] != ']' {
			e := Skip(arr, i)
			if e < 0 || !yield(arr[i:e]) {
				return
			}
			if i = Space(arr, e); i < len(arr) && arr[i] == ',' {
				i = Space(arr, i+1)
			}
		}
	}
}

// Get returns the value of key in obj, a checked object: the last one when
// the key is repeated, as JSON.parse and encoding/json keep the last.
func Get(obj []byte, key string) (val []byte, found bool) {
	for k, v := range Members(obj) {
		if KeyIs(k, key) {
			val, found = v, true
		}
	}
	return val, found
}

// Lookup sets vals[i] to the value of keys[i] in obj, a checked object
// (the last one when repeated, nil when absent), in one pass.
func Lookup(obj []byte, keys []string, vals [][]byte) {
	clear(vals)
	for k, v := range Members(obj) {
		for i, key := range keys {
			if KeyIs(k, key) {
				vals[i] = v
			}
		}
	}
}

// GetString returns the value of key in obj, a checked object, when it is
// a string.
func GetString(obj []byte, key string) (string, bool) {
	v, ok := Get(obj, key)
	if !ok {
		return "", false
	}
	return String(v)
}

// KeyIs reports whether raw, a key as written (with its quotes), is key.
func KeyIs(raw []byte, key string) bool {
	in := raw[1 : len(raw)-1]
	if bytes.IndexByte(in, '\\') < 0 {
		return string(in) == key
	}
	s, ok := UnquoteInside(in)
	return ok && s == key
}

// String decodes v when it is a string; ok is false for any other value.
func String(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	return Unquote(v)
}

// Bool returns v's value when it is true or false.
func Bool(v []byte) (val, ok bool) {
	switch string(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// IsNull reports whether v is null.
func IsNull(v []byte) bool { return string(v) == "null" }

// Skip returns the offset after the value that starts at b[i] without
// checking it (-1 when the input ends inside a string or an open
// bracket): for a caller that checks the value later anyway. Inside
// strings it jumps from quote to quote, a quote after an odd number of
// backslashes being escaped; a scalar ends at the first delimiter.
func Skip(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			if i = skipString(b, i); i < 0 {
				return -1
			}
			if depth == 0 {
				return i
			}
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i // the end of the enclosing value: a scalar before it
			}
			depth--
			i++
			if depth == 0 {
				return i
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				return i
			}
			i++
		default:
			i++
		}
	}
	if depth == 0 {
		return i
	}
	return -1
}

// skipString returns the offset after the string at b[i]=='"', unchecked.
func skipString(b []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		n := 0
		for n < j-i-1 && b[j-1-n] == '\\' {
			n++
		}
		j++
		if n%2 == 0 {
			return j
		}
	}
}

// EachMember checks that b (with whitespace around it or not) is one JSON
// object and calls fn with each member's key, decoded, and value, in order
// (a repeated key each time). It reports false when b is not one valid
// object; fn may have been called for the members before the damage.
func EachMember(b []byte, fn func(key, val []byte)) bool {
	i := Space(b, 0)
	end := Object(b, i, func(key []byte, v int) int {
		ve := End(b, v)
		if ve >= 0 {
			fn(decodeKey(key), b[v:ve])
		}
		return ve
	})
	return end >= 0 && Space(b, end) == len(b)
}

// EachElem returns the elements of the array v, up to the first one that
// is not valid JSON (nil when v is not an array or is empty).
func EachElem(v []byte) [][]byte {
	var out [][]byte
	Array(v, 0, func(i int) int {
		e := End(v, i)
		if e >= 0 {
			out = append(out, v[i:e])
		}
		return e
	})
	return out
}

// decodeKey is a key as written (with its quotes) decoded: a view of it
// when it has no escape.
func decodeKey(key []byte) []byte {
	in := key[1 : len(key)-1]
	if bytes.IndexByte(in, '\\') < 0 {
		return in
	}
	k, _ := UnquoteInside(in)
	return []byte(k)
}
