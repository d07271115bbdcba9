// Package mcpcmd is scribe mcp (the full build's): the local sessions as
// read-only tools of a Model Context Protocol server over stdio
// (list_sessions, search_sessions, get_session). Everything handed out passes the redact processor
// (unless --no-redact) and no answer's JSON exceeds --max-bytes.
package mcpcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/cli/install"
	"github.com/e0dc0000/scribe/internal/cli/listing"
	"github.com/e0dc0000/scribe/internal/cli/usagecmd"
	"github.com/e0dc0000/scribe/internal/ident"
	"github.com/e0dc0000/scribe/processors/redact"
	"github.com/e0dc0000/scribe/search"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/stores"
	"github.com/e0dc0000/scribe/usage"
)

const (
	mcpDefaultMaxBytes      = 256 << 10
	mcpDefaultToolResultCut = 2000
	mcpDefaultMessages      = 50
	mcpMaxMessages          = 1000
	mcpDefaultSessions      = 50
	mcpDefaultHits          = 20
)

func NewCmdMcp(f *cmdutil.Factory) *cobra.Command {
	var (
		noRedact bool
		maxBytes int
	)
	c := &cobra.Command{
		Use: "mcp",
		Long: `mcp runs a Model Context Protocol server on standard input and output that
gives an agent read-only access to the local sessions: list_sessions (the
listing of scribe ls), search_sessions (the index of scribe search) and
get_session (the messages of scribe show --json, windowed, with tool results
cut to a size the caller chooses).

Everything handed out passes the redact processor of the configuration (the
default rules when there is none); --no-redact hands out raw text. No answer's
JSON exceeds --max-bytes: a listing or a window stops where the cap is hit and
says so (truncated, next_offset), and a message alone larger than the cap is
replaced by a note of its size.

scribe mcp install adds it to Claude Code (user or project scope).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if maxBytes < 4096 {
				return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--max-bytes %d: want 4096 or more", maxBytes)}
			}
			st, cfg, done, err := f.OpenStoreOf(cmd)
			if err != nil {
				return err
			}
			defer done(&err)
			o := ServerOptions{Store: st, MaxBytes: maxBytes, Version: cmdutil.BuildVersion(f.Version), Pricer: usagecmd.PricerOf(cfg)}
			l := jsonl.Layout{}
			if ls, ok := st.(*stores.Local); ok {
				o.Index, l = ls.Layout(), ls.Layout()
			}
			if !noRedact {
				if o.Redactor, _, _, err = cmdutil.RedactorNamed(cmd.Context(), cfg, l, "", "processor"); err != nil {
					return err
				}
			}
			return NewServer(o).Run(cmd.Context(), &mcp.StdioTransport{})
		},
	}
	c.AddCommand(install.NewMcpInstallCmds(f)...)
	fl := c.Flags()
	fl.BoolVar(&noRedact, "no-redact", false, "hand out raw text: no redaction of secrets")
	fl.IntVar(&maxBytes, "max-bytes", mcpDefaultMaxBytes, "at most this many bytes of JSON in one answer")
	return c
}

// ServerOptions say what an MCP server of the sessions serves.
type ServerOptions struct {
	// Store is read for every answer.
	Store sessions.Store
	// Index is the store's folder when it is a local one: search_sessions
	// reads its full-text index; on any other store it scans the sessions'
	// messages.
	Index jsonl.Layout
	// Redactor replaces secrets in everything handed out (nil: raw text).
	Redactor *redact.Redactor
	// MaxBytes caps one answer's JSON; Version is the server's.
	MaxBytes int
	Version  string
	// Pricer prices get_usage's tokens (nil: the built-in table).
	Pricer *usage.Pricer
}

// NewServer is the MCP server of the sessions: the tools list_sessions,
// search_sessions and get_session and the resource session://<id>,
// read only, over o.Store.
func NewServer(o ServerOptions) *mcp.Server {
	if o.MaxBytes == 0 {
		o.MaxBytes = mcpDefaultMaxBytes
	}
	m := &mcpServer{st: o.Store, l: o.Index, red: o.Redactor, maxBytes: o.MaxBytes, pricer: o.Pricer}
	s := mcp.NewServer(&mcp.Implementation{Name: "scribe", Version: o.Version}, nil)
	m.register(s)
	return s
}

// HTTPHandler serves NewServer over MCP's streamable HTTP transport,
// stateless: each request gets a server of its own, made by options from
// the request (on scribe serve: the store of the caller's tenant), so no
// request ever reaches another's sessions.
func HTTPHandler(options func(*http.Request) ServerOptions) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server { return NewServer(options(r)) },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}

type mcpServer struct {
	st sessions.Store
	// l is the store's folder when it is a local one (search reads its
	// index); other stores are searched by scanning their messages.
	l        jsonl.Layout
	maxBytes int
	pricer   *usage.Pricer
	// ix is the full-text index, open once its first search brought it
	// up to date; ixFresh when it was last brought up to date, ixSyncing
	// while that runs in the background (ixMu guards the three).
	ixMu      sync.Mutex
	ix        *search.Index
	ixFresh   time.Time
	ixSyncing bool
	// red is nil with --no-redact; mu guards it (it remembers the
	// secrets it found).
	mu  sync.Mutex
	red *redact.Redactor
}

// mcpTool adds a tool whose input is In and whose answer is Out, encoded
// once, redacted and bounded by the handler (run returns the JSON).
func mcpTool[In, Out any](s *mcp.Server, name, desc string, run func(context.Context, In) ([]byte, error)) {
	in, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp tool %s: input schema: %v", name, err))
	}
	out, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp tool %s: output schema: %v", name, err))
	}
	closed := false
	t := &mcp.Tool{Name: name, Description: desc, InputSchema: in, OutputSchema: out,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &closed}}
	s.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args In
		if raw := req.Params.Arguments; len(raw) > 0 {
			if err := json.Unmarshal(raw, &args); err != nil {
				return mcpError(fmt.Errorf("arguments: %w", err)), nil
			}
		}
		doc, err := run(ctx, args)
		if err != nil {
			return mcpError(err), nil
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: string(doc)}},
			StructuredContent: json.RawMessage(doc),
		}, nil
	})
}

// mcpError is a tool's error answer, its text bounded (an ambiguous
// prefix lists the sessions it matches).
func mcpError(err error) *mcp.CallToolResult {
	text, _ := cutText(err.Error(), maxErrorText)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// maxErrorText bounds an error answer's text.
const maxErrorText = 4096

func (m *mcpServer) register(s *mcp.Server) {
	mcpTool[listIn, listOut](s, "list_sessions",
		"List the recorded Claude Code sessions, newest first: title, project, last activity, size and status.", m.listSessions)
	mcpTool[searchIn, searchOut](s, "search_sessions",
		"Full-text search over every session (prompts, answers, thinking, tool inputs and outputs): the matching sessions with snippets and the uuids of the messages they come from.", m.searchSessions)
	mcpTool[getIn, getOut](s, "get_session",
		"A session's conversation as the Claude Agent SDK's getSessionMessages gives it, a window of it at a time (offset/limit, or around a message uuid), tool results cut to max_tool_result bytes.", m.getSession)
	mcpTool[usageIn, usageOut](s, "get_usage",
		"Tokens and cost (USD) as ccusage counts them, by day, week, month or session: for every session of the store, or for one session (its subagents included).", m.getUsage)
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "session", URITemplate: sessionScheme + "{id}", MIMEType: "application/json",
		Description: "A session (an id or a unique prefix): get_session's answer for its first messages.",
	}, m.readSession)
}

const sessionScheme = "session://"

// readSession is the resource session://<id>: get_session's first window.
func (m *mcpServer) readSession(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, ok := strings.CutPrefix(uri, sessionScheme)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	doc, err := m.getSession(ctx, getIn{ID: id})
	if ee := (*cmdutil.ExitError)(nil); errors.As(err, &ee) && ee.Code == 1 {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(doc)}}}, nil
}

// encode is v as JSON, redacted; < > & as they are (encoding/json would
// make each six bytes, past what the cap measured).
func (m *mcpServer) encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if m.red == nil {
		return b, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out, _ := m.red.Redact(b)
	return out, nil
}

// page gathers items (already encoded) into a JSON array while the answer
// stays under the cap; head is the rest of the answer's size. It returns
// the array and how many items it holds.
func (m *mcpServer) page(items [][]byte, head int) (json.RawMessage, int) {
	buf := []byte{'['}
	n := 0
	for _, it := range items {
		if head+len(buf)+len(it)+2 > m.maxBytes {
			break
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, it...)
		n++
	}
	return append(buf, ']'), n
}

// finish encodes the answer with its array, checking the cap.
func (m *mcpServer) finish(v any) ([]byte, error) {
	b, err := m.encode(v)
	if err != nil {
		return nil, err
	}
	if len(b) > m.maxBytes {
		return nil, fmt.Errorf("the answer is %d bytes, over the cap of %d: ask for less", len(b), m.maxBytes)
	}
	return b, nil
}

// headRoom is what the answer around the array may take.
const headRoom = 1024

const capNote = "the answer reached the byte cap of the server (--max-bytes): ask again from next_offset"

type listIn struct {
	Project string `json:"project,omitempty" jsonschema:"only the sessions of the project at this path"`
	Since   string `json:"since,omitempty" jsonschema:"only sessions modified at or after this date (2026-01-02), time or duration ago (7d)"`
	Until   string `json:"until,omitempty" jsonschema:"only sessions modified before this date (the whole day), time or duration ago"`
	Status  string `json:"status,omitempty" jsonschema:"only sessions with this status: active, interrupted or completed"`
	Limit   int    `json:"limit,omitempty" jsonschema:"at most this many sessions (default 50)"`
	Offset  int    `json:"offset,omitempty" jsonschema:"skip this many sessions first"`
}

type listedSession struct {
	SessionID    string `json:"sessionId"`
	Title        string `json:"title"`
	Project      string `json:"project"`
	LastActivity string `json:"lastActivity"`
	Size         int64  `json:"size"`
	Status       string `json:"status"`
}

type listOut struct {
	Sessions   []listedSession `json:"sessions"`
	Truncated  bool            `json:"truncated,omitempty"`
	NextOffset int             `json:"next_offset,omitempty"`
	Note       string          `json:"note,omitempty"`
}

func (m *mcpServer) listSessions(ctx context.Context, in listIn) ([]byte, error) {
	if in.Limit < 0 || in.Offset < 0 {
		return nil, errors.New("limit and offset must not be negative")
	}
	if in.Limit == 0 {
		in.Limit = mcpDefaultSessions
	}
	want := jsonl.SessionStatus(in.Status)
	if in.Status != "" && !want.Valid() {
		return nil, fmt.Errorf("status %q: want active, interrupted or completed", in.Status)
	}
	keep, err := listing.ModifiedWithin(in.Since, in.Until, time.Now())
	if err != nil {
		return nil, err
	}
	opt := jsonl.ListOptions{Dir: in.Project, Limit: in.Limit, Offset: in.Offset, IncludeWorktrees: true, IncludeProgrammatic: true}
	_, recs, err := listing.Sessions(ctx, m.st, opt, want, keep, false)
	if err != nil {
		return nil, err
	}
	items := make([][]byte, len(recs))
	for i, r := range recs {
		title := r.Info.CustomTitle
		if title == "" {
			title = cutTitle(r.Info.Summary)
		}
		if items[i], err = m.encode(listedSession{
			SessionID: r.Info.SessionID, Title: title, Project: r.Info.Cwd,
			LastActivity: time.UnixMilli(r.Info.LastModified).UTC().Format(time.RFC3339),
			Size:         r.Info.FileSize, Status: string(r.Status),
		}); err != nil {
			return nil, err
		}
	}
	arr, n := m.page(items, headRoom)
	var out struct {
		Sessions json.RawMessage `json:"sessions"`
		listOut
	}
	out.Sessions = arr
	if n < len(items) {
		out.Truncated, out.NextOffset, out.Note = true, in.Offset+n, capNote
	}
	return m.finish(out)
}

// cutTitle drops the last word of a title the listing cut (200
// characters of a prompt, then …): a cut through a secret leaves a part no
// rule finds.
func cutTitle(t string) string {
	head, ok := strings.CutSuffix(t, "…")
	if !ok {
		return t
	}
	if i := strings.LastIndexFunc(head, unicode.IsSpace); i >= 0 {
		return head[:i] + " …"
	}
	return "…"
}

type searchIn struct {
	Query   string `json:"query" jsonschema:"the words or \"quoted phrases\" every matching message holds"`
	Project string `json:"project,omitempty" jsonschema:"only the sessions of the project at this path"`
	Role    string `json:"role,omitempty" jsonschema:"only user (prompts), assistant (answers and thinking) or tool (tool inputs and outputs) text"`
	Since   string `json:"since,omitempty" jsonschema:"only messages from this date (2026-03-01) or age (7d, 12h) on"`
	Limit   int    `json:"limit,omitempty" jsonschema:"at most this many matching messages (default 20)"`
}

type searchHit struct {
	UUID      string `json:"uuid"`
	AgentID   string `json:"agentId,omitempty"`
	Role      string `json:"role"`
	Timestamp string `json:"timestamp"`
	Snippet   string `json:"snippet"`
}

type searchSession struct {
	SessionID string      `json:"sessionId"`
	Project   string      `json:"project"`
	Hits      []searchHit `json:"hits"`
}

type searchOut struct {
	Sessions  []searchSession `json:"sessions"`
	Truncated bool            `json:"truncated,omitempty"`
	Note      string          `json:"note,omitempty"`
}

func (m *mcpServer) searchSessions(ctx context.Context, in searchIn) ([]byte, error) {
	switch in.Role {
	case "", search.RoleUser, search.RoleAssistant, search.RoleTool:
	default:
		return nil, fmt.Errorf("role %q: want user, assistant or tool", in.Role)
	}
	if in.Limit < 0 {
		return nil, errors.New("limit must not be negative")
	}
	if in.Limit == 0 {
		in.Limit = mcpDefaultHits
	}
	q := search.Query{Text: in.Query, Role: in.Role, Limit: in.Limit, WithText: m.red != nil}
	var err error
	if q.Since, err = cmdutil.ParseSince(in.Since); err != nil {
		return nil, err
	}
	if q.Project, err = cmdutil.ProjectFolder(in.Project); err != nil {
		return nil, err
	}
	var hits []search.Hit
	if m.l.ConfigDir == "" {
		// No full-text index for this store: its messages, scanned.
		hits, err = scanSearch(ctx, m.st, q, in.Project)
	} else {
		hits, err = m.indexSearch(ctx, q)
	}
	if err != nil {
		return nil, err
	}
	var sessions []*searchSession
	by := map[string]*searchSession{}
	for _, h := range hits {
		s := by[h.SessionID]
		if s == nil {
			s = &searchSession{SessionID: h.SessionID, Project: h.Project}
			by[h.SessionID] = s
			sessions = append(sessions, s)
		}
		s.Hits = append(s.Hits, searchHit{UUID: h.UUID, AgentID: h.AgentID, Role: h.Role, Timestamp: h.Timestamp, Snippet: m.scrubSnippet(h.Snippet, h.Text)})
	}
	items := make([][]byte, len(sessions))
	for i, s := range sessions {
		if items[i], err = m.encode(s); err != nil {
			return nil, err
		}
	}
	arr, n := m.page(items, headRoom)
	var out struct {
		Sessions json.RawMessage `json:"sessions"`
		searchOut
	}
	out.Sessions = arr
	if n < len(items) {
		out.Truncated = true
		out.Note = fmt.Sprintf("the answer reached the byte cap of the server (--max-bytes): %d of %d sessions given; narrow the query", n, len(items))
	}
	return m.finish(out)
}

// indexSearch answers from the local store's full-text index. The
// server's first search brings the index up to date before it answers
// (SearchFresh); later ones answer at once and bring it up to date in
// the background when the last check is over freshAfter old, so an agent
// asking many questions pays for the index's freshness check (a stat of
// every transcript) once every few seconds, not on every question.
func (m *mcpServer) indexSearch(ctx context.Context, q search.Query) ([]search.Hit, error) {
	m.ixMu.Lock()
	x, fresh := m.ix, m.ixFresh
	m.ixMu.Unlock()
	if x == nil {
		nx, err := search.Open(m.l)
		if err != nil {
			return nil, err
		}
		hits, _, err := nx.SearchFresh(ctx, q, nil)
		if err != nil {
			nx.Close()
			return nil, err
		}
		m.ixMu.Lock()
		if m.ix == nil {
			m.ix, m.ixFresh = nx, time.Now()
		} else {
			nx.Close()
		}
		m.ixMu.Unlock()
		return hits, nil
	}
	if time.Since(fresh) > freshAfter {
		m.syncSoon()
	}
	return x.Search(ctx, q)
}

// freshAfter is how old the index's last freshness check may be before a
// search starts another, in the background.
const freshAfter = 2 * time.Second

// syncSoon brings the index up to date in the background, one sync at a
// time, on a handle of its own.
func (m *mcpServer) syncSoon() {
	m.ixMu.Lock()
	if m.ixSyncing {
		m.ixMu.Unlock()
		return
	}
	m.ixSyncing = true
	m.ixMu.Unlock()
	go func() {
		defer func() {
			m.ixMu.Lock()
			m.ixSyncing, m.ixFresh = false, time.Now()
			m.ixMu.Unlock()
		}()
		y, err := search.Open(m.l)
		if err != nil {
			return
		}
		defer y.Close()
		_, _ = y.Sync(context.Background(), nil)
	}()
}

// scrubSnippet replaces in a snippet every word of the secrets its
// message's text holds: a snippet is a window of words, highlighted
// ([word]), that can hold a secret's tail or a secret split by the
// highlight, which no rule finds in the snippet alone.
func (m *mcpServer) scrubSnippet(snippet, text string) string {
	if m.red == nil || text == "" {
		return snippet
	}
	var line bytes.Buffer
	enc := json.NewEncoder(&line)
	enc.SetEscapeHTML(false)
	if enc.Encode(text) != nil {
		return snippet
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.red.Scan(bytes.TrimSpace(line.Bytes())) {
		secret := f.Secret
		if raw, err := strconv.Unquote(`"` + secret + `"`); err == nil {
			secret = raw
		}
		marker := m.red.Marker(f.Rule, f.Secret)
		for _, w := range strings.FieldsFunc(secret, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if len(w) >= minSecretWord {
				snippet = strings.ReplaceAll(snippet, w, marker)
			}
		}
	}
	return snippet
}

// minSecretWord is the shortest word of a secret scrubSnippet replaces:
// shorter ones (BEGIN, KEY) are no secret alone.
const minSecretWord = 6

type getIn struct {
	ID            string `json:"id" jsonschema:"a session id or a unique prefix of one"`
	Agent         string `json:"agent,omitempty" jsonschema:"a subagent's id (a search hit's agentId): its conversation instead of the session's"`
	Offset        int    `json:"offset,omitempty" jsonschema:"the first message of the window"`
	Limit         int    `json:"limit,omitempty" jsonschema:"at most this many messages (default 50)"`
	Around        string `json:"around,omitempty" jsonschema:"a message uuid: the window is centred on it (offset is then ignored)"`
	MaxToolResult int    `json:"max_tool_result,omitempty" jsonschema:"cut each tool result to this many bytes (default 2000)"`
}

type getOut struct {
	SessionID  string `json:"sessionId"`
	Agent      string `json:"agent,omitempty"`
	Total      int    `json:"total"`
	Offset     int    `json:"offset"`
	Messages   []any  `json:"messages"`
	NextOffset int    `json:"next_offset,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
	Note       string `json:"note,omitempty"`
}

func (m *mcpServer) getSession(ctx context.Context, in getIn) ([]byte, error) {
	if in.Limit < 0 || in.Offset < 0 || in.MaxToolResult < 0 {
		return nil, errors.New("offset, limit and max_tool_result must not be negative")
	}
	if in.Limit == 0 {
		in.Limit = mcpDefaultMessages
	}
	in.Limit = min(in.Limit, mcpMaxMessages)
	if in.MaxToolResult == 0 {
		in.MaxToolResult = mcpDefaultToolResultCut
	}
	if in.Around != "" && !core.IsUUID(in.Around) {
		return nil, fmt.Errorf("around %q is not a message uuid", in.Around)
	}
	id, err := m.st.Resolve(ctx, in.ID)
	if err != nil {
		return nil, err
	}
	var msgs []jsonl.SessionMessage
	switch {
	case in.Agent == "":
		msgs, _, err = m.st.Messages(ctx, id, jsonl.MessagesOptions{})
	case !ident.Token(in.Agent, 128):
		return nil, fmt.Errorf("agent %q is not an agent id", in.Agent)
	default:
		msgs, _, err = m.st.SubagentMessages(ctx, id, in.Agent, jsonl.MessagesOptions{})
	}
	if err != nil {
		return nil, err
	}
	start := min(in.Offset, len(msgs))
	if in.Around != "" {
		at := -1
		for i := range msgs {
			if strings.EqualFold(msgs[i].UUID, in.Around) {
				at = i
				break
			}
		}
		if at < 0 {
			return nil, fmt.Errorf("session %s has no message %s in its conversation", id, in.Around)
		}
		start = max(0, at-in.Limit/2)
	}
	end := min(len(msgs), start+in.Limit)
	items := make([][]byte, 0, end-start)
	for i := start; i < end; i++ {
		msg := msgs[i]
		if m.red != nil {
			// Redacted before it is cut: a cut through a secret leaves a
			// part no rule finds.
			m.mu.Lock()
			msg.Message, _ = m.red.Redact(msg.Message)
			m.mu.Unlock()
		}
		msg.Message = cutToolResults(msg.Message, in.MaxToolResult)
		b, err := msg.AppendJSON(nil)
		if err != nil {
			return nil, err
		}
		if m.red != nil {
			m.mu.Lock()
			b, _ = m.red.Redact(b)
			m.mu.Unlock()
		}
		if len(b)+headRoom+2 > m.maxBytes {
			// One message past the cap alone: its size, not its text.
			b, _ = json.Marshal(map[string]any{"type": msg.Type, "uuid": msg.UUID, "omitted": fmt.Sprintf("a message of %d bytes, over the cap of %d", len(b), m.maxBytes)})
		}
		items = append(items, b)
	}
	arr, n := m.page(items, headRoom)
	var out struct {
		Messages json.RawMessage `json:"messages"`
		getOut
	}
	out.SessionID, out.Agent, out.Total, out.Offset, out.Messages = id, in.Agent, len(msgs), start, arr
	if start+n < len(msgs) {
		out.NextOffset = start + n
	}
	if n < len(items) {
		out.Truncated, out.Note = true, capNote
	}
	return m.finish(out)
}

// cutToolResults cuts the text of each tool_result block of a message's
// content to max bytes, saying how much was cut; the message itself when
// nothing was.
func cutToolResults(msg json.RawMessage, limit int) json.RawMessage {
	if len(msg) <= limit || !strings.Contains(string(msg), `"tool_result"`) {
		return msg
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(msg, &obj) != nil {
		return msg
	}
	var blocks []map[string]any
	if json.Unmarshal(obj["content"], &blocks) != nil {
		return msg
	}
	changed := false
	for _, b := range blocks {
		if b["type"] != "tool_result" {
			continue
		}
		switch c := b["content"].(type) {
		case string:
			if s, ok := cutText(c, limit); ok {
				b["content"], changed = s, true
			}
		case []any:
			for _, part := range c {
				p, _ := part.(map[string]any)
				if t, isText := p["text"].(string); isText {
					if s, ok := cutText(t, limit); ok {
						p["text"], changed = s, true
					}
				}
			}
		}
	}
	if !changed {
		return msg
	}
	content, err := json.Marshal(blocks)
	if err != nil {
		return msg
	}
	obj["content"] = content
	out, err := json.Marshal(obj)
	if err != nil {
		return msg
	}
	return out
}

// cutText is s cut to limit bytes (on a rune boundary) with a note of
// what was cut.
func cutText(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	n := limit
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s… [cut: %d of %d bytes shown]", s[:n], n, len(s)), true
}
