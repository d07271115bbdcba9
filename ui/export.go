package ui

import (
	"context"
	"html/template"
	"io"
	"math"

	"github.com/e0dc0000/scribe/sessions"
)

// Export writes session id of st as one self-contained HTML page: the
// conversation as the viewer renders it (the same templates), whole,
// every subagent whole under its call, the style sheet inside the page
// and no script.
func Export(ctx context.Context, w io.Writer, st sessions.Store, id string) error {
	h, err := New(Options{Open: func(context.Context, string) (sessions.Store, error) { return st, nil },
		Stores: []string{st.Name()}, Window: math.MaxInt32})
	if err != nil {
		return err
	}
	msgs, _, err := st.Messages(ctx, id, sessions.MessagesOptions{IncludeSystem: true})
	if err != nil {
		return err
	}
	c := &conversation{st: st, store: st.Name(), id: id, msgs: msgs, base: "/sessions/" + id}
	p := h.page(ctx, c, 0, len(msgs))
	p.Export, p.Caps, p.Events, p.Share = true, nil, "", false
	return h.tpl.ExecuteTemplate(w, "session", pageData{Title: p.Title, Store: c.store, Inline: template.CSS(h.css), Body: p})
}
