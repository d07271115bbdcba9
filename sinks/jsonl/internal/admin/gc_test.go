package admin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// gcNow is the clock of the gc tests.
var gcNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func gcID(n int) string { return fmt.Sprintf("6c000000-0000-4000-8000-%012d", n) }

// gcSession writes a transcript whose entries end at last, padded to
// about size bytes, and sets its file mtime to mtime.
func gcSession(t *testing.T, l Layout, n int, last, mtime time.Time, size int) string {
	t.Helper()
	id := gcID(n)
	dir := l.ProjectDir("/work/gc")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := 0; b.Len() < size || i < 2; i++ {
		fmt.Fprintf(&b, `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"p%d %s"},"uuid":"%s","timestamp":"%s","cwd":"/work/gc","sessionId":"%s"}`+"\n",
			i, strings.Repeat("x", 200), fmt.Sprintf("6c00%04d-0000-4000-8000-%012d", i, n), last.Add(-time.Duration(1000-i)*time.Minute).Format(time.RFC3339Nano), id)
	}
	// The last chain entry, then a metadata line without a timestamp.
	fmt.Fprintf(&b, `{"parentUuid":null,"type":"assistant","uuid":"%s","timestamp":"%s","sessionId":"%s"}`+"\n", gcID(n+9000), last.Format(time.RFC3339Nano), id)
	fmt.Fprintf(&b, `{"type":"last-prompt","lastPrompt":"p","sessionId":"%s"}`+"\n", id)
	p := claudedir.MainFile(dir, id)
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return id
}

func gcByID(rep GCReport) map[string]GCSession {
	m := map[string]GCSession{}
	for _, s := range rep.Sessions {
		m[s.SessionID] = s
	}
	return m
}

// gc is keyed on the last activity inside the log: an old mtime with a
// recent last entry is kept, a fresh mtime with an old last entry goes; a
// session a live writer holds and one active in the last hour are kept
// whatever their age; --dry-run moves nothing; what goes is in the trash
// and restores byte for byte.
func TestGCKeysOnLastActivityNeverMtime(t *testing.T) {
	l := Layout{Layout: layout.Layout{ConfigDir: t.TempDir()}}
	old := gcNow.Add(-90 * 24 * time.Hour)
	touchedOld := gcSession(t, l, 1, gcNow.Add(-2*time.Hour), old, 1000)       // mtime old, activity 2 h ago
	quietFresh := gcSession(t, l, 2, gcNow.Add(-60*24*time.Hour), gcNow, 1000) // mtime now, activity 60 days ago
	live := gcSession(t, l, 3, old, old, 1000)
	recent := gcSession(t, l, 4, gcNow.Add(-30*time.Minute), old, 1000)
	lk, err := layout.AcquireLock(context.Background(), l.LockFile(live), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	src, _ := os.ReadFile(claudedir.MainFile(l.ProjectDir("/work/gc"), quietFresh))

	opt := GCOptions{OlderThan: 30 * 24 * time.Hour, DryRun: true, Now: gcNow}
	rep, err := l.GC(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	got := gcByID(rep)
	want := map[string]string{touchedOld: "keep", quietFresh: "collect", live: "keep", recent: "keep"}
	for id, act := range want {
		if got[id].Action != act {
			t.Errorf("%s: %s (%s), want %s", id, got[id].Action, got[id].Reason, act)
		}
	}
	if got[live].Reason != "a live writer holds it" || got[recent].Reason != "activity in the last hour" {
		t.Errorf("reasons: live %q, recent %q", got[live].Reason, got[recent].Reason)
	}
	if _, err := os.Stat(claudedir.MainFile(l.ProjectDir("/work/gc"), quietFresh)); err != nil {
		t.Fatalf("a dry run moved a session: %v", err)
	}
	// A quota of 0 bytes left: still never the live or recent one.
	rep, err = l.GC(context.Background(), GCOptions{MaxSize: 1, Now: gcNow})
	if err != nil {
		t.Fatal(err)
	}
	got = gcByID(rep)
	if got[live].Action != "keep" || got[recent].Action != "keep" || got[touchedOld].Action != "collect" || rep.QuotaMet == nil || *rep.QuotaMet {
		t.Fatalf("quota gc: %+v", rep)
	}
	if _, err := os.Stat(claudedir.MainFile(l.ProjectDir("/work/gc"), quietFresh)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("gc left the collected session in place: %v", err)
	}
	if _, err := l.RestoreTrash(context.Background(), quietFresh, 0); err != nil {
		t.Fatal(err)
	}
	back, _ := os.ReadFile(claudedir.MainFile(l.ProjectDir("/work/gc"), quietFresh))
	if string(back) != string(src) {
		t.Fatal("the restored transcript differs from the collected one")
	}
}

// The quota mode takes the oldest activity first and stops as soon as the
// rest fits.
func TestGCQuotaStopsAtTheQuota(t *testing.T) {
	l := Layout{Layout: layout.Layout{ConfigDir: t.TempDir()}}
	var ids []string
	var sizes []int64
	for i := range 6 {
		// Session i was last active i+2 days ago: 5 is the oldest.
		id := gcSession(t, l, 10+i, gcNow.Add(-time.Duration(i+2)*24*time.Hour), gcNow, 4000)
		n, err := SessionBytes(l.ProjectDir("/work/gc"), id)
		if err != nil {
			t.Fatal(err)
		}
		ids, sizes = append(ids, id), append(sizes, n)
	}
	var total int64
	for _, n := range sizes {
		total += n
	}
	quota := total - sizes[5] - sizes[4] + 1 // dropping the two oldest is enough, one is not
	rep, err := l.GC(context.Background(), GCOptions{MaxSize: quota, Now: gcNow})
	if err != nil {
		t.Fatal(err)
	}
	got := gcByID(rep)
	for i, id := range ids {
		want := "keep"
		if i >= 4 {
			want = "collect"
		}
		if got[id].Action != want {
			t.Errorf("session %d (%d days quiet): %s, want %s", i, i+2, got[id].Action, want)
		}
	}
	if rep.Collected != 2 || rep.BytesAfter > quota || rep.QuotaMet == nil || !*rep.QuotaMet {
		t.Fatalf("report: collected %d, after %d, quota %d, met %v", rep.Collected, rep.BytesAfter, quota, rep.QuotaMet)
	}
	items, _, _ := l.ListTrash()
	if len(items) != 2 {
		t.Fatalf("the trash holds %d items, want 2", len(items))
	}
}

// LastActivity reads past the last 64 KiB when the tail has no timestamp.
func TestLastActivityBeyondTheTail(t *testing.T) {
	l := Layout{Layout: layout.Layout{ConfigDir: t.TempDir()}}
	last := gcNow.Add(-5 * time.Hour)
	id := gcSession(t, l, 30, last, gcNow, 500)
	p := claudedir.MainFile(l.ProjectDir("/work/gc"), id)
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 600 {
		fmt.Fprintf(f, `{"type":"tag","tag":"%s","sessionId":"%s"}`+"\n", strings.Repeat("t", 200), id)
	}
	f.Close()
	got, ok, err := LastActivity(p)
	if err != nil || !ok || !got.Equal(last) {
		t.Fatalf("LastActivity = %v, %v, %v; want %v", got, ok, err, last)
	}
}

// doctor's forecast: Claude Code's sweep takes the sessions whose mtime is
// past cleanupPeriodDays, even one active an hour ago.
func TestCleanupForecast(t *testing.T) {
	l := Layout{Layout: layout.Layout{ConfigDir: t.TempDir()}}
	old := gcNow.Add(-40 * 24 * time.Hour)
	victim := gcSession(t, l, 40, gcNow.Add(-time.Hour), old, 500)
	gcSession(t, l, 41, old, gcNow.Add(-10*24*time.Hour), 500)
	set, err := l.ReadCleanupSetting()
	if err != nil || set.Days != 30 || set.Source != "default" {
		t.Fatalf("default setting: %+v, %v", set, err)
	}
	os.WriteFile(filepath.Join(l.ConfigDir, "settings.json"), []byte(`{"cleanupPeriodDays": 45}`), 0o600)
	if set, _ = l.ReadCleanupSetting(); set.Days != 45 {
		t.Fatalf("settings.json: %+v", set)
	}
	if v, _ := l.CleanupForecast(45, gcNow); len(v) != 0 {
		t.Fatalf("45 days: %+v", v)
	}
	v, err := l.CleanupForecast(30, gcNow)
	if err != nil || len(v) != 1 || v[0].SessionID != victim || v[0].LastActivity == nil {
		t.Fatalf("30 days: %+v, %v", v, err)
	}
	os.WriteFile(filepath.Join(l.ConfigDir, "settings.json"), []byte(`{"cleanupPeriodDays": 0}`), 0o600)
	if _, err := l.ReadCleanupSetting(); err == nil {
		t.Fatal("cleanupPeriodDays 0 was accepted")
	}
}
