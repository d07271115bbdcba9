package uicmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/e0dc0000/scribe/internal/scansearch"
	"github.com/e0dc0000/scribe/search"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/stores"
	"github.com/e0dc0000/scribe/ui"
)

// Search is the viewer's search across sessions (a ui.SearchFunc): the
// full-text index (package search, kept fresh at each search) for a local
// folder, a scan of every session's messages for any other store (an
// archive in a database, the team server).
func Search(ctx context.Context, st sessions.Store, q string, limit int) ([]ui.Hit, error) {
	sq := search.Query{Text: q, Limit: limit, Marks: [2]string{ui.MarkStart, ui.MarkEnd}}
	var hits []search.Hit
	var err error
	if l, ok := st.(*stores.Local); ok {
		hits, err = indexSearch(ctx, l, sq)
	} else {
		hits, err = scansearch.Search(ctx, st, sq, "")
	}
	if errors.Is(err, search.ErrBadQuery) {
		return nil, fmt.Errorf("%w: %q has no words", ui.ErrBadQuery, q)
	}
	if err != nil {
		return nil, err
	}
	out := make([]ui.Hit, 0, len(hits))
	for _, h := range hits {
		out = append(out, ui.Hit{SessionID: h.SessionID, AgentID: h.AgentID, UUID: h.UUID, Role: h.Role,
			Timestamp: h.Timestamp, Snippet: h.Snippet})
	}
	return out, nil
}

// indexSearch asks a local folder's full-text index.
func indexSearch(ctx context.Context, l *stores.Local, q search.Query) ([]search.Hit, error) {
	x, err := search.Open(l.Layout())
	if err != nil {
		return nil, err
	}
	defer x.Close()
	hits, _, err := x.SearchFresh(ctx, q, nil)
	return hits, err
}
