// Package writer is the local store's write side: the Sink (a write queue
// per file drained with writev, lazy files, metadata re-append, torn-tail
// sealing, one writer per session through its lock, the descriptor budget,
// sync-ahead), the lifecycle sidecar, checkpoints appended without a
// pipeline, and the sink's seam with a sealed archive (package sealed).
package writer

import (
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/reader"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/sealed"
)

// Layout is the store's folder (layout.Layout); it holds the methods of
// this job.
type Layout struct{ layout.Layout }

// reader is the same folder as the reader job sees it.
func (l Layout) reader() reader.Layout { return reader.Layout{Layout: l.Layout} }

// sealed is the same folder as the sealed job sees it.
func (l Layout) sealed() sealed.Layout { return sealed.Layout{Layout: l.Layout} }
