// Package index is the sessions index of a config folder: what the
// listing (package listing) derived of each transcript, kept in one file
// keyed by each file's identity so that a listing reads only the files
// that changed, and each session's status (active, interrupted,
// completed) from the tail it kept.
package index

import (
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/listing"
)

// Layout is the store's folder (layout.Layout); it holds the methods of
// this job.
type Layout struct{ layout.Layout }

// listing is the same folder as the listing job sees it.
func (l Layout) listing() listing.Layout { return listing.Layout{Layout: l.Layout} }
