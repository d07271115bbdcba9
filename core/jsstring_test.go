package core

import (
	"encoding/json"
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
func TestAppendJSString(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\n\n\t\x01", "<a&b>", "\u2028\u2029", "é😀"} {
		b := AppendJSString(nil, s)
		var back string
		if err := json.Unmarshal(b, &back); err != nil || back != s {
			t.Errorf("%q -> %s -> %q (%v)", s, b, back, err)
		}
	}
	if got := string(AppendJSString(nil, "<\u2028>")); got != "\"<\u2028>\"" {
		t.Errorf("AppendJSString escaped what JSON.stringify keeps: %s", got)
	}
}
