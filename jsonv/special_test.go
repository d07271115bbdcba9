package jsonv

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// stringBodyBytewise is the definition stringBody and stringBodyWords
// must meet, one byte at a time.
func stringBodyBytewise(b []byte) (n int, escaped bool) {
	j := 0
	for j < len(b) {
		c := b[j]
		switch {
		case c == '"' || c < 0x20:
			return j, escaped
		case c == '\\':
			if escapeLen(b, j) != 2 {
				return j, escaped
			}
			escaped = true
			j += 2
		default:
			j++
		}
	}
	return j, escaped
}

func checkStringBody(t *testing.T, b []byte) {
	t.Helper()
	wn, we := stringBodyBytewise(b)
	if n, e := stringBody(b); n != wn || e != we {
		t.Fatalf("stringBody(%q) = %d, %v; byte-wise %d, %v", b, n, e, wn, we)
	}
	if n, e := stringBodyWords(b); n != wn || e != we {
		t.Fatalf("stringBodyWords(%q) = %d, %v; byte-wise %d, %v", b, n, e, wn, we)
	}
	// StringEnd agrees with the byte-wise scan on where the string ends.
	s := append([]byte{'"'}, b...)
	got, _ := StringEnd(s, 0)
	if want := stringEndBytewise(s, 0); got != want && (got >= 0 || want >= 0) {
		t.Fatalf("StringEnd(%q) = %d, byte-wise %d", s, got, want)
	}
}

// TestStringBodyAtEveryOffset puts each kind of special byte, and each
// escape, at every offset of two vector blocks and their edges, with
// whatever follows it, and cuts the input at every length.
func TestStringBodyAtEveryOffset(t *testing.T) {
	specials := []string{`"`, `\"`, `\\`, `\/`, `\n`, `\t`, `\b`, `\f`, `\r`, `\u00e9`, `\x`, `\`, "\x00", "\x1f", "\x7f", "\xff", `\\"`, `\\\"`}
	for pre := 0; pre < 40; pre++ {
		for _, sp := range specials {
			for _, post := range []string{`"`, `abcdefghijklmnopqrstuvwxyz0123456789"`, `\n\n\n\n\n\n\n\n\n"`, "\x01"} {
				full := []byte(string(bytes.Repeat([]byte{'a'}, pre)) + sp + post)
				for cut := 0; cut <= len(full); cut++ {
					checkStringBody(t, full[:cut])
				}
			}
		}
	}
}

// TestStringBodyRandom: dense mixes of plain bytes, quotes, backslashes,
// escape letters and control characters.
func TestStringBodyRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab\"\\\\\\nu/tbfr0\x00\x1f\x80 ")
	for range 50_000 {
		b := make([]byte, r.IntN(80))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		checkStringBody(t, b)
	}
}

// FuzzStringBody is differential: the vector scan, the word scan and the
// byte-wise definition agree on any input. `go test -fuzz FuzzStringBody
// ./jsonv/` looks for more.
func FuzzStringBody(f *testing.F) {
	for _, s := range []string{``, `abc"`, `\n\"x"`, `aaaaaaaaaaaaaaa\"aaaaaaaaaaaaaa"`, "aaaaaaaaaaaaaaaa\\\x01", `\u12`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkStringBody(t, b) })
}
