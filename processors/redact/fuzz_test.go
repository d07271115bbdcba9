package redact

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzRedactLine: on any line, Redact does not panic; a valid JSON line
// stays valid JSON with the same number of values changed only inside
// strings; bytes outside the findings are kept; a second pass finds
// nothing new.
func FuzzRedactLine(f *testing.F) {
	for _, s := range []string{
		`{"type":"user","message":{"content":"GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789"}}`,
		`{"a":"postgres://u:p4ssw0rd1@h/db","b":"p4ssw0rd1 \u00e9 \"q\""}`,
		`{"a":"-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----"}`,
		`{"a":["DB_PASSWORD=Xy12Ab34Cd56","x\\"],"uuid":"AKIAABCDEFGHIJKLMNOP"}`,
		`{"k":"Authorization: Bearer abcdef0123456789abcdef","n":1.5e3,"t":true,"z":null}`,
		`not json at all sk_live_abcdefghijklmnopqrstuvwx`,
	} {
		f.Add([]byte(s))
	}
	r, err := NewRedactor(DefaultConfig(), []byte("fuzz key, 32 bytes of it, really"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		out, fs := r.Redact(line)
		if len(fs) == 0 {
			if !bytes.Equal(out, line) {
				t.Fatal("changed without findings")
			}
			return
		}
		at := 0
		for _, f := range fs {
			if f.Start < at || f.End <= f.Start || f.End > len(line) {
				t.Fatalf("finding out of order or range: %+v", f)
			}
			at = f.End
		}
		if json.Valid(line) && !json.Valid(out) {
			t.Fatalf("valid JSON became invalid:\n%s\n%s", line, out)
		}
		fresh, _ := NewRedactor(DefaultConfig(), []byte("fuzz key, 32 bytes of it, really"))
		if again, fs2 := fresh.Redact(out); json.Valid(line) && len(fs2) > 0 {
			t.Fatalf("a second pass found %+v in\n%s", fs2, again)
		}
	})
}
