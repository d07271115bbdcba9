package read

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/internal/render"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/stores"
)

func NewCmdExport(f *cmdutil.Factory) *cobra.Command {
	var format, out string
	var redactOn bool
	var all exportAllOptions
	var every bool
	var keys cmdutil.SealFlags
	c := &cobra.Command{
		Use:   "export ID --format md|html|json|bundle [-o FILE] | export --all -o DIR",
		Short: "Write a session as Markdown, one HTML file, JSON, or a portable bundle",
		Long: `export writes a session:
  md      Markdown: prompts and answers, tool calls folded with their results,
          thinking folded, subagents inline under the call that started them,
          checkpoints, images inline
  html    the same as one self-contained HTML file
  json    {"info": the SDK's listing fields, "messages": getSessionMessages,
          "subagents": {agentId: getSubagentMessages}}
  bundle  a gzipped tar of everything the session has (transcript, subagents,
          tool results, sidecars) with a manifest: format version, sha256 of
          each file, original cwd and project; scribe import reads it
-o FILE writes to FILE (atomically for a bundle), else stdout.
--recipient age1… (repeatable), --identity-file, --passphrase-env or
--passphrase-file encrypt the bundle with age; import opens it with the
identity or the passphrase (a wrong key fails; never a plaintext fallback).
--redact replaces every secret by its marker in what is exported, with the
processor "redact" block --rules names (default: the first redact
processor of pipeline.processors, else redact/default); the session itself
is not changed.
--all -o DIR writes every session of the store as its HTML page (the same
page as --format html), DIR/<id>.html, and DIR/index.html listing them
(title, project, last activity) with relative links: a folder to open in
any browser or put on any web server. DIR must be new or empty unless
--force; --json prints a summary; a long run says how far it is on stderr.`,
		Args: cobra.RangeArgs(0, 1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if every {
				if err := checkExportAll(cmd, args, format, out, redactOn); err != nil {
					return err
				}
				if f.HTMLNeedsFull != nil {
					if err := f.HTMLNeedsFull(); err != nil {
						return err
					}
				}
				all.dir = out
				return exportAll(f, cmd, all)
			}
			if len(args) != 1 {
				return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("export takes a session id (or --all -o DIR)")}
			}
			if all.force || all.asJSON {
				return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--force and --json go with --all")}
			}
			switch format {
			case "md", "html", "json", "bundle":
			default:
				return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--format %q: want md, html, json or bundle", format)}
			}
			if format == "html" && f.HTMLNeedsFull != nil {
				if err := f.HTMLNeedsFull(); err != nil {
					return err
				}
			}
			st, _, done, err := f.OpenStoreOf(cmd)
			if err != nil {
				return err
			}
			defer done(&err)
			id, err := st.Resolve(cmd.Context(), args[0])
			if err != nil {
				return cmdutil.ResolveErr(err)
			}
			var l jsonl.Layout
			if format == "bundle" || redactOn {
				// A bundle holds the session's files, and a redacted export
				// reads a redacted copy of them: a folder's, a sealed
				// archive's decrypted in memory, or what a database, a
				// bucket or the team server holds, fetched into memory.
				if l, err = cmdutil.SessionFiles(cmd.Context(), st, id, "export a bundle or --redact"); err != nil {
					return err
				}
			}
			sl, err := keys.Sealer(cmd)
			if err != nil {
				return err
			}
			if sl != nil && format != "bundle" {
				return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--recipient and the passphrase flags encrypt bundles only (--format bundle)")}
			}
			if redactOn {
				rl, cleanup, err := redactedCopy(f, cmd, l, id)
				if err != nil {
					return err
				}
				defer cleanup()
				l, st = rl, stores.NewReader(st.Name(), st.Where(), rl)
			}
			return writeOut(cmd, out, func(w io.Writer) error {
				if format == "bundle" {
					var sealed io.WriteCloser
					if sl != nil {
						if sealed, err = sl.Seal(w); err != nil {
							return err
						}
						w = sealed
					}
					m, err := l.ExportBundle(cmd.Context(), id, w)
					if err == nil && sealed != nil {
						err = sealed.Close()
					}
					if err == nil {
						fmt.Fprintf(cmd.ErrOrStderr(), "scribe: bundle of %s: %d files\n", id, len(m.Files))
						for _, p := range m.Skipped {
							fmt.Fprintf(cmd.ErrOrStderr(), "scribe: not in the bundle (a symlink): %s\n", p)
						}
					}
					return err
				}
				if format == "html" {
					return f.ExportHTML(cmd.Context(), w, st, id)
				}
				doc, err := exportDoc(cmd.Context(), st, id)
				if err != nil {
					return err
				}
				switch format {
				case "json":
					return cmdutil.WriteJSON(w, map[string]any{"info": doc.Info, "messages": nonNil(doc.Messages), "subagents": doc.ByAgent})
				default:
					render.Render(doc, render.Markdown{W: w})
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&format, "format", "md", "md, html, json or bundle")
	c.Flags().StringVarP(&out, "output", "o", "", "write to this file instead of stdout")
	keys.Add(c, true)
	c.Flags().BoolVar(&redactOn, "redact", false, "replace secrets by markers in what is exported (the session is not changed)")
	c.Flags().String("rules", "", `with --redact: the processor "redact" block to use`)
	c.Flags().BoolVar(&every, "all", false, "every session of the store as HTML pages and an index, into the folder -o names")
	c.Flags().BoolVar(&all.force, "force", false, "with --all: write into a folder that is not empty")
	c.Flags().BoolVar(&all.asJSON, "json", false, "with --all: print a summary as JSON")
	return c
}

// checkExportAll refuses what export --all does not take: an id, a format
// other than html, no -o, --redact.
func checkExportAll(cmd *cobra.Command, args []string, format, out string, redactOn bool) error {
	bad := func(msg string) error { return &cmdutil.ExitError{Code: 2, Err: errors.New(msg)} }
	switch {
	case len(args) > 0:
		return bad("export --all takes no session id")
	case cmd.Flags().Changed("format") && format != "html":
		return bad("export --all writes HTML pages only (--format html)")
	case out == "" || out == "-":
		return bad("export --all needs -o DIR, the folder to write")
	case redactOn:
		return bad("export --all does not take --redact (export the sessions of a redacted copy instead)")
	}
	return nil
}

// redactedCopy copies a session, redacted, into a temporary store; the
// export reads that copy.
func redactedCopy(f *cmdutil.Factory, cmd *cobra.Command, l jsonl.Layout, id string) (jsonl.Layout, func(), error) {
	cfg, err := f.LoadConfig(cmd)
	if err != nil {
		return l, nil, &cmdutil.ExitError{Code: 2, Err: err}
	}
	red, _, _, err := cmdutil.RedactorFor(cmd.Context(), cmd, cfg, l)
	if err != nil {
		return l, nil, err
	}
	tmp, err := os.MkdirTemp("", "scribe-export-")
	if err != nil {
		return l, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(tmp) }
	var found int
	err = l.CopySession(cmd.Context(), id, jsonl.Layout{ConfigDir: tmp}, func(path string, b []byte) []byte {
		if red.Allowed(path) {
			return b
		}
		out, fs := red.Redact(b)
		found += len(fs)
		return out
	})
	if err != nil {
		cleanup()
		return l, nil, err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "scribe: export of %s: %d secrets replaced by markers\n", id, found)
	return jsonl.Layout{ConfigDir: tmp}, cleanup, nil
}

func nonNil(m []jsonl.SessionMessage) []jsonl.SessionMessage {
	if m == nil {
		return []jsonl.SessionMessage{}
	}
	return m
}

// writeOut runs fn on stdout, or on a temporary file beside path renamed
// over it once fn succeeds (durable.Replace).
func writeOut(cmd *cobra.Command, path string, fn func(io.Writer) error) error {
	if path == "" || path == "-" {
		w := bufio.NewWriter(cmd.OutOrStdout())
		if err := fn(w); err != nil {
			return err
		}
		return w.Flush()
	}
	if _, err := durable.Replace(path, durable.Options{}, fn); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// docOptions say what a document holds beyond the session's conversation.
type docOptions struct {
	// system adds the system messages (show --system).
	system bool
	// noAgents leaves the subagents' conversations out (show without
	// --subagents).
	noAgents bool
	// damage, when set, is told what the reader skipped or found broken in
	// each transcript read: agent is "" for the session's own.
	damage func(agent string, rep *jsonl.MessagesReport)
}

// exportDoc gathers what md and json show: the document export prints.
func exportDoc(ctx context.Context, st sessions.Store, id string) (*render.Doc, error) {
	return sessionDoc(ctx, st, id, docOptions{})
}

// sessionDoc gathers a session's document: its listing fields, its
// conversation, the subagents' conversations (under the tool call that
// started each, the others apart) and its checkpoints.
func sessionDoc(ctx context.Context, st sessions.Store, id string, opt docOptions) (*render.Doc, error) {
	info, err := st.Info(ctx, id)
	if err != nil {
		return nil, err
	}
	msgs, rep, err := st.Messages(ctx, id, jsonl.MessagesOptions{IncludeSystem: opt.system})
	if err != nil {
		return nil, err
	}
	if opt.damage != nil {
		opt.damage("", rep)
	}
	doc := &render.Doc{Info: info, Messages: msgs, Agents: map[string][]jsonl.SessionMessage{},
		Orphans: map[string][]jsonl.SessionMessage{}, ByAgent: map[string][]jsonl.SessionMessage{}, Checkpoints: map[string][]core.Checkpoint{}}
	if !opt.noAgents {
		if err := addAgents(ctx, st, id, doc, opt.damage); err != nil {
			return nil, err
		}
	}
	cps, err := sessions.Checkpoints(ctx, st, id)
	if err != nil && !errors.Is(err, jsonl.ErrNotFound) {
		return nil, err
	}
	for _, cp := range cps {
		doc.Checkpoints[cp.MessageUUID] = append(doc.Checkpoints[cp.MessageUUID], cp)
	}
	return doc, nil
}

// addAgents puts each subagent's conversation into doc: under the tool
// call that started it (Agents), else apart (Orphans), and all by agent id
// (ByAgent).
func addAgents(ctx context.Context, st sessions.Store, id string, doc *render.Doc, damage func(string, *jsonl.MessagesReport)) error {
	agents, err := st.Subagents(ctx, id)
	if err != nil {
		return err
	}
	for _, a := range agents {
		am, arep, err := st.SubagentMessages(ctx, id, a, jsonl.MessagesOptions{})
		if err != nil {
			return err
		}
		if damage != nil {
			damage(a, arep)
		}
		doc.ByAgent[a] = nonNil(am)
		var tu string
		for _, m := range am {
			if m.ParentToolUseID != nil {
				tu = *m.ParentToolUseID
				break
			}
		}
		if tu != "" && doc.Agents[tu] == nil {
			doc.Agents[tu] = am
		} else {
			doc.Orphans[a] = am
		}
	}
	return nil
}

func NewCmdImport(f *cmdutil.Factory) *cobra.Command {
	var (
		cwd          string
		fork, asJSON bool
		dryRun       bool
		keys         cmdutil.SealFlags
	)
	c := &cobra.Command{
		Use:   "import BUNDLE [--cwd PATH] [--fork]",
		Short: "Import a session bundle (scribe export --format bundle) under the project of a cwd",
		Long: `import checks every file of the bundle against its manifest's sha256 (a tampered
bundle is refused whole) and places the session under the project folder of
--cwd (default: the bundle's original cwd), where Claude Code and the SDK find
it; when the cwd differs it records the move with a relocated line, as Claude
Code does. Nothing beyond the sizes the manifest declares is ever written, and
--dry-run writes nothing at all. Staging folders left by imports that died
(scribe/import-*) are removed first. It never overwrites: the same session already present is reported,
a different session of the same id is refused unless --fork, which imports the
conversation as a new session (fresh uuids, forkedFrom, "<title> (fork)").`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, _, err := f.LocalLayout(cmd)
			if err != nil {
				return err
			}
			if cwd != "" {
				if cwd, err = filepath.Abs(cwd); err != nil {
					return err
				}
			}
			fh, err := os.Open(args[0])
			if err != nil {
				return fmt.Errorf("import: %w", err)
			}
			defer fh.Close()
			f, _, err := cmdutil.OpenMaybeSealed(cmd, fh, &keys)
			if err != nil {
				return fmt.Errorf("import: %w", err)
			}
			if dryRun {
				m, err := l.VerifyBundle(f)
				if err != nil {
					return err
				}
				return printImport(cmd, asJSON, map[string]any{"dryRun": true, "manifest": m},
					fmt.Sprintf("bundle of %s verified: %d files, from %s", m.SessionID, len(m.Files), m.Cwd))
			}
			// A bundle whose manifest comes last (an older export) is read
			// twice: once to verify it, writing nothing, once to stage it.
			reopen := func() (io.ReadCloser, error) {
				fh, err := os.Open(args[0])
				if err != nil {
					return nil, err
				}
				r, _, err := cmdutil.OpenMaybeSealed(cmd, fh, &keys)
				if err != nil {
					fh.Close()
					return nil, err
				}
				return struct {
					io.Reader
					io.Closer
				}{r, fh}, nil
			}
			res, err := l.ImportBundle(cmd.Context(), f, jsonl.ImportOptions{Cwd: cwd, Fork: fork, Reopen: reopen})
			if err != nil {
				return err
			}
			msg := fmt.Sprintf("imported %s into %s (%d files)", res.SessionID, res.Project, res.Files)
			switch {
			case res.AlreadyPresent:
				msg = fmt.Sprintf("%s is already here, in %s: nothing imported", res.SessionID, res.Project)
			case res.ForkedFrom != "":
				msg = fmt.Sprintf("imported %s as the fork %s into %s", res.ForkedFrom, res.SessionID, res.Project)
			}
			if res.MarkersRemoved > 0 {
				msg += fmt.Sprintf("; removed %d deletion marker(s) its deletion had left", res.MarkersRemoved)
			}
			if res.StaleStagingsRemoved > 0 {
				msg += fmt.Sprintf("; removed %d staging folder(s) left by imports that died", res.StaleStagingsRemoved)
			}
			return printImport(cmd, asJSON, res, msg)
		},
	}
	fl := c.Flags()
	fl.StringVar(&cwd, "cwd", "", "place the session under the project of this path (default: its original cwd)")
	fl.BoolVar(&fork, "fork", false, "import the conversation as a new session")
	fl.BoolVar(&dryRun, "dry-run", false, "verify the bundle, import nothing")
	fl.BoolVar(&asJSON, "json", false, "print the result as JSON")
	keys.Add(c, false)
	return c
}

func printImport(cmd *cobra.Command, asJSON bool, v any, msg string) error {
	if asJSON {
		return cmdutil.WriteJSON(cmd.OutOrStdout(), v)
	}
	fmt.Fprintln(cmd.OutOrStdout(), msg)
	return nil
}

// WriteMarkdown writes session id of st as export --format md does (the
// web viewer's Markdown download).
func WriteMarkdown(ctx context.Context, st sessions.Store, id string, w io.Writer) error {
	doc, err := exportDoc(ctx, st, id)
	if err != nil {
		return err
	}
	render.Render(doc, render.Markdown{W: w})
	return nil
}

// BundleWriter is the writer of st's session bundles as export --format
// bundle writes them (unencrypted), nil for a store read through no files.
func BundleWriter(st sessions.Store) func(ctx context.Context, st sessions.Store, id string, w io.Writer) error {
	if !cmdutil.HasFiles(st) {
		return nil
	}
	return func(ctx context.Context, st sessions.Store, id string, w io.Writer) error {
		l, err := cmdutil.SessionFiles(ctx, st, id, "export a bundle")
		if err != nil {
			return err
		}
		_, err = l.ExportBundle(ctx, id, w)
		return err
	}
}
