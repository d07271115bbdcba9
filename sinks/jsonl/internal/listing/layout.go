// Package catalog lists the sessions of a config folder: the SDK's
// listSessions and getSessionInfo, computed as it computes them from a head
// and a tail window of each transcript (the lite listing, listing*.go), and
// the sessions index that keeps what the listing derived, keyed by each
// file's identity (index*.go), with each session's status.
package catalog

import (
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// Layout is the store's folder (layout.Layout); it holds the methods of
// this job.
type Layout struct{ layout.Layout }
