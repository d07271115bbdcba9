package main

// -case backends: record throughput into the PostgreSQL and S3 stores
// through scribe's pipeline, against each server's own bulk path for the
// same entries: one COPY of every row into the same table (PostgreSQL), and
// one PutObject per transcript holding all its lines (S3). The servers are
// the ones the tests run (internal/testbackend): a PostgreSQL cluster and
// versitygw, on loopback.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/testbackend"
	"github.com/e0dc0000/scribe/sinks/backend"
	"github.com/e0dc0000/scribe/sinks/postgres"
	"github.com/e0dc0000/scribe/sinks/s3"
)

// backendWorkload is the generated entries, parsed and routed, in memory.
type backendWorkload struct {
	entries []core.Entry
	bytes   int64
	// byTranscript holds each transcript's lines (the S3 peer's objects).
	byTranscript map[string][]byte
}

func loadBackendWorkload(o options, dir string) (*backendWorkload, error) {
	in := filepath.Join(dir, "backends.jsonl")
	if err := generate(in, o.Sessions, int64(o.CloudMB)<<20, o.Seed); err != nil {
		return nil, err
	}
	w := &backendWorkload{byTranscript: map[string][]byte{}}
	rt := newRouter(1)
	var ready []core.Entry
	err := eachLine([]string{in}, func(fi int, line []byte) error {
		if blank(line) {
			return nil
		}
		e, err := core.ParseEntry(line)
		if err != nil {
			return err
		}
		ready = rt.route(fi, e, ready)
		for _, e := range ready {
			w.entries = append(w.entries, e)
			w.bytes += int64(len(e.Raw)) + 1
			sub, _ := backend.EntrySubpath(&e)
			k := claudedir.SanitizePath(cwdOf(w, e)) + "/" + e.SessionID + "/" + sub
			w.byTranscript[k] = append(append(w.byTranscript[k], e.Raw...), '\n')
		}
		return nil
	})
	return w, err
}

// cwdOf is the cwd an entry's session is filed under: its first entry's.
func cwdOf(w *backendWorkload, e core.Entry) string {
	if e.CWD != "" {
		return e.CWD
	}
	for _, x := range w.entries {
		if x.SessionID == e.SessionID && x.CWD != "" {
			return x.CWD
		}
	}
	return "/"
}

type backendRun struct {
	Case    string
	Elapsed time.Duration
}

// runScribeInto submits every entry through a pipeline whose only sink is
// the store, then flushes and shuts it down.
func runScribeInto(ctx context.Context, w *backendWorkload, id string, sink core.Sink) (time.Duration, error) {
	t0 := time.Now()
	opts := core.PipelineOptions{Sinks: []core.NamedSink{{ID: core.MustParseID(id), Sink: sink}}}
	if sd, ok := sink.(core.Seeder); ok {
		opts.Seeder = sd
	}
	pl, err := core.NewPipeline(opts)
	if err != nil {
		return 0, err
	}
	if err := pl.Start(ctx); err != nil {
		return 0, err
	}
	for _, e := range w.entries {
		if _, err := pl.Submit(ctx, e); err != nil {
			_ = pl.Shutdown(ctx)
			return 0, fmt.Errorf("submit: %w", err)
		}
	}
	if err := pl.Flush(ctx); err != nil {
		_ = pl.Shutdown(ctx)
		return 0, fmt.Errorf("flush: %w", err)
	}
	if err := pl.Shutdown(ctx); err != nil {
		return 0, err
	}
	d := time.Since(t0)
	st := pl.Stats()
	if len(st.Sinks) == 1 {
		fmt.Fprintf(os.Stderr, "bench: %s counters %v\n", id, st.Sinks[0].Counters)
	}
	if len(st.Sinks) != 1 || st.Sinks[0].Written != int64(len(w.entries)) || st.Sinks[0].WriteErrors != 0 {
		return 0, fmt.Errorf("%s: the sink wrote %+v, want %d entries", id, st.Sinks, len(w.entries))
	}
	return d, nil
}

func pgCase(ctx context.Context, w *backendWorkload, copyPeer bool) (time.Duration, error) {
	url, err := testbackend.NewDatabase()
	if err != nil {
		return 0, err
	}
	cfg := postgres.DefaultConfig()
	cfg.URL = url
	st, err := postgres.New(*cfg, nil, "/")
	if err != nil {
		return 0, err
	}
	var d time.Duration
	if copyPeer {
		// The table, untimed; then one COPY of the same rows scribe writes.
		if err := st.Start(ctx); err != nil {
			return 0, err
		}
		_ = st.Shutdown(ctx)
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return 0, err
		}
		defer conn.Close(ctx)
		t0 := time.Now()
		rows := make([][]any, 0, len(w.entries))
		for i := range w.entries {
			e := &w.entries[i]
			sub, _ := backend.EntrySubpath(e)
			var subp, u any
			if sub != "" {
				subp = sub
			}
			if e.UUID != "" {
				u = e.UUID
			}
			rows = append(rows, []any{claudedir.SanitizePath(cwdOf(w, *e)), e.SessionID, subp, u, string(e.Raw), string(e.Raw)})
		}
		n, err := conn.CopyFrom(ctx, pgx.Identifier{postgres.DefaultTable},
			[]string{"project_key", "session_id", "subpath", "uuid", "entry", "raw"}, pgx.CopyFromRows(rows))
		if err != nil {
			return 0, fmt.Errorf("copy: %w", err)
		}
		d = time.Since(t0)
		if n != int64(len(w.entries)) {
			return 0, fmt.Errorf("copy wrote %d rows, want %d", n, len(w.entries))
		}
	} else if d, err = runScribeInto(ctx, w, "postgres/bench", st); err != nil {
		return 0, err
	}
	// Verify: every row is there.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+postgres.DefaultTable).Scan(&n); err != nil || n != len(w.entries) {
		return 0, fmt.Errorf("the table holds %d rows (%v), want %d", n, err, len(w.entries))
	}
	return d, nil
}

func s3Case(ctx context.Context, w *backendWorkload, putPeer bool) (time.Duration, error) {
	srv, err := testbackend.NewBucket()
	if err != nil {
		return 0, err
	}
	var d time.Duration
	if putPeer {
		c := srv.Client()
		keys := make([]string, 0, len(w.byTranscript))
		for k := range w.byTranscript {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t0 := time.Now()
		for _, k := range keys {
			body := w.byTranscript[k]
			key := strings.TrimSuffix(k, "/") + "/" + fmt.Sprintf("part-%013d-peer00.jsonl", time.Now().UnixMilli())
			if _, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: &srv.Bucket, Key: &key,
				Body: strings.NewReader(string(body)), ContentLength: aws.Int64(int64(len(body)))}); err != nil {
				return 0, fmt.Errorf("put: %w", err)
			}
		}
		d = time.Since(t0)
	} else {
		cfg := s3.DefaultConfig()
		cfg.Bucket, cfg.Endpoint, cfg.Region, cfg.PathStyle = srv.Bucket, srv.Endpoint, srv.Region, true
		st, err := s3.New(ctx, *cfg, nil, []string{"AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + srv.SecretKey}, "/")
		if err != nil {
			return 0, err
		}
		if d, err = runScribeInto(ctx, w, "s3/bench", st); err != nil {
			return 0, err
		}
	}
	// Verify: the bucket holds every byte.
	var total int64
	p := awss3.NewListObjectsV2Paginator(srv.Client(), &awss3.ListObjectsV2Input{Bucket: &srv.Bucket})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, err
		}
		for _, o := range page.Contents {
			total += aws.ToInt64(o.Size)
		}
	}
	if total != w.bytes {
		return 0, fmt.Errorf("the bucket holds %d bytes, want %d", total, w.bytes)
	}
	return d, nil
}

// mainBackends runs -case backends and prints (and with -out writes) the
// table.
func mainBackends(ctx context.Context, o options) {
	defer testbackend.Stop()
	dir, err := os.MkdirTemp(o.Dir, "scribe-bench-backends-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	w, err := loadBackendWorkload(o, dir)
	if err != nil {
		fail(err)
	}
	o.logf("backends: %d entries, %s, %d transcripts", len(w.entries), humanMiB(w.bytes), len(w.byTranscript))
	cases := []struct {
		name string
		run  func() (time.Duration, error)
	}{
		{"postgres COPY (peer)", func() (time.Duration, error) { return pgCase(ctx, w, true) }},
		{"postgres scribe", func() (time.Duration, error) { return pgCase(ctx, w, false) }},
		{"s3 PutObject per transcript (peer)", func() (time.Duration, error) { return s3Case(ctx, w, true) }},
		{"s3 scribe", func() (time.Duration, error) { return s3Case(ctx, w, false) }},
	}
	times := map[string][]time.Duration{}
	for r := range o.Warmup + o.Runs {
		for i := range cases {
			c := cases[(i+r)%len(cases)]
			d, err := c.run()
			if err != nil {
				fail(fmt.Errorf("%s: %w", c.name, err))
			}
			if r >= o.Warmup {
				times[c.name] = append(times[c.name], d)
			}
			o.logf("%s: %v", c.name, d.Round(time.Millisecond))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| case | median | min–max | MiB/s | entries/s | ratio |\n|---|---|---|---|---|---|\n")
	sorted := func(name string) []time.Duration {
		ts := append([]time.Duration(nil), times[name]...)
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		return ts
	}
	median := func(name string) time.Duration { ts := sorted(name); return ts[len(ts)/2] }
	for _, pair := range [][2]string{{"postgres COPY (peer)", "postgres scribe"}, {"s3 PutObject per transcript (peer)", "s3 scribe"}} {
		peer := median(pair[0])
		for _, name := range pair {
			d := median(name)
			ratio := "—"
			if name == pair[1] {
				ratio = fmt.Sprintf("%.0f %%", 100*peer.Seconds()/d.Seconds())
			}
			ts := sorted(name)
			fmt.Fprintf(&b, "| %s | %v | %v–%v | %.1f | %.0f | %s |\n", name, d.Round(time.Millisecond),
				ts[0].Round(time.Millisecond), ts[len(ts)-1].Round(time.Millisecond),
				float64(w.bytes)/(1<<20)/d.Seconds(), float64(len(w.entries))/d.Seconds(), ratio)
		}
	}
	fmt.Print(b.String())
	if o.Out != "" {
		path := filepath.Join(o.Out, time.Now().Format("2006-01-02")+"-backends.md")
		doc := fmt.Sprintf("# backends: record into PostgreSQL and S3\n\n`%s`, %d entries (%s, %d sessions, %d transcripts), median of %d runs after %d warm-up.\n"+
			"Peers: one COPY of the same rows into the same table; one PutObject per transcript of all its lines. "+
			"scribe: `core.Pipeline` with the store as its only sink (and seeder), Submit of every entry, Flush, Shutdown. "+
			"Both servers run on loopback on the same machine (the tests' PostgreSQL cluster runs with fsync=off, for both cases alike; versitygw on a posix folder).\n\n%s",
			o.Command, len(w.entries), humanMiB(w.bytes), o.Sessions, len(w.byTranscript), o.Runs, o.Warmup, b.String())
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			fail(err)
		}
		fmt.Fprintln(os.Stderr, "bench: wrote", path)
	}
}

func humanMiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench: FAILED:", err)
	testbackend.Stop()
	os.Exit(1)
}
