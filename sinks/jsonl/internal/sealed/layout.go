// Package sealed is the sealed archive: the frame format of a sealed
// transcript (sealed.go), the extent record kept beside each file
// (sealedextent.go), the archive's data key and the reading of its files
// (Store, sealedstore.go), and decrypting a whole archive into memory or a
// folder (sealedview.go). The writer appends frames through it.
package sealed

import (
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// Layout is the store's folder (layout.Layout); it holds the methods of
// this job.
type Layout struct{ layout.Layout }

// at is the archive in the folder root.
func at(root string) Layout { return Layout{Layout: layout.Layout{ConfigDir: root}} }
