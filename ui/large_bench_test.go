package ui_test

import (
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/internal/gen"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// BenchmarkLargeSessionPage is GET /sessions/<id> on bench -case ui's
// 50 MB session without a compact boundary (internal/gen.LargeSession,
// seed 2, 400 subagents): the server's part of its page, its
// conversation kept by the store's read cache after the first.
func BenchmarkLargeSessionPage(b *testing.B) { benchLargePage(b, false) }

// BenchmarkLargeSessionPageCold is the same with the transcript touched
// before each request: the page as a session's first visit makes it.
func BenchmarkLargeSessionPageCold(b *testing.B) { benchLargePage(b, true) }

func benchLargePage(b *testing.B, cold bool) {
	dir := b.TempDir()
	res, err := gen.LargeSession(jsonl.Layout{ConfigDir: dir}.ProjectDir("/home/dev/src/app"), gen.LargeOptions{CWD: "/home/dev/src/app", Seed: 2, NoBoundary: true, Progress: 17000})
	if err != nil {
		b.Fatal(err)
	}
	h, _ := newHandler(b, dir)
	get(b, h, "/sessions/"+res.SessionID)
	b.ResetTimer()
	for range b.N {
		if cold {
			b.StopTimer()
			now := time.Now()
			if err := os.Chtimes(res.Path, now, now); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/sessions/"+res.SessionID, nil))
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}
