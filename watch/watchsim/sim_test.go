package watchsim

import "testing"

// A line of the archive that is only the start of a written line (and no
// JSON value) is a torn write; any other unknown line is not.
func TestTornPrefix(t *testing.T) {
	lines := [][]byte{[]byte(`{"uuid":"a","text":"hello"}`), []byte(`{"uuid":"b"}`)}
	for _, c := range []struct {
		l    string
		want bool
	}{
		{`{"uuid":"a","te`, true},
		{`{"uuid":"a","text":"hello"}`, false}, // whole: a written line, not a torn one
		{`{"uuid":"c","te`, false},             // the start of no written line
		{`{"uuid":"b"`, true},
		{`{}`, false},
	} {
		if got := tornPrefix([]byte(c.l), lines); got != c.want {
			t.Errorf("tornPrefix(%q) = %v, want %v", c.l, got, c.want)
		}
	}
}
