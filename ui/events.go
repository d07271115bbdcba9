package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/e0dc0000/scribe/sessions"
)

// Live: /sessions/{id}/events is a stream of server-sent events. Every
// Poll the store is asked for the session's listing entry; when its size
// or time changed, for its messages; those the page does not have yet
// are sent rendered, as one "messages" event whose data is
// {"html": ...} (JSON, so no line of a transcript can end the event),
// its id the last message's uuid (a reconnecting browser sends it back
// as Last-Event-ID).

// pingEvery is how many polls pass between keep-alive comments.
const pingEvery = 15

// events serves the live stream.
func (h *Handler) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	st, name, id, err := h.sessionOf(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	after := r.Header.Get("Last-Event-ID")
	if after == "" {
		after = r.FormValue("after")
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return // no streaming through this writer: the page reloads to see more
	}
	f := follower{h: h, c: &conversation{st: st, store: name, id: id, base: h.opt.Base + "/sessions/" + url.PathEscape(id)}, after: after}
	tick := time.NewTicker(h.opt.Poll)
	defer tick.Stop()
	for n := 0; ; n++ {
		if ev := f.poll(r); ev != nil {
			if _, err := w.Write(ev); err != nil {
				return
			}
			_ = rc.Flush()
		} else if n%pingEvery == pingEvery-1 {
			if _, err := w.Write([]byte(": ping\n\n")); err != nil {
				return
			}
			_ = rc.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

// follower is one live page's view of a session.
type follower struct {
	h     *Handler
	c     *conversation
	after string
	// sig is the listing entry last seen; seen the messages the page has.
	sig  string
	seen map[string]bool
}

// Stamper is a store that says cheaply whether a session changed: a live
// page asks for the stamp at each Poll and reads the session again only
// when it changed. A store that is not one is asked for Info, whose size
// and time are the stamp.
type Stamper interface {
	Stamp(ctx context.Context, id string) (string, error)
}

// stamp is the session's stamp ("" when it cannot be had).
func (f *follower) stamp(ctx context.Context) string {
	if s, ok := f.c.st.(Stamper); ok {
		sig, err := s.Stamp(ctx, f.c.id)
		if err != nil {
			return ""
		}
		return sig
	}
	info, err := f.c.st.Info(ctx, f.c.id)
	if err != nil || info == nil {
		return ""
	}
	return strconv.FormatInt(info.FileSize, 10) + "/" + strconv.FormatInt(info.LastModified, 10)
}

// poll returns the event for the messages the page lacks (nil for none).
func (f *follower) poll(r *http.Request) []byte {
	ctx := r.Context()
	sig := f.stamp(ctx)
	if sig == "" || sig == f.sig {
		return nil
	}
	f.sig = sig
	msgs, _, err := f.c.st.Messages(ctx, f.c.id, sessions.MessagesOptions{IncludeSystem: true})
	if err != nil {
		return nil
	}
	if f.seen == nil {
		f.seen = map[string]bool{}
		for _, m := range msgs {
			f.seen[m.UUID] = true
			if m.UUID == f.after {
				break
			}
		}
		if f.after == "" {
			return nil // the page had nothing to go on: it starts from now
		}
	}
	var fresh []sessions.Message
	for _, m := range msgs {
		if !f.seen[m.UUID] {
			f.seen[m.UUID] = true
			fresh = append(fresh, m)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	f.c.msgs = msgs
	b := f.h.builderFor(ctx, f.c, len(msgs)-len(fresh), true)
	var html bytes.Buffer
	if err := f.h.tpl.ExecuteTemplate(&html, "messages", b.views(fresh, nil)); err != nil {
		return nil
	}
	data, _ := json.Marshal(map[string]string{"html": html.String()})
	return fmt.Appendf(nil, "id: %s\nevent: messages\ndata: %s\n\n", eventID(fresh[len(fresh)-1].UUID), data)
}

// eventID is a uuid fit for an id: field (no line break can end it).
func eventID(uuid string) string {
	b, _ := json.Marshal(uuid)
	if string(b) != `"`+uuid+`"` {
		return ""
	}
	return uuid
}
