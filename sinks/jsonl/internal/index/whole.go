package index

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/e0dc0000/scribe/jsonv"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/listing"
	"github.com/e0dc0000/scribe/transcript"
)

// The whole-session fields of a session's record: Model and Tools are
// about the session, not about the last 64 KiB of it (a session of 263
// turns on one model and a last one on another is still the first model's),
// so the records that promise them (Sessions, ExportSessionsJSON) read each
// main transcript once, front to back.

var assistantKey = []byte(`"assistant"`)

// wholeSession returns the model of most of the transcript's assistant
// turns (message.model; an assistant message split over several rows, one
// message.id, is one turn; synthetic rows are skipped; a tie goes to the
// model used last) and the sorted union of its tool_use names.
func wholeSession(ctx context.Context, fsys layout.FS, path string) (string, []string, error) {
	f, err := layout.FSOf(fsys).Open(path)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", nil, err
	}
	var (
		counts = map[string]int{}
		last   = map[string]int{}
		turns  = map[string]bool{}
		tools  = map[string]bool{}
		turn   int
		vals   = make([][]byte, len(typeMessage))
	)
	err = transcript.EachLine(io.NewSectionReader(f, 0, fi.Size()), func(line []byte, _ bool) {
		if ctx.Err() != nil || !bytes.Contains(line, assistantKey) {
			return
		}
		obj, ok := jsonv.Value(line)
		if !ok || obj[0] != '{' {
			return
		}
		jsonv.Lookup(obj, typeMessage, vals)
		if t, _ := jsonv.String(vals[0]); t != "assistant" || len(vals[1]) == 0 || vals[1][0] != '{' {
			return
		}
		for _, name := range toolsOf(line) {
			tools[name] = true
		}
		m, ok := jsonv.GetString(vals[1], "model")
		if !ok || m == "" || m == "<synthetic>" {
			return
		}
		if id, _ := jsonv.GetString(vals[1], "id"); id != "" {
			if turns[id] {
				return
			}
			turns[id] = true
		}
		turn++
		counts[m]++
		last[m] = turn
	})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return "", nil, fmt.Errorf("read %s: %w", path, err)
	}
	model := ""
	for m, n := range counts {
		if model == "" || n > counts[model] || n == counts[model] && last[m] > last[model] {
			model = m
		}
	}
	var names []string
	for name := range tools {
		names = append(names, name)
	}
	slices.Sort(names)
	return model, names, nil
}

// fillWhole replaces each record's Model and Tools with the whole
// session's. A transcript that cannot be read (gone since the listing)
// keeps what the tail window said.
func fillWhole(ctx context.Context, fsys layout.FS, recs []sessions.Record) error {
	listing.Parallel(ctx, fsys, len(recs), func(_ *listing.Worker, i int) {
		if recs[i].TranscriptPath == "" {
			return
		}
		if m, tools, err := wholeSession(ctx, fsys, recs[i].TranscriptPath); err == nil {
			recs[i].Metadata.Model, recs[i].Metadata.Tools = m, tools
		}
	})
	return ctx.Err()
}
