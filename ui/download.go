package ui

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"

	"github.com/e0dc0000/scribe/sessions"
)

// ExportFunc writes session id of st in one export format.
type ExportFunc func(ctx context.Context, st sessions.Store, id string, w io.Writer) error

// download is one format a session page offers to download.
type download struct {
	Label, Format, Ext, Type string
}

// downloads are the formats the page of a session of st offers: the page
// as one HTML file always, Markdown and a bundle when the handler was
// given their writers (and the store keeps files, for a bundle).
func (h *Handler) downloads(st sessions.Store) []download {
	out := []download{{"HTML page", "html", ".html", "text/html; charset=utf-8"}}
	if h.opt.Markdown != nil {
		out = append(out, download{"Markdown", "md", ".md", "text/markdown; charset=utf-8"})
	}
	if h.opt.Bundle != nil && h.opt.Bundle(st) != nil {
		out = append(out, download{"Bundle", "bundle", ".tar.gz", "application/gzip"})
	}
	return out
}

// exportFile serves /sessions/{id}/export?format=: the session as a file
// to download, written whole before the first byte is sent (an error is
// an error page, not half a file).
func (h *Handler) exportFile(w http.ResponseWriter, r *http.Request) {
	st, _, id, err := h.sessionOf(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	format := r.FormValue("format")
	var write ExportFunc
	switch format {
	case "html":
		write = func(ctx context.Context, st sessions.Store, id string, w io.Writer) error {
			return Export(ctx, w, st, id)
		}
	case "md":
		write = h.opt.Markdown
	case "bundle":
		if h.opt.Bundle != nil {
			write = h.opt.Bundle(st)
		}
	}
	var d download
	for _, o := range h.downloads(st) {
		if o.Format == format {
			d = o
		}
	}
	if write == nil || d.Format == "" {
		h.fail(w, r, &httpError{http.StatusNotFound, "no export as " + format + " here"})
		return
	}
	var buf bytes.Buffer
	if err := write(r.Context(), st, id, &buf); err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", d.Type)
	w.Header().Set("Content-Disposition", "attachment; filename*=UTF-8''"+url.PathEscape(id+d.Ext))
	w.Write(buf.Bytes())
}
