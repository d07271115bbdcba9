package manage

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

func NewCmdIndex(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "index",
		Short: "The sessions index: a cache of the listing and of each session's status, rebuilt from the transcripts",
		Long: `The sessions index (<config dir>/scribe/index/sessions.idx) caches what
scribe ls shows and each session's lifecycle record (status, timestamps,
model, tools, last message). It is derived from the transcripts: every listing
checks each file's size, mtime, ctime and inode against it and reads again
what changed, so it can be deleted at any time.`,
	}
	c.AddCommand(newIndexRebuildCmd(f), newIndexExportCmd(f))
	return c
}

// indexRebuildReport is `scribe index rebuild --json`.
type indexRebuildReport struct {
	Index    string  `json:"index"`
	Sessions int     `json:"sessions"`
	TookMs   float64 `json:"tookMs"`
	jsonl.IndexStats
}

func newIndexRebuildCmd(f *cmdutil.Factory) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "rebuild",
		Short: "Throw the index away and build it again from every transcript",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, _, err := f.LocalLayout(cmd)
			if err != nil {
				return err
			}
			var opt jsonl.IndexOptions
			var prog *indexProgress
			if f, ok := cmd.ErrOrStderr().(*os.File); ok && indexTTY(f) {
				prog = &indexProgress{w: f, what: "reading transcripts"}
				opt.Progress = prog.update
			}
			start := time.Now()
			st, err := l.RebuildIndexWith(cmd.Context(), opt)
			prog.done()
			if err != nil {
				return err
			}
			if st.SaveError != "" {
				return fmt.Errorf("write %s: %s", l.IndexFile(), st.SaveError)
			}
			recs, err := l.Sessions(cmd.Context())
			if err != nil {
				return err
			}
			rep := indexRebuildReport{Index: l.IndexFile(), Sessions: len(recs),
				TookMs: float64(time.Since(start).Microseconds()) / 1e3, IndexStats: st}
			if asJSON {
				return cmdutil.WriteJSON(cmd.OutOrStdout(), rep)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "indexed %d transcript files (%d sessions listed) into %s in %v\n",
				st.Files, rep.Sessions, rep.Index, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print what was done as JSON")
	return c
}

func newIndexExportCmd(f *cmdutil.Factory) *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "export",
		Short: "Write every session's metadata record in the sessions.json shape (id, name, status, dates, model, tools, ...)",
		Long: `export writes the sessions index as the sessions.json file some tools expect:
a JSON array with one SessionMetadata object per listed session (id, name,
status active|completed|interrupted, createdAt, updatedAt, completedAt,
projectPath, transcriptPath, metadata.model, metadata.tools,
metadata.lastMessageId), newest first. model and tools are the whole
session's: the model of most of its assistant turns, and every tool it used
(each transcript is read once for them). It goes to stdout, or with --out to
a file, replaced atomically.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, cfg, err := f.LocalLayout(cmd)
			if err != nil {
				return err
			}
			// Build (or refresh) the index first, so its problems are
			// logged before the export.
			_, st, err := l.ListIndexedWith(cmd.Context(), jsonl.ListOptions{IncludeProgrammatic: true}, jsonl.IndexOptions{})
			if err != nil {
				return err
			}
			cmdutil.LogIndexStats(f.Logger(cfg, "scribe.index"), l, st)
			if out == "" {
				w := bufio.NewWriter(cmd.OutOrStdout())
				if err := l.ExportSessionsJSON(w); err != nil {
					return err
				}
				return w.Flush()
			}
			return indexWriteAtomic(out, func(w io.Writer) error { return l.ExportSessionsJSON(w) })
		},
	}
	c.Flags().StringVar(&out, "out", "", "write to this file instead of stdout")
	return c
}

// indexWriteAtomic writes path (0644) through durable.Replace.
func indexWriteAtomic(path string, fill func(io.Writer) error) error {
	_, err := durable.Replace(path, durable.Options{Perm: 0o644}, fill)
	return err
}

// indexTTY reports whether f is a terminal.
func indexTTY(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// indexProgress redraws one "what: done/total" line at most every 100 ms.
type indexProgress struct {
	w    io.Writer
	what string
	mu   sync.Mutex
	last time.Time
	n    int
}

func (p *indexProgress) update(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if done < total && time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	p.n++
	fmt.Fprintf(p.w, "\r\033[K%s: %d/%d", p.what, done, total)
}

func (p *indexProgress) done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n > 0 {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
