package jsonltest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/internal/testenv"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// Hand-made sessions for the listing's and the index's tests: a
// transcript written row by row, each rule of the listing one call away.

// Session writes one transcript line by line.
type Session struct {
	ID, Cwd, Branch, Entry string
	t                      time.Time
	n                      int
	Lines                  []string
	ExtraTop               string // inserted at the start of every chain row
}

// sessionSeq numbers the session ids of the test process (NewSessionID).
var sessionSeq atomic.Int64

// NewSessionID is a fresh session id, distinct in the test process.
func NewSessionID() string {
	n := sessionSeq.Add(1)
	return fmt.Sprintf("%08x-1111-4222-8333-%012x", n, n*7919)
}

// NewSession starts a transcript of a fresh session recorded in cwd, on
// branch main, from the CLI, its first row at 2026-03-01 10:00 UTC.
func NewSession(cwd string) *Session {
	return &Session{ID: NewSessionID(), Cwd: cwd, Branch: "main", Entry: "cli",
		t: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
}

// JSONString is v as JSON (a string quoted and escaped).
func JSONString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func (s *Session) uuid() string {
	s.n++
	return fmt.Sprintf("%08x-aaaa-4bbb-8ccc-%012x", s.n, sessionSeq.Load())
}

func (s *Session) ts() string {
	s.t = s.t.Add(1500 * time.Millisecond)
	return s.t.Format("2006-01-02T15:04:05.000Z")
}

func (s *Session) tail() string {
	return fmt.Sprintf(`"userType":"external","entrypoint":%s,"cwd":%s,"sessionId":%s,"version":"2.1.332","gitBranch":%s}`,
		JSONString(s.Entry), JSONString(s.Cwd), JSONString(s.ID), JSONString(s.Branch))
}

// User appends a user row; content is a string or blocks; extra is
// inserted before "type" (e.g. `"isMeta":true,`).
func (s *Session) User(content any, extra string) *Session {
	s.Lines = append(s.Lines, fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,%s%s"type":"user","message":{"role":"user","content":%s},"uuid":%s,"timestamp":%s,`,
		s.ExtraTop, extra, JSONString(content), JSONString(s.uuid()), JSONString(s.ts()))+s.tail())
	return s
}

// Assistant appends an assistant row holding text.
func (s *Session) Assistant(text string) *Session {
	s.Lines = append(s.Lines, fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,%s"message":{"model":"claude-sonnet-4-5","id":"msg_01x","type":"message","role":"assistant","content":[{"type":"text","text":%s}],"stop_reason":"end_turn","stop_sequence":null},"type":"assistant","uuid":%s,"timestamp":%s,`,
		s.ExtraTop, JSONString(text), JSONString(s.uuid()), JSONString(s.ts()))+s.tail())
	return s
}

// Raw appends line as it is.
func (s *Session) Raw(line string) *Session {
	s.Lines = append(s.Lines, line)
	return s
}

// Meta appends a metadata row of type typ whose key holds val.
func (s *Session) Meta(typ, key, val string) *Session {
	return s.Raw(fmt.Sprintf(`{"type":%s,%s:%s,"sessionId":%s}`, JSONString(typ), JSONString(key), JSONString(val), JSONString(s.ID)))
}

// Filler adds assistant rows until the transcript has grown by n bytes.
func (s *Session) Filler(n int) *Session {
	word := "lorem ipsum dolor sit amet consectetur "
	for n > 0 {
		s.Assistant(strings.Repeat(word, 25))
		n -= len(s.Lines[len(s.Lines)-1]) + 1
	}
	return s
}

// Text is the transcript, a newline after each row.
func (s *Session) Text() string { return strings.Join(s.Lines, "\n") + "\n" }

// WriteFile writes data as <dir>/<name> with the given mtime.
func WriteFile(t *testing.T, dir, name, data string, mtime time.Time) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return p
}

// SessionIDs is the session id of each entry, in order.
func SessionIDs(ls []sessions.Info) []string {
	var out []string
	for _, s := range ls {
		out = append(out, s.SessionID)
	}
	return out
}

// LayCorpus lays out every Claude Code transcript of the real corpus in
// Claude Code's layout: projects/<SanitizePath(first cwd)>/<name>, subagent
// files under their session's folder. Codex files (no "sessionId" key) are
// skipped and counted. Files get distinct mtimes with sub-millisecond
// parts. It returns the project path of each session id.
func LayCorpus(t *testing.T, cfg string) (ids map[string]string, projects []string, codex, files int) {
	t.Helper()
	src := testenv.CorpusDir(t)
	cwdRE := regexp.MustCompile(`"cwd":\s*"((?:[^"\\]|\\.)*)"`)
	ids = map[string]string{}
	seenProj := map[string]bool{}
	type sub struct{ path, sid, cwd string }
	var subs []sub
	n := 0
	place := func(from, to string) {
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(to); err == nil {
			t.Fatalf("corpus layout: %s twice", to)
		}
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o600); err != nil {
			t.Fatal(err)
		}
		mt := time.Unix(1760000000+int64(n)*3600, int64(n)*7919777%1e9)
		n++
		files++
		if err := os.Chtimes(to, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	sessionDir := map[string]string{}
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Contains(data, []byte(`"sessionId"`)) {
			codex++
			return nil
		}
		cwd := "/corpus/no-cwd"
		if m := cwdRE.FindSubmatch(data); m != nil {
			if err := json.Unmarshal(append(append([]byte{'"'}, m[1]...), '"'), &cwd); err != nil {
				return err
			}
		}
		if filepath.Base(filepath.Dir(path)) == "subagents" {
			subs = append(subs, sub{path, filepath.Base(filepath.Dir(filepath.Dir(path))), cwd})
			return nil
		}
		dir := layout.Layout{ConfigDir: cfg}.ProjectDir(cwd)
		name := filepath.Base(path)
		place(path, filepath.Join(dir, name))
		if id := strings.TrimSuffix(name, ".jsonl"); claudedir.IsSessionID(id) {
			ids[id] = cwd
			sessionDir[id] = dir
		}
		if !seenProj[cwd] {
			seenProj[cwd] = true
			projects = append(projects, cwd)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range subs {
		dir, ok := sessionDir[s.sid]
		if !ok {
			dir = layout.Layout{ConfigDir: cfg}.ProjectDir(s.cwd)
		}
		place(s.path, filepath.Join(dir, s.sid, "subagents", filepath.Base(s.path)))
	}
	sort.Strings(projects)
	return ids, projects, codex, files
}
