package transcript

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestTruncateUTF16(t *testing.T) {
	s := strings.Repeat("a", 199) + "😀b"
	if got := TruncateUTF16(s, 200); got != strings.Repeat("a", 199) {
		t.Errorf("cut through a pair: %q", got)
	}
	if got := TruncateUTF16(s, 201); got != strings.Repeat("a", 199)+"😀" {
		t.Errorf("cut after a pair: %q", got)
	}
	if n := UTF16Len("a😀é"); n != 4 {
		t.Errorf("UTF16Len = %d", n)
	}
}

func TestJSTrimAndUnwrap(t *testing.T) {
	if got := JSTrim("\u00a0\u2028 x \ufeff"); got != "x" {
		t.Errorf("JSTrim = %q", got)
	}
	in := "see\n\n<pasted_content id=\"a1b2\">\nbody\n</pasted_content id=\"a1b2\">\n\nafter"
	if got := UnwrapPastedContent(in); got != "seebodyafter" {
		t.Errorf("UnwrapPastedContent = %q", got)
	}
	if got := UnwrapPastedContent(`<pasted_content id="XYZ!">`); got != `<pasted_content id="XYZ!">` {
		t.Errorf("a malformed block changed: %q", got)
	}
}

// AppendJSString writes what JSON.stringify writes: valid JSON that
// decodes to the same string, U+2028 and HTML characters left as they are.
func TestSanitizeJSTag(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain\x01ascii\t", "plain\x01ascii\t"}, // ASCII: as it is
		{"ｒｅｌｅａｓｅ－１", "release-1"},               // NFKC
		{"e\u0301cole", "\u00e9cole"},            // composed
		{"👩\u200D💻", "👩💻"},                       // ZWJ is Cf
		{"\u200Fa\u202Eb\uFEFF\U000E0041", "ab"}, // bidi, BOM, tag character
		{"\uE000x\U000F0000\U000E0080", "x"},     // private use, unassigned
		{"é\x00\x7f", "é\x00\x7f"},               // Cc stays
		{"a\u200B\u0301", "á"},                   // a second round composes
	} {
		got, err := SanitizeJSTag(c.in)
		if err != nil || got != c.want {
			t.Errorf("SanitizeJSTag(%+q) = %+q, %v; want %+q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"\U0001FAE9", "a" + strings.Repeat("\u0301", 31), "é\xff"} {
		if _, err := SanitizeJSTag(in); !errors.Is(err, ErrUnreproducibleUnicode) {
			t.Errorf("SanitizeJSTag(%+q): %v, want ErrUnreproducibleUnicode", in, err)
		}
	}
}

// The table of code points where Go's Unicode tables and node's disagree
// is what its generator makes with the node on PATH (skipped, and said so,
// without node).
func TestJSUnicodeTableIsCurrent(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("skipped: no node on PATH to compare Unicode tables with")
	}
	out, err := exec.Command("go", "run", "./internal/jsunicodegen").Output()
	if err != nil {
		t.Fatalf("run jsunicodegen: %v", err)
	}
	have, err := os.ReadFile("jsunicode_table.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(have) {
		t.Fatal("transcript/jsunicode_table.go is stale: go run ./transcript/internal/jsunicodegen > transcript/jsunicode_table.go")
	}
}

// TestCleanSidecarTitle pins the 0.3.337 rule; the listing and fork tests
// compare it with the SDK itself (sinks/jsonl TestSDK337*).
func TestCleanSidecarTitle(t *testing.T) {
	for in, want := range map[string]string{
		"  a\u0007\u0008b  ":              "a b",
		"x\u200b\u200by":                  "x y",
		"\u00a0t\u2028u\ufeff":            "t u",
		strings.Repeat("é", 250):          strings.Repeat("é", 200),
		" \u0085keep\u0085":               "keep",
		"tab\tsep":                        "tab sep",
		"\u3000wide\u3000":                "wide",
		"end " + strings.Repeat("z", 198): "end " + strings.Repeat("z", 196),
		// ZWJ/ZWNJ next to a non-ASCII character survive, alone in their run.
		"👨\u200d👩\u200d👧":      "👨\u200d👩\u200d👧",
		"می\u200cخواهم":        "می\u200cخواهم",
		"a\u200db":             "a b",
		"é\u200b\u200d\u200cx": "é\u200dx",
		"é\u0007\u200dx":       "é x", // a control character in the run
		"\u200dé":              "\u200dé",
		// The cut comes before the runs are collapsed.
		strings.Repeat("\u200b", 150) + strings.Repeat("b", 100): strings.Repeat("b", 50),
	} {
		if got := CleanSidecarTitle(in); got != want {
			t.Errorf("CleanSidecarTitle(%q) = %q, want %q", in, got, want)
		}
	}
}
