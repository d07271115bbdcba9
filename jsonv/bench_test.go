package jsonv

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// benchLine is a transcript line of the usual shape: common fields, then a
// message whose tool output (most of the bytes) is a long string with some
// escapes.
func benchLine() []byte {
	var out strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&out, "line %d of the output: \"quoted\" path/to/file_%d.go\tok\n", i, i)
	}
	content, _ := json.Marshal(out.String())
	return []byte(`{"parentUuid":"2f0c4c1e-4d7b-4d38-9a43-1f2a7c0e9b11","isSidechain":false,"userType":"external",` +
		`"cwd":"/home/dev/src/app","sessionId":"8c1d2e3f-0a1b-4c5d-8e9f-001122334455","version":"2.1.0","gitBranch":"main",` +
		`"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_01","type":"tool_result","content":` +
		string(content) + `,"is_error":false}]},"uuid":"9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d","timestamp":"2026-01-02T03:04:05.678Z"}`)
}

// BenchmarkValid: checking a whole line, against encoding/json.
func BenchmarkValid(b *testing.B) {
	line := benchLine()
	b.Run("jsonv", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			if !Valid(line) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			if !json.Valid(line) {
				b.Fatal("invalid")
			}
		}
	})
}

// BenchmarkFields: checking a line and reading three of its fields,
// against encoding/json decoding them into a struct.
func BenchmarkFields(b *testing.B) {
	line := benchLine()
	b.Run("jsonv", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		keys := []string{"type", "uuid", "sessionId"}
		vals := make([][]byte, len(keys))
		for b.Loop() {
			obj, ok := Value(line)
			if !ok {
				b.Fatal("invalid")
			}
			Lookup(obj, keys, vals)
			if s, _ := String(vals[0]); s != "user" {
				b.Fatal(s)
			}
		}
	})
	b.Run("jsonv-object", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			var typ string
			r := Object(line, 0, func(key []byte, v int) int {
				e := End(line, v)
				if KeyIs(key, "type") {
					typ, _ = String(line[v:e])
				}
				return e
			})
			if r != len(line) || typ != "user" {
				b.Fatal(typ)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			var e struct{ Type, UUID, SessionID string }
			if err := json.Unmarshal(line, &e); err != nil || e.Type != "user" {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSkip: Skip (unchecked) against End (checked) over the same
// value: why the events parser, whose payloads core.ParseEntry checks
// anyway, skips them unchecked.
func BenchmarkSkip(b *testing.B) {
	line := benchLine()
	b.Run("Skip", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			if Skip(line, 0) != len(line) {
				b.Fatal("short")
			}
		}
	})
	b.Run("End", func(b *testing.B) {
		b.SetBytes(int64(len(line)))
		for b.Loop() {
			if End(line, 0) != len(line) {
				b.Fatal("short")
			}
		}
	})
}

// BenchmarkStringEnd: the eight-bytes-at-a-time scan of strings against
// the same scan a byte at a time.
func BenchmarkStringEnd(b *testing.B) {
	s := []byte(`"` + strings.Repeat("plain text of a tool's output, ", 400) + `"`)
	b.Run("swar", func(b *testing.B) {
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			if e, _ := StringEnd(s, 0); e != len(s) {
				b.Fatal(e)
			}
		}
	})
	b.Run("bytewise", func(b *testing.B) {
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			if e := stringEndBytewise(s, 0); e != len(s) {
				b.Fatal(e)
			}
		}
	})
}

// stringEndBytewise is StringEnd without the eight-byte steps (the
// benchmark's reference).
func stringEndBytewise(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1
		case c == '\\':
			n := escapeLen(b, j)
			if n < 0 {
				return ^j
			}
			j += n - 1
		case c < 0x20:
			return ^j
		}
	}
	return ^len(b)
}

// BenchmarkUnquote: a string without escapes (copied after one check)
// and one with escapes, against encoding/json.
func BenchmarkUnquote(b *testing.B) {
	plainS := []byte(`"` + strings.Repeat("plain text, café ", 100) + `"`)
	escS, _ := json.Marshal(strings.Repeat("line\twith \"quotes\"\n", 100))
	for _, c := range []struct {
		name string
		s    []byte
	}{{"plain", plainS}, {"escaped", escS}} {
		b.Run(c.name+"/jsonv", func(b *testing.B) {
			b.SetBytes(int64(len(c.s)))
			for b.Loop() {
				if _, ok := Unquote(c.s); !ok {
					b.Fatal("bad")
				}
			}
		})
		b.Run(c.name+"/encoding/json", func(b *testing.B) {
			b.SetBytes(int64(len(c.s)))
			for b.Loop() {
				var s string
				if err := json.Unmarshal(c.s, &s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
