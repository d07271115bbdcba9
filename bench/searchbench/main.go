// Command searchbench measures scribe's full-text search index: build speed
// (MB/s of transcript indexed), query latency (p50/p99) on many sessions,
// the index's size as a fraction of the data, the cost of the freshness
// check every search makes, and an incremental update.
//
//	go run ./bench/searchbench -sessions 10000 -mb 500 -out bench/results/search.md
//
// The data is the real transcripts of testdata/corpus, repeated round robin
// into -sessions new sessions (new session ids; a session holds successive
// corpus transcripts, the last cut at a line boundary) of about -mb MiB in
// all.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/search"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

func main() {
	var (
		sessions = flag.Int("sessions", 10000, "sessions to make")
		mb       = flag.Int("mb", 500, "MiB of transcripts in all")
		queries  = flag.Int("queries", 300, "queries to time")
		corpus   = flag.String("corpus", "testdata/corpus", "folder of real transcripts (*.jsonl, searched recursively)")
		dir      = flag.String("dir", "", "work folder (default: a temporary one, removed at the end)")
		out      = flag.String("out", "", "also write the report (Markdown) to this file")
		mcpRuns  = flag.Bool("mcp", true, "also time scribe mcp's search_sessions round trips (a real MCP client over stdio) and grep -rlF of the same queries")
	)
	flag.Parse()
	work := *dir
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "searchbench-"); err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(work)
	}
	l := jsonl.Layout{ConfigDir: filepath.Join(work, "config")}
	srcs, err := readCorpus(*corpus)
	if err != nil {
		log.Fatal(err)
	}
	dataBytes, words, err := lay(l, srcs, *sessions, int64(*mb)<<20)
	if err != nil {
		log.Fatal(err)
	}
	var rep strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&rep, format, a...); fmt.Printf(format, a...) }
	p("# search index benchmark\n\n%s, %d sessions, %.1f MiB of transcripts made from %d real ones (%s)\n\n",
		time.Now().UTC().Format("2006-01-02"), *sessions, float64(dataBytes)/(1<<20), len(srcs), *corpus)

	ctx := context.Background()
	start := time.Now()
	x, err := search.Open(l)
	if err != nil {
		log.Fatal(err)
	}
	st, err := x.Sync(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	build := time.Since(start)
	x.Close()
	idx := indexSize(l)
	p("| measure | value |\n|---|---|\n")
	p("| index build | %.1f s for %.1f MiB: **%.1f MiB/s** (%d documents) |\n", build.Seconds(), float64(st.Bytes)/(1<<20), float64(st.Bytes)/(1<<20)/build.Seconds(), st.Documents)
	p("| index size | %.1f MiB: **%.2f** of the data |\n", float64(idx)/(1<<20), float64(idx)/float64(dataBytes))

	if x, err = search.Open(l); err != nil {
		log.Fatal(err)
	}
	defer x.Close()
	var checks []time.Duration
	for range 5 {
		t0 := time.Now()
		if _, err := x.Sync(ctx, nil); err != nil {
			log.Fatal(err)
		}
		checks = append(checks, time.Since(t0))
	}
	p("| freshness check alone, nothing changed (every search runs it, beside the query) | p50 %s, max %s |\n", pct(checks, 50), pct(checks, 100))
	qs := queryList(words, *queries)
	// The same queries for bench/searchbench/bleve, run on the same -dir.
	if err := os.WriteFile(filepath.Join(work, "queries.txt"), []byte(strings.Join(qs, "\n")+"\n"), 0o600); err != nil {
		log.Fatal(err)
	}
	var lat []time.Duration
	hits := 0
	for _, q := range qs {
		t0 := time.Now()
		h, err := x.Search(ctx, search.Query{Text: q, Limit: 20})
		if err != nil {
			log.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		hits += len(h)
	}
	p("| query alone (top 20, BM25, snippet), %d queries of 1–2 words or a phrase | p50 %s, p99 %s (%.1f hits on average) |\n",
		*queries, pct(lat, 50), pct(lat, 99), float64(hits)/float64(*queries))
	// What `scribe search` pays: open the index, the freshness check beside
	// the query, close.
	var full, opens []time.Duration
	for _, q := range qs {
		t0 := time.Now()
		y, err := search.Open(l)
		if err != nil {
			log.Fatal(err)
		}
		opens = append(opens, time.Since(t0))
		if _, st, err := y.SearchFresh(ctx, search.Query{Text: q, Limit: 20}, nil); err != nil || st.Changed != 0 {
			log.Fatalf("search %q: %v (%d folders changed)", q, err, st.Changed)
		}
		y.Close()
		full = append(full, time.Since(t0))
	}
	p("| **search as `scribe search` runs it** (open, freshness check beside the query, close), the same queries | **p50 %s, p99 %s** (open alone p50 %s) |\n",
		pct(full, 50), pct(full, 99), pct(opens, 50))
	t0 := time.Now()
	n, err := appendTo(l, 100)
	if err != nil {
		log.Fatal(err)
	}
	if st, err = x.Sync(ctx, nil); err != nil {
		log.Fatal(err)
	}
	p("| incremental update: one line appended to %d sessions | %s (%d files read from their offset, %d reindexed) |\n",
		n, time.Since(t0).Round(time.Millisecond), st.Appended, st.Reindexed)
	if *mcpRuns {
		if err := benchMCP(ctx, work, l, qs, p); err != nil {
			log.Fatal(err)
		}
	}
	if *out != "" {
		if err := os.WriteFile(*out, []byte(rep.String()), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// queryList draws n queries: one word, two words, or a one-word phrase.
func queryList(words []string, n int) []string {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]string, n)
	for i := range out {
		q := words[r.IntN(len(words))]
		switch i % 3 {
		case 1:
			q += " " + words[r.IntN(len(words))]
		case 2:
			q = `"` + q + `"`
		}
		out[i] = q
	}
	return out
}

type source struct {
	id   string
	data []byte
}

func readCorpus(dir string) ([]source, error) {
	idRE := regexp.MustCompile(`"sessionId":"([0-9a-f-]{36})"`)
	var out []source
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if m := idRE.FindSubmatch(b); m != nil {
			out = append(out, source{id: string(m[1]), data: b})
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	if len(out) == 0 && err == nil {
		err = fmt.Errorf("no transcripts with a sessionId under %s", dir)
	}
	return out, err
}

// lay writes n sessions of about total/n bytes each, copies of the corpus
// cut at a line boundary under new ids, in 20 projects, and returns the
// bytes written and words to query.
func lay(l jsonl.Layout, srcs []source, n int, total int64) (int64, []string, error) {
	wordRE := regexp.MustCompile(`"text":"([A-Za-z]{5,12})\b`)
	per := total / int64(n)
	var written int64
	seen := map[string]bool{}
	var words []string
	next := 0
	for i := range n {
		// Successive corpus transcripts (each under the new id) until the
		// session has its share, the last one cut at a line boundary.
		id := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
		var data []byte
		for int64(len(data)) < per {
			s := srcs[next%len(srcs)]
			next++
			part := bytes.ReplaceAll(s.data, []byte(s.id), []byte(id))
			if room := per - int64(len(data)); int64(len(part)) > room {
				if j := bytes.LastIndexByte(part[:room], '\n'); j > 0 {
					part = part[:j+1]
				} else if len(data) > 0 {
					break
				}
			}
			data = append(data, part...)
		}
		dir := l.ProjectDir(fmt.Sprintf("/bench/project-%02d", i%20))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return 0, nil, err
		}
		if err := os.WriteFile(claudedir.MainFile(dir, id), data, 0o600); err != nil {
			return 0, nil, err
		}
		written += int64(len(data))
		if i < len(srcs) {
			for _, m := range wordRE.FindAllSubmatch(data, 20) {
				if w := strings.ToLower(string(m[1])); !seen[w] {
					seen[w] = true
					words = append(words, w)
				}
			}
		}
	}
	sort.Strings(words)
	return written, words, nil
}

// appendTo appends one user line to the first k sessions.
func appendTo(l jsonl.Layout, k int) (int, error) {
	files, err := l.SessionFiles(context.Background(), "")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range files {
		if n == k || f.AgentID != "" {
			continue
		}
		line := `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"appended marmalade"},"uuid":"ffffffff-0000-4000-8000-000000000001","timestamp":"2026-01-01T00:00:00.000Z","sessionId":"` + f.SessionID + `"}` + "\n"
		fh, err := os.OpenFile(f.Path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return n, err
		}
		_, err = io.WriteString(fh, line)
		fh.Close()
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func indexSize(l jsonl.Layout) int64 {
	var n int64
	for _, s := range []string{"", "-wal", "-shm"} {
		if fi, err := os.Stat(l.SearchIndexFile() + s); err == nil {
			n += fi.Size()
		}
	}
	return n
}

func pct(d []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[min(i, len(s)-1)].Round(10 * time.Microsecond)
}
