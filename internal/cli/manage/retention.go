package manage

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// gc, du and doctor: disk use and retention.

// parseSize reads a byte count with an optional K, M, G or T suffix
// (powers of 1024; a trailing B or iB is allowed).
func parseSize(flag, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I")
	mult := int64(1)
	if n := len(t); n > 0 {
		if i := strings.IndexByte("KMGT", t[n-1]); i >= 0 {
			mult, t = int64(1)<<(10*(i+1)), t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 {
		return 0, &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("%s %q: want a size such as 500M or 2G", flag, s)}
	}
	return int64(v * float64(mult)), nil
}

func NewCmdGC(f *cmdutil.Factory) *cobra.Command {
	var (
		olderThan, maxSize, project string
		dryRun, yes, asJSON         bool
	)
	c := &cobra.Command{
		Use:   "gc --older-than D | --max-size N [--project PATH] [--dry-run]",
		Short: "Move old sessions to the trash, by the last activity recorded inside each log",
		Long: `gc is retention you opt into. A session's age is the newest timestamp inside its
transcript, never the file's mtime. --older-than D collects sessions quiet for
longer than D (30d, 2w, 36h); --max-size N collects sessions oldest activity
first until the sessions in scope take at most N bytes (500M, 2G). --project
limits it to one project. A session a live writer holds, or with activity in
the last hour, is always kept. Everything collected goes to the trash
(scribe trash ls / restore); run --dry-run first to see the plan.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, _, err := f.LocalLayout(cmd)
			if err != nil {
				return err
			}
			opt := jsonl.GCOptions{DryRun: true, Now: time.Now()}
			if opt.OlderThan, err = cmdutil.ParseAge("--older-than", olderThan); err != nil {
				return err
			}
			if opt.MaxSize, err = parseSize("--max-size", maxSize); err != nil {
				return err
			}
			if opt.OlderThan == 0 && opt.MaxSize == 0 {
				return &cmdutil.ExitError{Code: 2, Err: errors.New("give --older-than or --max-size (gc collects nothing by default)")}
			}
			if opt.Project, err = cmdutil.ProjectFolder(project); err != nil {
				return err
			}
			if !dryRun {
				plan, err := l.GC(cmd.Context(), opt)
				if err != nil {
					return err
				}
				if err := f.Confirm(cmd, yes, fmt.Sprintf("move %d session(s), %s, to the trash?", plan.Collected, cmdutil.HumanBytes(plan.CollectedBytes))); err != nil {
					return err
				}
				opt.DryRun = false
				opt.Progress = f.IOStreams.ProgressCounter(cmd.ErrOrStderr(), "gc")
			}
			rep, err := l.GC(cmd.Context(), opt)
			if err != nil {
				return err
			}
			var gone []string
			for _, s := range rep.Sessions {
				if s.TrashID != "" {
					gone = append(gone, s.SessionID)
				}
			}
			f.ForgetSearch(cmd, l, gone)
			if asJSON {
				if rep.Sessions == nil {
					rep.Sessions = []jsonl.GCSession{}
				}
				return cmdutil.WriteJSON(cmd.OutOrStdout(), rep)
			}
			printGC(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&olderThan, "older-than", "", "collect sessions whose last activity is older than this (30d, 2w, 36h)")
	fl.StringVar(&maxSize, "max-size", "", "collect the oldest sessions until the rest take at most this (500M, 2G)")
	fl.StringVar(&project, "project", "", "only the sessions of the project of this path")
	fl.BoolVar(&dryRun, "dry-run", false, "print the plan, move nothing")
	fl.BoolVar(&yes, "yes", false, "do not ask on a terminal")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return c
}

func printGC(out io.Writer, rep jsonl.GCReport) {
	tw := cmdutil.NewTable(out)
	fmt.Fprintln(tw, "ACTION\tSESSION\tLAST ACTIVITY\tSIZE\tPROJECT\tWHY")
	for _, s := range rep.Sessions {
		act := s.Action
		if rep.DryRun && act == "collect" {
			act = "would collect"
		}
		last := "-"
		if s.LastActivity != nil {
			last = s.LastActivity.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", act, s.SessionID, last, cmdutil.HumanBytes(s.Bytes), s.Project, s.Reason)
	}
	tw.Flush()
	verb := "collected"
	if rep.DryRun {
		verb = "would collect"
	}
	fmt.Fprintf(out, "%s %d session(s), %s; kept %d; %s -> %s", verb, rep.Collected, cmdutil.HumanBytes(rep.CollectedBytes), rep.Kept,
		cmdutil.HumanBytes(rep.BytesBefore), cmdutil.HumanBytes(rep.BytesAfter))
	if rep.QuotaMet != nil && !*rep.QuotaMet {
		fmt.Fprint(out, " (the quota cannot be met: the rest is recent, live or undated)")
	}
	fmt.Fprintln(out)
	if n := len(rep.StaleStagings); n > 0 {
		verb := "removed"
		if rep.DryRun {
			verb = "would remove"
		}
		var b int64
		for _, st := range rep.StaleStagings {
			b += st.Bytes
		}
		fmt.Fprintf(out, "%s %d staging folder(s) left by imports that died, %s\n", verb, n, cmdutil.HumanBytes(b))
	}
}

func NewCmdDu(f *cmdutil.Factory) *cobra.Command {
	var (
		by, project string
		asJSON      bool
	)
	c := &cobra.Command{
		Use:   "du [--by project|session] [--project PATH] [--json]",
		Short: "Bytes per project and per session, with what forks duplicate",
		Long: `du adds up each session's transcript, subagents, tool-result files and sidecars,
per project (--by project, the default) or per session, with archived sessions
and the trash counted apart, and the bytes forks duplicate: the lines of a fork
whose entries its source holds too (by uuid, or by forkedFrom).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if by != "project" && by != "session" {
				return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--by %q: want project or session", by)}
			}
			l, _, err := f.LocalLayout(cmd)
			if err != nil {
				return err
			}
			folder, err := cmdutil.ProjectFolder(project)
			if err != nil {
				return err
			}
			rep, err := l.DiskUsage(cmd.Context(), folder, f.IOStreams.ProgressCounter(cmd.ErrOrStderr(), "du"))
			if err != nil {
				return err
			}
			if asJSON {
				if rep.Projects == nil {
					rep.Projects, rep.Sessions = []jsonl.DUProject{}, []jsonl.DUSession{}
				}
				return cmdutil.WriteJSON(cmd.OutOrStdout(), rep)
			}
			printDu(cmd.OutOrStdout(), rep, by)
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&by, "by", "project", "one row per project or per session")
	fl.StringVar(&project, "project", "", "only the project of this path")
	fl.BoolVar(&asJSON, "json", false, "print every project and session as JSON")
	return c
}

func printDu(out io.Writer, rep jsonl.DUReport, by string) {
	tw := cmdutil.NewTable(out)
	h := cmdutil.HumanBytes
	if by == "session" {
		fmt.Fprintln(tw, "TOTAL\tTRANSCRIPT\tSUBAGENTS\tTOOL RESULTS\tSIDECARS\tFORK DUP\tSESSION\tPROJECT")
		for _, s := range rep.Sessions {
			id := s.SessionID
			if s.Archived {
				id += " (archived)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h(s.Total), h(s.Transcript), h(s.Subagents), h(s.ToolResults), h(s.Sidecars), h(s.ForkDuplicate), id, s.Project)
		}
	} else {
		fmt.Fprintln(tw, "TOTAL\tSESSIONS\tTRANSCRIPTS\tSUBAGENTS\tTOOL RESULTS\tSIDECARS\tARCHIVED\tFORK DUP\tPROJECT")
		for _, p := range rep.Projects {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h(p.Total), p.Sessions, h(p.Transcript), h(p.Subagents), h(p.ToolResults), h(p.Sidecars), h(p.Archived), h(p.ForkDuplicate), p.Project)
		}
	}
	tw.Flush()
	fmt.Fprintf(out, "total %s (archived %s, duplicated by forks %s); trash %s in %d item(s), not in the total\n",
		h(rep.Total), h(rep.Archived), h(rep.ForkDuplicate), h(rep.Trash), rep.TrashItems)
	if rep.StaleStagingFolders > 0 {
		fmt.Fprintf(out, "staging folders left by imports that died: %s in %d, not in the total (the next import or gc removes them)\n",
			h(rep.StaleStaging), rep.StaleStagingFolders)
	}
}

func NewCmdDoctor(f *cmdutil.Factory) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Report what Claude Code's own cleanupPeriodDays is about to delete",
		Long: `doctor reads cleanupPeriodDays from <config dir>/settings.json (30 days when
unset) and lists the sessions Claude Code's next start deletes for good: those
whose transcript file mtime is older than that, whatever their last activity
inside. Move them out of its way with scribe gc or by raising the setting.
For each it says which archive holds a copy (a jsonl sink block with a dir
of its own, such as the built-in jsonl/archive scribe watch mirrors into) and
warns about those no archive holds.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, cfg, err := f.LocalLayout(cmd)
			if err != nil {
				return err
			}
			archives := archiveLayouts(cfg, l)
			set, err := l.ReadCleanupSetting()
			if err != nil {
				return err
			}
			victims, err := l.CleanupForecast(set.Days, time.Now())
			if err != nil {
				return err
			}
			var bytes int64
			held := make([][]string, len(victims))
			var unarchived int
			for i, v := range victims {
				bytes += v.Bytes
				for _, a := range archives {
					if d, _ := a.layout.FindSession(v.SessionID, ""); d != "" {
						held[i] = append(held[i], a.id)
					}
				}
				if len(held[i]) == 0 {
					unarchived++
				}
			}
			if asJSON {
				type victim struct {
					jsonl.CleanupVictim
					ArchivedIn []string `json:"archivedIn"`
				}
				vs := make([]victim, len(victims))
				for i, v := range victims {
					vs[i] = victim{v, append([]string{}, held[i]...)}
				}
				ids := make([]string, len(archives))
				for i, a := range archives {
					ids[i] = a.id
				}
				return cmdutil.WriteJSON(cmd.OutOrStdout(), map[string]any{"cleanupPeriodDays": set, "wouldDelete": vs, "bytes": bytes,
					"archives": ids, "unarchived": unarchived})
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "cleanupPeriodDays = %d (%s)\n", set.Days, set.Source)
			if len(victims) == 0 {
				fmt.Fprintln(out, "Claude Code's retention sweep deletes nothing at its next start")
				return nil
			}
			fmt.Fprintf(out, "Claude Code's next start deletes %d session(s), %s, for good (keyed on file mtime):\n", len(victims), cmdutil.HumanBytes(bytes))
			tw := cmdutil.NewTable(out)
			fmt.Fprintln(tw, "SESSION\tMTIME\tLAST ACTIVITY\tSIZE\tPROJECT\tARCHIVED IN")
			for i, v := range victims {
				last := "-"
				if v.LastActivity != nil {
					last = v.LastActivity.UTC().Format(time.RFC3339)
				}
				in := "NOWHERE"
				if len(held[i]) > 0 {
					in = strings.Join(held[i], ",")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", v.SessionID, v.ModTime.Format(time.RFC3339), last, cmdutil.HumanBytes(v.Bytes), v.Project, in)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if unarchived > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "scribe: warning: %d of them are in no archive: run scribe watch --once (with no pipeline.sinks of your own it mirrors into the built-in jsonl/archive, $XDG_DATA_HOME/scribe/archive) or move them with scribe gc\n", unarchived)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return c
}

// archive is a jsonl store with a folder of its own.
type archive struct {
	id     string
	layout jsonl.Layout
}

// archiveLayouts lists the jsonl sink blocks whose dir is a folder other
// than the store l reads.
func archiveLayouts(cfg *config.Config, l jsonl.Layout) []archive {
	var out []archive
	for _, c := range cfg.Components {
		if c.Kind != core.KindSink || c.ID.Type != "jsonl" {
			continue
		}
		jc := jsonl.DefaultConfig()
		if c.Decode(jc) != nil || jc.Dir == "" {
			continue
		}
		dir, err := filepath.Abs(jc.Dir)
		if err != nil || dir == l.ConfigDir {
			continue
		}
		out = append(out, archive{id: c.ID.String(), layout: jsonl.Layout{ConfigDir: dir}})
	}
	return out
}
