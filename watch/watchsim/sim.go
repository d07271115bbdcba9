// Package watchsim writes Claude Code sessions the way Claude Code does,
// for the tests and benchmarks of scribe watch: appends in batches every
// Interval, subagent transcripts with their .meta.json, tool-result files,
// a torn line completed by the next batch, metadata re-appended byte for
// byte, a whole-file replace (write a copy, rename it over), an mtime-only
// touch, a truncation followed by new content, and a deletion. It keeps
// every line it ever wrote to each file, so Verify can check that an
// archive holds each exactly once.
package watchsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Sim writes sessions into Root (a projects folder).
type Sim struct {
	Root     string
	Interval time.Duration
	rng      *rand.Rand
	clock    time.Time
	Sessions []*Session
	// SealedTorn counts the torn lines Verify found sealed in an archive
	// (each the start of a line written whole after it).
	SealedTorn int
}

// Session is one simulated session.
type Session struct {
	ID, CWD, Dir string
	Main         *File
	Agents       []*File
	last         string
	turns        int
	title        string
	// Truncated and Deleted say what the scenario did to it.
	Truncated, Deleted, Replaced bool
}

// File is one transcript and every line ever written to it.
type File struct {
	Path  string
	Agent string
	Lines [][]byte
	// Optional is how many of Lines came before a truncation: a follower
	// that was not running between their write and the truncation never
	// saw them, so they may be missing (never twice).
	Optional int
	torn     []byte // the rest of a line whose first half is on disk
	last     string
}

// New makes a simulator of n sessions under root; seed fixes everything.
func New(root string, n int, seed int64) *Sim {
	s := &Sim{Root: root, Interval: 100 * time.Millisecond, rng: rand.New(rand.NewSource(seed)),
		clock: time.Date(2026, 1, 10, 11, 0, 0, 0, time.UTC)}
	for i := 0; i < n; i++ {
		id := uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "sim-%d-%d", seed, i)).String()
		cwd := fmt.Sprintf("/home/dev/src/app%d", i%3)
		dir := filepath.Join(root, sanitize(cwd))
		sess := &Session{ID: id, CWD: cwd, Dir: dir, title: fmt.Sprintf("Task %d", i)}
		sess.Main = &File{Path: filepath.Join(dir, id+".jsonl")}
		s.Sessions = append(s.Sessions, sess)
	}
	return s
}

func sanitize(p string) string {
	var b strings.Builder
	for _, r := range p {
		if (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

func (s *Sim) now() string {
	s.clock = s.clock.Add(time.Duration(500+s.rng.Intn(4000)) * time.Millisecond)
	return s.clock.Format("2006-01-02T15:04:05.000Z")
}

func (s *Sim) id() string {
	return uuid.NewSHA1(uuid.NameSpaceOID, fmt.Appendf(nil, "%d-%d", s.rng.Int63(), s.rng.Int63())).String()
}

func jstr(v string) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// chainLine is one user or assistant row in Claude Code's key order.
func (s *Sim) chainLine(sess *Session, f *File, role string) []byte {
	u := s.id()
	parent := "null"
	if f.last != "" {
		parent = jstr(f.last)
	}
	side := "false"
	agent := ""
	if f.Agent != "" {
		side = "true"
		agent = `"agentId":` + jstr(f.Agent) + `,`
	}
	text := strings.Repeat(fmt.Sprintf("%s words %d ", role, s.rng.Intn(1000)), 1+s.rng.Intn(40))
	var msg string
	if role == "user" {
		msg = `"type":"user","message":{"role":"user","content":` + jstr(text) + `}`
	} else {
		msg = `"message":{"model":"claude-sonnet-4-5","id":"msg_` + u[:8] + `","type":"message","role":"assistant","content":[{"type":"text","text":` + jstr(text) +
			`}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":34}},"requestId":"req_` + u[:8] + `","type":"assistant"`
	}
	line := `{"parentUuid":` + parent + `,"isSidechain":` + side + `,` + agent + msg + `,"uuid":"` + u + `","timestamp":"` + s.now() +
		`","userType":"external","entrypoint":"cli","cwd":` + jstr(sess.CWD) + `,"sessionId":"` + sess.ID + `","version":"2.1.332","gitBranch":"main"}`
	f.last = u
	return []byte(line)
}

func (s *Sim) metaLines(sess *Session) [][]byte {
	return [][]byte{
		[]byte(`{"type":"custom-title","customTitle":` + jstr(sess.title) + `,"sessionId":"` + sess.ID + `"}`),
		[]byte(`{"type":"last-prompt","lastPrompt":"go on","sessionId":"` + sess.ID + `"}`),
	}
}

// appendLines writes lines (and a torn half of the next, when torn) in one
// write, as Claude Code's drain does, first completing a torn line.
func appendLines(f *File, lines [][]byte, torn []byte) error {
	var buf bytes.Buffer
	if f.torn != nil {
		buf.Write(f.torn)
		buf.WriteByte('\n')
		f.torn = nil
	}
	for _, l := range lines {
		buf.Write(l)
		buf.WriteByte('\n')
		f.Lines = append(f.Lines, l)
	}
	if torn != nil {
		half := len(torn) / 2
		buf.Write(torn[:half])
		f.torn = torn[half:]
		f.Lines = append(f.Lines, torn)
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
		return err
	}
	fh, err := os.OpenFile(f.Path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := fh.Write(buf.Bytes()); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// Step writes one batch to every live session: the scenario's special
// cases happen at fixed steps (replace at 8, touch at 10, truncation at 12).
func (s *Sim) Step(step int) error {
	for i, sess := range s.Sessions {
		if sess.Deleted {
			continue
		}
		f := sess.Main
		var lines [][]byte
		for k := 0; k < 1+s.rng.Intn(3); k++ {
			role := "user"
			if sess.turns%2 == 1 {
				role = "assistant"
			}
			sess.turns++
			lines = append(lines, s.chainLine(sess, f, role))
		}
		if step%4 == 3 {
			lines = append(lines, s.metaLines(sess)...) // re-appended byte for byte
		}
		var torn []byte
		if step%5 == 2 && i%2 == 0 {
			torn = s.chainLine(sess, f, "user")
		}
		if err := appendLines(f, lines, torn); err != nil {
			return err
		}
		if step%6 == 1 && len(sess.Agents) < 3 {
			if err := s.startAgent(sess); err != nil {
				return err
			}
		}
		for _, a := range sess.Agents {
			if err := appendLines(a, [][]byte{s.chainLine(sess, a, "assistant")}, nil); err != nil {
				return err
			}
		}
	}
	switch step {
	case 8:
		return s.replace(s.Sessions[0])
	case 10:
		return s.touch(s.Sessions[min(1, len(s.Sessions)-1)])
	case 12:
		return s.truncate(s.Sessions[min(2, len(s.Sessions)-1)])
	}
	return nil
}

func (s *Sim) startAgent(sess *Session) error {
	aid := fmt.Sprintf("a%016x", s.rng.Int63())
	a := &File{Agent: aid, Path: filepath.Join(sess.Dir, sess.ID, "subagents", "agent-"+aid+".jsonl")}
	sess.Agents = append(sess.Agents, a)
	if err := appendLines(a, [][]byte{s.chainLine(sess, a, "user")}, nil); err != nil {
		return err
	}
	meta := fmt.Sprintf(`{"agentType":"general-purpose","toolUseId":"toolu_%s"}`, aid[:10])
	if err := os.WriteFile(strings.TrimSuffix(a.Path, ".jsonl")+".meta.json", []byte(meta), 0o600); err != nil {
		return err
	}
	tr := filepath.Join(sess.Dir, sess.ID, "tool-results", "toolu_"+aid[:10]+".txt")
	if err := os.MkdirAll(filepath.Dir(tr), 0o700); err != nil {
		return err
	}
	return os.WriteFile(tr, bytes.Repeat([]byte("output line\n"), 50), 0o600)
}

// replace writes the file's complete content to a new file and renames it
// over the old one (hydration, scribe pull).
func (s *Sim) replace(sess *Session) error {
	f := sess.Main
	if f.torn != nil {
		return nil
	}
	old, err := os.ReadFile(f.Path)
	if err != nil {
		return err
	}
	tmp := f.Path + ".hydrate"
	if err := os.WriteFile(tmp, old, 0o600); err != nil {
		return err
	}
	sess.Replaced = true
	return os.Rename(tmp, f.Path)
}

func (s *Sim) touch(sess *Session) error {
	t := time.Now().Add(time.Second)
	return os.Chtimes(sess.Main.Path, t, t)
}

// truncate empties the file and starts it over with new content (a
// compaction rewrite); every line it held before stays expected.
func (s *Sim) truncate(sess *Session) error {
	f := sess.Main
	if err := os.Truncate(f.Path, 0); err != nil {
		return err
	}
	if f.torn != nil {
		f.Lines = f.Lines[:len(f.Lines)-1] // its end was never written
	}
	f.torn, f.last = nil, ""
	f.Optional = len(f.Lines)
	sess.Truncated = true
	return appendLines(f, [][]byte{s.chainLine(sess, f, "user"), s.chainLine(sess, f, "assistant")}, nil)
}

// Finish completes every torn line.
func (s *Sim) Finish() error {
	for _, sess := range s.Sessions {
		for _, f := range append([]*File{sess.Main}, sess.Agents...) {
			if f.torn != nil && !sess.Deleted {
				if err := appendLines(f, nil, nil); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Delete removes a session as Claude Code's retention sweep does: the
// transcript and its folder.
func (s *Sim) Delete(sess *Session) error {
	sess.Deleted = true
	if err := os.Remove(sess.Main.Path); err != nil {
		return err
	}
	return os.RemoveAll(filepath.Join(sess.Dir, sess.ID))
}

// Archived maps an archive's projects folder path of a simulated file.
func (s *Sim) archived(archiveProjects string, f *File) string {
	rel, _ := filepath.Rel(s.Root, f.Path)
	return filepath.Join(archiveProjects, rel)
}

// tornPrefix reports whether l is the start of one of lines, cut short:
// not a JSON value itself.
func tornPrefix(l []byte, lines [][]byte) bool {
	if json.Valid(l) {
		return false
	}
	for _, w := range lines {
		if len(l) < len(w) && bytes.HasPrefix(w, l) {
			return true
		}
	}
	return false
}

// Verify checks the archive (a projects folder): every line with a uuid
// that was ever written is there exactly once, byte for byte; every
// distinct line without one is there; nothing else is (beyond lines
// without a uuid that repeat one written). complete=false allows lines to
// be missing (an archive still catching up) and reports how many are. A
// line that is only the start of a written line (a write torn by a kill,
// sealed by the next run) is allowed and counted in SealedTorn.
func (s *Sim) Verify(archiveProjects string, complete bool) (missing int, err error) {
	var problems []string
	for _, sess := range s.Sessions {
		for _, f := range append([]*File{sess.Main}, sess.Agents...) {
			data, rerr := os.ReadFile(s.archived(archiveProjects, f))
			if rerr != nil && !os.IsNotExist(rerr) {
				return 0, rerr
			}
			have := map[string]int{}
			for _, l := range bytes.Split(data, []byte{'\n'}) {
				if len(l) > 0 {
					have[string(l)]++
				}
			}
			want := map[string]bool{}
			for idx, l := range f.Lines {
				if f.torn != nil && bytes.Equal(l, f.Lines[len(f.Lines)-1]) {
					continue // still torn on disk
				}
				want[string(l)] = true
				n := have[string(l)]
				hasUUID := bytes.Contains(l, []byte(`"uuid":`))
				switch {
				case n == 0 && idx < f.Optional:
				case n == 0:
					missing++
					if complete {
						problems = append(problems, fmt.Sprintf("%s: line %d missing: %.120s", f.Path, idx, l))
					}
				case hasUUID && n > 1:
					problems = append(problems, fmt.Sprintf("%s: line %.60s... is there %d times", f.Path, l, n))
				}
			}
			for l := range have {
				switch {
				case want[l]:
				case tornPrefix([]byte(l), f.Lines):
					// A write a kill -9 cut short (between two pages of
					// one write), sealed with a newline by the next run
					// as the store seals a torn last line (counted as
					// torn_tails_sealed); the whole line follows it.
					s.SealedTorn++
				default:
					problems = append(problems, fmt.Sprintf("%s: the archive has a line never written: %.80s", f.Path, l))
				}
			}
		}
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		if len(problems) > 10 {
			problems = append(problems[:10], fmt.Sprintf("... and %d more", len(problems)-10))
		}
		return missing, fmt.Errorf("archive differs:\n%s", strings.Join(problems, "\n"))
	}
	if complete && missing > 0 {
		return missing, fmt.Errorf("%d lines missing from the archive", missing)
	}
	return missing, nil
}

// Lines counts every line written.
func (s *Sim) Lines() int {
	n := 0
	for _, sess := range s.Sessions {
		n += len(sess.Main.Lines)
		for _, a := range sess.Agents {
			n += len(a.Lines)
		}
	}
	return n
}
