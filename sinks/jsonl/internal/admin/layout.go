// Package admin changes the sessions of a local store as the SDK and
// Claude Code change them: the trash (rm, restore, empty), rename, tag and
// archive, gc and the cleanupPeriodDays forecast, du, bundles (export and
// import), relocate, copy, and fork output.
package admin

import (
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/index"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/reader"
)

// Layout is the store's folder (layout.Layout); it holds the methods of
// this job.
type Layout struct{ layout.Layout }

// index is the same folder as the sessions index sees it.
func (l Layout) index() index.Layout { return index.Layout{Layout: l.Layout} }

// reader is the same folder as the reader job sees it.
func (l Layout) reader() reader.Layout { return reader.Layout{Layout: l.Layout} }
