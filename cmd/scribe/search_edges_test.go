package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
)

// searchCorpus writes n sessions into a config folder; session i holds
// the word needle<i> once. It returns each session's transcript path.
func searchCorpus(t *testing.T, dir string, n int) []string {
	t.Helper()
	var paths []string
	for i := 0; i < n; i++ {
		cwd := fmt.Sprintf("/home/alice/src/p%d", i%2)
		proj := filepath.Join(dir, "projects", claudedir.SanitizePath(cwd))
		if err := os.MkdirAll(proj, 0o700); err != nil {
			t.Fatal(err)
		}
		id := fmt.Sprintf("5ea4c000-0000-4000-8000-%012d", i)
		p := filepath.Join(proj, id+".jsonl")
		var b strings.Builder
		for j := 0; j < 20; j++ {
			word := "filler"
			if j == 7 {
				word = fmt.Sprintf("needle%d", i)
			}
			b.WriteString(searchLine(id, cwd, fmt.Sprintf("5ea4c000-%04d-4000-8000-%012d", j, i), word+" common words here"))
		}
		if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

func searchLine(session, cwd, uuid, text string) string {
	return fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":%q},"uuid":%q,"timestamp":"2026-01-10T11:00:00.000Z","cwd":%q,"sessionId":%q,"version":"2.1.0"}`+"\n", text, uuid, cwd, session)
}

type searchHit struct {
	SessionID string `json:"sessionId"`
	UUID      string `json:"uuid"`
}

// searchOnce runs scribe search WORD --json and says what went wrong
// ("" when it found exactly want's session).
func searchOnce(t *testing.T, dir, word, want string) string {
	out, errs, code := runScribe(t, runOpts{}, "search", word, "--json", "--config-dir", dir)
	if code != 0 {
		return fmt.Sprintf("search %s: exit %d: %s", word, code, errs)
	}
	var hits []searchHit
	if err := json.Unmarshal([]byte(out), &hits); err != nil {
		return fmt.Sprintf("search %s: %v: %s", word, err, out)
	}
	if len(hits) != 1 || !strings.HasSuffix(want, hits[0].SessionID+".jsonl") {
		return fmt.Sprintf("search %s: %d hits %+v, want one in %s", word, len(hits), hits, filepath.Base(want))
	}
	return ""
}

// TestConcurrentSearchesNeverFail: six first searches at once on a fresh
// index, then six processes searching ten times each while transcripts
// grow: every search succeeds with the right hit (they failed with
// SQLITE_BUSY, and first searches rebuilt each other's index).
func TestConcurrentSearchesNeverFail(t *testing.T) {
	dir := t.TempDir()
	paths := searchCorpus(t, dir, 4)
	const procs, rounds = 6, 10
	var mu sync.Mutex
	var fails []string
	fail := func(s string) {
		mu.Lock()
		fails = append(fails, s)
		mu.Unlock()
	}
	run := func(rounds int) {
		var wg sync.WaitGroup
		for p := 0; p < procs; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := 0; r < rounds; r++ {
					i := (p + r) % len(paths)
					if msg := searchOnce(t, dir, fmt.Sprintf("needle%d", i), paths[i]); msg != "" {
						fail(msg)
					}
				}
			}()
		}
		wg.Wait()
	}
	run(1) // first searches, all at once, on no index
	if len(fails) > 0 {
		t.Fatalf("%d of %d first searches failed:\n%s", len(fails), procs, strings.Join(fails, "\n"))
	}

	stop := make(chan struct{})
	var appended atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			i := k % len(paths)
			f, err := os.OpenFile(paths[i], os.O_APPEND|os.O_WRONLY, 0o600)
			if err != nil {
				fail(err.Error())
				return
			}
			id := strings.TrimSuffix(filepath.Base(paths[i]), ".jsonl")
			cwd := fmt.Sprintf("/home/alice/src/p%d", i%2)
			_, err = f.WriteString(searchLine(id, cwd, fmt.Sprintf("5ea4c001-%04d-4000-8000-%012d", k%10000, k), fmt.Sprintf("growing%d more words", k)))
			f.Close()
			if err != nil {
				fail(err.Error())
				return
			}
			appended.Store(int64(k))
		}
	}()
	run(rounds)
	close(stop)
	<-done
	if len(fails) > 0 {
		t.Fatalf("%d of %d searches failed while transcripts grew:\n%s", len(fails), procs*rounds, strings.Join(fails, "\n"))
	}
	// What was appended last is found.
	k := appended.Load()
	if msg := searchOnce(t, dir, fmt.Sprintf("growing%d", k), paths[k%int64(len(paths))]); msg != "" {
		t.Fatal(msg)
	}
}

// TestSearchLongQuery: a query of 5,000 words answers with the right hit
// and says that words past the cap were dropped (such a query took past a
// minute: every repeated word was searched again).
func TestSearchLongQuery(t *testing.T) {
	dir := t.TempDir()
	paths := searchCorpus(t, dir, 2)
	var kept []string
	for i := 0; i < 64; i++ {
		kept = append(kept, fmt.Sprintf("alpha%d", i))
	}
	id := strings.TrimSuffix(filepath.Base(paths[1]), ".jsonl")
	f, err := os.OpenFile(paths[1], os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	uuid := "5ea4c002-0000-4000-8000-000000000001"
	if _, err := f.WriteString(searchLine(id, "/home/alice/src/p1", uuid, strings.Join(kept, " "))); err != nil {
		t.Fatal(err)
	}
	f.Close()
	words := make([]string, 0, 5000)
	for len(words) < 5000 {
		words = append(words, kept...)
		words = append(words, fmt.Sprintf("absent%d", len(words))) // past the cap: dropped
	}
	out, errs, code := runScribe(t, runOpts{}, append([]string{"search", "--json", "--config-dir", dir}, words[:5000]...)...)
	if code != 0 {
		t.Fatalf("a 5,000-word query: exit %d\n%s", code, errs)
	}
	var hits []searchHit
	if err := json.Unmarshal([]byte(out), &hits); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(hits) != 1 || hits[0].UUID != uuid {
		t.Fatalf("a 5,000-word query found %+v, want %s", hits, uuid)
	}
	if !strings.Contains(errs, "dropped") || !strings.Contains(errs, "64 distinct words") {
		t.Fatalf("the query's dropped words are not said:\n%s", errs)
	}
	// 5,000 words, two of them: each searched once, nothing dropped.
	out, errs, code = runScribe(t, runOpts{}, append([]string{"search", "--json", "--config-dir", dir}, strings.Fields(strings.Repeat("alpha1 Alpha2 ", 2500))...)...)
	hits = nil
	if err := json.Unmarshal([]byte(out), &hits); code != 0 || err != nil || len(hits) != 1 || hits[0].UUID != uuid || strings.Contains(errs, "dropped") {
		t.Fatalf("5,000 repeated words: exit %d, %v, %+v\n%s", code, err, hits, errs)
	}
}
