package secrets

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/processors/redact"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/transcript"
)

// redactFile is what `scribe redact` did to one file.
type redactFile struct {
	Path    string           `json:"path"`
	Lines   int              `json:"lines_changed"`
	ByRule  map[string]int64 `json:"by_rule"`
	Trash   string           `json:"trash,omitempty"`
	Sealed  bool             `json:"sealed,omitempty"`
	Skipped string           `json:"skipped,omitempty"`
}

type redactSession struct {
	Session string       `json:"session"`
	Files   []redactFile `json:"files"`
	Error   string       `json:"error,omitempty"`
}

type redactReport struct {
	DryRun   bool             `json:"dry_run"`
	Rules    string           `json:"rules"`
	Trash    string           `json:"trash,omitempty"`
	Sealed   bool             `json:"trash_encrypted"`
	Secrets  int64            `json:"secrets"`
	ByRule   map[string]int64 `json:"by_rule"`
	Sessions []redactSession  `json:"sessions"`
	Index    string           `json:"index,omitempty"`
}

func NewCmdRedact(f *cmdutil.Factory) *cobra.Command {
	var all, dryRun, asJSON bool
	var lockWait time.Duration
	cmd := &cobra.Command{
		Use:   "redact ID... | --all",
		Short: "Replace the secrets in stored transcripts by markers, keeping the originals in the trash",
		Long: "Rewrites each session's transcript and subagent files in place, under the session's lock, by atomic\n" +
			"replace: every secret the redact processor's rules find becomes [REDACTED:rule:fingerprint]. The\n" +
			"original goes to <config dir>/scribe/trash/redact/<time>/ (encrypted with the block's trash key when\n" +
			"one is set), the session's sidecar gets a redaction record, and the sessions index is updated.",
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			l, red, rc, id, sessions, err := redactTargets(f, cmd, args, all)
			if err != nil {
				return err
			}
			rd := &redactor{l: l, red: red, dryRun: dryRun, lockWait: lockWait,
				stamp: time.Now().UTC().Format("20060102T150405.000Z")}
			rd.trash = filepath.Join(l.TrashDir(), "redact", rd.stamp)
			if !dryRun {
				sealer, err := seal.New(ctx, rc.Trash, os.Environ())
				if err != nil && !errors.Is(err, seal.ErrNoKey) {
					return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("processor %s: trash: %w", id, err)}
				}
				rd.sealer = sealer
			}
			rep := &redactReport{DryRun: dryRun, Rules: id.String(), ByRule: map[string]int64{}, Sealed: rd.sealer != nil, Sessions: []redactSession{}}
			var failed []error
			for _, s := range sessions {
				rs, err := rd.session(ctx, s)
				if err != nil {
					rs.Error = err.Error()
					failed = append(failed, fmt.Errorf("session %s: %w", s.ID, err))
				}
				for _, f := range rs.Files {
					for r, n := range f.ByRule {
						rep.ByRule[r] += n
						rep.Secrets += n
					}
					if f.Trash != "" {
						rep.Trash = rd.trash
					}
				}
				rep.Sessions = append(rep.Sessions, rs)
			}
			if !dryRun && rep.Secrets > 0 {
				// The files changed: the index notices each change on this
				// listing and saves what it re-read.
				_, st, err := l.ListIndexed(ctx, jsonl.ListOptions{IncludeProgrammatic: true, IncludeWorktrees: true})
				if err != nil {
					failed = append(failed, fmt.Errorf("update the sessions index: %w", err))
				} else {
					rep.Index = st.String()
				}
			}
			if asJSON {
				failed = append(failed, cmdutil.WriteJSON(cmd.OutOrStdout(), rep))
			} else {
				printRedactReport(cmd.OutOrStdout(), rep)
			}
			return errors.Join(failed...)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&all, "all", false, "redact every session")
	fl.BoolVar(&dryRun, "dry-run", false, "say what would change, change nothing")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fl.DurationVar(&lockWait, "lock-wait", 0, "wait this long for another writer of a session (default: fail at once)")
	fl.String("rules", "", `the redact processor block whose rules apply (its name: "default" for processor "redact" "default")`)
	return cmd
}

// redactor rewrites sessions.
type redactor struct {
	l        jsonl.Layout
	red      *redact.Redactor
	sealer   *seal.Sealer
	dryRun   bool
	lockWait time.Duration
	stamp    string
	trash    string
}

// session redacts one session's files under its lock and appends the
// audit record to its sidecar.
func (rd *redactor) session(ctx context.Context, s cmdutil.LocalSession) (rs redactSession, err error) {
	rs = redactSession{Session: s.ID, Files: []redactFile{}}
	// The store takes the session's lock in Seed, as any writer does. It
	// never appends to the transcript here (no re-append at close).
	st, err := jsonl.New(jsonl.Options{ConfigDir: rd.l.ConfigDir, LockWait: rd.lockWait, Fsync: jsonl.FsyncAlways, ReappendBytes: 1 << 50})
	if err != nil {
		return rs, err
	}
	if err := st.Start(ctx); err != nil {
		return rs, err
	}
	defer func() {
		if serr := st.Shutdown(context.WithoutCancel(ctx)); err == nil && serr != nil {
			err = serr
		}
	}()
	if _, err := st.Seed(ctx, core.SessionRef{SessionID: s.ID}); err != nil {
		return rs, err
	}
	files, _ := jsonl.TranscriptFiles(s.Dir, s.ID)
	total := map[string]int64{}
	var lines int64
	for _, f := range files {
		if f.Sidecar {
			continue
		}
		rf, err := rd.file(s, f.Path)
		rs.Files = append(rs.Files, rf)
		if err != nil {
			return rs, err
		}
		for r, n := range rf.ByRule {
			total[r] += n
		}
		lines += int64(rf.Lines)
	}
	if rd.dryRun || len(total) == 0 {
		return rs, nil
	}
	e, err := core.LifecycleEntry(core.LifecycleMeta{SessionID: s.ID}, core.Redaction{By: "scribe redact", Rules: total, Entries: lines})
	if err != nil {
		return rs, err
	}
	if err := st.Write(ctx, []core.Entry{e}); err != nil {
		return rs, fmt.Errorf("write the redaction record: %w", err)
	}
	return rs, st.Flush(ctx)
}

// file redacts one file: the new bytes replace it atomically and the old
// ones go to the trash.
func (rd *redactor) file(s cmdutil.LocalSession, path string) (redactFile, error) {
	rf := redactFile{Path: path, ByRule: map[string]int64{}}
	if rd.red.Allowed(path) {
		rf.Skipped = "allow_paths"
		return rf, nil
	}
	old, err := os.ReadFile(path)
	if err != nil {
		return rf, fmt.Errorf("read %s: %w", path, err)
	}
	var out bytes.Buffer
	out.Grow(len(old))
	err = transcript.EachLine(bytes.NewReader(old), func(line []byte, terminated bool) {
		red, fs := rd.red.Redact(line)
		if len(fs) > 0 {
			rf.Lines++
			for _, f := range fs {
				rf.ByRule[f.Rule]++
			}
		}
		out.Write(red)
		if terminated {
			out.WriteByte('\n')
		}
	})
	if err != nil {
		return rf, fmt.Errorf("read %s: %w", path, err)
	}
	if rf.Lines == 0 || rd.dryRun {
		return rf, nil
	}
	_, backup, err := rd.l.ReplaceTranscript(path, out.Bytes(), "redact-"+rd.stamp)
	if err != nil {
		return rf, fmt.Errorf("redact %s: %w", path, err)
	}
	rel, err := filepath.Rel(rd.l.ProjectsDir(), path)
	if err != nil {
		rel = filepath.Base(path)
	}
	dst := filepath.Join(jsonl.Layout{ConfigDir: rd.trash}.ProjectsDir(), rel) // the trash mirrors the store
	if err := rd.toTrash(backup, dst, old, &rf); err != nil {
		return rf, err
	}
	return rf, nil
}

// toTrash moves the backup ReplaceTranscript left beside the file into the
// trash: sealed when a key is configured (the backup is removed only once
// the sealed copy is durable), else renamed (0600).
func (rd *redactor) toTrash(backup, dst string, old []byte, rf *redactFile) error {
	if err := durable.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return fmt.Errorf("trash folder: %w", err)
	}
	if rd.sealer == nil {
		if err := os.Rename(backup, dst); err != nil {
			return fmt.Errorf("move the original to the trash: %w", err)
		}
		rf.Trash = dst
		return durable.SyncDir(filepath.Dir(dst))
	}
	sealed, err := rd.sealer.SealBytes(old)
	if err != nil {
		return fmt.Errorf("encrypt the original (left at %s): %w", backup, err)
	}
	dst += ".age"
	if err := durable.CreateFile(dst, sealed, 0o600); err != nil {
		return fmt.Errorf("write the encrypted original (left at %s): %w", backup, err)
	}
	if err := durable.SyncDir(filepath.Dir(dst)); err != nil {
		return err
	}
	if err := os.Remove(backup); err != nil {
		return fmt.Errorf("remove the plaintext backup %s: %w", backup, err)
	}
	rf.Trash, rf.Sealed = dst, true
	return durable.SyncDir(filepath.Dir(backup))
}

func printRedactReport(w io.Writer, rep *redactReport) {
	verb := "redacted"
	if rep.DryRun {
		verb = "would redact"
	}
	changed := 0
	for _, s := range rep.Sessions {
		n := int64(0)
		for _, f := range s.Files {
			for _, c := range f.ByRule {
				n += c
			}
			if f.Skipped != "" {
				fmt.Fprintf(w, "  %s: skipped (%s)\n", f.Path, f.Skipped)
			}
		}
		if n > 0 {
			changed++
			fmt.Fprintf(w, "%s  %d secrets\n", s.Session, n)
		}
		if s.Error != "" {
			fmt.Fprintf(w, "%s  error: %s\n", s.Session, s.Error)
		}
	}
	fmt.Fprintf(w, "%s %d secrets in %d of %d sessions (rules of %s)\n", verb, rep.Secrets, changed, len(rep.Sessions), rep.Rules)
	rules := make([]string, 0, len(rep.ByRule))
	for r := range rep.ByRule {
		rules = append(rules, r)
	}
	sort.Strings(rules)
	for _, r := range rules {
		fmt.Fprintf(w, "  %-28s %d\n", r, rep.ByRule[r])
	}
	if rep.Trash != "" {
		how := "unencrypted (0600); set the redact block's trash key to encrypt"
		if rep.Sealed {
			how = "encrypted with age"
		}
		fmt.Fprintf(w, "originals kept in %s, %s\n", rep.Trash, how)
	}
	if rep.Index != "" {
		fmt.Fprintf(w, "sessions index: %s\n", rep.Index)
	}
}
