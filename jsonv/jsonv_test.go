package jsonv

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"reflect"
	"strings"
	"testing"
)

// decode builds the value v (checked) with jsonv's walkers, as
// encoding/json decodes into any with UseNumber.
func decode(t *testing.T, v []byte) any {
	t.Helper()
	switch v[0] {
	case '{':
		m := map[string]any{}
		for k, val := range Members(v) {
			key, ok := Unquote(k)
			if !ok {
				t.Fatalf("Unquote(%q) failed on a checked key", k)
			}
			m[key] = decode(t, val)
		}
		return m
	case '[':
		a := []any{}
		for el := range Elems(v) {
			a = append(a, decode(t, el))
		}
		return a
	case '"':
		s, ok := String(v)
		if !ok {
			t.Fatalf("String(%q) failed on a checked string", v)
		}
		return s
	case 't', 'f':
		b, ok := Bool(v)
		if !ok {
			t.Fatalf("Bool(%q) failed", v)
		}
		return b
	case 'n':
		if !IsNull(v) {
			t.Fatalf("IsNull(%q) is false", v)
		}
		return nil
	}
	return json.Number(v)
}

// sameAsJSON checks jsonv against encoding/json on b: the same validity,
// the same decoded value, and Skip, Object and Array agreeing with End.
func sameAsJSON(t *testing.T, b []byte) {
	t.Helper()
	v, ok := Value(b)
	if ok != json.Valid(b) {
		t.Fatalf("Value(%q) ok=%v, json.Valid %v", b, ok, !ok)
	}
	if !ok {
		i := Space(b, 0)
		if r := End(b, i); r >= 0 && Space(b, r) == len(b) {
			t.Fatalf("End(%q) = %d on invalid input", b, r)
		}
		return
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var want any
	if err := dec.Decode(&want); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	if got := decode(t, v); !reflect.DeepEqual(got, want) {
		t.Fatalf("decoding %q:\ngot  %#v\nwant %#v", b, got, want)
	}
	if e := Skip(v, 0); e != len(v) {
		t.Fatalf("Skip(%q) = %d, want %d", v, e, len(v))
	}
	switch v[0] {
	case '{':
		if e := Object(v, 0, func(_ []byte, i int) int { return End(v, i) }); e != len(v) {
			t.Fatalf("Object(%q) = %d", v, e)
		}
	case '[':
		if e := Array(v, 0, func(i int) int { return End(v, i) }); e != len(v) {
			t.Fatalf("Array(%q) = %d", v, e)
		}
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			t.Fatal(err)
		}
		if got, ok := UnquoteInside(v[1 : len(v)-1]); !ok || got != s {
			t.Fatalf("UnquoteInside(%q) = %q, %v; want %q", v, got, ok, s)
		}
	}
}

// sameInside checks UnquoteInside against encoding/json on any text put
// between quotes.
func sameInside(t *testing.T, in []byte) {
	t.Helper()
	var want string
	err := json.Unmarshal([]byte(`"`+string(in)+`"`), &want)
	got, ok := UnquoteInside(in)
	if ok != (err == nil) || ok && got != want {
		t.Fatalf("UnquoteInside(%q) = %q, %v; encoding/json %q, %v", in, got, ok, want, err)
	}
}

var samples = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e-3`, `-12E+2`, `true`, `false`, `null`,
	` {"a" : [1, 2.5e-3, true, null, "x\u00e9"] , "b":{"c":{}}} `,
	`{"k":"first","k":"second","\u006b2":"esc"}`,
	`"\ud83d\ude00 \ud83d x \udc00 \ud83d\u0041"`,
	`"tab\t\"q\" \\ \/ \b\f\n\r"`, "\"\xff\xfe caf\xc3\xa9 \xe2\x82\"",
	`{"a":1,}`, `[1,]`, `{"a":01}`, `{"a":"tab	"}`, `{"a":"\x"}`, `{"a":1}{"b":2}`,
	"\ufeff{\"a\":1}", `{"a":1}` + "\r", `[1 2]`, `{"a" 1}`, `{1:2}`, `"\u12"`, `"\u12g4"`,
	`-`, `1.`, `.5`, `1e`, `1e+`, `+1`, `tru`, `nul`, `[`, `{"a":`, `"abc`, `"a\`, ``, ` `,
	`[[[[]]]]`, `{"a":[{"b":[{"c":"` + strings.Repeat("x", 40) + `"}]}]}`,
}

func TestAgainstEncodingJSON(t *testing.T) {
	for _, s := range samples {
		sameAsJSON(t, []byte(s))
		if len(s) >= 2 && s[0] == '"' {
			sameInside(t, []byte(s[1:len(s)-1]))
		}
	}
}

func TestDepth(t *testing.T) {
	for _, n := range []int{MaxDepth, MaxDepth + 1} {
		b := []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
		if Valid(b) != json.Valid(b) {
			t.Errorf("depth %d: Valid %v, json.Valid %v", n, Valid(b), json.Valid(b))
		}
		o := []byte(strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n))
		if Valid(o) != (n <= MaxDepth) {
			t.Errorf("depth %d objects: Valid %v", n, Valid(o))
		}
	}
}

func TestErrorOffsets(t *testing.T) {
	for s, off := range map[string]int{
		`{"a":1,}`: 7, `[1 2]`: 3, `{"a":tru}`: 8, `"ab`: 3, `{"a":"x\q"}`: 8, `"\u12g4"`: 5, `1.x`: 2,
	} {
		r := End([]byte(s), 0)
		if r >= 0 || ^r != off {
			t.Errorf("End(%q) = ^%d, want ^%d", s, ^r, off)
		}
		if err := Err([]byte(s), r); err == nil {
			t.Errorf("Err(%q) is nil", s)
		}
	}
}

func TestObjectCallback(t *testing.T) {
	b := []byte(`{"type":"user","n":[1,{"x":2}],"t\u0079pe":"again","s":"\u00e9"}`)
	var keys []string
	var types []string
	end := Object(b, 0, func(key []byte, v int) int {
		k, _ := Unquote(key)
		keys = append(keys, k)
		e := End(b, v)
		if KeyIs(key, "type") {
			s, _ := String(b[v:e])
			types = append(types, s)
		}
		return e
	})
	if end != len(b) || strings.Join(keys, ",") != "type,n,type,s" || strings.Join(types, ",") != "user,again" {
		t.Fatalf("end %d keys %q types %q", end, keys, types)
	}
	// A callback's negative result stops the walk and comes back as is.
	if r := Object(b, 0, func([]byte, int) int { return ^42 }); r != ^42 {
		t.Fatalf("Object returned %d, want the callback's ^42", r)
	}
	if got, ok := GetString(b, "type"); !ok || got != "again" {
		t.Fatalf("GetString = %q, %v; want the last one", got, ok)
	}
	vals := make([][]byte, 3)
	Lookup(b, []string{"s", "n", "missing"}, vals)
	if string(vals[0]) != `"\u00e9"` || string(vals[1]) != `[1,{"x":2}]` || vals[2] != nil {
		t.Fatalf("Lookup = %q", vals)
	}
}

func TestSpecialBytes(t *testing.T) {
	// specialBytes is exact: each byte is flagged iff it is '"', '\\' or a
	// control character, whatever its neighbours; maybeSpecial never
	// misses one.
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 8; pos++ {
			for _, fill := range []byte{'a', 0xff, ' ', 0x80, '"', 0x1f} {
				w := bytes.Repeat([]byte{fill}, 8)
				w[pos] = byte(c)
				v := binary.LittleEndian.Uint64(w)
				m := specialBytes(v)
				first := -1
				for i, x := range w {
					want := x == '"' || x == '\\' || x < 0x20
					if want && first < 0 {
						first = i
					}
					if got := m>>(8*i+7)&1 == 1; got != want {
						t.Fatalf("specialBytes(%q) byte %d: %v, want %v", w, i, got, want)
					}
				}
				// firstSpecial's lowest set byte is the first special one.
				f := firstSpecial(v)
				if got := bits.TrailingZeros64(f) >> 3; (f == 0) != (first < 0) || (f != 0 && got != first) {
					t.Fatalf("firstSpecial(%q) = %#x (byte %d), want byte %d", w, f, got, first)
				}
			}
		}
	}
}

// TestStrictAsJSONParse: what JSON.parse refuses, Value refuses (a
// transcript line with a byte-order mark, a trailing comma, a leading
// zero, a raw tab in a string); a trailing CR is whitespace.
func TestStrictAsJSONParse(t *testing.T) {
	for s, want := range map[string]bool{
		`{"a":1}`: true, ` {"a":[1,2.5e-3,true,null,"x\u00e9"]} `: true, `[1]`: true, `"x"`: true,
		`{"a":1,}`: false, `{"a":01}`: false, `{"a":"tab	"}`: false, `{"a":"\x"}`: false,
		`{"a":1}{"b":2}`: false, "\ufeff{\"a\":1}": false, `{"a":1}` + "\r": true,
	} {
		if _, got := Value([]byte(s)); got != want {
			t.Errorf("Value(%q) ok = %v, want %v", s, got, want)
		}
	}
}

// FuzzValue is differential: on any input jsonv and encoding/json agree on
// validity and on the decoded value, and UnquoteInside agrees with
// encoding/json on the input put between quotes. The default `go test`
// replays the seeds and testdata/fuzz/FuzzValue; `go test -fuzz FuzzValue
// ./jsonv/` looks for more.
func FuzzValue(f *testing.F) {
	for _, s := range samples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sameAsJSON(t, b)
		sameInside(t, b)
		if e := Skip(b, Space(b, 0)); e > len(b) {
			t.Fatalf("Skip(%q) = %d past the end", b, e)
		}
	})
}

// StringEnd finds a quote, an escape or a control character at every
// position of its sixteen- and eight-byte steps, as the byte-wise scan does.
func TestStringEndAtEveryOffset(t *testing.T) {
	for n := 0; n < 48; n++ {
		for _, special := range []string{`"`, `\n`, `\u00e9`, "\x01", `\x`} {
			for _, tail := range []string{`"`, `abc"`, "\x1f\""} {
				s := []byte(`"` + strings.Repeat("a", n) + special + tail)
				got, _ := StringEnd(s, 0)
				want := stringEndBytewise(s, 0)
				// The byte-wise reference points at a bad escape's
				// backslash, StringEnd at its wrong byte: compare where
				// the string ends, and that both refuse the rest.
				if got != want && (got >= 0 || want >= 0) {
					t.Fatalf("%q: StringEnd %d, byte-wise %d", s, got, want)
				}
			}
		}
	}
}
