package read

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/internal/ident"
	"github.com/e0dc0000/scribe/sessions"
)

// exportAllOptions are export --all's flags.
type exportAllOptions struct {
	dir           string
	force, asJSON bool
}

// exportAllResult is export --all --json's summary.
type exportAllResult struct {
	Dir      string            `json:"dir"`
	Index    string            `json:"index"`
	Store    string            `json:"store"`
	Sessions int               `json:"sessions"`
	Pages    []exportedPage    `json:"pages"`
	Failed   []exportAllFailed `json:"failed"`
}

// exportedPage is one session's page in the folder.
type exportedPage struct {
	ID    string `json:"id"`
	File  string `json:"file"`
	Title string `json:"title"`
}

// exportAllFailed is a session whose page could not be written.
type exportAllFailed struct {
	ID    string `json:"id"`
	Error string `json:"error"`
}

// progressEvery is how often a long export says how far it is.
const progressEvery = 2 * time.Second

// exportAll writes every session of the store as its self-contained HTML
// page, <id>.html in o.dir, and index.html listing them; a session that
// fails is reported and the others are written (exit 1 at the end).
func exportAll(f *cmdutil.Factory, cmd *cobra.Command, o exportAllOptions) (err error) {
	if err := checkExportDir(o.dir, o.force); err != nil {
		return err
	}
	st, _, done, err := f.OpenStoreOf(cmd)
	if err != nil {
		return err
	}
	defer done(&err)
	ctx := cmd.Context()
	recs, err := st.Records(ctx, sessions.ListOptions{IncludeWorktrees: true, IncludeProgrammatic: true})
	if err != nil {
		return err
	}
	export, err := f.HTMLExporter(st)
	if err != nil {
		return err
	}
	res := exportAllResult{Dir: o.dir, Index: filepath.Join(o.dir, "index.html"), Store: st.Name(),
		Pages: []exportedPage{}, Failed: []exportAllFailed{}}
	var written []sessions.Record
	stderr := cmd.ErrOrStderr()
	last := time.Now()
	for i := range recs {
		r := &recs[i]
		file, err := exportPage(cmd, export, r.ID, o.dir)
		if err != nil {
			res.Failed = append(res.Failed, exportAllFailed{ID: r.ID, Error: err.Error()})
			fmt.Fprintf(stderr, "scribe: export of %s: %v\n", r.ID, err)
			continue
		}
		written = append(written, *r)
		res.Pages = append(res.Pages, exportedPage{ID: r.ID, File: file, Title: r.Info.Summary})
		if time.Since(last) >= progressEvery {
			fmt.Fprintf(stderr, "scribe: %d of %d sessions exported\n", i+1, len(recs))
			last = time.Now()
		}
	}
	res.Sessions = len(written)
	_, err = durable.Replace(res.Index, durable.Options{Perm: 0o644, DirPerm: 0o755}, func(w io.Writer) error {
		return f.ExportHTMLIndex(w, st.Where(), written, func(id string) string { return id + ".html" })
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", res.Index, err)
	}
	if o.asJSON {
		err = cmdutil.WriteJSON(cmd.OutOrStdout(), res)
	} else {
		fmt.Fprintf(cmd.OutOrStdout(), "exported %d sessions of %s to %s (open %s)\n", res.Sessions, st.Name(), o.dir, res.Index)
	}
	if err == nil && len(res.Failed) > 0 {
		err = fmt.Errorf("%d of %d sessions could not be exported (see above)", len(res.Failed), len(recs))
	}
	return err
}

// exportPage writes session id's page into dir with export and returns
// its file name.
func exportPage(cmd *cobra.Command, export func(context.Context, io.Writer, string) error, id, dir string) (string, error) {
	if !ident.Token(id, 200) {
		return "", fmt.Errorf("the id %q cannot name a file", id)
	}
	name := id + ".html"
	_, err := durable.Replace(filepath.Join(dir, name), durable.Options{Perm: 0o644, DirPerm: 0o755}, func(w io.Writer) error {
		return export(cmd.Context(), w, id)
	})
	return name, err
}

// checkExportDir refuses a folder that exists and holds anything, unless
// force; a file where the folder should be is refused always.
func checkExportDir(dir string, force bool) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("-o %s: not a folder", dir)}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(ents) > 0 && !force {
		return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("-o %s: the folder exists and is not empty (--force writes into it, replacing the pages and index.html it has)", dir)}
	}
	return nil
}
