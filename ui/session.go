package ui

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sessions"
)

// A session's page: its conversation as getSessionMessages gives it
// (system rows included, to mark compactions), of which a window is
// rendered: the last Window messages, or those around ?at=<uuid>. The
// page asks for more (/window?before= or ?after=) as the reader goes, so
// its size does not grow with the session's.

// sessionPage is a session page's body.
type sessionPage struct {
	ID, Store, Title string
	CSRF             string
	Info             *sessions.Info
	// Agent is set on a subagent's page.
	Agent  string
	Resume string
	Caps   map[string]bool
	Window windowView
	// Events is the live stream's address ("" on a subagent's page); the
	// page follows it while its window reaches the end.
	Events string
	// WindowURL is where more messages are fetched (?before= / ?after=
	// added).
	WindowURL string
	// Export: a page on its own (export --format html), without actions.
	Export bool
	// Missing is the message ?at= asked for when the conversation (and its
	// subagents) does not hold it.
	Missing string
	// Share: the actions offer a share link.
	Share bool
	// Downloads are the export formats offered.
	Downloads []download
	// UsageURL is where the page fetches the session's tokens and cost
	// once shown ("" without Options.Usage): counting them takes every
	// session's rows (a message is counted once across sessions), which
	// the conversation need not wait for.
	UsageURL string
}

// windowView is a window of the conversation with its "more" links.
type windowView struct {
	Messages                 []msgView
	Earlier, Later           int
	EarlierURL, EarlierFetch string
	LaterURL, LaterFetch     string
}

// resolve turns the {id} of a request into a session id of st.
func resolve(ctx context.Context, st sessions.Store, arg string) (string, error) {
	id, err := st.Resolve(ctx, arg)
	if err != nil && !errors.Is(err, sessions.ErrAmbiguous) {
		return "", &httpError{http.StatusNotFound, "no session " + strconv.Quote(arg) + " in " + st.Name()}
	}
	return id, err
}

// span is the window [start, end) of msgs a request asks for: around
// ?at=, before ?before=, after ?after=, else the last n.
func span(msgs []sessions.Message, r *http.Request, n int) (int, int) {
	index := func(uuid string) int {
		return slices.IndexFunc(msgs, func(m sessions.Message) bool { return m.UUID == uuid })
	}
	if at := r.FormValue("at"); at != "" {
		if i := index(at); i >= 0 {
			start := max(0, i-n/2)
			return start, min(len(msgs), start+n)
		}
	}
	if b := r.FormValue("before"); b != "" {
		if i := index(b); i >= 0 {
			return max(0, i-n), i
		}
	}
	if a := r.FormValue("after"); a != "" {
		if i := index(a); i >= 0 {
			return i + 1, min(len(msgs), i+1+n)
		}
	}
	return max(0, len(msgs)-n), len(msgs)
}

// conversation is what a session page renders from.
type conversation struct {
	st        sessions.Store
	store, id string
	agent     string
	// openAgent is the subagent whose messages the page shows under its
	// call at once (the one a permalink points into).
	openAgent string
	msgs      []sessions.Message
	base      string // the page's path
}

// sessionOf is the store a request names and the session its {id} names
// there.
func (h *Handler) sessionOf(r *http.Request) (st sessions.Store, name, id string, err error) {
	if st, name, err = h.store(r); err == nil {
		id, err = resolve(r.Context(), st, r.PathValue("id"))
	}
	return st, name, id, err
}

// load reads a session (or, with agent, one of its subagents).
func (h *Handler) load(r *http.Request) (*conversation, error) {
	st, name, id, err := h.sessionOf(r)
	if err != nil {
		return nil, err
	}
	c := &conversation{st: st, store: name, id: id, agent: r.PathValue("agent"), base: h.opt.Base + "/sessions/" + url.PathEscape(id)}
	if c.agent != "" {
		c.base += "/agents/" + url.PathEscape(c.agent)
		c.msgs, _, err = st.SubagentMessages(r.Context(), id, c.agent, sessions.MessagesOptions{})
	} else {
		c.msgs, _, err = st.Messages(r.Context(), id, sessions.MessagesOptions{IncludeSystem: true})
	}
	return c, err
}

// link is an address of the conversation's page or one of its parts.
func (c *conversation) link(suffix string, v url.Values) string {
	if v == nil {
		v = url.Values{}
	}
	v.Set("store", c.store)
	return c.base + suffix + "?" + v.Encode()
}

// builder is a builder for the conversation, with its subagents and
// checkpoints.
func (h *Handler) builderFor(ctx context.Context, c *conversation, at int, withAgents bool) *builder {
	b := newBuilder(h.md, c.msgs, at)
	if c.agent != "" {
		return b
	}
	b.fork = slices.Contains(sessions.Capabilities(c.st), "fork")
	if cps, err := sessions.Checkpoints(ctx, c.st, c.id); err == nil {
		b.checkpoints = map[string][]core.Checkpoint{}
		for _, cp := range cps {
			b.checkpoints[cp.MessageUUID] = append(b.checkpoints[cp.MessageUUID], cp)
		}
	}
	if withAgents {
		idx := h.agentIndexOf(ctx, c)
		b.agent = func(toolUseID string) *agentView { return h.agentView(ctx, c, idx, toolUseID) }
	}
	return b
}

// window renders msgs[start:end] with its "more" links.
func (h *Handler) windowOf(ctx context.Context, c *conversation, start, end int) windowView {
	var next *sessions.Message
	if end < len(c.msgs) {
		next = &c.msgs[end]
	}
	b := h.builderFor(ctx, c, start, true)
	w := windowView{Messages: b.views(c.msgs[start:end], next), Earlier: start, Later: len(c.msgs) - end}
	if start > 0 {
		first := c.msgs[start].UUID
		w.EarlierURL = c.link("", url.Values{"at": {first}}) + "#m-" + first
		w.EarlierFetch = c.link("/window", url.Values{"before": {first}})
	}
	if end < len(c.msgs) {
		last := c.msgs[end-1].UUID
		w.LaterURL = c.link("", url.Values{"at": {last}}) + "#m-" + last
		w.LaterFetch = c.link("/window", url.Values{"after": {last}})
	}
	return w
}

// session serves /sessions/{id} and /sessions/{id}/agents/{agent}.
func (h *Handler) session(w http.ResponseWriter, r *http.Request) {
	c, err := h.load(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if c.id != r.PathValue("id") { // a prefix: the page's address is the id
		q := r.URL.Query()
		http.Redirect(w, r, c.base+"?"+q.Encode(), http.StatusSeeOther)
		return
	}
	start, end := span(c.msgs, r, h.opt.FirstWindow)
	missing := ""
	if at := r.FormValue("at"); at != "" && !slices.ContainsFunc(c.msgs, func(m sessions.Message) bool { return m.UUID == at }) {
		missing = at
		// A subagent's message: the window around the call that started
		// it, or the subagent's own page when it lies past what the call
		// shows.
		call, agent, deep := -1, "", false
		if c.agent == "" {
			call, agent, deep = h.findInAgents(r.Context(), c, at)
		}
		switch {
		case deep:
			http.Redirect(w, r, (&conversation{store: c.store, base: c.base + "/agents/" + url.PathEscape(agent)}).link("", url.Values{"at": {at}}), http.StatusSeeOther)
			return
		case call >= 0:
			c.openAgent = agent
			start = max(0, call-h.opt.FirstWindow/2)
			end = min(len(c.msgs), start+h.opt.FirstWindow)
			missing = ""
		}
	}
	p := h.page(r.Context(), c, start, end)
	p.Missing = missing
	h.render(w, "session", h.frame(p.Title, c.store, p))
}

// page is the session page of c showing msgs[start:end].
func (h *Handler) page(ctx context.Context, c *conversation, start, end int) sessionPage {
	p := sessionPage{ID: c.id, Store: c.store, Agent: c.agent, Window: h.windowOf(ctx, c, start, end),
		WindowURL: c.link("/window", nil), Caps: map[string]bool{}, CSRF: h.csrf}
	if info, err := c.st.Info(ctx, c.id); err == nil && info != nil {
		p.Info, p.Title = info, info.Summary
		p.Resume = resumeCommand(info.Cwd, c.id)
	}
	if p.Title == "" {
		p.Title = c.id
	}
	if c.agent != "" {
		p.Title = "Subagent " + c.agent + " of " + p.Title
		return p
	}
	for _, cp := range sessions.Capabilities(c.st) {
		p.Caps[cp] = true
	}
	p.Share = h.opt.Share
	if h.opt.Usage != nil {
		p.UsageURL = c.link("/usage", nil)
	}
	if !h.opt.NoExport {
		p.Downloads = h.downloads(c.st)
	}
	if !h.opt.NoLive {
		p.Events = c.link("/events", nil)
	}
	return p
}

// agentPage serves a subagent's own page.
func (h *Handler) agentPage(w http.ResponseWriter, r *http.Request) { h.session(w, r) }

// window serves a fragment of the conversation: ?before=<uuid> or
// ?after=<uuid>.
func (h *Handler) window(w http.ResponseWriter, r *http.Request) {
	c, err := h.load(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	start, end := span(c.msgs, r, h.opt.Window)
	h.render(w, "window", h.windowOf(r.Context(), c, start, end))
}

// resumeCommand is the shell command that resumes the session where it
// ran.
func resumeCommand(cwd, id string) string {
	cmd := "claude --resume " + id
	if cwd == "" {
		return cmd
	}
	return "cd " + shellQuote(cwd) + " && " + cmd
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:@,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// agentIndex maps a session's tool calls to the subagents they started.
type agentIndex struct {
	mu      sync.Mutex
	version string
	byCall  map[string]string
}

// agentIndexOf builds (or reuses, while the session has the same
// subagents) the map from a call's id to its subagent.
func (h *Handler) agentIndexOf(ctx context.Context, c *conversation) *agentIndex {
	key := c.store + "\x00" + c.id
	h.mu.Lock()
	idx := h.agents[key]
	if idx == nil {
		idx = &agentIndex{}
		h.agents[key] = idx
	}
	h.mu.Unlock()
	agents, err := c.st.Subagents(ctx, c.id)
	if err != nil {
		return idx
	}
	version := strings.Join(agents, ",")
	idx.mu.Lock()
	defer idx.mu.Unlock()
	if idx.byCall != nil && idx.version == version {
		return idx
	}
	idx.byCall = map[string]string{}
	unmapped := map[string]bool{}
	parent := h.parentsOf(ctx, c)
	for _, a := range agents {
		call := parent(a)
		if call == "" {
			unmapped[a] = true
			continue
		}
		if _, dup := idx.byCall[call]; !dup {
			idx.byCall[call] = a
		}
	}
	if len(unmapped) > 0 {
		callsNamingAgents(c.msgs, unmapped, idx.byCall)
	}
	idx.version = version
	return idx
}

// parentsOf returns the call that started each subagent of c's session
// as SubagentMessages gives it ("" for none): from the store's meta files
// when it can say (sessions.SubagentParents), else from each subagent's
// first message (a read of its transcript).
func (h *Handler) parentsOf(ctx context.Context, c *conversation) func(agent string) string {
	if sp, ok := c.st.(sessions.SubagentParents); ok {
		if m, err := sp.SubagentParents(ctx, c.id); err == nil {
			return func(a string) string { return m[a] }
		}
	}
	return func(a string) string {
		msgs, _, err := c.st.SubagentMessages(ctx, c.id, a, sessions.MessagesOptions{Limit: 1})
		if err != nil || len(msgs) == 0 || msgs[0].ParentToolUseID == nil {
			return ""
		}
		return *msgs[0].ParentToolUseID
	}
}

// callsNamingAgents maps the calls whose result names one of the
// subagents with no meta file (so no parent call the SDK can give) to
// it: Claude Code ends an Agent (Task) call's result with "agentId: <id>".
func callsNamingAgents(msgs []sessions.Message, agents map[string]bool, byCall map[string]string) {
	for i := range msgs {
		if msgs[i].Type != "user" {
			continue
		}
		for _, bl := range blocksOf(&msgs[i]) {
			if bl.Type != "tool_result" || byCall[bl.ToolUseID] != "" {
				continue
			}
			if a := agentNamedIn(string(bl.Content)); agents[a] {
				byCall[bl.ToolUseID] = a
				delete(agents, a)
			}
		}
	}
}

// agentNamedIn is the id after the last "agentId: " in a result's text
// ("" when there is none).
func agentNamedIn(text string) string {
	i := strings.LastIndex(text, "agentId: ")
	if i < 0 {
		return ""
	}
	rest := text[i+len("agentId: "):]
	n := 0
	for n < len(rest) && n < 64 && (rest[n] >= '0' && rest[n] <= '9' || rest[n] >= 'a' && rest[n] <= 'z' || rest[n] >= 'A' && rest[n] <= 'Z' || rest[n] == '-' || rest[n] == '_') {
		n++
	}
	return rest[:n]
}

// agentView is the subagent a call started, its first Window messages.
func (h *Handler) agentView(ctx context.Context, c *conversation, idx *agentIndex, toolUseID string) *agentView {
	idx.mu.Lock()
	a, ok := idx.byCall[toolUseID]
	idx.mu.Unlock()
	if !ok {
		return nil
	}
	sub := &conversation{st: c.st, store: c.store, id: c.id, agent: a, base: c.base + "/agents/" + url.PathEscape(a)}
	if !h.opt.EagerAgents && a != c.openAgent {
		return &agentView{ID: a, Fetch: sub.link("/inline", nil)}
	}
	msgs, _, err := c.st.SubagentMessages(ctx, c.id, a, sessions.MessagesOptions{})
	if err != nil {
		return nil
	}
	sub.msgs = msgs
	return h.agentBody(sub)
}

// agentBody is a subagent's first Window messages shown under its call,
// with a link to its page for the rest.
func (h *Handler) agentBody(sub *conversation) *agentView {
	n := min(len(sub.msgs), h.opt.Window)
	v := &agentView{ID: sub.agent, Messages: newBuilder(h.md, sub.msgs, 0).views(sub.msgs[:n], nil), More: len(sub.msgs) - n}
	if v.More > 0 {
		v.Link = sub.link("", nil)
	}
	return v
}

// agentInline serves /sessions/{id}/agents/{agent}/inline: what the page
// shows under the subagent's call, fetched when the call is opened.
func (h *Handler) agentInline(w http.ResponseWriter, r *http.Request) {
	c, err := h.load(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, "agent-body", h.agentBody(c))
}

// findInAgents finds message uuid in the session's subagents: call is the
// index of the message holding the call that started its subagent (-1
// when none), deep is set when the message lies past the messages shown
// under the call (agent names the subagent).
func (h *Handler) findInAgents(ctx context.Context, c *conversation, uuid string) (call int, agent string, deep bool) {
	idx := h.agentIndexOf(ctx, c)
	idx.mu.Lock()
	byCall := maps.Clone(idx.byCall)
	idx.mu.Unlock()
	for toolUseID, a := range byCall {
		msgs, _, err := c.st.SubagentMessages(ctx, c.id, a, sessions.MessagesOptions{})
		if err != nil {
			continue
		}
		i := slices.IndexFunc(msgs, func(m sessions.Message) bool { return m.UUID == uuid })
		if i < 0 {
			continue
		}
		if i >= h.opt.Window {
			return -1, a, true
		}
		for j := range c.msgs {
			for _, bl := range blocksOf(&c.msgs[j]) {
				if bl.Type == "tool_use" && bl.ID == toolUseID {
					return j, a, false
				}
			}
		}
	}
	return -1, "", false
}
