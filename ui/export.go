package ui

import (
	"context"
	"html/template"
	"io"
	"math"

	"github.com/e0dc0000/scribe/sessions"
)

// Exporter writes sessions of one store as self-contained HTML pages
// (Export), its templates and style sheet made once: export --all writes
// thousands.
type Exporter struct {
	h  *Handler
	st sessions.Store
}

// NewExporter is an Exporter of st's sessions (st stays the caller's to
// close).
func NewExporter(st sessions.Store) (*Exporter, error) {
	h, err := New(Options{Open: func(context.Context, string) (sessions.Store, error) { return st, nil },
		Stores: []string{st.Name()}, Window: math.MaxInt32, FirstWindow: math.MaxInt32, EagerAgents: true})
	if err != nil {
		return nil, err
	}
	return &Exporter{h: h, st: st}, nil
}

// Export writes session id as one self-contained HTML page: the
// conversation as the viewer renders it (the same templates), whole,
// every subagent whole under its call, the style sheet inside the page
// and no script.
func (e *Exporter) Export(ctx context.Context, w io.Writer, id string) error {
	msgs, _, err := e.st.Messages(ctx, id, sessions.MessagesOptions{IncludeSystem: true})
	if err != nil {
		return err
	}
	c := &conversation{st: e.st, store: e.st.Name(), id: id, msgs: msgs, base: "/sessions/" + id}
	p := e.h.page(ctx, c, 0, len(msgs))
	p.Export, p.Caps, p.Events, p.Share = true, nil, "", false
	return e.h.tpl.ExecuteTemplate(w, "session", pageData{Title: p.Title, Store: c.store, Inline: template.CSS(e.h.css), Body: p})
}

// Export writes session id of st as Exporter.Export does.
func Export(ctx context.Context, w io.Writer, st sessions.Store, id string) error {
	e, err := NewExporter(st)
	if err != nil {
		return err
	}
	return e.Export(ctx, w, id)
}
