package core

import (
	"encoding/json"
	"testing"
)

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
