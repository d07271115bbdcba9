package index

// The sessions index: the lifecycle fields (see index.go).

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/jsonv"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/listing"
	"github.com/e0dc0000/scribe/transcript"
)

// ---------------------------------------------------------------------------
// The lifecycle fields

// maxClassRows bounds the rows handed to ClassifyAndRepair.
const maxClassRows = 32

// lifeOf derives the lifecycle fields from a tail window: the last
// timestamp, the last user or assistant row (uuid, timestamp), the last
// assistant model, the tools used, and the class of the conversation's
// end. The class comes from transcript.ClassifyAndRepair on the window's last
// user, assistant and attachment rows, back to the start of the last
// assistant message (the rows it decides on; system and progress rows, which
// it skips, are left out).
func lifeOf(tail, lastEntry []byte) *lifecycle {
	lf, rows := lifeRows(tail, lastEntry)
	lf.class, lf.state = classOf(rows)
	return lf
}

// lifeRows is lifeOf without the class, and the rows to classify,
// newest first.
func lifeRows(tail, lastEntry []byte) (*lifecycle, []core.Entry) {
	lf := &lifecycle{tail: lastEntry, class: core.InterruptionNone, state: core.StateIdle}
	var rows []core.Entry // newest first
	classDone := false
	finalID, haveFinal := "", false
	keys := []string{"type", "timestamp", "uuid", "message", "isApiErrorMessage"}
	vals := make([][]byte, len(keys))
	end := len(tail)
	for end > 0 && !(classDone && lf.lastTSok && lf.model != "" && lf.lastMsg != "") {
		ls := bytes.LastIndexByte(tail[:end], '\n')
		line := bytes.TrimRight(tail[ls+1:end], "\r")
		end = max(ls, 0)
		if len(line) == 0 {
			continue
		}
		obj, ok := jsonv.Value(line)
		if !ok || obj[0] != '{' {
			continue
		}
		jsonv.Lookup(obj, keys, vals)
		typ, _ := jsonv.String(vals[0])
		if !lf.lastTSok {
			if ts, ok := jsonv.String(vals[1]); ok {
				lf.lastTS, lf.lastTSok = listing.DateParse(ts)
			}
		}
		if typ != "user" && typ != "assistant" && typ != "attachment" {
			continue
		}
		var msg []byte
		if m := vals[3]; len(m) > 0 && m[0] == '{' {
			msg = m
		}
		apiErr := string(vals[4]) == "true"
		if typ != "attachment" && lf.lastMsg == "" {
			if u, ok := jsonv.String(vals[2]); ok && u != "" {
				lf.lastMsg = u
				if ts, ok := jsonv.String(vals[1]); ok {
					lf.convTS, lf.convTSok = listing.DateParse(ts)
				}
			}
		}
		if typ == "assistant" && lf.model == "" && msg != nil {
			if m, ok := jsonv.GetString(msg, "model"); ok && m != "" && m != "<synthetic>" {
				lf.model = m
			}
		}
		if classDone {
			continue
		}
		if typ == "assistant" && !apiErr {
			id := ""
			if msg != nil {
				id, _ = jsonv.GetString(msg, "id")
			}
			if haveFinal && (finalID == "" || id != finalID) {
				classDone = true
				continue
			}
			haveFinal, finalID = true, id
		}
		if e, err := core.ParseEntry(line); err == nil {
			rows = append(rows, e)
		}
		if len(rows) >= maxClassRows {
			classDone = true
		}
	}
	lf.tools = toolsOf(tail)
	return lf, rows
}

// classOf classifies the rows (newest first) as transcript.ClassifyAndRepair
// and transcript.StateFromTail do, with a shortcut for the commonest end.
func classOf(rows []core.Entry) (core.Interruption, core.State) {
	if len(rows) == 0 || plainReply(rows) {
		return core.InterruptionNone, core.StateIdle
	}
	return classify(rows)
}

// classify is transcript.ClassifyAndRepair's class and transcript.StateFromTail's
// state of the rows (newest first).
func classify(rows []core.Entry) (core.Interruption, core.State) {
	conv := slices.Clone(rows)
	slices.Reverse(conv)
	rec := transcript.ClassifyAndRepair(conv, core.RecoveryOptions{
		Now:     time.Unix(0, 0),
		NewUUID: func() string { return "00000000-0000-4000-8000-000000000000" },
	})
	return rec.Class, transcript.StateFromTail(conv)
}

var typeMessage = []string{"type", "message"}

// plainReply is a shortcut for the commonest end, a finished reply:
// the newest row is an assistant row that is not an API error, and no
// assistant row collected (the last message's rows) holds a tool_use.
// ClassifyAndRepair says none for it (the newest row decides and no tool
// call of the last message lacks a result) and StateFromTail idle;
// TestIndexPlainReplyShortcut checks that they still do. rows are newest
// first.
func plainReply(rows []core.Entry) bool {
	if rows[0].Type != core.TypeAssistant {
		return false
	}
	for i := range rows {
		r := &rows[i]
		if r.Type != core.TypeAssistant {
			continue
		}
		if bytes.Contains(r.Raw, []byte(`"tool_use"`)) || bytes.Contains(r.Raw, []byte(`"isApiErrorMessage"`)) {
			return false
		}
	}
	return true
}

// toolsOf is the sorted names of the tool_use blocks of the window's
// assistant rows.
func toolsOf(win []byte) []string {
	var set map[string]bool
	vals := make([][]byte, len(typeMessage))
	from := 0
	for {
		p := bytes.Index(win[from:], []byte(`"tool_use"`))
		if p < 0 {
			break
		}
		p += from
		ls := bytes.LastIndexByte(win[:p], '\n') + 1
		le := len(win)
		if e := bytes.IndexByte(win[p:], '\n'); e >= 0 {
			le = p + e
		}
		from = le
		line := bytes.TrimRight(win[ls:le], "\r")
		if !bytes.Contains(line, []byte(`"assistant"`)) {
			continue
		}
		obj, ok := jsonv.Value(line)
		if !ok || obj[0] != '{' {
			continue
		}
		jsonv.Lookup(obj, typeMessage, vals)
		if t, _ := jsonv.String(vals[0]); t != "assistant" {
			continue
		}
		msg := vals[1]
		if len(msg) == 0 || msg[0] != '{' {
			continue
		}
		content, ok := jsonv.Get(msg, "content")
		if !ok || content[0] != '[' {
			continue
		}
		for el := range jsonv.Elems(content) {
			if el[0] != '{' {
				continue
			}
			if t, _ := jsonv.GetString(el, "type"); t == "tool_use" {
				if name, ok := jsonv.GetString(el, "name"); ok && name != "" {
					if set == nil {
						set = make(map[string]bool)
					}
					set[name] = true
				}
			}
		}
		if from >= len(win) {
			break
		}
	}
	if len(set) == 0 {
		return nil
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ActiveProbe tells whether a live writer holds a session's lock: a
// non-blocking shared flock on <config dir>/scribe/locks/<id>.lock fails
// while the writer's exclusive one is held. Only sessions with a lock
// file are probed (one ReadDir of the folder). The probe holds the lock
// for the time of two system calls; a writer starting at that very moment
// with no lock wait would report the session busy.
func (l Layout) ActiveProbe() func(id string) bool {
	dir := filepath.Dir(l.LockFile("x"))
	ents, err := os.ReadDir(dir)
	if err != nil {
		return func(string) bool { return false }
	}
	have := make(map[string]bool, len(ents))
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".lock"); ok {
			have[id] = true
		}
	}
	return func(id string) bool {
		if !have[id] {
			return false
		}
		return durable.Held(filepath.Join(dir, id+".lock"))
	}
}

// record builds a session's record from its listing entry and lifecycle
// fields; lf may be nil (nothing known of the tail).
func (lf *lifecycle) record(info sessions.Info, active func(string) bool) sessions.Record {
	if lf == nil {
		lf = &lifecycle{class: core.InterruptionNone, state: core.StateIdle}
	}
	r := sessions.Record{
		ID: info.SessionID, Name: info.Summary, ProjectPath: info.Cwd, TranscriptPath: info.Path,
		Interruption: lf.class, State: lf.state, Info: info,
		Metadata: sessions.RecordMetadata{Model: lf.model, Tools: slices.Clone(lf.tools), LastMessageID: lf.lastMsg},
	}
	mtime := time.UnixMilli(info.LastModified).UTC()
	r.UpdatedAt = mtime
	if lf.lastTSok {
		r.UpdatedAt = time.UnixMilli(lf.lastTS).UTC()
	}
	r.CreatedAt = r.UpdatedAt
	if info.CreatedAt != nil {
		r.CreatedAt = time.UnixMilli(*info.CreatedAt).UTC()
	}
	switch {
	case active != nil && active(info.SessionID):
		r.Status = sessions.StatusActive
	case lf.class != core.InterruptionNone:
		r.Status = sessions.StatusInterrupted
	default:
		r.Status = sessions.StatusCompleted
		r.CompletedAt = mtime
		if lf.convTSok {
			r.CompletedAt = time.UnixMilli(lf.convTS).UTC()
		}
	}
	return r
}
