// Package jsonv validates and walks JSON values in place, without building
// them: where a value ends (checked as strictly as encoding/json and
// JavaScript's JSON.parse), the members of an object and the elements of
// an array as byte spans of the input, and strings decoded on demand.
//
// Two kinds of functions: the checking ones (End, Valid, Value, Object,
// Array, StringEnd) take any bytes and report where the input stops being
// JSON; the walking ones (Members, Elems, Get, Lookup) take a value that
// was checked before and do not check it again. Skip steps over a value
// without checking it at all, for a caller who checks it later (the
// benchmarks show why it exists).
//
// Offsets: a function that finds an error returns a negative offset, ^off,
// off being the offset of the first byte that is wrong (len(b) when the
// input ends too early); Err words it.
package jsonv

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// MaxDepth is the deepest nesting of arrays and objects End accepts, as
// encoding/json.
const MaxDepth = 10000

// Space returns the offset of the first byte at or after i that is not
// JSON whitespace (space, tab, CR, LF).
func Space(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Valid reports whether b is one JSON value, with whitespace around it or
// not.
func Valid(b []byte) bool {
	_, ok := Value(b)
	return ok
}

// Value returns the one JSON value b holds, without the whitespace around
// it; ok is false when b is not one JSON value.
func Value(b []byte) (v []byte, ok bool) {
	i := Space(b, 0)
	end := End(b, i)
	if end < 0 || Space(b, end) != len(b) {
		return nil, false
	}
	return b[i:end], true
}

// End returns the offset just after the JSON value that starts at b[i]
// (no whitespace before it), or ^off where it is not valid.
func End(b []byte, i int) int { return end(b, i, 0) }

func end(b []byte, i, depth int) int {
	if i >= len(b) {
		return ^len(b)
	}
	switch c := b[i]; {
	case c == '"':
		e, _ := StringEnd(b, i)
		return e
	case c == '{':
		if depth >= MaxDepth {
			return ^i
		}
		return object(b, i, depth+1, nil)
	case c == '[':
		if depth >= MaxDepth {
			return ^i
		}
		return array(b, i, depth+1, nil)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return number(b, i)
	}
	return ^i
}

// Object checks the object that starts at b[i]=='{' and returns the offset
// after it, or ^off. member, when not nil, is called for each member with
// the key as it is written (quotes and escapes included; KeyIs compares
// it, Unquote decodes it) and the offset of the value (inside b); it
// returns the
// offset after the value (End(b, v) when it has no use for it), or a
// negative number, which stops the walk and is returned as is.
func Object(b []byte, i int, member func(key []byte, v int) int) int {
	if i >= len(b) || b[i] != '{' {
		return ^i
	}
	return object(b, i, 1, member)
}

func object(b []byte, i, depth int, member func(key []byte, v int) int) int {
	i = Space(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return ^min(i, len(b))
		}
		ke, _ := StringEnd(b, i)
		if ke < 0 {
			return ke
		}
		key := b[i:ke]
		if i = Space(b, ke); i >= len(b) || b[i] != ':' {
			return ^i
		}
		v := Space(b, i+1)
		if v >= len(b) {
			return ^v
		}
		if member != nil {
			i = member(key, v)
		} else {
			i = end(b, v, depth)
		}
		if i = next(b, i, '}'); i < 0 || b[i-1] == '}' {
			return i
		}
	}
}

// Array checks the array that starts at b[i]=='[' and returns the offset
// after it, or ^off. elem, when not nil, is called with the offset of each
// element (inside b) and returns the offset after it (End(b, v) when it has no use
// for it), or a negative number, which stops the walk and is returned.
func Array(b []byte, i int, elem func(v int) int) int {
	if i >= len(b) || b[i] != '[' {
		return ^i
	}
	return array(b, i, 1, elem)
}

func array(b []byte, i, depth int, elem func(v int) int) int {
	i = Space(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1
	}
	for {
		if i >= len(b) {
			return ^i
		}
		if elem != nil {
			i = elem(i)
		} else {
			i = end(b, i, depth)
		}
		if i = next(b, i, ']'); i < 0 || b[i-1] == ']' {
			return i
		}
	}
}

// next steps from the end i of a member or an element (negative: an
// error, returned as is) past the comma to the next one, or past closer,
// the end of the object or array (b[result-1] == closer tells), or gives
// ^off.
func next(b []byte, i int, closer byte) int {
	if i < 0 {
		return i
	}
	if i = Space(b, i); i >= len(b) {
		return ^i
	}
	switch b[i] {
	case ',':
		return Space(b, i+1)
	case closer:
		return i + 1
	}
	return ^i
}

func literal(b []byte, i int, lit string) int {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit)
	}
	for k := 1; k < len(lit); k++ {
		if i+k >= len(b) || b[i+k] != lit[k] {
			return ^(i + k)
		}
	}
	return ^i
}

func number(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return ^i
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return ^i
	}
	if i < len(b) && b[i] == '.' {
		st := i + 1
		if i = digits(b, st); i == st {
			return ^i
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		st := i
		if i = digits(b, st); i == st {
			return ^i
		}
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// StringEnd checks the string that starts at b[i]=='"' and returns the
// offset after its closing quote (or ^off) and whether it holds escapes.
// Strings are most of the bytes of a transcript, and short ones (keys,
// ids, types) most of the strings: eight bytes are tried in a word first,
// then stringBody takes over (in vector registers where the machine has
// them), stepping over two-byte escapes itself.
func StringEnd(b []byte, i int) (end int, escaped bool) {
	if i >= len(b) || b[i] != '"' {
		return ^i, false
	}
	j := i + 1
	if j+8 <= len(b) {
		if m := firstSpecial(binary.LittleEndian.Uint64(b[j:])); m != 0 {
			if k := j + bits.TrailingZeros64(m)>>3; b[k] == '"' {
				return k + 1, false
			}
		}
	}
	for {
		n, esc := stringBody(b[j:])
		escaped = escaped || esc
		if j += n; j >= len(b) {
			return ^len(b), escaped
		}
		switch b[j] {
		case '"':
			return j + 1, escaped
		case '\\':
			escaped = true
			if n := escapeLen(b, j); n > 0 {
				j += n
			} else {
				return ^(j - n), escaped
			}
		default: // a control character
			return ^j, escaped
		}
	}
}

// stringBodyWords is what stringBody returns, eight bytes a step in a word
// while no special byte is in them: the offset of the first byte of a
// string's body b that is a quote, a control character, a backslash that
// does not start a two-byte escape, or len(b); and whether it stepped over
// an escape.
func stringBodyWords(b []byte) (n int, escaped bool) {
	j := 0
	for {
		for j+8 <= len(b) {
			m := firstSpecial(binary.LittleEndian.Uint64(b[j:]))
			if m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				break
			}
			j += 8
		}
		for ; j < len(b); j++ {
			if c := b[j]; c == '"' || c == '\\' || c < 0x20 {
				break
			}
		}
		if j+1 >= len(b) || b[j] != '\\' || escapeLen(b, j) != 2 {
			return j, escaped
		}
		escaped = true
		j += 2
	}
}

// escapeLen returns the length of the escape at b[j]=='\\', or minus the
// distance from j to its first wrong byte.
func escapeLen(b []byte, j int) int {
	if j+1 >= len(b) {
		return -1
	}
	switch b[j+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		for k := 2; k < 6; k++ {
			if j+k >= len(b) || !isHex(b[j+k]) {
				return -k
			}
		}
		return 6
	}
	return -1
}

// specialBytes has the high bit set in each byte of v that is '"', '\\' or
// below 0x20, and only in those (no false positives, so the scan can stop
// on the byte itself).
func specialBytes(v uint64) uint64 {
	const lo7, hi = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	zero := func(x uint64) uint64 { return ^(((x & lo7) + lo7) | x | lo7) }
	ctl := ^(((v & lo7) + 0x6060606060606060) | v) & hi
	return zero(v^0x2222222222222222) | zero(v^0x5c5c5c5c5c5c5c5c) | ctl
}

// firstSpecial has the high bit set in the byte of x that is the first
// '"', '\\' or control character, if any, and maybe in bytes after it,
// never before.
func firstSpecial(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := x ^ (ones * '"')
	s := x ^ (ones * '\\')
	return ((q-ones)&^q | (s-ones)&^s | (x-ones*0x20)&^x) & highs
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// Err words a negative offset returned for b.
func Err(b []byte, r int) error {
	if r >= 0 {
		return nil
	}
	off := ^r
	if off >= len(b) {
		return fmt.Errorf("unexpected end of JSON input at offset %d", off)
	}
	return fmt.Errorf("invalid character %q at offset %d", b[off], off)
}
