package transcript

import (
	"bytes"
	"strings"
	"testing"
)

func TestEachLineLongAndTorn(t *testing.T) {
	long := strings.Repeat("x", 3<<20)
	in := "a\n" + long + "\n\nlast"
	var got []string
	var term []bool
	if err := EachLine(bytes.NewReader([]byte(in)), func(l []byte, ok bool) {
		got = append(got, string(l))
		term = append(term, ok)
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[1] != long || got[2] != "" || got[3] != "last" || term[3] {
		t.Fatalf("lines %d, terminated %v", len(got), term)
	}
}
