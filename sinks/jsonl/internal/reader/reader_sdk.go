package reader

// The SDK's offline readers over a config folder (see reader.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/transcript"
)

// ---------------------------------------------------------------------------
// The SDK's offline readers

// Messages is the SDK's getSessionMessages: the conversation of a session,
// found in the project folder of dir, or with dir "" in the first project
// folder (in name order) holding a non-empty <sessionID>.jsonl. A session
// that is not there (or a session id that is not a UUID) is ErrNotFound; a
// session whose only file is empty, or that has only subagent files (a
// <id>/subagents/ folder and no <id>.jsonl), gives no messages and no
// error, as in the SDK.
func (l Layout) Messages(ctx context.Context, sessionID, dir string, opt sessions.MessagesOptions) ([]transcript.SessionMessage, *sessions.MessagesReport, error) {
	rep := &sessions.MessagesReport{}
	path, empty, err := l.findReadable(ctx, sessionID, dir)
	if err != nil {
		return nil, rep, err
	}
	if empty {
		return nil, rep, nil
	}
	rep.Path = path
	variant := fmt.Sprint(opt.IncludeSystem)
	if l.Reads != nil && l.FS == nil {
		if v, ok := l.Reads.Get(path, variant); ok {
			r := v.(*conversationRead)
			*rep = r.rep
			return page(slices.Clone(r.msgs), opt.Limit, opt.Offset), rep, nil
		}
	}
	var stamp layout.FileStamp
	keep := false
	if l.Reads != nil && l.FS == nil {
		stamp, keep = l.Reads.Stamp(path)
	}
	out, rrep, err := readFile(l.FS, path, ReadOptions{}, keepRebuild)
	rep.ReadReport = rrep
	if err != nil {
		return nil, rep, err
	}
	if err := ctx.Err(); err != nil {
		return nil, rep, err
	}
	var msgs []transcript.SessionMessage
	msgs, rep.Cycle, rep.Gaps = transcript.RowsMessages(out.rows, transcript.ChainOptions{},
		transcript.MessageOptions{IncludeSystem: opt.IncludeSystem})
	if keep {
		l.Reads.Put(path, variant, stamp, &conversationRead{msgs: slices.Clone(msgs), rep: *rep})
	}
	return page(msgs, opt.Limit, opt.Offset), rep, nil
}

// conversationRead is what Messages keeps in the layout's ReadCache.
type conversationRead struct {
	msgs []transcript.SessionMessage
	rep  sessions.MessagesReport
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
		ids = append(ids, a.ID)
	}
	return ids, nil
}

// SubagentMessages is the SDK's getSubagentMessages: the chain of one
// subagent's transcript, ending at its last user or assistant row, with
// parent_tool_use_id and parent_agent_id from agent-<id>.meta.json.
func (l Layout) SubagentMessages(ctx context.Context, sessionID, agentID, dir string, opt sessions.MessagesOptions) ([]transcript.SessionMessage, *sessions.MessagesReport, error) {
	rep := &sessions.MessagesReport{}
	path, err := l.findAgent(ctx, sessionID, agentID, dir)
	if err != nil || path == "" {
		return nil, rep, err
	}
	rep.Path = path
	out, rrep, err := readFile(l.FS, path, ReadOptions{NoPrecompactSkip: true}, keepRebuild)
	rep.ReadReport = rrep
	if err != nil {
		return nil, rep, err
	}
	mo := transcript.MessageOptions{}
	mo.ParentToolUseID, mo.ParentAgentID = readAgentMeta(l.FS, strings.TrimSuffix(path, ".jsonl")+".meta.json")
	var msgs []transcript.SessionMessage
	msgs, rep.Cycle, rep.Gaps = transcript.RowsMessages(out.rows, transcript.ChainOptions{Sidechain: true}, mo)
	return page(msgs, opt.Limit, opt.Offset), rep, nil
}

// SubagentParents maps each subagent Subagents lists (the first file of
// an id) with a non-empty transcript to the parent_tool_use_id
// SubagentMessages gives its messages: the toolUseId of its
// agent-<id>.meta.json. Only the meta files are read: a viewer learns
// which call started which subagent without reading the transcripts.
// Subagents without a meta file, or whose toolUseId is not a string, are
// left out.
func (l Layout) SubagentParents(ctx context.Context, sessionID, dir string) (map[string]string, error) {
	files, err := l.agentFiles(ctx, sessionID, dir)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(files))
	for _, a := range files {
		if _, dup := out[a.ID]; dup {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if fi, err := l.FSys().Stat(a.Path); err != nil || fi.Size() == 0 {
			continue
		}
		if call, _ := readAgentMeta(l.FS, strings.TrimSuffix(a.Path, ".jsonl")+".meta.json"); call != "" {
			out[a.ID] = call
		}
	}
	return out, nil
}

// readAgentMeta returns the string toolUseId and parentAgentId of a
// subagent's meta file ("" when absent or not strings).
func readAgentMeta(fsys layout.FS, path string) (toolUseID, parentAgentID string) {
	raw, err := layout.ReadFileFS(fsys, path)
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
func page(msgs []transcript.SessionMessage, limit, offset int) []transcript.SessionMessage {
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

// FindMain returns the session's main file as the SDK picks it: the
// non-empty <id>.jsonl in the project folder(s) of dir, or in the first
// project folder that has one. empty is true when only empty files exist.
func (l Layout) FindMain(ctx context.Context, sessionID, dir string) (path string, empty bool, err error) {
	if !claudedir.IsSessionID(sessionID) {
		return "", false, fmt.Errorf("%w: session %q (not a UUID)", layout.ErrNotFound, sessionID)
	}
	dirs, err := l.searchDirs(sessionID, dir)
	if err != nil {
		return "", false, err
	}
	if dir != "" {
		// Only when the project's own folders lack it: the folders of the
		// repository's other git worktrees.
		defer func() {
			if path != "" || empty || !errors.Is(err, core.ErrNotFound) {
				return
			}
			real := layout.Realpath(dir)
			for _, wt := range layout.GitWorktrees(ctx, real) {
				if wt == real {
					continue
				}
				for _, d := range l.projectDirs(wt) {
					if fi, e := l.FSys().Stat(claudedir.MainFile(d, sessionID)); e == nil && fi.Size() > 0 {
						path, err = claudedir.MainFile(d, sessionID), nil
						return
					}
				}
			}
		}()
	}
	for _, d := range dirs {
		if err := ctx.Err(); err != nil {
			return "", false, err
		}
		p := claudedir.MainFile(d, sessionID)
		fi, err := l.FSys().Stat(p)
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
	return "", false, fmt.Errorf("%w: session %s", layout.ErrNotFound, sessionID)
}

// searchDirs are the project folders a session is looked for in: those of
// project path dir, or with dir "" every project folder in name order.
func (l Layout) searchDirs(sessionID, dir string) ([]string, error) {
	if dir != "" {
		return l.projectDirs(dir), nil
	}
	ents, err := l.FSys().ReadDir(l.ProjectsDir())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("find session %s: %w", sessionID, err)
	}
	dirs := make([]string, 0, len(ents))
	for _, e := range ents {
		dirs = append(dirs, l.ProjectFolder(e.Name()))
	}
	return dirs, nil
}

// onlySubagents reports whether a session that has no main transcript in
// the folders of dir has a <id>/subagents/ folder there: the SDK answers
// such a session as it answers an empty one (no messages, no subagents),
// and so does scribe, instead of "not found".
func (l Layout) onlySubagents(sessionID, dir string) bool {
	dirs, err := l.searchDirs(sessionID, dir)
	if err != nil {
		return false
	}
	for _, d := range dirs {
		if fi, err := l.FSys().Stat(filepath.Join(claudedir.SessionDir(d, sessionID), claudedir.SubagentsDir)); err == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

// findReadable is findMain for the SDK's readers: a session with only
// subagent files counts as empty (see onlySubagents).
func (l Layout) findReadable(ctx context.Context, sessionID, dir string) (path string, empty bool, err error) {
	path, empty, err = l.FindMain(ctx, sessionID, dir)
	if errors.Is(err, core.ErrNotFound) && claudedir.IsSessionID(sessionID) && l.onlySubagents(sessionID, dir) {
		return "", true, nil
	}
	return path, empty, err
}

// projectDirs are the folders the SDK reads for project path dir: the
// sanitized name of its real path when that folder exists, and, for names
// cut at 200 characters, other folders with the same prefix whose sessions
// record that path.
func (l Layout) projectDirs(dir string) []string {
	p := layout.Realpath(dir)
	var out []string
	exact := l.ProjectDir(p)
	if fi, err := l.FSys().Stat(exact); err == nil && fi.IsDir() {
		out = append(out, exact)
	}
	full := claudedir.SanitizeFull(p)
	if len(full) <= claudedir.MaxProjectName {
		return out
	}
	prefix := full[:claudedir.MaxProjectName] + "-"
	ents, err := l.FSys().ReadDir(l.ProjectsDir())
	if err != nil {
		return out
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		d := l.ProjectFolder(e.Name())
		if d != exact && recordsCwd(l.FS, d, full) {
			out = append(out, d)
		}
	}
	return out
}

// recordsCwd reports whether a session file in folder d records the
// working directory whose full sanitized name is want: a relocated entry in
// its last 64 KiB, else the first cwd in its first 64 KiB.
func recordsCwd(fsys layout.FS, d, want string) bool {
	ents, err := layout.FSOf(fsys).ReadDir(d)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".jsonl") {
			continue
		}
		head, tail, ok := rdHeadTail(fsys, filepath.Join(d, e.Name()))
		if !ok {
			continue
		}
		cwd, found := lastStringField(tail, "relocatedCwd", `"type":"relocated"`)
		if !found {
			cwd, found = firstStringField(head, "cwd")
		}
		if found && claudedir.SanitizeFull(cwd) == want {
			return true
		}
	}
	return false
}

func rdHeadTail(fsys layout.FS, path string) (head, tail string, ok bool) {
	f, err := layout.FSOf(fsys).Open(path)
	if err != nil {
		return "", "", false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return "", "", false
	}
	buf := make([]byte, claudedir.ListWindow)
	n, _ := f.ReadAt(buf, 0)
	if n == 0 {
		return "", "", false
	}
	head = string(buf[:n])
	tail = head
	if off := fi.Size() - claudedir.ListWindow; off > 0 {
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

type agentFile = layout.AgentFile

// agentFiles lists a session's agent-<id>.jsonl files as the SDK does. A
// session whose main file is missing is ErrNotFound; one whose main file is
// empty, or missing beside a <id>/subagents/ folder, has none (the SDK
// looks for subagents only beside a main transcript).
func (l Layout) agentFiles(ctx context.Context, sessionID, dir string) ([]agentFile, error) {
	main, empty, err := l.findReadable(ctx, sessionID, dir)
	if err != nil || empty {
		return nil, err
	}
	return l.walkAgents(ctx, main, "")
}

// WalkAgents lists the agent files under the session folder of main, depth
// first in name order (the order of the SDK's recursive readdir); with
// stopAt, it stops at the first file of that agent id.
func WalkAgents(ctx context.Context, fsys layout.FS, main, stopAt string) ([]agentFile, error) {
	return WalkAgentFolders(ctx, fsys, main, stopAt, nil)
}

// WalkAgentFolders is WalkAgents calling visit (when not nil) with each
// folder it reads, or tries to, before it reads it.
func WalkAgentFolders(ctx context.Context, fsys layout.FS, main, stopAt string, visit func(dir string)) ([]agentFile, error) {
	var out []agentFile
	var walk func(d string) (bool, error)
	walk = func(d string) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		if visit != nil {
			visit(d)
		}
		ents, err := layout.FSOf(fsys).ReadDir(d) // sorted by name, links not followed
		if err != nil {
			return false, nil
		}
		for _, e := range ents {
			name := e.Name()
			switch {
			case e.Type().IsRegular():
				id, ok := claudedir.AgentFileID(name)
				if !ok {
					continue
				}
				out = append(out, agentFile{ID: id, Path: filepath.Join(d, name)})
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
	if _, err := walk(filepath.Join(claudedir.SessionDirOf(main), claudedir.SubagentsDir)); err != nil {
		return nil, err
	}
	return out, nil
}

// walkAgents is WalkAgents over the layout's files, through its
// WalkCache when it keeps one and reads the disk.
func (l Layout) walkAgents(ctx context.Context, main, stopAt string) ([]agentFile, error) {
	if l.Walks == nil || l.FS != nil {
		return WalkAgents(ctx, l.FS, main, stopAt)
	}
	top := filepath.Join(claudedir.SessionDirOf(main), claudedir.SubagentsDir)
	files, ok := l.Walks.Get(top)
	if !ok {
		var dirs []layout.DirStamp
		keep := true
		var err error
		files, err = WalkAgentFolders(ctx, nil, main, "", func(d string) {
			s, ok := layout.StampDir(d, time.Now())
			keep = keep && ok
			dirs = append(dirs, s)
		})
		if err != nil {
			return nil, err
		}
		if keep {
			l.Walks.Put(top, dirs, files)
		}
	}
	if stopAt != "" {
		for i, f := range files {
			if f.ID == stopAt {
				return slices.Clone(files[:i+1]), nil
			}
		}
	}
	return slices.Clone(files), nil // the callers' own: the kept walk stays as it is
}

// findAgent returns the transcript of one subagent ("" with no error when
// the session exists but its main file is empty).
func (l Layout) findAgent(ctx context.Context, sessionID, agentID, dir string) (string, error) {
	if agentID == "" {
		return "", fmt.Errorf("%w: empty agent id", layout.ErrNotFound)
	}
	main, empty, err := l.findReadable(ctx, sessionID, dir)
	if err != nil || empty {
		return "", err
	}
	files, err := l.walkAgents(ctx, main, agentID)
	if err != nil {
		return "", err
	}
	if n := len(files); n > 0 && files[n-1].ID == agentID {
		return files[n-1].Path, nil
	}
	return "", fmt.Errorf("%w: agent %s of session %s", layout.ErrNotFound, agentID, sessionID)
}

// MainIDs returns the session ids of the main transcripts of every project
// folder that start with prefix (lower case), each with the folders
// holding it.
func (l Layout) MainIDs(prefix string) (map[string][]string, error) {
	projects, err := l.FSys().ReadDir(l.ProjectsDir())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	found := map[string][]string{}
	for _, p := range projects {
		if !p.IsDir() {
			continue
		}
		files, _ := l.FSys().ReadDir(l.ProjectFolder(p.Name()))
		for _, f := range files {
			id, ok := claudedir.MainFileID(f.Name())
			if ok && strings.HasPrefix(strings.ToLower(id), prefix) {
				found[id] = append(found[id], p.Name())
			}
		}
	}
	return found, nil
}

// Transcript reads a session's main transcript whole (every line that
// parses, nothing skipped before a compaction), as the SDK finds it, with
// its size and the size of its subagents' transcripts.
func (l Layout) Transcript(ctx context.Context, sessionID, dir string) (*sessions.Transcript, error) {
	path, empty, err := l.findReadable(ctx, sessionID, dir)
	if err != nil {
		return nil, err
	}
	if empty || path == "" {
		return nil, fmt.Errorf("%w: session %s has no transcript to read (an empty file, or only subagent files)", layout.ErrNotFound, sessionID)
	}
	out, rep, err := readFile(l.FS, path, ReadOptions{NoPrecompactSkip: true}, keepLine)
	if err != nil {
		return nil, err
	}
	t := &sessions.Transcript{Path: path, Entries: out.entries, Report: rep}
	if fi, err := l.FSys().Stat(path); err == nil {
		t.Bytes = fi.Size()
	}
	t.AgentBytes = treeSize(l.FSys(), claudedir.SubagentDir(filepath.Dir(path), sessionID))
	return t, nil
}

// treeSize is the total size of the files under dir (links not followed).
func treeSize(fsys layout.FS, dir string) int64 {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range ents {
		if e.IsDir() {
			n += treeSize(fsys, filepath.Join(dir, e.Name()))
		} else if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// AgentTranscript reads one subagent's transcript whole, as Transcript
// reads the main one.
func (l Layout) AgentTranscript(ctx context.Context, sessionID, agentID, dir string) (*sessions.Transcript, error) {
	path, err := l.findAgent(ctx, sessionID, agentID, dir)
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, fmt.Errorf("%w: agent %s of session %s (the session's transcript is empty)", layout.ErrNotFound, agentID, sessionID)
	}
	out, rep, err := readFile(l.FS, path, ReadOptions{NoPrecompactSkip: true}, keepLine)
	if err != nil {
		return nil, err
	}
	t := &sessions.Transcript{Path: path, Entries: out.entries, Report: rep}
	if fi, err := l.FSys().Stat(path); err == nil {
		t.Bytes = fi.Size()
	}
	return t, nil
}
