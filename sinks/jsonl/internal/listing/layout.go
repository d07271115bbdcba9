// Package listing lists the sessions of a config folder as the SDK's
// listSessions and getSessionInfo do, computed as they compute them from a
// head and a tail window of each transcript (its "lite" reading, hence
// the old name), with the sidecars and the SDK's filters; package index
// keeps what it derived.
package listing

import (
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// Layout is the store's folder (layout.Layout); it holds the methods of
// this job.
type Layout struct{ layout.Layout }
