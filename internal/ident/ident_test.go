package ident

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// The regular expressions these functions replace, the specification they
// must keep.
var specs = []struct {
	name string
	re   *regexp.Regexp
	fn   func(string) bool
}{
	{"Token64", regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`), func(s string) bool { return Token(s, 64) }},
	{"Token128", regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`), func(s string) bool { return Token(s, 128) }},
	{"RunID", regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`), RunID},
	{"Tenant", regexp.MustCompile(`^[a-z0-9_-]{1,64}$`), Tenant},
	{"Hex64", regexp.MustCompile(`^[0-9a-f]{64}$`), func(s string) bool { return Hex(s, 64) }},
	{"SQLName", regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`), SQLName},
}

func check(t *testing.T, s string) {
	t.Helper()
	for _, sp := range specs {
		if got, want := sp.fn(s), sp.re.MatchString(s); got != want {
			t.Fatalf("%s(%q) = %v, the regexp says %v", sp.name, s, got, want)
		}
	}
}

func TestAgainstRegexps(t *testing.T) {
	fixed := []string{
		"", "a", "A", "_", "-", ".", ":", "0", "a.b", "a/b", "../x", "a b", "a\n", "\na",
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
		"550e8400-e29b-41d4-a716-446655440000", "550E8400-E29B-41D4-A716-446655440000",
		"550e8400-e29b-41d4-a716-44665544000g", "550e8400e29b-41d4-a716-4466554400000",
		"toolu_01ABC:run.1", "é", "a\x00", "\xff", "_tbl", "9tbl", "schema.tbl",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 65),
		strings.Repeat("a", 128), strings.Repeat("a", 129),
	}
	for _, s := range fixed {
		check(t, s)
	}
	// Random strings over an alphabet of every class's edges.
	alpha := []byte("azAZ09_-.:/ @[`{gG\x00\x7f\xc3\xa9fF")
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		n := r.IntN(140)
		if r.IntN(4) == 0 {
			n = []int{36, 63, 64, 65, 128, 129}[r.IntN(6)]
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = alpha[r.IntN(len(alpha))]
		}
		if n == 36 && r.IntN(2) == 0 {
			for _, i := range []int{8, 13, 18, 23} {
				b[i] = '-'
			}
		}
		check(t, string(b))
	}
}

func FuzzAgainstRegexps(f *testing.F) {
	f.Add("550e8400-e29b-41d4-a716-446655440000")
	f.Add("toolu_01:x.y")
	f.Fuzz(func(t *testing.T, s string) { check(t, s) })
}
