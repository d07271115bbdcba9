package reader

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/internal/gen"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/transcript"
)

// bigFile builds a transcript over 5 MiB line by line, so tests can place a
// line at an exact offset (such as across a 1 MiB chunk edge).
type bigFile struct {
	b    bytes.Buffer
	last string
	n    int
}

func (f *bigFile) add(line string) int64 {
	off := int64(f.b.Len())
	f.b.WriteString(line + "\n")
	return off
}

func (f *bigFile) msg(typ, text string, extra ...any) {
	f.n++
	id := fmt.Sprintf("%s-%05d", typ[:1], f.n)
	f.add(jrow(typ, id, f.last, text, extra...))
	f.last = id
}

// fill adds progress rows until the file is exactly at offset off.
func (f *bigFile) fill(off int64) {
	for {
		f.n++
		id := fmt.Sprintf("p-%05d", f.n)
		short := jrow("progress", id, f.last, nil, "data", map[string]any{"out": ""})
		need := off - int64(f.b.Len()) - int64(len(short)) - 1
		switch {
		case need < 0:
			panic("fill: overshot")
		case need > 6000:
			f.add(jrow("progress", id, f.last, nil, "data", map[string]any{"out": strings.Repeat("o", 3000)}))
		default:
			f.add(jrow("progress", id, f.last, nil, "data", map[string]any{"out": strings.Repeat("o", int(need))}))
			f.last = id
			return
		}
		f.last = id
	}
}

// boundaryLine is a compact boundary in the CLI's key order (parentUuid
// first, so "compact_boundary" is ~100 bytes in), or with "type" first
// (systemFirst) and padding that pushes the marker just past 256 bytes.
func boundaryLine(id, logical string, systemFirst bool, meta string) string {
	if systemFirst {
		// The marker starts at byte 28+pad+12 = 260: past the 256-byte
		// window, yet within the first 272 bytes a reader might peek at.
		return `{"type":"system","padding":"` + strings.Repeat("x", 220) + `","subtype":"compact_boundary","parentUuid":null,"uuid":"` +
			id + `","timestamp":"2026-01-10T11:00:00.000Z","sessionId":"s","compactMetadata":` + meta + `}`
	}
	return `{"parentUuid":null,"logicalParentUuid":"` + logical + `","isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","uuid":"` +
		id + `","timestamp":"2026-01-10T11:00:00.000Z","sessionId":"s","compactMetadata":` + meta + `}`
}

func (f *bigFile) boundary(systemFirst bool, meta string) int64 {
	f.n++
	id := fmt.Sprintf("b-%05d", f.n)
	off := f.add(boundaryLine(id, f.last, systemFirst, meta))
	f.last = id
	f.msg("user", "summary of the conversation", "isCompactSummary", true)
	return off
}

// linkBack adds a user row whose parent is id (a row written earlier) and
// a reply: whether id survived the loader's cut shows in the chain.
func (f *bigFile) linkBack(id string) {
	f.last = id
	f.msg("user", "linked back")
	f.msg("assistant", "reply")
}

const mib = 1 << 20

func TestLargeFileSkipMatchesSDK(t *testing.T) {
	p := peer.Find(t)
	cfg := t.TempDir()
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
	proj := filepath.Join(cfg, "projects", "-big")
	var cases []largeCase

	// 1. From gen: progress rows, subagents, a boundary near the end.
	res, err := gen.LargeSession(proj, gen.LargeOptions{Progress: 2100, ProgressBytes: 3000, Subagents: 3, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if res.Size <= precompactSkipSize {
		t.Fatalf("gen wrote %d bytes", res.Size)
	}
	data, err := os.ReadFile(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	cases = append(cases, largeCase{"gen", data, res.BoundaryOffset, 0})

	cases = append(cases, largeHandCases()...)

	var qs []sdkQuery
	for i, c := range cases {
		id := fmt.Sprintf("%08x-6666-4666-8666-666666666666", i)
		if c.name == "gen" {
			id = res.SessionID
		} else {
			writeFile(t, filepath.Join(proj, id+".jsonl"), c.data)
		}
		qs = append(qs, sdkQuery{Op: "messages", Session: id, System: true})
	}
	ans := sdkBatch(t, p, cfg, qs)
	for i, c := range cases {
		got, rep, err := l.Messages(context.Background(), qs[i].Session, "", sessions.MessagesOptions{IncludeSystem: true})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		w := rawList(t, ans[i].OK)
		if len(w) == 0 {
			t.Errorf("%s: the SDK returned nothing", c.name)
		}
		sameMessages(t, c.name, got, w)
		if rep.SkippedBytes != c.skip {
			t.Errorf("%s: SkippedBytes %d, want %d", c.name, rep.SkippedBytes, c.skip)
		}
		if c.skip > 0 && rep.Compactions < 1 {
			t.Errorf("%s: Compactions %d", c.name, rep.Compactions)
		}
		if c.bad != 0 && (len(rep.Malformed) != 1 || rep.Malformed[0].Line != c.bad) {
			t.Errorf("%s: malformed %v, want line %d", c.name, rep.Malformed, c.bad)
		}
		if c.name == "gen" {
			// Subagents of the generated session, too.
			for _, a := range res.AgentIDs {
				got := subagentMessagesOrEmpty(t, l, res.SessionID, a, "")
				if len(got) != 3 || got[0].ParentToolUseID == nil {
					t.Errorf("gen agent %s: %d messages", a, len(got))
				}
			}
		}
	}
	// Without the skip, the whole file is read.
	_, rep, err := ReadFile(filepath.Join(proj, qs[1].Session+".jsonl"), ReadOptions{NoPrecompactSkip: true})
	if err != nil || rep.SkippedBytes != 0 || rep.Compactions != 2 {
		t.Errorf("NoPrecompactSkip: %+v, %v", rep, err)
	}
}

// largeCase is a large transcript of TestLargeFileSkipMatchesSDK.
type largeCase struct {
	name string
	data []byte
	skip int64 // expected SkippedBytes
	bad  int   // expected line of the malformed line (0: none)
}

// largeHandCases are the hand-built large transcripts: where the SDK cuts
// and where it does not.
func largeHandCases() []largeCase {
	// 2. A plain boundary, a malformed line after it, attribution snapshots
	//    (one of them really a user row) that the loader moves to the end.
	var cases []largeCase
	var f bigFile
	f.msg("user", "start")
	f.fill(3 * mib)
	f.boundary(false, `{"trigger":"auto"}`)
	f.msg("assistant", "between")
	between := f.last
	f.fill(5*mib + 100)
	cut := f.boundary(false, `{"trigger":"manual"}`)
	f.msg("assistant", "after")
	f.linkBack(between)                                      // cut away: a gap
	f.add(`{"type":"attribution-snapshot","messageId":"y"}`) // dropped: not the last one
	// The last snapshot line is really a user row (JSON.parse keeps the
	// second "type"); moved to the end, it becomes the newest leaf.
	f.add(`{"type":"attribution-snapshot","messageId":"x","type":"user","uuid":"snap-user","parentUuid":"` + f.last + `","message":{"role":"user","content":"moved"},"sessionId":"s"}`)
	f.add("{broken")
	bad := strings.Count(f.b.String(), "\n")
	f.msg("user", "last")
	cases = append(cases, largeCase{"snapshots", bytes.Clone(f.b.Bytes()), cut, bad})

	// 3. The last boundary keeps a preserved segment, so the cut is at the
	//    plain one before it.
	f = bigFile{}
	f.msg("user", "start")
	f.fill(5*mib + 10)
	cut = f.boundary(false, `{"trigger":"auto"}`)
	f.msg("assistant", "kept")
	head := f.last
	f.msg("user", "kept 2")
	tail := f.last
	f.fill(6 * mib)
	f.boundary(false, `{"preservedSegment":{"headUuid":"`+head+`","anchorUuid":"b-anchor","tailUuid":"`+tail+`"}}`)
	f.msg("assistant", "after")
	f.linkBack(tail) // kept
	cases = append(cases, largeCase{"preserved", bytes.Clone(f.b.Bytes()), cut, 0})

	// 4. A boundary in the CLI's key order that crosses a 1 MiB edge with
	//    more than 30 bytes before it: the SDK does not see it, so the cut
	//    is at the earlier boundary.
	f = bigFile{}
	f.msg("user", "start")
	f.fill(2 * mib)
	cut = f.boundary(false, `{"trigger":"auto"}`)
	f.msg("assistant", "between")
	between = f.last
	f.fill(6*mib - 100)
	f.boundary(false, `{"trigger":"auto"}`)
	f.msg("assistant", "after")
	f.linkBack(between) // kept: the SDK does not cut at the later boundary
	cases = append(cases, largeCase{"straddle-unseen", bytes.Clone(f.b.Bytes()), cut, 0})

	// 5. A boundary starting {"type":"system" across an edge is seen even
	//    with its marker past 256 bytes; the same line inside a chunk is not.
	f = bigFile{}
	f.msg("user", "start")
	f.fill(3*mib - 200)
	f.boundary(true, `{"trigger":"auto"}`) // inside chunk 2: not seen
	f.msg("assistant", "between")
	between = f.last
	f.fill(6*mib - 100)
	cut = f.boundary(true, `{"trigger":"auto"}`) // across the 6 MiB edge: seen
	f.msg("assistant", "after")
	f.linkBack(between) // cut away: a gap
	cases = append(cases, largeCase{"straddle-system", bytes.Clone(f.b.Bytes()), cut, 0})

	// 6. A boundary starting {"type":"system" inside a chunk with its
	//    marker past 256 bytes is not seen: the cut is the earlier one.
	f = bigFile{}
	f.msg("user", "start")
	f.fill(4 * mib)
	cut = f.boundary(false, `{"trigger":"auto"}`)
	f.msg("assistant", "between")
	between = f.last
	f.fill(5*mib + 1000)
	f.boundary(true, `{"trigger":"auto"}`)
	f.msg("assistant", "after")
	f.linkBack(between) // kept
	cases = append(cases, largeCase{"window", bytes.Clone(f.b.Bytes()), cut, 0})

	// 7. No boundary at all: nothing skipped.
	f = bigFile{}
	f.msg("user", "start")
	f.fill(5*mib + 5000)
	f.msg("assistant", "end")
	cases = append(cases, largeCase{"no-boundary", bytes.Clone(f.b.Bytes()), 0, 0})
	return cases
}

// ---------------------------------------------------------------------------
// Fuzzing

func FuzzReadAndRebuild(f *testing.F) {
	for _, d := range damagedFiles() {
		if len(d.data) < 1<<16 {
			f.Add(d.data)
		}
	}
	for i := 0; i < 20; i++ {
		f.Add(jsonltest.RandomTranscript(uint64(i), i%2 == 0))
	}
	f.Add([]byte("{\"type\":\"user\",\"uuid\":\"a\",\"parentUuid\":\"a\"}\n{\"type\":\"system\",\"subtype\":\"compact_boundary\",\"uuid\":\"b\",\"compactMetadata\":{\"preservedSegment\":{}}}"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		// No input may take long: a stuck run crashes the worker, which
		// the fuzzer reports with the input.
		watchdog := time.AfterFunc(20*time.Second, func() { panic("FuzzReadAndRebuild: input took over 20s") })
		defer watchdog.Stop()
		path := filepath.Join(dir, "f.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		entries, rep, err := ReadFile(path, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Entries != len(entries) {
			t.Fatalf("report says %d entries, got %d", rep.Entries, len(entries))
		}
		for _, side := range []bool{false, true} {
			ch := transcript.BuildChain(entries, transcript.ChainOptions{Sidechain: side})
			msgs := ch.Messages(transcript.MessageOptions{IncludeSystem: true, ParentToolUseID: "t"})
			for _, m := range msgs {
				if _, err := json.Marshal(m); err != nil {
					t.Fatalf("message does not encode: %v", err)
				}
			}
			if len(ch.Entries) > len(entries) {
				t.Fatalf("chain longer than the file: %d > %d", len(ch.Entries), len(entries))
			}
		}
		// The large-file scan on the same bytes, with no size threshold.
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if cut, err := oracleCut(fh, int64(len(data))); err != nil || cut < 0 || cut > int64(len(data)) {
			t.Fatalf("oracleCut: %d, %v", cut, err)
		}
	})
}

func TestMessagesFindsWorktreeAndLongPathSessions(t *testing.T) {
	p := peer.Find(t)
	cfg := t.TempDir()
	l := Layout{Layout: layout.Layout{ConfigDir: cfg}}
	conv := strings.Join([]string{jrow("user", "u1", "", "hi"), jrow("assistant", "a1", "u1", "hello")}, "\n") + "\n"

	// A session stored under a sibling worktree's project folder.
	if git, err := exec.LookPath("git"); err == nil {
		base := t.TempDir()
		repo, wt := filepath.Join(base, "repo"), filepath.Join(base, "wt")
		run := func(dir string, args ...string) {
			cmd := exec.Command(git, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		if err := os.MkdirAll(repo, 0o700); err != nil {
			t.Fatal(err)
		}
		run(repo, "init", "-q")
		run(repo, "commit", "-q", "--allow-empty", "-m", "x")
		run(repo, "worktree", "add", "-q", wt)
		id := "77777777-7777-4777-8777-777777777777"
		writeFile(t, claudedir.MainFile(l.ProjectDir(layout.Realpath(wt)), id), []byte(conv))
		want := p.Messages(t, cfg, id, repo, false)
		got, _ := messagesOrEmpty(t, l, id, repo, sessions.MessagesOptions{})
		if len(want) != 2 {
			t.Errorf("worktree: the SDK found %d messages", len(want))
		}
		sameMessages(t, "worktree", got, want)
	}

	// A project path over 200 characters whose folder carries another hash
	// suffix: found because a session in it records the path.
	long := "/work/" + strings.Repeat("very-long-directory-name/", 9) + "project"
	id := "88888888-8888-4888-8888-888888888888"
	other := filepath.Join(cfg, "projects", claudedir.SanitizePath(long)[:claudedir.MaxProjectName]+"-zzzz")
	writeFile(t, claudedir.MainFile(other, id), []byte(strings.ReplaceAll(conv, `"sessionId":"s"`, `"cwd":`+string(mustJSON(long))+`,"sessionId":"s"`)))
	want := p.Messages(t, cfg, id, long, false)
	got, _ := messagesOrEmpty(t, l, id, long, sessions.MessagesOptions{})
	if len(want) != 2 {
		t.Errorf("long path: the SDK found %d messages", len(want))
	}
	sameMessages(t, "long path", got, want)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
