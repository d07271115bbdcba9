package core

import (
	"strings"
	"testing"
)

// BenchmarkParseEntry measures the scanner on a tool_result row heavy with
// escapes; the record benchmark proper lives in bench/.
func BenchmarkParseEntry(b *testing.B) {
	line := []byte(`{"parentUuid":"4f7e0000-0000-4000-8000-000000000001","isSidechain":false,"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_01","type":"tool_result","content":"` + strings.Repeat(`some tool output here\nwith \"quotes\" and more text `, 80) + `"}]},"uuid":"4f7e0000-0000-4000-8000-000000000002","timestamp":"2026-01-10T11:00:02.267Z","toolUseResult":{"stdout":"` + strings.Repeat("abcdefghij", 100) + `"},"userType":"external","cwd":"/home/alice/src/shop","sessionId":"0565a3a4-0000-4000-8000-000000000001","version":"2.1.332"}`)
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseEntryOwned(line); err != nil {
			b.Fatal(err)
		}
	}
}
