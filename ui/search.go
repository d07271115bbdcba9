package ui

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/e0dc0000/scribe/sessions"
)

// Search across sessions: /search?q= asks Options.Search for the messages
// that match and shows each with its session's title, its snippet (the
// matched words marked) and a link to the message in its session.

// MarkStart and MarkEnd enclose a matched word in a Hit's snippet.
const (
	MarkStart = "\x02"
	MarkEnd   = "\x03"
)

// ErrBadQuery is returned by a SearchFunc for a query it cannot search
// (no words): the page says so instead of failing.
var ErrBadQuery = errors.New("nothing to search for")

// Hit is a message a search found.
type Hit struct {
	SessionID string
	// AgentID names the subagent whose message it is ("" for the main
	// conversation).
	AgentID   string
	UUID      string
	Role      string
	Timestamp string
	// Snippet is the text around the match, each matched word between
	// MarkStart and MarkEnd.
	Snippet string
}

// SearchFunc finds the messages of st that match q, best first, at most
// limit; an error wrapping ErrBadQuery is a query with nothing to search.
type SearchFunc func(ctx context.Context, st sessions.Store, q string, limit int) ([]Hit, error)

// searchLimit is how many messages a search shows.
const searchLimit = 100

// searchPage is the search page's body.
type searchPage struct {
	Q, Store, Problem string
	Hits              []hitView
}

// hitView is one hit as the page shows it.
type hitView struct {
	Hit
	Title, Link string
}

// search serves /search?q=.
func (h *Handler) search(w http.ResponseWriter, r *http.Request) {
	st, name, err := h.store(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	q := strings.TrimSpace(r.FormValue("q"))
	p := searchPage{Q: q, Store: name}
	if q != "" {
		hits, err := h.opt.Search(r.Context(), st, q, searchLimit)
		switch {
		case errors.Is(err, ErrBadQuery):
			p.Problem = err.Error()
		case err != nil:
			h.fail(w, r, err)
			return
		}
		p.Hits = h.hitViews(r.Context(), name, st, hits)
	}
	d := h.frame("Search", name, p)
	d.Q = q
	h.render(w, "search", d)
}

// hitViews gives each hit its session's title and its link.
func (h *Handler) hitViews(ctx context.Context, name string, st sessions.Store, hits []Hit) []hitView {
	titles := map[string]string{}
	if rows, err := h.rows(ctx, name, st, sorts[0].Key); err == nil {
		for _, r := range rows {
			titles[r.ID] = r.Title
		}
	}
	out := make([]hitView, 0, len(hits))
	for _, hit := range hits {
		v := url.Values{"store": {name}, "at": {hit.UUID}}
		link := h.opt.Base + "/sessions/" + url.PathEscape(hit.SessionID) + "?" + v.Encode() + "#m-" + hit.UUID
		title := titles[hit.SessionID]
		if title == "" {
			title = hit.SessionID
		}
		out = append(out, hitView{Hit: hit, Title: title, Link: link})
	}
	return out
}

// segment is a piece of a snippet, matched or not.
type segment struct {
	Text string
	Hit  bool
}

// marked cuts a snippet into its pieces at the marks (a template helper:
// each piece is escaped where it lands, the matched ones put in <mark>).
func marked(s string) []segment {
	var out []segment
	for s != "" {
		i := strings.Index(s, MarkStart)
		if i < 0 {
			break
		}
		j := strings.Index(s[i:], MarkEnd)
		if j < 0 {
			break
		}
		if i > 0 {
			out = append(out, segment{Text: s[:i]})
		}
		if hit := s[i+len(MarkStart) : i+j]; hit != "" {
			out = append(out, segment{Text: hit, Hit: true})
		}
		s = s[i+j+len(MarkEnd):]
	}
	if s = strings.NewReplacer(MarkStart, "", MarkEnd, "").Replace(s); s != "" {
		out = append(out, segment{Text: s})
	}
	return out
}
