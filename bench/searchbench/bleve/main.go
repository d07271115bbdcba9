// Command bleve indexes and queries the data bench/searchbench laid in -dir
// with bleve instead of SQLite FTS5, so that the engines are compared on
// the same documents and the same queries (bench/results/search.md).
//
//	go run ./bench/searchbench -dir /tmp/sb ...   # lays /tmp/sb/config and /tmp/sb/queries.txt
//	cd bench/searchbench/bleve && go run . -dir /tmp/sb
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"

	"github.com/e0dc0000/scribe/search"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/transcript"
)

type doc struct {
	Text    string `json:"text"`
	Session string `json:"session"`
	UUID    string `json:"uuid"`
	Role    string `json:"role"`
}

func main() {
	dir := flag.String("dir", "", "the folder bench/searchbench laid (-dir there)")
	flag.Parse()
	l := jsonl.Layout{ConfigDir: filepath.Join(*dir, "config")}
	path := filepath.Join(*dir, "bleve.idx")
	os.RemoveAll(path)
	start := time.Now()
	idx, err := bleve.New(path, bleve.NewIndexMapping())
	if err != nil {
		log.Fatal(err)
	}
	files, err := l.SessionFiles(context.Background(), "")
	if err != nil {
		log.Fatal(err)
	}
	var bytes int64
	n := 0
	b := idx.NewBatch()
	for _, f := range files {
		fh, err := os.Open(f.Path)
		if err != nil {
			log.Fatal(err)
		}
		err = transcript.EachLine(fh, func(line []byte, _ bool) {
			bytes += int64(len(line)) + 1
			for _, d := range search.Documents(line) {
				b.Index(fmt.Sprint(n), doc{Text: d.Text, Session: f.SessionID, UUID: d.UUID, Role: d.Role})
				n++
			}
		})
		fh.Close()
		if err != nil {
			log.Fatal(err)
		}
		if b.Size() >= 1000 {
			if err := idx.Batch(b); err != nil {
				log.Fatal(err)
			}
			b = idx.NewBatch()
		}
	}
	if err := idx.Batch(b); err != nil {
		log.Fatal(err)
	}
	build := time.Since(start)
	var size int64
	filepath.Walk(path, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			size += fi.Size()
		}
		return nil
	})
	fmt.Printf("| bleve index build | %.1f s for %.1f MiB: **%.1f MiB/s** (%d documents) |\n", build.Seconds(), float64(bytes)/(1<<20), float64(bytes)/(1<<20)/build.Seconds(), n)
	fmt.Printf("| bleve index size | %.1f MiB: **%.2f** of the data |\n", float64(size)/(1<<20), float64(size)/float64(bytes))
	qf, err := os.Open(filepath.Join(*dir, "queries.txt"))
	if err != nil {
		log.Fatal(err)
	}
	defer qf.Close()
	var lat []time.Duration
	hits := 0
	sc := bufio.NewScanner(qf)
	for sc.Scan() {
		q := sc.Text()
		var req *bleve.SearchRequest
		if strings.HasPrefix(q, `"`) {
			req = bleve.NewSearchRequestOptions(bleve.NewMatchPhraseQuery(strings.Trim(q, `"`)), 20, 0, false)
		} else {
			mq := bleve.NewMatchQuery(q)
			mq.SetOperator(1) // and
			req = bleve.NewSearchRequestOptions(mq, 20, 0, false)
		}
		req.Highlight = bleve.NewHighlight()
		req.Fields = []string{"session", "uuid", "role"}
		t0 := time.Now()
		res, err := idx.Search(req)
		if err != nil {
			log.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		hits += len(res.Hits)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p := func(pc int) time.Duration { return lat[max((len(lat)*pc+99)/100-1, 0)].Round(10 * time.Microsecond) }
	fmt.Printf("| bleve query (top 20, highlight), the same %d queries | **p50 %s, p99 %s** (%.1f hits on average) |\n", len(lat), p(50), p(99), float64(hits)/float64(len(lat)))
}
