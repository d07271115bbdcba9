package watch

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/e0dc0000/scribe/core"
)

// WriteMetrics writes the watcher's figures and the pipeline's, per sink,
// in Prometheus' text format.
func (w *Watcher) WriteMetrics(out io.Writer) {
	s := &w.Stats
	var b strings.Builder
	gauge := func(name, help string, v int64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s %d\n", name, help, name, name, v)
	}
	counter := func(name, help string, v int64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
	}
	gauge("scribe_watch_files_followed", "Files followed (transcripts, subagents, sidecars).", s.FilesFollowed.Load())
	gauge("scribe_watch_lag_bytes", "Bytes written to followed files and not yet acknowledged by every sink.", s.LagBytes.Load())
	fmt.Fprintf(&b, "# HELP scribe_watch_lag_seconds Age of the oldest line read and not yet acknowledged.\n# TYPE scribe_watch_lag_seconds gauge\nscribe_watch_lag_seconds %g\n", float64(s.LagMillis.Load())/1000)
	gauge("scribe_watch_unacked_lines", "Lines submitted and not yet acknowledged.", s.UnackedLines.Load())
	gauge("scribe_watch_torn_tails", "Files whose last line is not complete yet (waited for).", s.TornWaiting.Load())
	gauge("scribe_watch_waiting_for_message", "Files holding only lines that wait for a first user or assistant line.", s.WaitingForMessage.Load())
	gauge("scribe_watch_unreadable", "Files and folders that could not be read at their last look.", s.Unreadable.Load())
	counter("scribe_watch_bytes_read_total", "Bytes read from followed files.", s.BytesRead.Load())
	counter("scribe_watch_lines_total", "Complete lines read.", s.Lines.Load())
	fmt.Fprintf(&b, "# HELP scribe_watch_entries_total Entries submitted, by outcome.\n# TYPE scribe_watch_entries_total counter\n")
	for _, kv := range []struct {
		k string
		v int64
	}{{"accepted", s.Accepted.Load()}, {"duplicate", s.Duplicates.Load()}, {"refused", s.Refused.Load()}, {"rejected", s.Rejected.Load()}, {"malformed", s.Malformed.Load()}, {"blank", s.Blank.Load()}, {"over_line_cap", s.OverLimit.Load()}, {"archived_metadata", s.MetaSkipped.Load()}} {
		fmt.Fprintf(&b, "scribe_watch_entries_total{result=%q} %d\n", kv.k, kv.v)
	}
	counter("scribe_watch_errors_total", "Errors reading, submitting or watching (each retried).", s.Errors.Load())
	counter("scribe_watch_rewrites_total", "Files replaced or rewritten under their checkpoint (read again from the start).", s.Rewrites.Load())
	counter("scribe_watch_truncations_total", "Files found shorter than their checkpoint (read again from the start).", s.Truncations.Load())
	counter("scribe_watch_deletions_total", "Followed files deleted (recorded as lifecycle events).", s.Deletions.Load())
	counter("scribe_watch_replayed_lines_total", "Lines of deleted transcripts sent again from the archive's copy (read by a killed run, not acknowledged).", s.Replayed.Load())
	counter("scribe_watch_touches_total", "Files whose mtime changed with nothing new to read.", s.Touches.Load())
	counter("scribe_watch_sidecars_copied_total", "Sidecar files (.meta.json, tool results) copied into the archives.", s.SidecarsCopied.Load())
	counter("scribe_watch_hook_events_total", "Hook events taken from the inbox.", s.HookEvents.Load())
	counter("scribe_watch_rescans_total", "Full listings of the followed folders.", s.Rescans.Load())
	counter("scribe_watch_file_events_total", "File events received.", s.Events.Load())
	counter("scribe_watch_event_overflows_total", "File event queue overflows (each followed by a full listing).", s.Overflows.Load())
	counter("scribe_watch_flushes_total", "Pipeline flushes.", s.Flushes.Load())
	counter("scribe_watch_flush_errors_total", "Failed pipeline flushes (checkpoints wait).", s.FlushErrors.Load())
	counter("scribe_watch_checkpoint_saves_total", "Checkpoint saves.", s.Saves.Load())
	counter("scribe_watch_checkpoint_save_errors_total", "Failed checkpoint saves.", s.SaveErrors.Load())
	var st core.Stats
	for _, p := range w.ps {
		ps := p.Stats()
		st.Sinks = append(st.Sinks, ps.Sinks...)
		st.Accepted += ps.Accepted
		st.Duplicates += ps.Duplicates
	}
	writeSinkMetrics(&b, st)
	_, _ = io.WriteString(out, b.String())
}

func writeSinkMetrics(b *strings.Builder, st core.Stats) {
	type fam struct {
		name, help string
		val        func(core.SinkStats) int64
	}
	fams := []fam{
		{"scribe_sink_written_total", "Entries a sink wrote.", func(s core.SinkStats) int64 { return s.Written }},
		{"scribe_sink_write_errors_total", "Failed writes of a sink (retried).", func(s core.SinkStats) int64 { return s.WriteErrors }},
		{"scribe_sink_retries_total", "Write retries of a sink.", func(s core.SinkStats) int64 { return s.Retries }},
		{"scribe_sink_dropped_total", "Entries a sink will never have.", func(s core.SinkStats) int64 { return s.Dropped }},
		{"scribe_sink_flushes_total", "Flushes of a sink.", func(s core.SinkStats) int64 { return s.Flushes }},
		{"scribe_sink_queued", "Entries waiting in a sink's queue.", func(s core.SinkStats) int64 { return int64(s.Queued) }},
	}
	sinks := append([]core.SinkStats(nil), st.Sinks...)
	sort.Slice(sinks, func(i, j int) bool { return sinks[i].ID < sinks[j].ID })
	for _, f := range fams {
		typ := "counter"
		if !strings.HasSuffix(f.name, "_total") {
			typ = "gauge"
		}
		fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, typ)
		for _, s := range sinks {
			fmt.Fprintf(b, "%s{sink=%q} %d\n", f.name, s.ID, f.val(s))
		}
	}
	head := "# HELP scribe_sink_torn_frames_cut_total Torn last frames (a write cut short) a sealed archive cut.\n# TYPE scribe_sink_torn_frames_cut_total counter\n"
	for _, s := range sinks {
		if v, ok := s.Counters["torn_frames_cut"]; ok {
			b.WriteString(head)
			head = ""
			fmt.Fprintf(b, "scribe_sink_torn_frames_cut_total{sink=%q} %d\n", s.ID, v)
		}
	}
	fmt.Fprintf(b, "# HELP scribe_pipeline_entries_total Entries the pipeline saw, by outcome.\n# TYPE scribe_pipeline_entries_total counter\n")
	fmt.Fprintf(b, "scribe_pipeline_entries_total{result=\"accepted\"} %d\nscribe_pipeline_entries_total{result=\"duplicate\"} %d\n", st.Accepted, st.Duplicates)
}
