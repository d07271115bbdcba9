package ui

import (
	"context"
	"io"
	"net/http"
	"net/url"

	"github.com/e0dc0000/scribe/sessions"
)

// ExportFunc writes session id of st in one export format.
type ExportFunc func(ctx context.Context, st sessions.Store, id string, w io.Writer) error

// download is one format a session page offers to download, with its
// writer.
type download struct {
	Label, Format, Ext, Type string
	write                    ExportFunc
}

// downloads are the formats the page of a session of st offers: the page
// as one HTML file always, Markdown and a bundle when the handler was
// given their writers (and the store keeps files, for a bundle).
func (h *Handler) downloads(st sessions.Store) []download {
	out := []download{{"HTML page", "html", ".html", "text/html; charset=utf-8",
		func(ctx context.Context, st sessions.Store, id string, w io.Writer) error {
			return Export(ctx, w, st, id)
		}}}
	if h.opt.Markdown != nil {
		out = append(out, download{"Markdown", "md", ".md", "text/markdown; charset=utf-8", h.opt.Markdown})
	}
	if h.opt.Bundle != nil {
		if write := h.opt.Bundle(st); write != nil {
			out = append(out, download{"Bundle", "bundle", ".tar.gz", "application/gzip", write})
		}
	}
	return out
}

// exportFile serves /sessions/{id}/export?format=: the session as a file
// to download, streamed (a bundle can be as large as the session). An
// error before the first byte is an error page; one after it aborts the
// response, so the browser sees a failed download, never a cut file.
func (h *Handler) exportFile(w http.ResponseWriter, r *http.Request) {
	st, _, id, err := h.sessionOf(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	format := r.FormValue("format")
	for _, d := range h.downloads(st) {
		if d.Format != format {
			continue
		}
		out := &lazyHeader{w: w, set: func() {
			w.Header().Set("Content-Type", d.Type)
			w.Header().Set("Content-Disposition", "attachment; filename*=UTF-8''"+url.PathEscape(id+d.Ext))
		}}
		if err := d.write(r.Context(), st, id, out); err != nil {
			if out.started {
				panic(http.ErrAbortHandler)
			}
			h.fail(w, r, err)
		}
		return
	}
	h.fail(w, r, &httpError{http.StatusNotFound, "no export as " + format + " here"})
}

// lazyHeader sets the download's headers at its first byte.
type lazyHeader struct {
	w       http.ResponseWriter
	set     func()
	started bool
}

func (l *lazyHeader) Write(p []byte) (int, error) {
	if !l.started {
		l.started = true
		l.set()
	}
	return l.w.Write(p)
}
