package core

import (
	"strings"
	"testing"
)

// BenchmarkParseEntry measures the entry parser (on jsonv, the one JSON
// scanner) on the two shapes that make up most transcript bytes: a
// tool_result row heavy with escapes, and a progress row whose output has
// an escape every few dozen bytes. The record benchmark proper lives in
// bench/.
func BenchmarkParseEntry(b *testing.B) {
	for name, line := range map[string][]byte{
		"tool_result": []byte(`{"parentUuid":"4f7e0000-0000-4000-8000-000000000001","isSidechain":false,"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_01","type":"tool_result","content":"` + strings.Repeat(`some tool output here\nwith \"quotes\" and more text `, 80) + `"}]},"uuid":"4f7e0000-0000-4000-8000-000000000002","timestamp":"2026-01-10T11:00:02.267Z","toolUseResult":{"stdout":"` + strings.Repeat("abcdefghij", 100) + `"},"userType":"external","cwd":"/home/alice/src/shop","sessionId":"0565a3a4-0000-4000-8000-000000000001","version":"2.1.332"}`),
		"progress":    []byte(`{"parentUuid":"4f7e0000-0000-4000-8000-000000000001","isSidechain":false,"type":"progress","data":{"type":"bash_progress","output":"` + strings.Repeat(`ok   github.com/acme/shop/internal/cart 0.412s coverage: 81.2% of statements\n`, 30) + `","fullOutput":"","elapsedTimeSeconds":12,"totalLines":84},"toolUseID":"bash-progress-12","parentToolUseID":"toolu_01","uuid":"4f7e0000-0000-4000-8000-000000000002","timestamp":"2026-01-10T11:00:02.267Z","userType":"external","cwd":"/home/alice/src/shop","sessionId":"0565a3a4-0000-4000-8000-000000000001","version":"2.1.332"}`),
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseEntryOwned(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
