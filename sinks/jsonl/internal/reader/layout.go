// Package reader is the local store's read side: a transcript into
// entries (the read engine, readchunks.go), the SDK's offline readers
// (getSessionMessages, listSubagents, getSubagentMessages) with its rules
// for finding files, the local loader (Loader), the sidecar's lifecycle
// records and checkpoints, and the list of a folder's transcript files.
package reader

import (
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// Layout is the store's folder (layout.Layout); it holds the methods of
// this job.
type Layout struct{ layout.Layout }
