package reader

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/transcript"
)

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// ---------------------------------------------------------------------------
// Damaged files

// jrow is one transcript row as a JSON line.
func jrow(typ, id, parent string, content any, extra ...any) string {
	m := map[string]any{"type": typ, "uuid": id, "sessionId": "s", "timestamp": "2026-01-10T11:00:00.000Z"}
	if parent == "" {
		m["parentUuid"] = nil
	} else {
		m["parentUuid"] = parent
	}
	role := typ
	if typ == "assistant" {
		m["message"] = map[string]any{"role": role, "id": "m-" + id, "content": []any{map[string]any{"type": "text", "text": content}}}
	} else if typ == "user" {
		m["message"] = map[string]any{"role": role, "content": content}
	}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

type damaged struct {
	name string
	data []byte
	// checks on scribe's own report
	check func(t *testing.T, msgs []transcript.SessionMessage, rep *sessions.MessagesReport)
}

func damagedFiles() []damaged {
	conv := func(n int) []string {
		var out []string
		parent := ""
		for i := 0; i < n; i++ {
			typ := "user"
			if i%2 == 1 {
				typ = "assistant"
			}
			id := fmt.Sprintf("r%02d", i)
			out = append(out, jrow(typ, id, parent, fmt.Sprintf("turn %d", i)))
			parent = id
		}
		return out
	}
	lines := func(ls []string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }

	malformed := conv(20)
	malformed[2] = `{"type":"user","uuid":` // line 3: torn JSON
	malformed[16] = "not json at all"       // line 17
	cycle := conv(6)
	cycle[0] = jrow("user", "r00", "r03", "turn 0 (parent loops)")
	cycle = append(cycle, jrow("user", "leaf", "r03", "leaf"))
	gap := conv(6)
	gap[3] = jrow("assistant", "r03", "lost", "after a lost row")
	torn := conv(5)
	tornData := append(lines(torn), []byte(jrow("user", "r05", "r04", "no newline"))...)
	tornJunk := append(lines(torn), []byte(`{"type":"user","uuid":"r05","parentUu`)...)

	return []damaged{
		{"malformed", lines(malformed), func(t *testing.T, msgs []transcript.SessionMessage, rep *sessions.MessagesReport) {
			var at []int
			for _, m := range rep.Malformed {
				at = append(at, m.Line)
			}
			if !reflect.DeepEqual(at, []int{3, 17}) || rep.Lines != 20 || rep.Entries != 18 {
				t.Errorf("malformed: lines %v, report %+v", at, rep.ReadReport)
			}
			// r02 and r16 are gone: gaps, and the chain starts at r17 as
			// in the SDK.
			if !reflect.DeepEqual(rep.Gaps, []transcript.ChainBreak{{UUID: "r03", Parent: "r02"}, {UUID: "r17", Parent: "r16"}}) {
				t.Errorf("malformed: gaps %v", rep.Gaps)
			}
		}},
		{"cycle", lines(cycle), func(t *testing.T, msgs []transcript.SessionMessage, rep *sessions.MessagesReport) {
			if rep.Cycle == nil || len(msgs) != 5 {
				t.Errorf("cycle: %v, %d messages", rep.Cycle, len(msgs))
			}
		}},
		{"gap", lines(gap), func(t *testing.T, msgs []transcript.SessionMessage, rep *sessions.MessagesReport) {
			if len(rep.Gaps) != 1 || rep.Gaps[0] != (transcript.ChainBreak{UUID: "r03", Parent: "lost"}) || len(msgs) != 3 {
				t.Errorf("gap: %v, %d messages", rep.Gaps, len(msgs))
			}
		}},
		{"torn", tornData, func(t *testing.T, msgs []transcript.SessionMessage, rep *sessions.MessagesReport) {
			if !rep.Torn || len(msgs) != 6 || len(rep.Malformed) != 0 {
				t.Errorf("torn: %+v, %d messages", rep.ReadReport, len(msgs))
			}
		}},
		{"torn-junk", tornJunk, func(t *testing.T, msgs []transcript.SessionMessage, rep *sessions.MessagesReport) {
			if !rep.Torn || len(msgs) != 5 || len(rep.Malformed) != 1 || rep.Malformed[0].Line != 6 {
				t.Errorf("torn junk: %+v, %d messages", rep.ReadReport, len(msgs))
			}
		}},
		{"blank-and-indented", []byte("\n\n   \t" + strings.Join(conv(4), "\n\x01 ") + "\n\n"), func(t *testing.T, msgs []transcript.SessionMessage, rep *sessions.MessagesReport) {
			if len(msgs) != 4 || len(rep.Malformed) != 0 {
				t.Errorf("blank lines: %+v, %d messages", rep.ReadReport, len(msgs))
			}
		}},
		{"huge-line", hugeLine(20 << 20), func(t *testing.T, msgs []transcript.SessionMessage, rep *sessions.MessagesReport) {
			if len(msgs) != 3 || len(msgs[1].Message) < 20<<20 {
				t.Errorf("huge line: %d messages", len(msgs))
			}
		}},
	}
}

// hugeLine is a three-row session whose middle row is one line of n bytes.
func hugeLine(n int) []byte {
	var b bytes.Buffer
	b.WriteString(jrow("user", "h0", "", "paste this") + "\n")
	head := jrow("assistant", "h1", "h0", "X")
	i := strings.Index(head, `"X"`)
	b.WriteString(head[:i+1])
	b.Write(bytes.Repeat([]byte("abcdefghij"), n/10))
	b.WriteString(head[i+2:] + "\n")
	b.WriteString(jrow("user", "h2", "h1", "thanks") + "\n")
	return b.Bytes()
}

func TestDamagedFilesMatchSDK(t *testing.T) {
	p := peer.Find(t)
	cfg := t.TempDir()
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
	proj := filepath.Join(cfg, "projects", "-damaged")
	cases := damagedFiles()
	var qs []sdkQuery
	for i, c := range cases {
		id := fmt.Sprintf("%08x-2222-4222-8222-222222222222", i)
		writeFile(t, filepath.Join(proj, id+".jsonl"), c.data)
		qs = append(qs, sdkQuery{Op: "messages", Session: id, System: true})
	}
	ans := sdkBatch(t, p, cfg, qs)
	for i, c := range cases {
		start := time.Now()
		got, rep, err := l.Messages(context.Background(), qs[i].Session, "", sessions.MessagesOptions{IncludeSystem: true})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: took %v", c.name, d)
		}
		sameMessages(t, c.name, got, rawList(t, ans[i].OK))
		c.check(t, got, rep)
	}
}

func TestEmptyAndMissingSessions(t *testing.T) {
	cfg := t.TempDir()
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
	proj := filepath.Join(cfg, "projects", "-p")
	empty := "33333333-3333-4333-8333-333333333333"
	writeFile(t, filepath.Join(proj, empty+".jsonl"), nil)
	writeFile(t, filepath.Join(proj, "not-a-uuid.jsonl"), []byte(jrow("user", "u", "", "hi")+"\n"))
	ctx := context.Background()

	msgs, _, err := l.Messages(ctx, empty, "", sessions.MessagesOptions{})
	if err != nil || len(msgs) != 0 {
		t.Errorf("empty file: %d messages, %v", len(msgs), err)
	}
	if ids, err := l.Subagents(ctx, empty, ""); err != nil || len(ids) != 0 {
		t.Errorf("empty file subagents: %v, %v", ids, err)
	}
	for _, id := range []string{"not-a-uuid", "44444444-4444-4444-8444-444444444444", ""} {
		if _, _, err := l.Messages(ctx, id, "", sessions.MessagesOptions{}); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("Messages(%q): %v, want ErrNotFound", id, err)
		}
		if _, err := l.Subagents(ctx, id, ""); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("Subagents(%q): %v, want ErrNotFound", id, err)
		}
		if _, err := NewLoader(l).Load(ctx, core.SessionRef{SessionID: id}); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("Load(%q): %v, want ErrNotFound", id, err)
		}
	}
	if _, _, err := l.SubagentMessages(ctx, empty, "", "", sessions.MessagesOptions{}); err == nil {
		t.Error("empty agent id: no error")
	}
	if p := peer.Find(t); p != nil {
		for _, id := range []string{empty, "not-a-uuid"} {
			if w := p.Messages(t, cfg, id, "", false); len(w) != 0 {
				t.Errorf("SDK has %d messages for %s", len(w), id)
			}
		}
	}
}

func TestLoader(t *testing.T) {
	cfg := t.TempDir()
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
	id := "55555555-5555-4555-8555-555555555555"
	proj := l.ProjectDir("/w/app")
	writeFile(t, claudedir.MainFile(proj, id), []byte(strings.Join([]string{
		jrow("user", "u1", "", "hi"), jrow("assistant", "a1", "u1", "hello"),
		jrow("progress", "p1", "a1", nil), jrow("user", "u2", "p1", "more"),
	}, "\n")+"\n"))
	writeFile(t, claudedir.AgentFile(proj, id, "ag"), []byte(jrow("user", "s1", "", "task", "isSidechain", true)+"\n"))
	ld := NewLoader(l)
	ld.ID = core.MustParseID("jsonl/local")
	tr, err := ld.Load(context.Background(), core.SessionRef{SessionID: id, CWD: "/w/app"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range tr.Entries {
		got = append(got, e.UUID)
	}
	if !reflect.DeepEqual(got, []string{"u1", "a1", "p1", "u2"}) || tr.Source != ld.ID {
		t.Errorf("main: %v from %v, want the file's entries in order", got, tr.Source)
	}
	tr, err = ld.Load(context.Background(), core.SessionRef{SessionID: id, AgentID: "ag"})
	if err != nil || len(tr.Entries) != 1 || tr.Entries[0].UUID != "s1" {
		t.Errorf("agent: %+v, %v", tr, err)
	}
	if _, err := ld.Load(context.Background(), core.SessionRef{SessionID: id, AgentID: "nope"}); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("missing agent: %v", err)
	}
	ld.MaxBytes = 10
	if _, err := ld.Load(context.Background(), core.SessionRef{SessionID: id}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over max_bytes: %v", err)
	}
}

// A conversation cut by a cycle or a missing parent is refused as damaged
// rather than served short.
func TestLoaderRefusesDamagedChains(t *testing.T) {
	for name, rows := range map[string][]string{
		"cycle":       {jrow("user", "u1", "a1", "hi"), jrow("assistant", "a1", "u1", "hello")},
		"cycle below": {jrow("user", "u1", "a1", "hi"), jrow("assistant", "a1", "u1", "hello"), jrow("user", "u3", "a1", "again")},
		"gap":         {jrow("user", "u2", "gone", "hi"), jrow("assistant", "a2", "u2", "hello")},
	} {
		t.Run(name, func(t *testing.T) {
			l := Layout{Layout: layout.Layout{ConfigDir: t.TempDir()}}
			id := "66666666-6666-4666-8666-666666666666"
			writeFile(t, claudedir.MainFile(l.ProjectDir("/w/app"), id), []byte(strings.Join(rows, "\n")+"\n"))
			_, err := NewLoader(l).Load(context.Background(), core.SessionRef{SessionID: id})
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("Load = %v, want ErrDamaged", err)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Large files: the pre-compact skip
