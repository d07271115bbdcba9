//go:build !lite

package main

import (
	"context"
	"io"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/ui"
)

// needsFull is the light build's hand-over to the full build (lite.go);
// this is the full build, which holds every component.
func needsFull(*config.Config, []byte) error { return nil }

// fullFor is the light build's hand-over for a component type (lite.go).
func fullFor(core.Kind, string) error { return nil }

// buildName says which build this is, for scribe version.
func buildName() string { return "full build" }

// htmlNeedsFull is the light build's hand-over of export --format html
// (lite.go); this build renders it.
func htmlNeedsFull() error { return nil }

// exportHTML writes a session as the web viewer's self-contained page.
func exportHTML(ctx context.Context, w io.Writer, st sessions.Store, id string) error {
	return ui.Export(ctx, w, st, id)
}
