// Package cmdutil is the kit every scribe command is built with, in the
// manner of gh's pkg/cmdutil: a Factory handed to each command's
// constructor carries the IO streams, the configuration loader, the logger
// and the store opener, and the two builds' differences (what the light
// build hands to the full one); beside it the exit status of an error
// (ExitError), printing helpers, flag parsers and progress output.
package cmdutil

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// Factory is what every command is made with (NewCmdX(f)): the streams it
// talks through, and the hooks by which the light build hands work to the
// full one. The methods on it load the configuration, make loggers and
// open components and stores.
type Factory struct {
	// IOStreams are the process's standard streams and what is known of
	// them (is each a terminal).
	IOStreams *IOStreams
	// Version is what the build set with -X main.version ("" when it set
	// nothing); BuildVersion falls back on what the toolchain stamped.
	Version string
	// NeedsFull hands the command to the full build when the
	// configuration puts to use a component only the full build holds;
	// stdin is what the command read of its standard input already (nil
	// for none). Nil, or an answer nil, in the full build.
	NeedsFull func(cfg *config.Config, stdin []byte) error
	// FullFor hands the command to the full build when it is to create a
	// component of a type only the full build holds (a --from or --to
	// store). Nil, or an answer nil, in the full build.
	FullFor func(kind core.Kind, typ string) error
	// DropFromSearch drops sessions from the search index (SQLite in the
	// full build; the light build asks the full one); nothing is done
	// when it is nil.
	DropFromSearch func(l jsonl.Layout, ids []string) error
	// HTMLNeedsFull hands export --format html to the full build (the
	// page is the web viewer's, with its Markdown and highlighting), and
	// ExportHTML writes it there.
	HTMLNeedsFull func() error
	ExportHTML    func(ctx context.Context, w io.Writer, st sessions.Store, id string) error
	// HTMLExporter is ExportHTML for many sessions of st, made once
	// (export --all), and ExportHTMLIndex writes export --all's index
	// page: each record linking to the relative address href gives its
	// id (full build).
	HTMLExporter    func(st sessions.Store) (func(ctx context.Context, w io.Writer, id string) error, error)
	ExportHTMLIndex func(w io.Writer, where string, recs []sessions.Record, href func(id string) string) error
}

// needsFull is f.NeedsFull, when there is one.
func (f *Factory) needsFull(cfg *config.Config, stdin []byte) error {
	if f.NeedsFull == nil {
		return nil
	}
	return f.NeedsFull(cfg, stdin)
}

// ForgetSearch drops sessions from the search index in the same step as
// the command that moved them (rm, gc, relocate); a failure is said, never
// fatal (the next search drops them too).
func (f *Factory) ForgetSearch(cmd *cobra.Command, l jsonl.Layout, ids []string) {
	if len(ids) == 0 || f.DropFromSearch == nil {
		return
	}
	if err := f.DropFromSearch(l, ids); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "scribe: the search index still holds %d moved session(s) until the next search: %v\n", len(ids), err)
	}
}
