package ui_test

import (
	"net/http/httptest"
	"testing"
)

// BenchmarkListPage is GET / (the first page) on 10,000 sessions, the
// listing kept: the server's part of the list's first page.
func BenchmarkListPage(b *testing.B) {
	dir := b.TempDir()
	for n := range 10000 {
		conversation(b, dir, n, 1)
	}
	h, _ := newHandler(b, dir)
	get(b, h, "/")
	b.ResetTimer()
	for range b.N {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}
