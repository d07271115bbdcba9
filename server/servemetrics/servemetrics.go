// Package servemetrics is the counters of `scribe serve` and their
// rendering in the Prometheus text format (GET /metrics).
package servemetrics

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// latencyBuckets are the upper bounds (seconds) of the request latency
// histogram.
var latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// Metrics are the server's counters, exposed in the Prometheus text format.
type Metrics struct {
	Stored       atomic.Int64 // entries stored
	Duplicates   atomic.Int64 // entries refused as already stored
	Conflicts    atomic.Int64 // PUTs refused with a Last-Uuid conflict
	FenceRetries atomic.Int64 // writes that had to reconcile and retry
	Repaired     atomic.Int64 // entries indexed by reconcile
	StateEvents  atomic.Int64 // state events applied
	Processed    atomic.Int64 // entries the processor changed (redacted) before storing
	// StoreDeleted counts the entries SessionStore deletes removed.
	StoreDeleted atomic.Int64
	// SummaryConflicts counts SessionStore summary writes refused as stale.
	SummaryConflicts atomic.Int64
	// The trash: sessions moved, restored, emptied for good (and their
	// entries).
	TrashMoved, TrashRestored, TrashPurged, TrashPurgedEntries atomic.Int64

	// The embedded JetStream's sync policy as running: 1 = every write
	// fsynced before its acknowledgement, 0 = in the background every
	// SyncInterval (ns); -1 = not known (an external NATS server).
	SyncAlways   atomic.Int64
	SyncInterval atomic.Int64

	mu       sync.Mutex
	requests map[reqKey]int64
	latency  map[string]*histogram
}

type reqKey struct {
	route string
	code  int
}

type histogram struct {
	counts []int64 // per bucket, not cumulative; last is +Inf
	sum    float64
	n      int64
}

// New returns counters at zero (the sync policy not known).
func New() *Metrics {
	m := &Metrics{requests: map[reqKey]int64{}, latency: map[string]*histogram{}}
	m.SyncAlways.Store(-1)
	return m
}

// Observe records one finished request.
func (m *Metrics) Observe(route string, code int, d time.Duration) {
	sec := d.Seconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[reqKey{route, code}]++
	h := m.latency[route]
	if h == nil {
		h = &histogram{counts: make([]int64, len(latencyBuckets)+1)}
		m.latency[route] = h
	}
	i := sort.SearchFloat64s(latencyBuckets, sec)
	h.counts[i]++
	h.sum += sec
	h.n++
}

// Write renders every metric.
func (m *Metrics) Write(w io.Writer) {
	counter := func(name, help string, v int64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
	}
	counter("scribe_entries_stored_total", "Entries stored in the stream.", m.Stored.Load())
	counter("scribe_entries_processed_total", "Entries changed by the server's processor (server.redact) before they were stored.", m.Processed.Load())
	counter("scribe_entries_duplicate_total", "Entries refused because they were already stored.", m.Duplicates.Load())
	counter("scribe_conflicts_total", "PUTs refused with 409 because Last-Uuid was not the session's last uuid.", m.Conflicts.Load())
	counter("scribe_fence_retries_total", "Writes retried after another writer appended to the same session first.", m.FenceRetries.Load())
	counter("scribe_entries_repaired_total", "Entries found in the stream past their session's metadata and indexed.", m.Repaired.Load())
	counter("scribe_state_events_total", "State events applied to session metadata.", m.StateEvents.Load())
	counter("scribe_session_store_deleted_entries_total", "Entries removed by SessionStore deletes.", m.StoreDeleted.Load())
	counter("scribe_session_store_summary_conflicts_total", "SessionStore summary writes refused because another write came first.", m.SummaryConflicts.Load())
	counter("scribe_trash_moved_total", "Sessions moved to the trash.", m.TrashMoved.Load())
	counter("scribe_trash_restored_total", "Sessions restored from the trash.", m.TrashRestored.Load())
	counter("scribe_trash_purged_total", "Trash items emptied for good (on request, or past trash_retention).", m.TrashPurged.Load())
	counter("scribe_trash_purged_entries_total", "Entries of the trash items emptied for good.", m.TrashPurgedEntries.Load())
	if v := m.SyncAlways.Load(); v >= 0 {
		fmt.Fprintf(w, "# HELP scribe_jetstream_sync_always 1 when the embedded JetStream fsyncs every write before acknowledging it.\n"+
			"# TYPE scribe_jetstream_sync_always gauge\nscribe_jetstream_sync_always %d\n", v)
		fmt.Fprintf(w, "# HELP scribe_jetstream_sync_interval_seconds How often the embedded JetStream fsyncs in the background.\n"+
			"# TYPE scribe_jetstream_sync_interval_seconds gauge\nscribe_jetstream_sync_interval_seconds %s\n",
			strconv.FormatFloat(time.Duration(m.SyncInterval.Load()).Seconds(), 'g', -1, 64))
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	keys := make([]reqKey, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].route != keys[j].route {
			return keys[i].route < keys[j].route
		}
		return keys[i].code < keys[j].code
	})
	fmt.Fprint(w, "# HELP scribe_http_requests_total HTTP requests by route and status code.\n# TYPE scribe_http_requests_total counter\n")
	for _, k := range keys {
		fmt.Fprintf(w, "scribe_http_requests_total{route=%q,code=\"%d\"} %d\n", k.route, k.code, m.requests[k])
	}
	routes := make([]string, 0, len(m.latency))
	for r := range m.latency {
		routes = append(routes, r)
	}
	sort.Strings(routes)
	fmt.Fprint(w, "# HELP scribe_http_request_duration_seconds HTTP request latency by route.\n# TYPE scribe_http_request_duration_seconds histogram\n")
	for _, r := range routes {
		h := m.latency[r]
		var cum int64
		for i, b := range latencyBuckets {
			cum += h.counts[i]
			fmt.Fprintf(w, "scribe_http_request_duration_seconds_bucket{route=%q,le=%q} %d\n", r, strconv.FormatFloat(b, 'g', -1, 64), cum)
		}
		cum += h.counts[len(latencyBuckets)]
		fmt.Fprintf(w, "scribe_http_request_duration_seconds_bucket{route=%q,le=\"+Inf\"} %d\n", r, cum)
		fmt.Fprintf(w, "scribe_http_request_duration_seconds_sum{route=%q} %s\n", r, strconv.FormatFloat(h.sum, 'g', -1, 64))
		fmt.Fprintf(w, "scribe_http_request_duration_seconds_count{route=%q} %d\n", r, h.n)
	}
}
