package jsonv

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzAppendIndent: on every valid JSON value, AppendIndent writes what
// encoding/json's Indent writes.
func FuzzAppendIndent(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a":[]}`, `[{},[],{"b":{}}]`, ` { "a" : [ 1 , 2.5e3 , "x\"y" , null , true ] , "b" : { } } `,
		`{"message":{"role":"user","content":[{"type":"text","text":"a \\ b \n c"}]}}`, `"str"`, `-0.5`, `[[[[1]]]]`,
	} {
		f.Add([]byte(s), uint8(2))
	}
	f.Fuzz(func(t *testing.T, b []byte, n uint8) {
		if !json.Valid(b) {
			return
		}
		prefix, indent := string(bytes.Repeat([]byte{' '}, int(n%5))), "\t"[:n%2]+"  "
		var want bytes.Buffer
		if err := json.Indent(&want, b, prefix, indent); err != nil {
			t.Fatal(err)
		}
		got := AppendIndent(nil, b, prefix, indent)
		// Indent keeps the space after the value; AppendIndent drops it.
		if w := bytes.TrimRight(want.Bytes(), " \t\r\n"); !bytes.Equal(got, w) {
			t.Fatalf("%q:\n got %q\nwant %q", b, got, w)
		}
	})
}
