package ui

import (
	"html/template"
	"io"
	"slices"

	"github.com/e0dc0000/scribe/sessions"
)

// IndexEntry is one session of an exported folder's index page: its
// record (the store's listing) and the relative address of its page.
type IndexEntry struct {
	Record *sessions.Record
	Href   string
}

// indexRow is a row of the index page: the list's row and its link.
type indexRow struct {
	row
	Href string
}

// indexPage is the index page's body.
type indexPage struct {
	Where string
	Rows  []indexRow
}

// ExportIndex writes the index page of an exported folder (export --all):
// every entry as the viewer's list shows it (title, project, last
// activity, size, model, tag), newest first, each linking to its page by
// its relative address; self-contained as Export's pages are (the style
// sheet inside, no script). where says which store it came from.
func ExportIndex(w io.Writer, where string, entries []IndexEntry) error {
	a, err := newAssets("")
	if err != nil {
		return err
	}
	p := indexPage{Where: where, Rows: make([]indexRow, 0, len(entries))}
	for _, e := range entries {
		p.Rows = append(p.Rows, indexRow{row: rowOf(e.Record), Href: e.Href})
	}
	slices.SortStableFunc(p.Rows, func(x, y indexRow) int { return y.Activity.Compare(x.Activity) })
	return a.tpl.ExecuteTemplate(w, "exportindex", pageData{Title: "Sessions", Inline: template.CSS(a.css), Body: p})
}
