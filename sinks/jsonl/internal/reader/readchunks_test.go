package reader

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/jsonv"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
	"github.com/e0dc0000/scribe/transcript"
)

// chunkInputs are files that put every rule of the reader at chunk edges:
// random transcripts, damaged ones, and hand-made lines (blank, indented,
// CRLF, torn, malformed, snapshots, plain and preserved compact
// boundaries, one line longer than every chunk).
func chunkInputs() map[string][]byte {
	in := map[string][]byte{}
	for i := 0; i < 40; i++ {
		in[fmt.Sprintf("random-%d", i)] = jsonltest.RandomTranscript(uint64(i), i%5 == 0)
	}
	for _, d := range damagedFiles() {
		if len(d.data) < 1<<20 {
			in["damaged-"+d.name] = d.data
		}
	}
	var b strings.Builder
	parent := ""
	for i := 0; i < 60; i++ {
		id := fmt.Sprintf("h-%03d", i)
		switch i % 12 {
		case 0:
			b.WriteString(`{"type":"attribution-snapshot","n":` + fmt.Sprint(i) + "}\n")
		case 1:
			b.WriteString("\n   \n")
		case 2:
			b.WriteString("  \t" + jrow("user", id, parent, "indented") + "\r\n")
			parent = id
		case 3:
			b.WriteString(`{"type":"user","uuid":"broken` + "\n")
		case 4:
			b.WriteString(boundaryLine(id, parent, i%24 == 4, `{"trigger":"auto"}`) + "\n")
			parent = id
		case 5:
			b.WriteString(boundaryLine(id, parent, false, `{"preservedSegment":{"headUuid":"x","anchorUuid":"y","tailUuid":"z"}}`) + "\n")
			parent = id
		case 6:
			b.WriteString(jrow("progress", id, parent, nil, "data", map[string]any{"out": strings.Repeat("p", 700)}, "toolUseResult", strings.Repeat("r", 300)) + "\n")
			parent = id
		case 7:
			b.WriteString(`{"t\u0079pe":"assistant","uuid":"` + id + `","parentUuid":"` + parent + `","message":{"role":"assistant","id":"m1","content":[{"type":"text","text":"esc\"aped \\ key"}]},"type":"assistant"}` + "\n")
			parent = id
		default:
			b.WriteString(jrow([]string{"user", "assistant"}[i%2], id, parent, strings.Repeat("word ", i*3)) + "\n")
			parent = id
		}
	}
	hand := b.String()
	in["hand"] = []byte(hand)
	// Compact boundaries told by their type and subtype decoded (escaped)
	// and by the last of a repeated key.
	in["escaped-boundaries"] = []byte(jrow("user", "e1", "", "start") + "\n" +
		`{"type":"\u0073ystem","subtype":"compact\u005fboundary","uuid":"e2","parentUuid":null,"compactMetadata":{}}` + "\n" +
		`{"type":"system","subtype":"compact_boundary","type":"user","uuid":"e3","parentUuid":"e2"}` + "\n" +
		`{"type":"user","subtype":"x","type":"system","subtype":"compact_boundary","uuid":"e4","parentUuid":"e3"}` + "\n")
	in["hand-torn"] = []byte(hand + `{"type":"user","uuid":"torn`)
	in["hand-torn-valid"] = []byte(hand + jrow("user", "last", parent, "no newline"))
	in["long-line"] = []byte(hand + jrow("user", "long", parent, strings.Repeat("L", 5000)) + "\n" + hand)
	for _, c := range largeHandCases() {
		in["large-"+c.name] = c.data
	}
	// Boundaries crossing the SDK's 1 MiB read edge with 29, 30 and 31
	// bytes before it, and one starting on the edge, in both key orders.
	for _, before := range []int64{0, 29, 30, 31} {
		for _, systemFirst := range []bool{false, true} {
			var f bigFile
			f.msg("user", "start")
			f.boundary(systemFirst, `{"trigger":"auto"}`)
			f.fill(mib - before)
			f.boundary(systemFirst, `{"trigger":"auto"}`)
			f.msg("assistant", "after")
			in[fmt.Sprintf("edge-%d-%v", before, systemFirst)] = bytes.Clone(f.b.Bytes())
		}
	}
	in["empty"] = nil
	in["newlines"] = []byte("\n\n\n")
	return in
}

// TestChunkedReadMatchesWholeFile: the chunked engine, with chunks from a
// few bytes to the whole file, and with the large-file rules on and off,
// returns exactly what the whole-file reader (the oracle) returned: the
// same entries with the same bytes, the same report. The rebuild-only
// mode gives the same conversation as the whole rows.
func TestChunkedReadMatchesWholeFile(t *testing.T) {
	first, most := chunkFirst, chunkMax
	defer func() { chunkFirst, chunkMax = first, most }()
	all := [][2]int64{{1, 1}, {7, 13}, {64, 256}, {300, 4096}, {1 << 20, 4 << 20}}
	for name, data := range chunkInputs() {
		for _, large := range []bool{false, true} {
			want, wantRep, err := oracleRead(bytes.NewReader(data), int64(len(data)), "f", large)
			if err != nil {
				t.Fatal(err)
			}
			wantMsgs := messagesJSON(t, want)
			sizes := all
			if len(data) > 1<<20 {
				sizes = [][2]int64{{4093, 65536}, {100_003, 300_007}, {1 << 20, 4 << 20}}
			}
			for _, sz := range sizes {
				chunkFirst, chunkMax = sz[0], sz[1]
				what := fmt.Sprintf("%s large=%v chunks=%v", name, large, sz)
				r := &chunkReader{f: bytes.NewReader(data), size: int64(len(data)), large: large, mode: keepLine}
				var rep sessions.ReadReport
				out, cut, err := r.read(&rep)
				got := out.entries
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				rep.SkippedBytes = cut
				fixLines(t, data, cut, &rep)
				if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
					t.Fatalf("%s: entries differ:\n got %d: %s\nwant %d: %s", what, len(got), rawsOf(got), len(want), rawsOf(want))
				}
				if !reflect.DeepEqual(rep, wantRep) {
					t.Fatalf("%s: report differs:\n got %+v\nwant %+v", what, rep, wantRep)
				}
				r.mode = keepRebuild
				var srep sessions.ReadReport
				sout, scut, err := r.read(&srep)
				slim := sout.rows
				if err != nil {
					t.Fatalf("%s rebuild: %v", what, err)
				}
				srep.SkippedBytes = scut
				fixLines(t, data, scut, &srep)
				if !reflect.DeepEqual(srep, wantRep) {
					t.Fatalf("%s rebuild: report differs:\n got %+v\nwant %+v", what, srep, wantRep)
				}
				if g := rowsJSON(t, slim); g != wantMsgs {
					t.Fatalf("%s rebuild: messages differ:\n got %s\nwant %s", what, g, wantMsgs)
				}
				if len(slim) != len(want) {
					t.Fatalf("%s: %d rows, want %d", what, len(slim), len(want))
				}
			}
		}
	}
}

// fixLines does what readEntries does after the engine: line numbers from
// the file's start.
func fixLines(t *testing.T, data []byte, cut int64, rep *sessions.ReadReport) {
	if len(rep.Malformed) > 0 && cut > 0 {
		before := bytes.Count(data[:cut], []byte{'\n'})
		for i := range rep.Malformed {
			rep.Malformed[i].Line += before
		}
	}
}

func messagesJSON(t *testing.T, entries []core.Entry) string {
	var out []string
	for _, side := range []bool{false, true} {
		ch := transcript.BuildChain(entries, transcript.ChainOptions{Sidechain: side})
		b, err := json.Marshal(ch.Messages(transcript.MessageOptions{IncludeSystem: true, ParentToolUseID: "t"}))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b), fmt.Sprint(ch.Cycle, ch.Gaps))
	}
	return strings.Join(out, "\n")
}

// rowsJSON is messagesJSON through RowsMessages.
func rowsJSON(t *testing.T, rows []transcript.Row) string {
	var out []string
	for _, side := range []bool{false, true} {
		msgs, cycle, gaps := transcript.RowsMessages(rows, transcript.ChainOptions{Sidechain: side},
			transcript.MessageOptions{IncludeSystem: true, ParentToolUseID: "t"})
		b, err := json.Marshal(msgs)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b), fmt.Sprint(cycle, gaps))
	}
	return strings.Join(out, "\n")
}

func rawsOf(es []core.Entry) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString("\n  " + string(e.Raw))
	}
	return b.String()
}

// TestMessageJSONMatchesEncodingJSON: the show command's fast printing of a
// message (SessionMessage.AppendJSON, then jsonv.AppendIndent) writes what
// encoding/json's indenting Encoder writes, on every message of the random
// and hand-made transcripts, and on messages with every optional field and
// strings encoding/json escapes.
func TestMessageJSONMatchesEncodingJSON(t *testing.T) {
	tool, agent := "toolu_\u2028<&>", "agent\x01\"é"
	msgs := []transcript.SessionMessage{{
		Type: "user", UUID: "u\u2029\t\b\f\\", SessionID: json.RawMessage(`"s"`),
		Message:         json.RawMessage(` { "role" : "user", "content" : [ {"type":"text","text":"a\u2028 <b> \"q\""} , [], {} ] } `),
		ParentToolUseID: &tool, ParentAgentID: &agent, InterruptedByShutdown: true, ToolDenialUnanswered: "stream-closed\x7f",
		ToolResultMeta:   []transcript.ToolResultMeta{{ID: "t<1>", NonExecutionKind: "k", CallEnded: "c", RewrittenByPlugin: true}, {ID: "t2"}},
		IsCompactSummary: true, IsMeta: true, IsQueuedCommand: true, IsCompletedLocalCommand: true,
		Timestamp: json.RawMessage(`"2026-01-10T11:00:00.000Z"`), Origin: json.RawMessage(`{"kind":"x"}`),
	}, {Type: "assistant", UUID: "a"}}
	for name, data := range chunkInputs() {
		for _, side := range []bool{false, true} {
			entries, _, err := oracleRead(bytes.NewReader(data), int64(len(data)), name, false)
			if err != nil {
				t.Fatal(err)
			}
			ch := transcript.BuildChain(entries, transcript.ChainOptions{Sidechain: side})
			msgs = append(msgs, ch.Messages(transcript.MessageOptions{IncludeSystem: true, ParentToolUseID: "t", ParentAgentID: "p"})...)
		}
	}
	for i := range msgs {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.SetIndent("  ", "  ")
		if err := enc.Encode(&msgs[i]); err != nil {
			t.Fatal(err)
		}
		flat, err := msgs[i].AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		got := jsonv.AppendIndent(nil, flat, "  ", "  ")
		if w := bytes.TrimSuffix(want.Bytes(), []byte("\n")); !bytes.Equal(got, w) {
			t.Fatalf("message %d:\n got %s\nwant %s", i, got, w)
		}
	}
	if len(msgs) < 300 {
		t.Fatalf("only %d messages compared", len(msgs))
	}
}

// shortReader is a file cut to n bytes while being read: it says it has
// size bytes but reads end at n.
type shortReader struct {
	data []byte
	n    int64
}

func (r shortReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.n {
		return 0, io.EOF
	}
	k := copy(p, r.data[off:r.n])
	if k < len(p) {
		return k, io.EOF
	}
	return k, nil
}

// TestChunkedReadOfAFileCutWhileRead: a file that shrinks under the reader
// reads as the bytes that are there (the last line torn), with every chunk
// size, and never hangs or invents a line.
func TestChunkedReadOfAFileCutWhileRead(t *testing.T) {
	first, most := chunkFirst, chunkMax
	defer func() { chunkFirst, chunkMax = first, most }()
	data := chunkInputs()["hand"]
	for _, cut := range []int64{0, 1, 100, int64(len(data)) / 2, int64(len(data)) - 1} {
		for _, sz := range [][2]int64{{7, 13}, {64, 256}, {1 << 20, 4 << 20}} {
			chunkFirst, chunkMax = sz[0], sz[1]
			for _, mode := range []readMode{keepLine, keepRebuild} {
				r := &chunkReader{f: shortReader{data, cut}, size: int64(len(data)), large: true, mode: mode}
				var rep sessions.ReadReport
				if _, _, err := r.read(&rep); err != nil {
					t.Fatalf("cut %d chunks %v: %v", cut, sz, err)
				}
				_, want, err := oracleRead(bytes.NewReader(data[:cut]), cut, "f", true)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Lines != want.Lines || rep.Entries != want.Entries || rep.Torn != want.Torn || len(rep.Malformed) != len(want.Malformed) {
					t.Fatalf("cut %d chunks %v mode %d: %+v, want %+v", cut, sz, mode, rep, want)
				}
			}
		}
	}
}

// TestMarkerAtIsIndex: markerAt finds what bytes.Index finds, with the
// marker anywhere, twice, cut short, or its underscore alone.
func TestMarkerAtIsIndex(t *testing.T) {
	if boundaryMarker[markerUnderscore] != '_' {
		t.Fatalf("boundaryMarker[%d] = %q", markerUnderscore, boundaryMarker[markerUnderscore])
	}
	m := string(boundaryMarker)
	pieces := []string{m, m[:len(m)-1], m[1:], "_", `"compact`, `_boundary"`, "compact_boundary", "x", `"`, "__", "\\"}
	for i := 0; i < 20000; i++ {
		var b strings.Builder
		for k := uint64(i); b.Len() < 300 && k > 0; k /= 7 {
			b.WriteString(pieces[k%uint64(len(pieces))])
			b.WriteString(strings.Repeat("a", int(k%5)))
		}
		head := []byte(b.String())
		for _, h := range [][]byte{head, head[:len(head)/2], head[:min(len(head), 20)]} {
			if got, want := markerAt(h), bytes.Index(h, boundaryMarker); got != want {
				t.Fatalf("markerAt(%q) = %d, bytes.Index = %d", h, got, want)
			}
		}
	}
}
