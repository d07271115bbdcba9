// Package jsonl is the local store: Claude Code's own files under
// $CLAUDE_CONFIG_DIR/projects, laid out by the rules of package claudedir.
// This package is its API; the work is done by one internal package per
// job:
//
//	internal/layout   the folder: paths, the FS the readers read, locks, the walks over project folders
//	internal/writer   the write side, the Sink: a write queue per file, lazy files, metadata re-append,
//	                  torn-tail sealing, one writer per session, the descriptor budget, the sidecar
//	internal/sealed   the sealed archive: the frame format, extent records, the archive's key, decrypting
//	internal/reader   the read engine and the SDK's message readers, the local loader, the sidecar's records
//	internal/listing  the SDK's listing, from a head and a tail window of each transcript
//	internal/index    the sessions index over the listing, and each session's status
//	internal/admin    trash, rename/tag/archive, gc, du, bundles, relocate, copy, fork output
//
// Nothing outside this package reaches them (Go's internal rule).
package jsonl

import (
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/admin"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/index"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/listing"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/reader"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/sealed"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/writer"
)

// Layout computes paths under a config folder, and reads and changes the
// sessions there.
type Layout struct {
	ConfigDir string
	// FS is what the readers read (see FS): nil for the files on disk.
	// Only the readers (List, Info, Messages, Subagents, SubagentMessages,
	// SidecarRecords, Lifecycle, Checkpoints, FindSession, ForkSession's
	// read) take it; everything that changes a session, the sessions index
	// and the locks work on disk only.
	FS FS
	// Walks, when set, keeps the walks of subagents folders on disk
	// between reads (NewWalkCache: a store that reads the same sessions'
	// subagents again and again keeps one).
	Walks *WalkCache
	// Reads, when set, keeps the conversations rebuilt from transcripts on
	// disk while their files are unchanged (see ReadCache).
	Reads *ReadCache
}

// The same folder, as each job sees it.
func (l Layout) base() layout.Layout     { return layout.Layout(l) }
func (l Layout) admin() admin.Layout     { return admin.Layout{Layout: l.base()} }
func (l Layout) index() index.Layout     { return index.Layout{Layout: l.base()} }
func (l Layout) listing() listing.Layout { return listing.Layout{Layout: l.base()} }
func (l Layout) reader() reader.Layout   { return reader.Layout{Layout: l.base()} }
func (l Layout) sealed() sealed.Layout   { return sealed.Layout{Layout: l.base()} }
func (l Layout) writer() writer.Layout   { return writer.Layout{Layout: l.base()} }
