// Package gen writes synthetic Claude Code transcripts in Claude Code's
// layout, for tests and benchmarks of scribe's read path.
//
// LargeSession builds the shape that makes readers slow: a long tool call
// whose progress rows fill the file (tens of thousands of them), hundreds of
// subagent transcripts, and a compact boundary near the end, after which a
// few ordinary messages follow. Output is deterministic for a given Seed.
//
// It imports nothing of scribe's, so any package's tests may use it.
package gen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// LargeOptions shape LargeSession's output. Zero values take the defaults
// noted (which give a file of about 100 MB).
type LargeOptions struct {
	SessionID string // default: derived from Seed
	CWD       string // recorded cwd; default "/home/dev/src/app"
	// Progress is the number of progress rows (default 34000) and
	// ProgressBytes the approximate size of each (default 2900).
	Progress      int
	ProgressBytes int
	// Subagents is the number of subagent transcripts (default 400), each
	// with a .meta.json.
	Subagents int
	// NoBoundary leaves out the compact boundary.
	NoBoundary bool
	// After is the number of user/assistant rounds after the boundary
	// (default 3).
	After int
	Seed  int64
}

// LargeResult describes what LargeSession wrote.
type LargeResult struct {
	SessionID string
	Path      string // the main transcript
	Size      int64
	// BoundaryOffset is the byte offset of the compact_boundary line (-1
	// with NoBoundary).
	BoundaryOffset int64
	// AgentIDs are the subagents, in the order written.
	AgentIDs []string
}

type writer struct {
	w    *bufio.Writer
	n    int64
	rng  *rand.Rand
	sid  string
	cwd  string
	t    time.Time
	err  error
	last string
}

func (w *writer) uuid() string {
	var b [16]byte
	w.rng.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func (w *writer) ts() string {
	w.t = w.t.Add(time.Duration(50+w.rng.Intn(900)) * time.Millisecond)
	return w.t.UTC().Format("2006-01-02T15:04:05.000Z")
}

func q(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var words = strings.Fields(`the of and to in is that for it as with was on be by this are from or at an
have not which but all were when we there can more if been has their its so out up into than them
only other time new some could these two may first then do any like my now over such our man me even
most made after also did many before must through back years where much your way well down should
because each just those people how too little state good very make world still own see men work long
get here between both life being under never day same another know while last might us great old year
off come since against go came right used take three build test file error function return value type`)

func (w *writer) text(n int) string {
	var sb strings.Builder
	for sb.Len() < n {
		if sb.Len() > 0 {
			if w.rng.Intn(12) == 0 {
				sb.WriteString("\n")
			} else {
				sb.WriteByte(' ')
			}
		}
		sb.WriteString(words[w.rng.Intn(len(words))])
	}
	return sb.String()
}

// line writes one row: the chain envelope around the row's own keys, in
// Claude Code's key order.
func (w *writer) line(parent *string, own string, extra string) {
	if w.err != nil {
		return
	}
	p := "null"
	if parent != nil {
		p = q(*parent)
	}
	s := `{"parentUuid":` + p + `,"isSidechain":false,` + own +
		`,"userType":"external","entrypoint":"cli","cwd":` + q(w.cwd) + `,"sessionId":` + q(w.sid) +
		`,"version":"2.1.332","gitBranch":"main"` + extra + "}\n"
	w.raw(s)
}

func (w *writer) raw(s string) {
	if w.err != nil {
		return
	}
	n, err := w.w.WriteString(s)
	w.n += int64(n)
	w.err = err
}

func (w *writer) user(parent *string, content string) string {
	id := w.uuid()
	w.line(parent, `"promptId":`+q(w.uuid())+`,"type":"user","message":{"role":"user","content":`+q(content)+
		`},"uuid":`+q(id)+`,"timestamp":`+q(w.ts()), "")
	return id
}

func (w *writer) assistant(parent *string, content string) string {
	id := w.uuid()
	w.line(parent, `"message":{"model":"claude-sonnet-4-5","id":"msg_01`+strings.ReplaceAll(w.uuid(), "-", "")[:22]+
		`","type":"message","role":"assistant","content":`+content+
		`,"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":`+fmt.Sprint(100+w.rng.Intn(5000))+
		`,"output_tokens":`+fmt.Sprint(10+w.rng.Intn(900))+`}},"requestId":"req_011C`+
		strings.ReplaceAll(w.uuid(), "-", "")[:20]+`","type":"assistant","uuid":`+q(id)+`,"timestamp":`+q(w.ts()), "")
	return id
}

func (w *writer) textBlock(n int) string {
	return `[{"type":"text","text":` + q(w.text(n)) + `}]`
}

// LargeSession writes the session into projectDir (the project folder,
// e.g. <config>/projects/<sanitized cwd>) and returns what it wrote.
func LargeSession(projectDir string, o LargeOptions) (LargeResult, error) {
	if o.Progress == 0 {
		o.Progress = 34000
	}
	if o.ProgressBytes == 0 {
		o.ProgressBytes = 2900
	}
	if o.Subagents == 0 {
		o.Subagents = 400
	}
	if o.After == 0 {
		o.After = 3
	}
	if o.CWD == "" {
		o.CWD = "/home/dev/src/app"
	}
	rng := rand.New(rand.NewSource(o.Seed))
	w := &writer{rng: rng, cwd: o.CWD, t: time.Date(2026, 1, 10, 11, 0, 0, 0, time.UTC)}
	if o.SessionID == "" {
		o.SessionID = w.uuid()
	}
	w.sid = o.SessionID
	res := LargeResult{SessionID: o.SessionID, Path: filepath.Join(projectDir, o.SessionID+".jsonl"), BoundaryOffset: -1}
	if err := os.MkdirAll(projectDir, 0o700); err != nil {
		return res, err
	}
	f, err := os.OpenFile(res.Path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return res, err
	}
	defer f.Close()
	w.w = bufio.NewWriterSize(f, 1<<20)

	// A few real-looking turns.
	w.raw(`{"type":"file-history-snapshot","messageId":` + q(w.uuid()) +
		`,"snapshot":{"trackedFileBackups":{},"timestamp":` + q(w.ts()) + `},"isSnapshotUpdate":false}` + "\n")
	u := w.user(nil, "Run the full test suite and fix what fails: "+w.text(120))
	a := w.assistant(&u, w.textBlock(300))
	u = w.user(&a, "Go ahead, and use subagents for the independent packages.")

	// Subagent calls: one Task tool_use per agent, answered by a result.
	parent := u
	for i := 0; i < o.Subagents; i++ {
		toolID := "toolu_01" + strings.ReplaceAll(w.uuid(), "-", "")[:22]
		a := w.assistant(&parent, `[{"type":"tool_use","id":`+q(toolID)+`,"name":"Task","input":{"description":`+
			q(fmt.Sprintf("package %d", i))+`,"prompt":`+q(w.text(200))+`,"subagent_type":"general-purpose"}}]`)
		agentID := fmt.Sprintf("a%016x", rng.Uint64())
		if err := w.agent(projectDir, agentID, toolID); err != nil {
			return res, err
		}
		res.AgentIDs = append(res.AgentIDs, agentID)
		r := w.uuid()
		w.line(&a, `"type":"user","message":{"role":"user","content":[{"tool_use_id":`+q(toolID)+
			`,"type":"tool_result","content":[{"type":"text","text":`+q(w.text(400))+`}]}]},"uuid":`+q(r)+
			`,"timestamp":`+q(w.ts())+`,"toolUseResult":{"status":"completed","agentId":`+q(agentID)+`}`+
			`,"sourceToolAssistantUUID":`+q(a), "")
		parent = r
	}

	// The long tool call and its progress rows.
	toolID := "toolu_01" + strings.ReplaceAll(w.uuid(), "-", "")[:22]
	a = w.assistant(&parent, `[{"type":"tool_use","id":`+q(toolID)+`,"name":"Bash","input":{"command":"go test ./... -count=1 -v","description":"Run all tests"}}]`)
	parent = a
	for i := 0; i < o.Progress; i++ {
		id := w.uuid()
		w.line(&parent, `"type":"progress","data":{"type":"bash_progress","output":`+q(w.text(o.ProgressBytes-560))+
			`,"fullOutput":"","elapsedTimeSeconds":`+fmt.Sprint(i)+`,"totalLines":`+fmt.Sprint(i*7)+
			`},"toolUseID":`+q("bash-progress-"+fmt.Sprint(i))+`,"parentToolUseID":`+q(toolID)+
			`,"uuid":`+q(id)+`,"timestamp":`+q(w.ts()), "")
		parent = id
	}
	r := w.uuid()
	w.line(&parent, `"type":"user","message":{"role":"user","content":[{"tool_use_id":`+q(toolID)+
		`,"type":"tool_result","content":`+q("ok  \t"+w.text(300))+`,"is_error":false}]},"uuid":`+q(r)+
		`,"timestamp":`+q(w.ts())+`,"toolUseResult":{"stdout":"ok","stderr":"","interrupted":false,"isImage":false}`+
		`,"sourceToolAssistantUUID":`+q(a), "")
	a = w.assistant(&r, w.textBlock(500))
	last := a

	if !o.NoBoundary {
		if err := w.w.Flush(); err != nil {
			return res, err
		}
		res.BoundaryOffset = w.n
		b := w.uuid()
		w.raw(`{"parentUuid":null,"logicalParentUuid":` + q(last) + `,"isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","isMeta":false,"timestamp":` +
			q(w.ts()) + `,"uuid":` + q(b) + `,"level":"info","compactMetadata":{"trigger":"auto","preTokens":167012},"userType":"external","entrypoint":"cli","cwd":` +
			q(w.cwd) + `,"sessionId":` + q(w.sid) + `,"version":"2.1.332","gitBranch":"main"}` + "\n")
		s := w.uuid()
		w.line(&b, `"type":"user","message":{"role":"user","content":`+q("This session is being continued from a previous conversation that ran out of context. "+w.text(1500))+
			`},"isVisibleInTranscriptOnly":true,"isCompactSummary":true,"uuid":`+q(s)+`,"timestamp":`+q(w.ts()), "")
		last = s
	}
	for i := 0; i < o.After; i++ {
		u := w.user(&last, "Now "+w.text(60))
		last = w.assistant(&u, w.textBlock(400))
	}
	w.raw(`{"type":"last-prompt","lastPrompt":"Now continue","sessionId":` + q(w.sid) + "}\n")
	if w.err == nil {
		w.err = w.w.Flush()
	}
	if w.err != nil {
		return res, w.err
	}
	fi, err := f.Stat()
	if err != nil {
		return res, err
	}
	res.Size = fi.Size()
	return res, nil
}

// agent writes one subagent transcript and its meta file.
func (w *writer) agent(projectDir, agentID, toolID string) error {
	dir := filepath.Join(projectDir, w.sid, "subagents")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	var sb strings.Builder
	var parent *string
	for i := 0; i < 3; i++ {
		role := "user"
		content := q(w.text(150))
		if i%2 == 1 {
			role = "assistant"
			content = `{"model":"claude-haiku-4-5","id":"msg_01` + strings.ReplaceAll(w.uuid(), "-", "")[:22] +
				`","type":"message","role":"assistant","content":[{"type":"text","text":` + q(w.text(300)) +
				`}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":900,"output_tokens":120}}`
		} else {
			content = `{"role":"user","content":` + content + `}`
		}
		id := w.uuid()
		p := "null"
		if parent != nil {
			p = q(*parent)
		}
		sb.WriteString(`{"parentUuid":` + p + `,"isSidechain":true,"agentId":` + q(agentID) + `,"type":` + q(role) +
			`,"message":` + content + `,"uuid":` + q(id) + `,"timestamp":` + q(w.ts()) +
			`,"userType":"external","entrypoint":"cli","cwd":` + q(w.cwd) + `,"sessionId":` + q(w.sid) +
			`,"version":"2.1.332","gitBranch":"main"}` + "\n")
		parent = &id
	}
	base := filepath.Join(dir, "agent-"+agentID)
	if err := os.WriteFile(base+".jsonl", []byte(sb.String()), 0o600); err != nil {
		return err
	}
	meta := `{"agentType":"general-purpose","toolUseId":` + q(toolID) + `,"description":"subagent"}`
	return os.WriteFile(base+".meta.json", []byte(meta), 0o600)
}
