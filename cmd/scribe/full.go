//go:build !lite

package main

// The full build (`go build ./cmd/scribe`, installed as scribe-full by
// scripts/install): every command, every component. The commands only it
// runs (fullonly.go) are registered here; their packages are linked into
// no light build.

import (
	"context"
	_ "embed"
	"io"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/backends"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/cli/configcmd"
	"github.com/e0dc0000/scribe/internal/cli/mcpcmd"
	"github.com/e0dc0000/scribe/internal/cli/plugincmd"
	"github.com/e0dc0000/scribe/internal/cli/searchcmd"
	"github.com/e0dc0000/scribe/internal/cli/serve"
	"github.com/e0dc0000/scribe/internal/cli/uicmd"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/ui"
)

// sampleSession is the session scribe demo records.
//
//go:embed testdata/sample.jsonl
var sampleSession []byte

// fullCommands are the commands only the full build runs, each with its
// Use and Short from fullOnly, the text the light build's stubs show too.
func fullCommands(f *cmdutil.Factory) []*cobra.Command {
	cmds := []*cobra.Command{
		configcmd.NewCmdConfig(f), configcmd.NewCmdDemo(f, newRoot, sampleSession),
		backends.NewCmdCopy(f), backends.NewCmdS3(f),
		mcpcmd.NewCmdMcp(f),
		plugincmd.NewCmdPlugin(f), plugincmd.NewCmdPlugins(f),
		searchcmd.NewCmdSearch(f),
		serve.NewCmdServe(f), serve.NewCmdToken(f),
		uicmd.NewCmdUI(f),
	}
	for _, c := range cmds {
		t, ok := fullOnly[c.Name()]
		if !ok {
			panic("fullonly.go has no text for " + c.Name())
		}
		c.Use, c.Short = t.use, t.short
	}
	return cmds
}

// needsFull is the light build's hand-over to the full build (lite.go);
// this is the full build, which holds every component.
func needsFull(*config.Config, []byte) error { return nil }

// fullFor is the light build's hand-over for a component type (lite.go).
func fullFor(core.Kind, string) error { return nil }

// dropFromSearch drops sessions from the search index, SQLite in process.
func dropFromSearch(l jsonl.Layout, ids []string) error { return searchcmd.DropFromSearch(l, ids) }

// buildName says which build this is, for scribe version.
func buildName() string { return "full build" }

// htmlNeedsFull is the light build's hand-over of export --format html
// (lite.go); this build renders it.
func htmlNeedsFull() error { return nil }

// exportHTML writes a session as the web viewer's self-contained page.
func exportHTML(ctx context.Context, w io.Writer, st sessions.Store, id string) error {
	return ui.Export(ctx, w, st, id)
}

// htmlExporter writes many sessions of st as exportHTML does.
func htmlExporter(st sessions.Store) (func(context.Context, io.Writer, string) error, error) {
	e, err := ui.NewExporter(st)
	if err != nil {
		return nil, err
	}
	return e.Export, nil
}

// exportHTMLIndex writes export --all's index page.
func exportHTMLIndex(w io.Writer, where string, recs []sessions.Record, href func(string) string) error {
	entries := make([]ui.IndexEntry, len(recs))
	for i := range recs {
		entries[i] = ui.IndexEntry{Record: &recs[i], Href: href(recs[i].ID)}
	}
	return ui.ExportIndex(w, where, entries)
}
