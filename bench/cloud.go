package main

// The cloud case (go run ./bench -case cloud): entries per second end to
// end through scribe serve, against raw JetStream publishes of the same
// entries to the same NATS server, in the same run.
//
// Each round starts a fresh nats-server with JetStream in this process
// (file storage in the work folder, listening on 127.0.0.1 and a free
// port), and on it:
//
//   - scribe serve: server.New in this process, on 127.0.0.1, with nats_url
//     pointing at that server; a client (events.Client over HTTP/1.1
//     keep-alive) POSTs every session's entries in batches of 500 to
//     /v1/code/sessions/{id}/events, one request at a time per session,
//     -cloud-workers sessions side by side. Timed from the first request to
//     the last answer.
//   - raw JetStream: nats.go jetstream PublishAsync of every entry to
//     bench.<session> of a stream like scribe's (file storage, 2 min
//     duplicate window), with Nats-Msg-Id = the entry's uuid (a hash of its
//     bytes without one), then PublishAsyncComplete. Timed from the first
//     publish to the last acknowledgement.
//
// The order of the two alternates between rounds. Both are verified: the
// server's /v1/sessions counts and the stream's message count equal the
// distinct entries. For reference, one more case runs scribe serve the way
// `scribe serve` runs by default (its own embedded NATS, an in-process
// connection, no TCP between it and JetStream); it is not in the ratio.
//
// The sync policy is a dimension: every case runs with JetStream fsyncing
// every write before acknowledging it (sync = "always", scribe serve's
// default) and with nats-server's own default (a background fsync every
// 2 minutes), in alternating order. The ratio serve/raw is taken at
// scribe's default; the cost of the policy is each case's entries/s with
// sync always over the same case with the nats default.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/server"
	"github.com/e0dc0000/scribe/sinks/events"
	"github.com/e0dc0000/scribe/sinks/sinkhelper"
)

// Cloud case names.
const (
	caseServe     = "scribe serve (POST events, 500 a batch)"
	caseRaw       = "raw JetStream PublishAsync"
	caseServeOwn  = "scribe serve, own embedded NATS (reference)"
	cloudTargetPc = 50
	cloudBatch    = 500
	benchToken    = "bench-token"
	syncAlwaysTag = " · sync always"
	syncNatsTag   = " · sync 2m (nats default)"
	benchTenant   = "bench"
)

// cloudSession is one session's entries, in order.
type cloudSession struct {
	id      string
	entries []core.Entry
}

type cloudWorkload struct {
	sessions []cloudSession
	entries  int   // lines sent
	distinct int   // what the server keeps
	bytes    int64 // of the entries
}

type cloudRun struct {
	Case string        `json:"case"`
	Run  int           `json:"run"`
	Wall time.Duration `json:"wall_ns"`
	// Stored is what the server or the stream holds afterwards.
	Stored int `json:"stored"`
}

type cloudCase struct {
	Name          string        `json:"name"`
	EntriesPerSec float64       `json:"entries_per_sec"`
	MiBps         float64       `json:"mib_per_sec"`
	Wall          time.Duration `json:"wall_ns"`
	MinEPS        float64       `json:"min_entries_per_sec"`
	MaxEPS        float64       `json:"max_entries_per_sec"`
}

type cloudReport struct {
	Date     string      `json:"date"`
	Command  string      `json:"command"`
	Go       string      `json:"go"`
	OS       string      `json:"os"`
	CPUs     int         `json:"cpus"`
	Runs     int         `json:"runs"`
	Warmup   int         `json:"warmup_rounds"`
	Sessions int         `json:"sessions"`
	Entries  int         `json:"entries"`
	Distinct int         `json:"distinct"`
	Bytes    int64       `json:"bytes"`
	Workers  int         `json:"workers"`
	Cases    []cloudCase `json:"cases"`
	RatioPct float64     `json:"ratio_pct"`
	// RatioNatsSyncPct is serve/raw with the nats default sync policy.
	RatioNatsSyncPct float64 `json:"ratio_nats_sync_pct"`
	// SyncCostPct is, for each case, its entries/s with sync always as a
	// percentage of the same case with the nats default.
	SyncCostPct map[string]float64 `json:"sync_cost_pct"`
	TargetPc    float64            `json:"target_pct"`
	AllRuns     []cloudRun         `json:"runs_detail"`
}

// loadCloudWorkload generates the workload and splits it by session, as
// `scribe record` routes lines.
func loadCloudWorkload(o options, dir string) (*cloudWorkload, error) {
	path := filepath.Join(dir, "cloud-workload.jsonl")
	if err := generate(path, o.Sessions, int64(o.CloudMB)<<20, o.Seed); err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	w := &cloudWorkload{}
	idx := map[string]int{}
	rt := newRouter(1)
	seen := map[string]bool{}
	var out []core.Entry
	err := eachLine([]string{path}, func(_ int, line []byte) error {
		if blank(line) {
			return nil
		}
		e, err := core.ParseEntry(line)
		if err != nil {
			return err
		}
		for _, e := range rt.route(0, e, out) {
			i, ok := idx[e.SessionID]
			if !ok {
				i = len(w.sessions)
				idx[e.SessionID] = i
				w.sessions = append(w.sessions, cloudSession{id: e.SessionID})
			}
			w.sessions[i].entries = append(w.sessions[i].entries, e)
			w.entries++
			w.bytes += int64(len(e.Raw))
			if k := e.SessionID + "." + entryKey(&e); !seen[k] {
				seen[k] = true
				w.distinct++
			}
		}
		return nil
	})
	return w, err
}

// entryKey is the id both sides deduplicate on: the uuid, else a hash of
// the bytes (the server's rule for a uuid-less entry without a key).
func entryKey(e *core.Entry) string {
	if e.UUID != "" {
		return e.UUID
	}
	h := sha256.Sum256(e.Raw)
	return "h" + hex.EncodeToString(h[:16])
}

func runCloudBench(ctx context.Context, o options) (*cloudReport, error) {
	if o.Runs < 1 || o.CloudMB < 1 || o.Sessions < 1 || o.CloudWorkers < 1 {
		return nil, errors.New("-runs, -cloud-mb, -sessions and -cloud-workers must be at least 1")
	}
	tmp, err := os.MkdirTemp(o.Dir, "scribe-bench-cloud-")
	if err != nil {
		return nil, err
	}
	if o.Keep {
		o.logf("work folder %s (kept)", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	w, err := loadCloudWorkload(o, tmp)
	if err != nil {
		return nil, err
	}
	o.logf("workload: %d entries (%d distinct), %.1f MiB, %d sessions", w.entries, w.distinct, float64(w.bytes)/(1<<20), len(w.sessions))
	rep := &cloudReport{
		Date: time.Now().Format("2006-01-02"), Command: o.Command, Go: runtime.Version(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, CPUs: runtime.NumCPU(), Runs: o.Runs, Warmup: o.Warmup,
		Sessions: len(w.sessions), Entries: w.entries, Distinct: w.distinct, Bytes: w.bytes,
		Workers: o.CloudWorkers, TargetPc: cloudTargetPc,
	}
	walls := map[string][]time.Duration{}
	for i := -o.Warmup; i < o.Runs; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		dir := filepath.Join(tmp, fmt.Sprintf("round%d", i+o.Warmup))
		runs, err := cloudRound(ctx, o, w, dir, (i+o.Warmup)%2 == 1)
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", i+o.Warmup, err)
		}
		label := fmt.Sprintf("run %d/%d", i+1, o.Runs)
		if i < 0 {
			label = "warm-up"
		}
		for _, r := range runs {
			o.logf("%-9s %-46s %9.0f entries/s  wall %v  (verified: %d stored)", label, r.Case,
				float64(w.entries)/r.Wall.Seconds(), r.Wall.Round(time.Millisecond), r.Stored)
			if i >= 0 {
				r.Run = i + 1
				rep.AllRuns = append(rep.AllRuns, r)
				walls[r.Case] = append(walls[r.Case], r.Wall)
			}
		}
		if !o.Keep {
			_ = os.RemoveAll(dir)
		}
	}
	eps := map[string]float64{}
	for _, name := range cloudCaseNames() {
		ws := walls[name]
		if len(ws) == 0 {
			continue
		}
		sorted := slices.Clone(ws)
		slices.Sort(sorted)
		med := medianDur(ws)
		rep.Cases = append(rep.Cases, cloudCase{
			Name: name, Wall: med,
			EntriesPerSec: float64(w.entries) / med.Seconds(),
			MiBps:         float64(w.bytes) / (1 << 20) / med.Seconds(),
			MinEPS:        float64(w.entries) / sorted[len(sorted)-1].Seconds(),
			MaxEPS:        float64(w.entries) / sorted[0].Seconds(),
		})
		eps[name] = float64(w.entries) / med.Seconds()
	}
	pct := func(a, b string) float64 {
		if eps[b] == 0 {
			return 0
		}
		return 100 * eps[a] / eps[b]
	}
	rep.RatioPct = pct(caseServe+syncAlwaysTag, caseRaw+syncAlwaysTag)
	rep.RatioNatsSyncPct = pct(caseServe+syncNatsTag, caseRaw+syncNatsTag)
	rep.SyncCostPct = map[string]float64{}
	for _, c := range []string{caseServe, caseRaw, caseServeOwn} {
		rep.SyncCostPct[c] = pct(c+syncAlwaysTag, c+syncNatsTag)
	}
	return rep, nil
}

// syncPolicy is one value of the sync dimension: the nats-server options
// and the equivalent server.Config.Sync.
type syncPolicy struct {
	tag    string // appended to the case names
	always bool
	sync   string // server.Config.Sync
}

var syncPolicies = []syncPolicy{{syncAlwaysTag, true, server.SyncAlways}, {syncNatsTag, false, "2m"}}

// cloudRound runs cloudSyncRound once per sync policy (the order
// alternating with rawFirst).
func cloudRound(ctx context.Context, o options, w *cloudWorkload, dir string, rawFirst bool) ([]cloudRun, error) {
	pols := slices.Clone(syncPolicies)
	if rawFirst {
		slices.Reverse(pols)
	}
	var runs []cloudRun
	for i, sp := range pols {
		r, err := cloudSyncRound(ctx, o, w, filepath.Join(dir, fmt.Sprint(i)), rawFirst, sp)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r...)
	}
	return runs, nil
}

// cloudSyncRound starts a fresh nats-server with the sync policy and runs
// the cases on it (raw first when rawFirst), then the reference case on a
// server of its own.
func cloudSyncRound(ctx context.Context, o options, w *cloudWorkload, dir string, rawFirst bool, sp syncPolicy) ([]cloudRun, error) {
	syncInterval := time.Duration(0) // nats-server's default
	if !sp.always {
		syncInterval = 2 * time.Minute
	}
	ns, err := natsserver.NewServer(&natsserver.Options{
		SyncAlways:   sp.always,
		SyncInterval: syncInterval,
		ServerName:   "scribe-bench",
		Host:         "127.0.0.1",
		Port:         natsserver.RANDOM_PORT,
		JetStream:    true,
		StoreDir:     filepath.Join(dir, "nats"),
		NoSigs:       true,
		NoLog:        true,
		MaxPayload:   8<<20 + 64<<10,
	})
	if err != nil {
		return nil, err
	}
	ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(30 * time.Second) {
		return nil, errors.New("nats-server did not start within 30s")
	}
	order := []string{caseServe, caseRaw}
	if rawFirst {
		order = []string{caseRaw, caseServe}
	}
	var runs []cloudRun
	for _, c := range order {
		var r cloudRun
		if c == caseServe {
			r, err = runServeCase(ctx, o, w, ns.ClientURL(), "", "")
		} else {
			r, err = runRawCase(ctx, w, ns.ClientURL())
		}
		if err != nil {
			return nil, fmt.Errorf("%s%s: %w", c, sp.tag, err)
		}
		r.Case = c + sp.tag
		runs = append(runs, r)
	}
	r, err := runServeCase(ctx, o, w, "", filepath.Join(dir, "own"), sp.sync)
	if err != nil {
		return nil, fmt.Errorf("%s%s: %w", caseServeOwn, sp.tag, err)
	}
	r.Case = caseServeOwn + sp.tag
	return append(runs, r), nil
}

// runServeCase starts scribe serve (on natsURL, or with its own embedded
// NATS in dataDir and the sync policy syncPol) and posts the workload to it.
func runServeCase(ctx context.Context, o options, w *cloudWorkload, natsURL, dataDir, syncPol string) (cloudRun, error) {
	var r cloudRun
	cfg := server.Config{
		Listen:  "127.0.0.1:0",
		NatsURL: natsURL,
		DataDir: dataDir,
		Sync:    syncPol,
		Tokens:  []server.Token{{SHA256: server.HashToken(benchToken), Tenant: benchTenant, Scopes: []string{server.ScopeRead, server.ScopeWrite}}},
	}
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: os.Stderr})
	srv, err := server.New(cfg, log)
	if err != nil {
		return r, err
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := srv.Start(sctx); err != nil {
		return r, err
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = srv.Shutdown(c)
	}()
	base := "http://" + srv.Addr()
	c := &events.Client{
		BaseURL: base,
		Token:   sinkhelper.NewToken(benchToken),
		HTTP:    sinkhelper.NewHTTPClient(),
		Timeout: time.Minute,
		Retry:   sinkhelper.RetryConfig{MaxAttempts: 5, BackoffMin: 100 * time.Millisecond, BackoffMax: time.Second},
	}
	jobs := make(chan int)
	errs := make(chan error, len(w.sessions))
	var wg sync.WaitGroup
	start := time.Now()
	for k := 0; k < min(o.CloudWorkers, len(w.sessions)); k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := postSession(ctx, c, &w.sessions[i]); err != nil {
					errs <- fmt.Errorf("session %s: %w", w.sessions[i].id, err)
				}
			}
		}()
	}
	for i := range w.sessions {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	r.Wall = time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return r, err
	}
	// Verify: the server holds every distinct entry.
	n, err := serverCount(ctx, c)
	if err != nil {
		return r, err
	}
	if n != w.distinct {
		return r, fmt.Errorf("the server holds %d entries, want %d", n, w.distinct)
	}
	r.Stored = n
	return r, nil
}

// postSession sends one session's entries in order, cloudBatch at a time
// (fewer when a batch would pass 4 MiB).
func postSession(ctx context.Context, c *events.Client, s *cloudSession) error {
	evs := make([]events.Event, 0, cloudBatch)
	size := 0
	flush := func() error {
		if len(evs) == 0 {
			return nil
		}
		_, err := c.PostEvents(ctx, s.id, evs)
		evs, size = evs[:0], 0
		return err
	}
	for i := range s.entries {
		e := &s.entries[i]
		if len(evs) == cloudBatch || (len(evs) > 0 && size+len(e.Raw) > events.DefaultMaxRequestBytes) {
			if err := flush(); err != nil {
				return err
			}
		}
		ev := events.Event{Type: e.Type, Payload: e.Raw}
		if e.IsSidechain && e.AgentID != "" {
			ev.AgentID = e.AgentID
		}
		evs = append(evs, ev)
		size += len(e.Raw)
	}
	return flush()
}

func serverCount(ctx context.Context, c *events.Client) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BaseURL+"/v1/sessions?limit=1000", nil)
	if err != nil {
		return 0, err
	}
	c.Token.Authorize(req)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /v1/sessions: %d %s %v", resp.StatusCode, b, err)
	}
	var l struct {
		Data []struct {
			Entries int `json:"entries"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return 0, err
	}
	n := 0
	for _, d := range l.Data {
		n += d.Entries
	}
	return n, nil
}

// runRawCase publishes the workload to a stream of its own on the server.
func runRawCase(ctx context.Context, w *cloudWorkload, url string) (cloudRun, error) {
	var r cloudRun
	nc, err := nats.Connect(url, nats.Name("scribe bench raw"))
	if err != nil {
		return r, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		return r, err
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, err := js.CreateStream(sctx, jetstream.StreamConfig{
		Name: "BENCH_RAW", Subjects: []string{"bench.>"}, Storage: jetstream.FileStorage,
		Retention: jetstream.LimitsPolicy, Duplicates: 2 * time.Minute, MaxMsgs: -1, MaxBytes: -1,
	})
	if err != nil {
		return r, err
	}
	// Subjects and message ids first, so that only publishing is timed.
	type msg struct {
		subj, id string
		data     []byte
	}
	var msgs []msg
	for _, s := range w.sessions {
		subj := "bench." + s.id
		for i := range s.entries {
			e := &s.entries[i]
			msgs = append(msgs, msg{subj: subj, id: s.id + "." + entryKey(e), data: e.Raw})
		}
	}
	start := time.Now()
	for _, m := range msgs {
		// A long stall wait: with sync always the acknowledgements come
		// at the disk's pace, and a full window must wait, not fail.
		if _, err := js.PublishAsync(m.subj, m.data, jetstream.WithMsgID(m.id), jetstream.WithStallWait(time.Minute)); err != nil {
			return r, err
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(5 * time.Minute):
		return r, errors.New("publishes not acknowledged within 5 minutes")
	}
	r.Wall = time.Since(start)
	info, err := st.Info(sctx)
	if err != nil {
		return r, err
	}
	if int(info.State.Msgs) != w.distinct {
		return r, fmt.Errorf("the stream holds %d messages, want %d", info.State.Msgs, w.distinct)
	}
	r.Stored = int(info.State.Msgs)
	return r, nil
}

// mainCloud is main for -case cloud.
func mainCloud(ctx context.Context, o options) {
	rep, err := runCloudBench(ctx, o)
	emitReport(o, rep, err, printCloudTable, writeCloudMarkdown)
}

// cloudCaseNames are the cases in report order: each case with each sync
// policy.
func cloudCaseNames() []string {
	var out []string
	for _, sp := range syncPolicies {
		for _, c := range []string{caseServe, caseRaw, caseServeOwn} {
			out = append(out, c+sp.tag)
		}
	}
	return out
}

func printCloudTable(out io.Writer, r *cloudReport) {
	fmt.Fprintf(out, "%d entries (%d distinct, %.1f MiB) over %d sessions, %d sessions side by side; %s, %d CPUs; median of %d runs after %d warm-up, order alternated\n\n",
		r.Entries, r.Distinct, float64(r.Bytes)/(1<<20), r.Sessions, r.Workers, r.Go, r.CPUs, r.Runs, r.Warmup)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tentries/s\tmin–max\tMiB/s\twall\t")
	for _, c := range r.Cases {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f–%.0f\t%.1f\t%v\t\n", c.Name, c.EntriesPerSec, c.MinEPS, c.MaxEPS, c.MiBps, c.Wall.Round(time.Millisecond))
	}
	_ = tw.Flush()
	fmt.Fprintf(out, "\n%s\n%s\n", cloudVerdict(r), syncCost(r))
}

// syncCost words the cost of sync = "always".
func syncCost(r *cloudReport) string {
	return fmt.Sprintf("sync always vs the nats default (2m), entries/s: scribe serve %.0f%%, raw JetStream %.0f%%, scribe serve on its own embedded NATS %.0f%%; serve/raw with the nats default: %.0f%%.",
		r.SyncCostPct[caseServe], r.SyncCostPct[caseRaw], r.SyncCostPct[caseServeOwn], r.RatioNatsSyncPct)
}

func cloudVerdict(r *cloudReport) string {
	v := "meets"
	if r.RatioPct < r.TargetPc {
		v = "does NOT meet"
	}
	return fmt.Sprintf("scribe serve at %.0f%% of raw JetStream publishes, both with sync always (median of %d runs): %s the %.0f%% goal.", r.RatioPct, r.Runs, v, r.TargetPc)
}

func writeCloudMarkdown(dir string, r *cloudReport) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# scribe serve vs raw JetStream — %s\n\n`%s`\n\n", r.Date, r.Command)
	fmt.Fprintf(&b, "- machine: %s, %d CPUs, %s\n", r.OS, r.CPUs, r.Go)
	fmt.Fprintf(&b, "- workload: generated, %d entries (%d distinct), %.1f MiB, %d sessions; %d sessions posted side by side, %d entries a batch\n",
		r.Entries, r.Distinct, float64(r.Bytes)/(1<<20), r.Sessions, r.Workers, cloudBatch)
	fmt.Fprintf(&b, "- one nats-server with JetStream (file storage) in the bench process on 127.0.0.1; scribe serve (server.New, in process) reaches it over loopback TCP, as do the raw publishes; %d warm-up round(s), then %d timed rounds, order alternated; medians\n\n", r.Warmup, r.Runs)
	b.WriteString("| case | entries/s | min–max | MiB/s | wall |\n| --- | ---: | ---: | ---: | ---: |\n")
	for _, c := range r.Cases {
		fmt.Fprintf(&b, "| %s | %.0f | %.0f–%.0f | %.1f | %v |\n", c.Name, c.EntriesPerSec, c.MinEPS, c.MaxEPS, c.MiBps, c.Wall.Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "\n**%s**\n\n**%s**\n", cloudVerdict(r), syncCost(r))
	b.WriteString("\nThe reference row is `scribe serve` as it runs by default: its own embedded NATS server, reached in process.\n")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, r.Date+"-cloud.md")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}
