package jsonl

// The read side: a transcript file into entries, and the SDK's offline
// readers (getSessionMessages, listSubagents, getSubagentMessages) over a
// config folder, with the SDK's rules for finding files and for large files.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf16"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/transcript"
)

// ErrNotFound is returned when a session or subagent transcript is not in
// the config folder. It wraps core.ErrNotFound.
var ErrNotFound = fmt.Errorf("jsonl: %w", core.ErrNotFound)

const (
	// precompactSkipSize: files larger than this are loaded from their last
	// plain compact boundary on (the SDK's 5 MiB).
	precompactSkipSize = 5 << 20
	// loadChunk is the SDK's read size for large files; where a line crosses
	// a chunk edge changes how its boundary is recognised.
	loadChunk = 1 << 20
	// boundaryWindow: the marker must start within a line's first 256 bytes.
	boundaryWindow = 256
	// straddleMin: a line crossing a chunk edge with at least this many
	// bytes before the edge is judged by its first bytes only.
	straddleMin = 30
)

var (
	boundaryMarker = []byte(`"compact_boundary"`)
	snapshotPrefix = []byte(`{"type":"attribution-snapshot"`)
	systemPrefix   = []byte(`{"type":"system"`)
)

// MalformedLine is a line that was skipped because it is not a JSON object.
type MalformedLine struct {
	Line int // 1-based line number in the file
	Err  string
}

// ReadReport says what ReadFile read and what it skipped.
type ReadReport struct {
	// Lines is the number of lines read (after SkippedBytes), blank ones
	// included; Entries the number of entries returned.
	Lines, Entries int
	// Malformed lists the lines skipped as unparseable.
	Malformed []MalformedLine
	// Torn is true when the last line had no newline.
	Torn bool
	// SkippedBytes is the size of the part before the last plain compact
	// boundary of a large file, which was neither read into memory nor
	// parsed.
	SkippedBytes int64
	// Compactions counts the compact_boundary rows among the entries read.
	Compactions int
}

// ReadOptions tune ReadFile.
type ReadOptions struct {
	// NoPrecompactSkip reads a large file whole, as the SDK does with
	// CLAUDE_CODE_DISABLE_PRECOMPACT_SKIP set.
	NoPrecompactSkip bool
}

// ReadFile reads a transcript into entries in the order the SDK's loader
// sees them. Unparseable lines are skipped and reported. A file over 5 MiB
// is loaded from its last plain compact_boundary line on (found by scanning
// from the end, without parsing what comes before), with attribution
// snapshots moved to the end, as the SDK's loader does.
func ReadFile(path string, opt ReadOptions) ([]core.Entry, ReadReport, error) {
	var rep ReadReport
	f, err := os.Open(path)
	if err != nil {
		return nil, rep, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, rep, err
	}
	if !fi.Mode().IsRegular() {
		return nil, rep, fmt.Errorf("read %s: not a regular file", path)
	}
	size := fi.Size()
	large := size > precompactSkipSize && !opt.NoPrecompactSkip
	var start int64
	if large {
		start, err = findCut(f, size)
		if err != nil {
			return nil, rep, fmt.Errorf("read %s: %w", path, err)
		}
	}
	rep.SkippedBytes = start
	buf := make([]byte, size-start)
	n, err := f.ReadAt(buf, start)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, rep, fmt.Errorf("read %s: %w", path, err)
	}
	buf = buf[:n]
	entries, err := parseLines(buf, large, &rep)
	if err != nil {
		return nil, rep, fmt.Errorf("read %s: %w", path, err)
	}
	if len(rep.Malformed) > 0 && start > 0 {
		// Line numbers are counted from the cut; add the lines before it.
		before, err := countLines(f, start)
		if err != nil {
			return nil, rep, fmt.Errorf("read %s: %w", path, err)
		}
		for i := range rep.Malformed {
			rep.Malformed[i].Line += before
		}
	}
	return entries, rep, nil
}

// parseLines splits buf into lines and parses them as the SDK's loader:
// leading bytes up to ' ' are skipped, blank lines ignored. With
// moveSnapshots, lines starting with {"type":"attribution-snapshot" are
// dropped except the last, which goes to the end.
func parseLines(buf []byte, moveSnapshots bool, rep *ReadReport) ([]core.Entry, error) {
	entries := make([]core.Entry, 0, bytes.Count(buf, []byte{'\n'})+1)
	var snap []byte
	snapLine := 0
	parse := func(line []byte, no int) {
		i := 0
		for i < len(line) && line[i] <= ' ' {
			i++
		}
		if i == len(line) {
			return
		}
		e, err := core.ParseEntryOwned(line[i:])
		if err != nil {
			rep.Malformed = append(rep.Malformed, MalformedLine{Line: no, Err: err.Error()})
			return
		}
		if e.Type == core.TypeSystem && e.Subtype == "compact_boundary" {
			rep.Compactions++
		}
		entries = append(entries, e)
	}
	no := 0
	for len(buf) > 0 {
		no++
		nl := bytes.IndexByte(buf, '\n')
		var line []byte
		if nl < 0 {
			line, buf = buf, nil
			rep.Torn = true
		} else {
			line, buf = buf[:nl], buf[nl+1:]
		}
		if moveSnapshots && bytes.HasPrefix(line, snapshotPrefix) {
			snap, snapLine = line, no
			continue
		}
		parse(line, no)
	}
	rep.Lines = no
	if snap != nil {
		parse(snap, snapLine)
	}
	rep.Entries = len(entries)
	return entries, nil
}

// countLines counts the newlines in the first n bytes of f.
func countLines(f *os.File, n int64) (int, error) {
	buf := make([]byte, loadChunk)
	count := 0
	for off := int64(0); off < n; {
		want := int64(len(buf))
		if n-off < want {
			want = n - off
		}
		got, err := f.ReadAt(buf[:want], off)
		count += bytes.Count(buf[:got], []byte{'\n'})
		off += int64(got)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return 0, err
		}
	}
	return count, nil
}

// backReader reads a file backwards one aligned chunk at a time.
type backReader struct {
	f     *os.File
	size  int64
	buf   []byte
	start int64 // file offset of buf[0]; -1 when empty
}

func (b *backReader) load(idx int64) error {
	off := idx * loadChunk
	if b.start == off && b.buf != nil {
		return nil
	}
	n := int64(loadChunk)
	if b.size-off < n {
		n = b.size - off
	}
	if cap(b.buf) < loadChunk {
		b.buf = make([]byte, loadChunk)
	}
	got, err := b.f.ReadAt(b.buf[:n], off)
	if err != nil && !(errors.Is(err, io.EOF) && int64(got) == n) {
		b.start = -1
		return err
	}
	b.buf = b.buf[:n]
	b.start = off
	return nil
}

// lastNewline returns the offset of the last '\n' before pos, or -1.
func (b *backReader) lastNewline(pos int64) (int64, error) {
	for pos > 0 {
		if err := b.load((pos - 1) / loadChunk); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(b.buf[:pos-b.start], '\n'); i >= 0 {
			return b.start + int64(i), nil
		}
		pos = b.start
	}
	return -1, nil
}

// readAt returns n bytes at off, from the chunk in hand when it has them.
func (b *backReader) readAt(off int64, n int) ([]byte, error) {
	if b.start >= 0 && off >= b.start && off+int64(n) <= b.start+int64(len(b.buf)) {
		return b.buf[off-b.start : off-b.start+int64(n)], nil
	}
	out := make([]byte, n)
	got, err := b.f.ReadAt(out, off)
	if got == n {
		return out, nil
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return nil, err
}

// findCut returns the offset of the last line of the file's first size
// bytes that the SDK's large-file loader takes as a plain compact boundary
// (0 when there is none), reading from the end.
func findCut(f *os.File, size int64) (int64, error) {
	b := &backReader{f: f, size: size, start: -1}
	nl, err := b.lastNewline(size)
	if err != nil {
		return 0, err
	}
	for nl >= 0 {
		prev, err := b.lastNewline(nl)
		if err != nil {
			return 0, err
		}
		start := prev + 1
		ok, err := cutsHere(b, start, nl)
		if err != nil {
			return 0, err
		}
		if ok {
			return start, nil
		}
		nl = prev
	}
	return 0, nil
}

// cutsHere applies the SDK's test to the line [start, nl): a line that
// starts with an attribution snapshot never cuts. A line that crosses a
// chunk edge with 30 or more bytes before the edge is a candidate when it
// starts with {"type":"system"; any other line when "compact_boundary"
// starts within its first 256 bytes. A candidate cuts when it parses as a
// compact_boundary system row without preserved segment or messages.
func cutsHere(b *backReader, start, nl int64) (bool, error) {
	n := nl - start
	peek := int64(boundaryWindow + len(boundaryMarker) - 1)
	if n < peek {
		peek = n
	}
	head, err := b.readAt(start, int(peek))
	if err != nil {
		return false, err
	}
	if bytes.HasPrefix(head, snapshotPrefix) {
		return false, nil
	}
	startChunk, nlChunk := start/loadChunk, nl/loadChunk
	if startChunk != nlChunk && nlChunk*loadChunk-start >= straddleMin {
		if !bytes.HasPrefix(head, systemPrefix) {
			return false, nil
		}
	} else if i := bytes.Index(head, boundaryMarker); i < 0 || i >= boundaryWindow {
		return false, nil
	}
	line := make([]byte, n)
	if _, err := b.f.ReadAt(line, start); err != nil {
		return false, err
	}
	e, err := core.ParseEntryOwned(line)
	if err != nil {
		return false, nil
	}
	return transcript.IsPlainCompactBoundary(&e), nil
}

// ---------------------------------------------------------------------------
// The SDK's offline readers

// SessionMessage is one element of getSessionMessages' (or
// getSubagentMessages') result, with the SDK's JSON: its field names, its
// key order, and its omission rules. Message holds the transcript's own
// bytes for the message object.
type SessionMessage = transcript.SessionMessage

// MessagesOptions are getSessionMessages' options.
type MessagesOptions struct {
	// IncludeSystem keeps system rows (includeSystemMessages); main
	// sessions only.
	IncludeSystem bool
	// Limit (when > 0) and Offset slice the result as the SDK does.
	Limit, Offset int
}

// MessagesReport tells what was read to answer, and what was wrong with it.
type MessagesReport struct {
	// Path is the transcript read ("" when nothing was found).
	Path string
	ReadReport
	// Cycle and Gaps come from the chain rebuild (see transcript.Chain).
	Cycle *transcript.ChainBreak
	Gaps  []transcript.ChainBreak
}

// Messages is the SDK's getSessionMessages: the conversation of a session,
// found in the project folder of dir, or with dir "" in the first project
// folder (in name order) holding a non-empty <sessionID>.jsonl. A session
// that is not there (or a session id that is not a UUID) is ErrNotFound; a
// session whose only file is empty gives no messages and no error.
func (l Layout) Messages(ctx context.Context, sessionID, dir string, opt MessagesOptions) ([]SessionMessage, *MessagesReport, error) {
	rep := &MessagesReport{}
	path, empty, err := l.findMain(ctx, sessionID, dir)
	if err != nil {
		return nil, rep, err
	}
	if empty {
		return nil, rep, nil
	}
	rep.Path = path
	entries, rrep, err := ReadFile(path, ReadOptions{})
	rep.ReadReport = rrep
	if err != nil {
		return nil, rep, err
	}
	if err := ctx.Err(); err != nil {
		return nil, rep, err
	}
	ch := transcript.BuildChain(entries, transcript.ChainOptions{})
	rep.Cycle, rep.Gaps = ch.Cycle, ch.Gaps
	msgs := ch.Messages(transcript.MessageOptions{IncludeSystem: opt.IncludeSystem})
	return page(msgs, opt.Limit, opt.Offset), rep, nil
}

// Subagents is the SDK's listSubagents: the agent ids of the
// agent-<id>.jsonl files under <sessionID>/subagents/, searched depth first
// in name order (so an id may repeat).
func (l Layout) Subagents(ctx context.Context, sessionID, dir string) ([]string, error) {
	files, err := l.agentFiles(ctx, sessionID, dir)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(files))
	for _, a := range files {
		ids = append(ids, a.id)
	}
	return ids, nil
}

// SubagentMessages is the SDK's getSubagentMessages: the chain of one
// subagent's transcript, ending at its last user or assistant row, with
// parent_tool_use_id and parent_agent_id from agent-<id>.meta.json.
func (l Layout) SubagentMessages(ctx context.Context, sessionID, agentID, dir string, opt MessagesOptions) ([]SessionMessage, *MessagesReport, error) {
	rep := &MessagesReport{}
	path, err := l.findAgent(ctx, sessionID, agentID, dir)
	if err != nil || path == "" {
		return nil, rep, err
	}
	rep.Path = path
	entries, rrep, err := ReadFile(path, ReadOptions{NoPrecompactSkip: true})
	rep.ReadReport = rrep
	if err != nil {
		return nil, rep, err
	}
	ch := transcript.BuildChain(entries, transcript.ChainOptions{Sidechain: true})
	rep.Cycle, rep.Gaps = ch.Cycle, ch.Gaps
	mo := transcript.MessageOptions{}
	mo.ParentToolUseID, mo.ParentAgentID = readAgentMeta(strings.TrimSuffix(path, ".jsonl") + ".meta.json")
	msgs := ch.Messages(mo)
	return page(msgs, opt.Limit, opt.Offset), rep, nil
}

// readAgentMeta returns the string toolUseId and parentAgentId of a
// subagent's meta file ("" when absent or not strings).
func readAgentMeta(path string) (toolUseID, parentAgentID string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", ""
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return "", ""
	}
	_ = json.Unmarshal(m["toolUseId"], &toolUseID)
	_ = json.Unmarshal(m["parentAgentId"], &parentAgentID)
	return toolUseID, parentAgentID
}

// page is the SDK's limit/offset slice (JavaScript's Array.slice, so a
// negative offset counts from the end).
func page(msgs []SessionMessage, limit, offset int) []SessionMessage {
	n := len(msgs)
	idx := func(i int) int {
		if i < 0 {
			i += n
			if i < 0 {
				i = 0
			}
		}
		if i > n {
			i = n
		}
		return i
	}
	switch {
	case limit > 0:
		s, e := idx(offset), idx(offset+limit)
		if e < s {
			return msgs[:0]
		}
		return msgs[s:e]
	case offset > 0:
		return msgs[idx(offset):]
	}
	return msgs
}

// findMain returns the session's main file as the SDK picks it: the
// non-empty <id>.jsonl in the project folder(s) of dir, or in the first
// project folder that has one. empty is true when only empty files exist.
func (l Layout) findMain(ctx context.Context, sessionID, dir string) (path string, empty bool, err error) {
	if !IsSessionID(sessionID) {
		return "", false, fmt.Errorf("%w: session %q (not a UUID)", ErrNotFound, sessionID)
	}
	var dirs []string
	if dir != "" {
		dirs = l.projectDirs(dir)
		// Only when the project's own folders lack it: the folders of the
		// repository's other git worktrees.
		defer func() {
			if path != "" || empty || !errors.Is(err, core.ErrNotFound) {
				return
			}
			real := liteRealpath(dir)
			for _, wt := range liteGitWorktrees(ctx, real) {
				if wt == real {
					continue
				}
				for _, d := range l.projectDirs(wt) {
					if fi, e := os.Stat(MainFile(d, sessionID)); e == nil && fi.Size() > 0 {
						path, err = MainFile(d, sessionID), nil
						return
					}
				}
			}
		}()
	} else {
		ents, err := os.ReadDir(l.ProjectsDir())
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", false, fmt.Errorf("find session %s: %w", sessionID, err)
		}
		for _, e := range ents {
			dirs = append(dirs, filepath.Join(l.ProjectsDir(), e.Name()))
		}
	}
	for _, d := range dirs {
		if err := ctx.Err(); err != nil {
			return "", false, err
		}
		p := MainFile(d, sessionID)
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if fi.Size() > 0 {
			return p, false, nil
		}
		empty = true
	}
	if empty {
		return "", true, nil
	}
	return "", false, fmt.Errorf("%w: session %s", ErrNotFound, sessionID)
}

// projectDirs are the folders the SDK reads for project path dir: the
// sanitized name of its real path when that folder exists, and, for names
// cut at 200 characters, other folders with the same prefix whose sessions
// record that path.
func (l Layout) projectDirs(dir string) []string {
	p := liteRealpath(dir)
	var out []string
	exact := l.ProjectDir(p)
	if fi, err := os.Stat(exact); err == nil && fi.IsDir() {
		out = append(out, exact)
	}
	full := sanitizeFull(p)
	if len(full) <= maxProjectName {
		return out
	}
	prefix := full[:maxProjectName] + "-"
	ents, err := os.ReadDir(l.ProjectsDir())
	if err != nil {
		return out
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		d := filepath.Join(l.ProjectsDir(), e.Name())
		if d != exact && recordsCwd(d, full) {
			out = append(out, d)
		}
	}
	return out
}

// sanitizeFull is the project-name rule without the length cut.
func sanitizeFull(p string) string {
	units := utf16.Encode([]rune(p))
	out := make([]byte, len(units))
	for i, u := range units {
		if (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') {
			out[i] = byte(u)
		} else {
			out[i] = '-'
		}
	}
	return string(out)
}

// recordsCwd reports whether a session file in folder d records the
// working directory whose full sanitized name is want: a relocated entry in
// its last 64 KiB, else the first cwd in its first 64 KiB.
func recordsCwd(d, want string) bool {
	ents, err := os.ReadDir(d)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		head, tail, ok := rdHeadTail(filepath.Join(d, e.Name()))
		if !ok {
			continue
		}
		cwd, found := lastStringField(tail, "relocatedCwd", `"type":"relocated"`)
		if !found {
			cwd, found = firstStringField(head, "cwd")
		}
		if found && sanitizeFull(cwd) == want {
			return true
		}
	}
	return false
}

const rdLiteWindow = 64 << 10

func rdHeadTail(path string) (head, tail string, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return "", "", false
	}
	buf := make([]byte, rdLiteWindow)
	n, _ := f.ReadAt(buf, 0)
	if n == 0 {
		return "", "", false
	}
	head = string(buf[:n])
	tail = head
	if off := fi.Size() - rdLiteWindow; off > 0 {
		n, _ = f.ReadAt(buf, off)
		tail = string(buf[:n])
	}
	return head, tail, true
}

// lastStringField scans text's lines from the end for one holding
// "key": and marker that parses with a string key.
func lastStringField(text, key, marker string) (string, bool) {
	lines := strings.Split(text, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		ln := lines[i]
		if !strings.Contains(ln, `"`+key+`":`) || !strings.Contains(ln, marker) {
			continue
		}
		if s, ok := stringMember(ln, key); ok {
			return s, true
		}
	}
	return "", false
}

// firstStringField scans text's lines from the start for one holding
// "key": that parses with a string key.
func firstStringField(text, key string) (string, bool) {
	for _, ln := range strings.Split(text, "\n") {
		if !strings.Contains(ln, `"`+key+`":`) {
			continue
		}
		if s, ok := stringMember(ln, key); ok {
			return s, true
		}
	}
	return "", false
}

func stringMember(line, key string) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(line), &m) != nil {
		return "", false
	}
	var s string
	if json.Unmarshal(m[key], &s) != nil || len(m[key]) == 0 || m[key][0] != '"' {
		return "", false
	}
	return s, true
}

type agentFile struct{ id, path string }

// agentFiles lists a session's agent-<id>.jsonl files as the SDK does. A
// session whose main file is missing is ErrNotFound; one whose main file is
// empty has none.
func (l Layout) agentFiles(ctx context.Context, sessionID, dir string) ([]agentFile, error) {
	main, empty, err := l.findMain(ctx, sessionID, dir)
	if err != nil || empty {
		return nil, err
	}
	return walkAgents(ctx, main, "")
}

// walkAgents lists the agent files under the session folder of main, depth
// first in name order (the order of the SDK's recursive readdir); with
// stopAt, it stops at the first file of that agent id.
func walkAgents(ctx context.Context, main, stopAt string) ([]agentFile, error) {
	var out []agentFile
	var walk func(d string) (bool, error)
	walk = func(d string) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		ents, err := os.ReadDir(d) // sorted by name, links not followed
		if err != nil {
			return false, nil
		}
		for _, e := range ents {
			name := e.Name()
			switch {
			case e.Type().IsRegular() && strings.HasPrefix(name, "agent-") && strings.HasSuffix(name, ".jsonl") &&
				len(name) >= len("agent-")+len(".jsonl"):
				id := name[len("agent-") : len(name)-len(".jsonl")]
				out = append(out, agentFile{id: id, path: filepath.Join(d, name)})
				if stopAt != "" && id == stopAt {
					return true, nil
				}
			case e.IsDir():
				if done, err := walk(filepath.Join(d, name)); done || err != nil {
					return done, err
				}
			}
		}
		return false, nil
	}
	if _, err := walk(filepath.Join(strings.TrimSuffix(main, ".jsonl"), "subagents")); err != nil {
		return nil, err
	}
	return out, nil
}

// findAgent returns the transcript of one subagent ("" with no error when
// the session exists but its main file is empty).
func (l Layout) findAgent(ctx context.Context, sessionID, agentID, dir string) (string, error) {
	if agentID == "" {
		return "", fmt.Errorf("%w: empty agent id", ErrNotFound)
	}
	main, empty, err := l.findMain(ctx, sessionID, dir)
	if err != nil || empty {
		return "", err
	}
	files, err := walkAgents(ctx, main, agentID)
	if err != nil {
		return "", err
	}
	if n := len(files); n > 0 && files[n-1].id == agentID {
		return files[n-1].path, nil
	}
	return "", fmt.Errorf("%w: agent %s of session %s", ErrNotFound, agentID, sessionID)
}

// ---------------------------------------------------------------------------
// Loader

// Loader serves sessions from a config folder (core.Loader).
type Loader struct {
	Layout Layout
	// ID is reported as the transcripts' Source.
	ID core.ID
	// MaxBytes, when positive, refuses transcripts larger than this: resume
	// then falls back to a loader that reads less (the summary loader).
	MaxBytes int64
}

// NewLoader returns a Loader over l.
func NewLoader(l Layout) *Loader { return &Loader{Layout: l} }

// Loader errors: resume reports them as the reason this loader missed.
var (
	ErrTooLarge = errors.New("transcript larger than the loader's max_bytes")
	ErrDamaged  = errors.New("transcript damaged beyond repair")
)

// Load returns ref's entries in file order (from the last compact boundary
// on, for files over 5 MiB), ready for transcript.BuildChain. The session is
// looked for in the project folder of ref.CWD first, then everywhere. A
// miss is ErrNotFound. A conversation whose walk from the leaf meets a
// cycle, or a parent that is not in the file, is ErrDamaged rather than
// served short.
func (ld *Loader) Load(ctx context.Context, ref core.SessionRef) (*core.Transcript, error) {
	l := ld.Layout
	var path string
	var err error
	for i, dir := range []string{ref.CWD, ""} {
		if i == 0 && dir == "" {
			continue
		}
		if ref.AgentID != "" {
			path, err = l.findAgent(ctx, ref.SessionID, ref.AgentID, dir)
		} else {
			var empty bool
			path, empty, err = l.findMain(ctx, ref.SessionID, dir)
			if empty {
				err = nil
			}
		}
		if err == nil && path != "" {
			break
		}
		if err != nil && !errors.Is(err, core.ErrNotFound) {
			return nil, err
		}
	}
	tr := &core.Transcript{Ref: ref, Source: ld.ID}
	if path == "" {
		if err != nil {
			return nil, err
		}
		return tr, nil
	}
	if ld.MaxBytes > 0 {
		if fi, err := os.Stat(path); err == nil && fi.Size() > ld.MaxBytes {
			return nil, fmt.Errorf("%w: %s is %d bytes, max_bytes %d", ErrTooLarge, path, fi.Size(), ld.MaxBytes)
		}
	}
	entries, rep, err := ReadFile(path, ReadOptions{NoPrecompactSkip: ref.AgentID != ""})
	if err != nil {
		return nil, err
	}
	ch := transcript.BuildChain(entries, transcript.ChainOptions{Sidechain: ref.AgentID != ""})
	if ch.Cycle != nil {
		return nil, fmt.Errorf("%w: %s: parentUuid cycle at %s", ErrDamaged, path, ch.Cycle.UUID)
	}
	if len(ch.Entries) == 0 {
		for i := range entries {
			if entries[i].IsMessage() {
				return nil, fmt.Errorf("%w: %s: no conversation can be rebuilt (no leaf: every row is another's parent)", ErrDamaged, path)
			}
		}
	}
	if len(ch.Entries) > 0 {
		root := ch.Entries[0]
		for _, g := range ch.Gaps {
			if g.UUID == root.UUID {
				return nil, fmt.Errorf("%w: %s: %s names parent %s, which is not in the file", ErrDamaged, path, g.UUID, g.Parent)
			}
		}
	}
	tr.Entries = entries
	if n := len(rep.Malformed); n > 0 {
		tr.Notes = append(tr.Notes, fmt.Sprintf("%d malformed lines skipped in %s", n, path))
	}
	if rep.Torn {
		tr.Notes = append(tr.Notes, "torn last line skipped in "+path)
	}
	if rep.SkippedBytes > 0 {
		tr.Notes = append(tr.Notes, fmt.Sprintf("%d bytes before the last compact boundary not read", rep.SkippedBytes))
	}
	return tr, nil
}
