package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/e0dc0000/scribe/sessions"
)

// The sessions list: a store's records (the listing with status and
// model), read once and kept, read again in the background after ListTTL;
// filtered, sorted and cut into one page, so that a page costs little
// more on 10,000 sessions than on ten.

const (
	defaultLimit = 50
	maxLimit     = 500
)

// listing is a store's records as last read, and each order of them a
// page asked for (sorted once per reading, not at every page).
type listing struct {
	mu         sync.Mutex
	at         time.Time
	rows       []row
	sorted     map[string][]row
	refreshing bool
}

// set replaces the records, forgetting their orders.
func (l *listing) set(rows []row) {
	l.rows, l.at, l.sorted = rows, time.Now(), nil
}

// by is the records in the order of sort key (made once, then kept until
// the records change; never changed in place, so a page may read it
// unlocked).
func (l *listing) by(key string) []row {
	if s, ok := l.sorted[key]; ok {
		return s
	}
	s := slices.Clone(l.rows)
	sortRows(s, key)
	if l.sorted == nil {
		l.sorted = map[string][]row{}
	}
	l.sorted[key] = s
	return s
}

// row is one session of the list.
type row struct {
	ID, Title, Project, ProjectPath string
	Activity                        time.Time
	Size                            int64
	Model, Status, State, Tag       string
	Archived, Fork                  bool
	// search is what the filter looks in, titleKey what the title sort
	// compares: lower case.
	search, titleKey string
	// folder is the name of the project folder holding the transcript.
	folder string
	// Messages is how many messages getSessionMessages gives the
	// session, when Counted (the list counts them after it is shown, and
	// keeps the counts); Pending: the page asks for the count.
	Messages         int
	Counted, Pending bool
}

// rows is the store's records in the order of sort key: read now the
// first time (or after a change made here), else as last read, read
// again in the background once they are older than ListTTL, so that no
// page waits for a listing of every session.
func (h *Handler) rows(ctx context.Context, name string, st sessions.Store, key string) ([]row, error) {
	h.mu.Lock()
	l := h.lists[name]
	if l == nil {
		l = &listing{}
		h.lists[name] = l
	}
	h.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rows == nil {
		rows, err := readRows(ctx, st)
		if err != nil {
			return nil, err
		}
		l.set(rows)
		return l.by(key), nil
	}
	if time.Since(l.at) >= h.opt.ListTTL && !l.refreshing {
		l.refreshing = true
		rctx := context.WithoutCancel(ctx)
		time.AfterFunc(listRefreshDelay, func() { l.refresh(rctx, st) })
	}
	return l.by(key), nil
}

// listRefreshDelay is how long after a page a stale listing is read again:
// after the browser has drawn the page, not while it draws (reading the
// records of 10,000 sessions takes a core for a while).
const listRefreshDelay = 500 * time.Millisecond

// refresh reads the records again (a failure keeps the old ones).
func (l *listing) refresh(ctx context.Context, st sessions.Store) {
	rows, err := readRows(ctx, st)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		l.set(rows)
	}
	l.refreshing = false
}

// readRows lists the store.
func readRows(ctx context.Context, st sessions.Store) ([]row, error) {
	recs, err := st.Records(ctx, sessions.ListOptions{IncludeWorktrees: true, IncludeProgrammatic: true})
	if err != nil {
		return nil, err
	}
	rows := make([]row, 0, len(recs))
	for i := range recs {
		rows = append(rows, rowOf(&recs[i]))
	}
	return rows, nil
}

// forget drops a store's listing (after a change to its sessions).
func (h *Handler) forget(name string) {
	h.mu.Lock()
	delete(h.lists, name)
	h.mu.Unlock()
}

func rowOf(r *sessions.Record) row {
	in := &r.Info
	title := in.Summary
	if title == "" {
		title = r.Name
	}
	proj := r.ProjectPath
	if proj == "" {
		proj = in.Cwd
	}
	w := row{ID: r.ID, Title: title, ProjectPath: proj, Project: filepath.Base(proj),
		Activity: r.UpdatedAt, Size: in.FileSize, Model: r.Metadata.Model, Status: string(r.Status),
		State: string(r.State), Tag: in.Tag, Archived: in.Archived != nil && *in.Archived, Fork: in.Forked}
	if r.TranscriptPath != "" {
		w.folder = filepath.Base(filepath.Dir(r.TranscriptPath))
	}
	if w.Activity.IsZero() && in.LastModified > 0 {
		w.Activity = time.UnixMilli(in.LastModified)
	}
	w.titleKey = strings.ToLower(w.Title)
	w.search = strings.ToLower(strings.Join([]string{w.ID, w.Title, proj, w.Tag, w.Model, in.FirstPrompt, in.GitBranch}, "\x00"))
	return w
}

// listQuery is what the list shows: ?q, ?sort, ?page, ?limit.
type listQuery struct {
	Q, Sort     string
	Page, Limit int
}

// sorts are the orders offered, the first the default.
var sorts = []struct{ Key, Label string }{
	{"activity", "last activity"}, {"title", "title"}, {"size", "size"}, {"project", "project"},
}

func parseListQuery(r *http.Request) listQuery {
	q := listQuery{Q: strings.TrimSpace(r.FormValue("q")), Sort: r.FormValue("sort"), Page: 1, Limit: defaultLimit}
	if !slices.ContainsFunc(sorts, func(s struct{ Key, Label string }) bool { return s.Key == q.Sort }) {
		q.Sort = sorts[0].Key
	}
	if n, err := strconv.Atoi(r.FormValue("page")); err == nil && n > 0 {
		q.Page = n
	}
	if n, err := strconv.Atoi(r.FormValue("limit")); err == nil && n > 0 {
		q.Limit = min(n, maxLimit)
	}
	return q
}

// listPage is the list's body.
type listPage struct {
	Query        listQuery
	Sorts        []struct{ Key, Label string }
	Rows         []row
	Total, First int
	Last         int
	Prev, Next   string
	StoreWhere   string
	Capabilities []string
	Store        string
}

// list serves / (and, with ?partial=1, only its results, for the filter
// as you type).
func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	st, name, err := h.store(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	q := parseListQuery(r)
	sorted, err := h.rows(r.Context(), name, st, q.Sort)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	matched := filterRows(sorted, q.Q)
	p := listPage{Query: q, Sorts: sorts, Total: len(matched), StoreWhere: st.Where(),
		Capabilities: sessions.Capabilities(st), Store: name}
	start := min((q.Page-1)*q.Limit, len(matched))
	end := min(start+q.Limit, len(matched))
	p.Rows, p.First, p.Last = h.withCounts(name, matched[start:end]), start+1, end
	link := func(page int) string {
		v := url.Values{"store": {name}, "sort": {q.Sort}, "page": {strconv.Itoa(page)}, "limit": {strconv.Itoa(q.Limit)}}
		if q.Q != "" {
			v.Set("q", q.Q)
		}
		return h.opt.Base + "/?" + v.Encode()
	}
	if q.Page > 1 {
		p.Prev = link(q.Page - 1)
	}
	if end < len(matched) {
		p.Next = link(q.Page + 1)
	}
	if r.FormValue("partial") == "1" {
		h.render(w, "rows", p)
		return
	}
	h.render(w, "list", h.frame("Sessions", name, p))
}

// filterRows keeps the rows holding every word of q (case ignored), in
// their order; all itself when q has no words.
func filterRows(all []row, q string) []row {
	words := strings.Fields(strings.ToLower(q))
	if len(words) == 0 {
		return all
	}
	var out []row
	for _, r := range all {
		ok := true
		for _, w := range words {
			if !strings.Contains(r.search, w) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

// sortRows orders rows by key: activity and size descending, title and
// project ascending; ties newest first.
func sortRows(rows []row, key string) {
	slices.SortStableFunc(rows, func(a, b row) int {
		var c int
		switch key {
		case "title":
			c = strings.Compare(a.titleKey, b.titleKey)
		case "size":
			c = -cmpInt(a.Size, b.Size)
		case "project":
			c = strings.Compare(a.ProjectPath, b.ProjectPath)
		}
		if c == 0 {
			c = b.Activity.Compare(a.Activity)
		}
		return c
	})
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// countKey names a session's message count: the store, the id, and the
// size and last activity the listing gave it (a session written to since
// is counted again).
type countKey struct {
	store, id string
	size      int64
	at        time.Time
}

// maxCounts bounds the counts kept (beyond it they are all dropped).
const maxCounts = 50000

// withCounts is a copy of rows with the message counts known.
func (h *Handler) withCounts(store string, rows []row) []row {
	out := slices.Clone(rows)
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range out {
		r := &out[i]
		r.Messages, r.Counted = h.counts[countKey{store, r.ID, r.Size, r.Activity}]
		r.Pending = !r.Counted
	}
	return out
}

// maxCountIDs is how many sessions one /counts request may ask for.
const maxCountIDs = maxLimit

// countsPart serves /counts?id=…&id=…: the message count of each session
// asked for that the list holds, as JSON {id: count}, counted with the
// store's getSessionMessages and kept while the session's size and last
// activity stay as the list has them. The list's page asks for its rows
// after it is shown, so no page waits for sessions to be read.
func (h *Handler) countsPart(w http.ResponseWriter, r *http.Request) {
	st, name, err := h.store(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ids := r.URL.Query()["id"]
	if len(ids) > maxCountIDs {
		h.fail(w, r, &httpError{http.StatusBadRequest, "at most " + strconv.Itoa(maxCountIDs) + " sessions at a time"})
		return
	}
	all, err := h.rows(r.Context(), name, st, sorts[0].Key)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	asked := make(map[string]bool, len(ids))
	for _, id := range ids {
		asked[id] = true
	}
	var rows []row // those the list holds: no other is counted
	for _, rw := range all {
		if asked[rw.ID] {
			rows = append(rows, rw)
		}
	}
	out := map[string]int{}
	for _, rw := range h.withCounts(name, rows) {
		if !rw.Counted {
			msgs, _, err := st.Messages(r.Context(), rw.ID, sessions.MessagesOptions{})
			if err != nil {
				continue
			}
			rw.Messages = len(msgs)
			h.mu.Lock()
			if len(h.counts) >= maxCounts {
				clear(h.counts)
			}
			h.counts[countKey{name, rw.ID, rw.Size, rw.Activity}] = rw.Messages
			h.mu.Unlock()
		}
		out[rw.ID] = rw.Messages
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
