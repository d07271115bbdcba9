package usage

import (
	"testing"
	"time"
)

func BenchmarkRowHash(b *testing.B) {
	r := &Row{Session: "0b5e55ed-0000-4000-8000-000000000001", Time: time.Now(), Model: "claude-sonnet-4-5-20250929", MessageID: "msg_01XFDUDYJgAACzvnptvVoYEL", RequestID: "req_011CTtaQrT8sP7R4kFJHbNjX", Input: 3, Output: 500, CacheRead: 20000}
	f := pathHash("/home/u/.claude/projects/-home-dev-src-auth-service-0/0b5e55ed-0000-4000-8000-000000000001.jsonl")
	var s uint64
	for i := 0; i < b.N; i++ {
		s += rowHash(f, i, r)
	}
	_ = s
}
