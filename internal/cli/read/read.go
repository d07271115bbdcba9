// Package read holds the commands that read sessions: ls (the listing of a
// store, or of the team server with --remote), show, info, export and
// import, and the shell completion of session ids.
package read

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cloud"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/cli/listing"
	"github.com/e0dc0000/scribe/internal/render"
	"github.com/e0dc0000/scribe/jsonv"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/events"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/transcript"
)

// writeMessages prints msgs as writeJSON does, byte for byte, a message at
// a time (SessionMessage.AppendJSON, jsonv.AppendIndent): a long
// conversation is never held again in memory as JSON, and encoding/json's
// compaction and indentation, which dominated printing it, are skipped.
func writeMessages(w io.Writer, msgs []jsonl.SessionMessage) error {
	if len(msgs) == 0 {
		return cmdutil.WriteJSON(w, []jsonl.SessionMessage{})
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	var flat, ind []byte
	bw.WriteString("[\n  ")
	for i := range msgs {
		var err error
		if flat, err = msgs[i].AppendJSON(flat[:0]); err != nil {
			return err
		}
		if i > 0 {
			bw.WriteString(",\n  ")
		}
		ind = jsonv.AppendIndent(ind[:0], flat, "  ", "  ")
		bw.Write(ind)
	}
	bw.WriteString("\n]\n")
	return bw.Flush()
}

func NewCmdLs(f *cmdutil.Factory) *cobra.Command {
	var (
		all, asJSON, noIndex bool
		project, status      string
		since, until, color  string
		limit                int
		offset               int
		remote               bool
		from                 string
	)
	c := &cobra.Command{
		Use:   "ls",
		Short: "List sessions as Claude Code's picker and the SDK's listSessions see them",
		Long: `ls lists the sessions of the current directory's project (--project PATH for
another, --all for every project), newest first. --json prints exactly what the
Claude Agent SDK's listSessions returns.

The listing goes through the sessions index (see scribe index), which is
checked against every file and gives the same answer as reading the files;
--no-index reads them all. STATUS is active while a live writer holds the
session, interrupted when its last turn did not finish, else completed;
--status keeps the sessions with that status. STATE is running or
requires_action only while the session is live: a live writer holds it, or
its last timestamp is less than 15 minutes old; otherwise idle (a session
left months ago with a turn cut short is idle, and interrupted).

The table fits $COLUMNS, else the terminal's width (off a terminal, with
neither, lines are not cut and ids are whole); ids are then the shortest
unique prefix (8 characters or more), which every command accepts. PROJECT
is the session's working directory. Before the title: [fork] for a fork,
[archived] for an archived session, #TAG for a tagged one. --color
auto|always|never: colour on a terminal only (auto), never when NO_COLOR is
set.

--since and --until keep the sessions whose MODIFIED time is at or after,
or before, a date (2026-01-02, local time; for --until the whole day
counts), a time (2026-01-02T15:04, RFC 3339) or a duration ago (7d, 2w,
12h). They apply before --limit and --offset, and to --json too.

--from STORE lists the sessions of another store instead (a postgres or s3
sink block, type/name), exactly as ls lists local files.

--remote lists the team server's sessions (every project, unless --project)
as ls lists local ones: the same titles, columns, filters and --json, the last
activity from each session's own timestamps; through the cloud loader of
--from, else the first one of resume.loaders. It fetches each session's main
transcript.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			want := jsonl.SessionStatus(status)
			if status != "" && !want.Valid() {
				return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--status %q: want active, interrupted or completed", status)}
			}
			now := time.Now()
			keep, err := listing.ModifiedWithin(since, until, now)
			if err != nil {
				return err
			}
			colored, err := cmdutil.UseColor(color, cmdutil.StdoutFile(cmd.OutOrStdout()))
			if err != nil {
				return err
			}
			opt := jsonl.ListOptions{Limit: limit, Offset: offset, IncludeWorktrees: true, IncludeProgrammatic: true, NoIndex: noIndex}
			if remote || isCloudBlock(from) {
				cfg, err := f.LoadConfig(cmd)
				if err != nil {
					return &cmdutil.ExitError{Code: 2, Err: err}
				}
				// Every project, unless --project names one.
				opt.Dir = project
				return cloud.RunRemoteLs(f, cmd, cfg, from, opt, want, keep, asJSON, listing.Table{Colored: colored, Now: now})
			}
			switch {
			case all && project != "":
				return &cmdutil.ExitError{Code: 2, Err: errors.New("--all and --project exclude each other")}
			case all:
			case project != "":
				opt.Dir = project
			default:
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				opt.Dir = wd
			}
			st, _, done, err := f.OpenStoreOf(cmd)
			if err != nil {
				return err
			}
			defer done(&err)
			infos, recs, err := listing.Sessions(cmd.Context(), st, opt, want, keep, asJSON)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return listing.WriteInfosJSON(out, infos)
			}
			if len(infos) == 0 {
				if opt.Dir != "" {
					fmt.Fprintf(out, "no sessions for %s in %s (--all lists every project)\n", opt.Dir, st.Where())
				} else {
					fmt.Fprintf(out, "no sessions in %s\n", st.Where())
				}
				return nil
			}
			listing.PrintTable(out, recs, cmdutil.OutputWidth(cmdutil.StdoutFile(out)), colored, now)
			return nil
		},
	}
	fl := c.Flags()
	fl.BoolVar(&noIndex, "no-index", false, "read every transcript instead of using the sessions index")
	fl.StringVar(&status, "status", "", "only sessions with this status: active, interrupted or completed")
	fl.StringVar(&since, "since", "", "only sessions modified at or after this date, time or duration ago (2026-01-02, 7d)")
	fl.StringVar(&until, "until", "", "only sessions modified before this date (the whole day), time or duration ago")
	fl.StringVar(&color, "color", "auto", "colour: auto (on a terminal), always or never; NO_COLOR turns it off")
	fl.BoolVar(&all, "all", false, "list every project")
	fl.StringVar(&project, "project", "", "list the project of this path")
	fl.IntVar(&limit, "limit", 0, "at most this many sessions")
	fl.IntVar(&offset, "offset", 0, "skip this many sessions first")
	fl.BoolVar(&asJSON, "json", false, "print the SDK's listSessions array")
	fl.BoolVar(&remote, "remote", false, "list the team server's sessions instead")
	fl.StringVar(&from, "from", "", `list this store (a jsonl, postgres or s3 block, type/name) instead of the local files; with --remote: the server's block, a "cloud" loader`)
	return c
}

func NewCmdShow(f *cmdutil.Factory) *cobra.Command {
	var (
		asJSON, system, subagents bool
		format, from              string
	)
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Show a session's conversation as Claude Code rebuilds it (a unique id prefix is enough)",
		Long: `show prints the conversation of a session: the chain from its leaf back to its
root, after compaction, as Claude Code and the SDK's getSessionMessages rebuild
it. --json prints exactly what getSessionMessages returns. --system adds the
system messages and, after the conversation, scribe's lifecycle records and
checkpoints in the order they were recorded (not with --json). --format md
prints the Markdown document export --format md writes (a title, the session's
facts, each tool call folded with its result), the subagents' conversations in
it only with --subagents. Damage found on the way (malformed lines, a
parentUuid cycle, a missing parent) is reported on stderr.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			if format != "text" && format != "md" {
				return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--format %q: want text or md", format)}
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
			if format == "md" && !asJSON {
				return showMarkdown(cmd, st, id, system, subagents)
			}
			msgs, rep, err := st.Messages(cmd.Context(), id, jsonl.MessagesOptions{IncludeSystem: system})
			if err != nil {
				return err
			}
			reportDamage(cmd.ErrOrStderr(), "", rep)
			if rep.Path == "" {
				noTranscript(cmd.ErrOrStderr(), id)
			}
			out := cmd.OutOrStdout()
			var agents []string
			if subagents {
				if agents, err = st.Subagents(cmd.Context(), id); err != nil {
					return err
				}
			}
			if asJSON {
				if msgs == nil {
					msgs = []jsonl.SessionMessage{}
				}
				if !subagents {
					return writeMessages(out, msgs)
				}
				doc := map[string]any{"messages": msgs, "subagents": map[string]any{}}
				for _, a := range agents {
					am, arep, err := st.SubagentMessages(cmd.Context(), id, a, jsonl.MessagesOptions{})
					if err != nil {
						return err
					}
					reportDamage(cmd.ErrOrStderr(), "agent "+a, arep)
					doc["subagents"].(map[string]any)[a] = am
				}
				return cmdutil.WriteJSON(out, doc)
			}
			printConversation(out, msgs)
			if system {
				// Scribe's lifecycle records and checkpoints, after the
				// conversation (not in --json: that is the SDK's answer).
				if err := printLifecycle(cmd.Context(), out, st, id, format); err != nil {
					return err
				}
			}
			for _, a := range agents {
				am, arep, err := st.SubagentMessages(cmd.Context(), id, a, jsonl.MessagesOptions{})
				if err != nil {
					return err
				}
				reportDamage(cmd.ErrOrStderr(), "agent "+a, arep)
				fmt.Fprintf(out, "\n════ subagent %s ════\n", a)
				printConversation(out, am)
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.BoolVar(&asJSON, "json", false, "print exactly what the SDK's getSessionMessages returns")
	fl.BoolVar(&system, "system", false, "include system messages")
	fl.BoolVar(&subagents, "subagents", false, "also show each subagent's conversation")
	fl.StringVar(&format, "format", "text", "text, or md (export's Markdown document)")
	fl.StringVar(&from, "from", "", "read the session from this store (a jsonl, postgres or s3 block, type/name)")
	return c
}

// reportDamage tells what the reader skipped or found broken.
func reportDamage(w io.Writer, what string, rep *jsonl.MessagesReport) {
	if rep == nil {
		return
	}
	prefix := "scribe: "
	if what != "" {
		prefix += what + ": "
	}
	if n := len(rep.Malformed); n > 0 {
		var lines []string
		for i, m := range rep.Malformed {
			if i == 10 {
				lines = append(lines, "...")
				break
			}
			lines = append(lines, fmt.Sprint(m.Line))
		}
		fmt.Fprintf(w, "%s%d malformed lines skipped (lines %s) in %s\n", prefix, n, strings.Join(lines, ", "), rep.Path)
	}
	if rep.Torn {
		fmt.Fprintf(w, "%sthe last line of %s is torn (no newline); it was skipped\n", prefix, rep.Path)
	}
	if rep.Cycle != nil {
		fmt.Fprintf(w, "%sparentUuid cycle at %s (parent %s): the conversation stops there\n", prefix, rep.Cycle.UUID, rep.Cycle.Parent)
	}
	for _, g := range rep.Gaps {
		fmt.Fprintf(w, "%sbroken chain: %s names parent %s, which is not in the file\n", prefix, g.UUID, g.Parent)
	}
}

// printConversation prints messages as show's text.
func printConversation(w io.Writer, msgs []jsonl.SessionMessage) {
	for _, m := range msgs {
		var ts string
		_ = json.Unmarshal(m.Timestamp, &ts)
		role := m.Type
		if m.IsMeta {
			role += " (meta)"
		}
		if m.IsCompactSummary {
			role += " (compact summary)"
		}
		fmt.Fprintf(w, "── %s · %s\n", role, ts)
		for _, part := range render.MessageParts(m.Message) {
			fmt.Fprintf(w, "%s\n", cmdutil.Indent(part.Text))
		}
		fmt.Fprintln(w)
	}
}

// showMarkdown is show --format md: the document export --format md
// prints (a title, the session's facts, each tool call folded with its
// result), with the system messages under --system and the subagents'
// conversations, each under the call that started it, under --subagents;
// --system adds scribe's lifecycle records after it.
func showMarkdown(cmd *cobra.Command, st sessions.Store, id string, system, subagents bool) error {
	errw := cmd.ErrOrStderr()
	doc, err := sessionDoc(cmd.Context(), st, id, docOptions{system: system, noAgents: !subagents,
		damage: func(agent string, rep *jsonl.MessagesReport) {
			if agent != "" {
				reportDamage(errw, "agent "+agent, rep)
				return
			}
			reportDamage(errw, "", rep)
			if rep.Path == "" {
				noTranscript(errw, id)
			}
		}})
	if err != nil {
		return err
	}
	out := bufio.NewWriter(cmd.OutOrStdout())
	render.Render(doc, render.Markdown{W: out})
	if err := out.Flush(); err != nil {
		return err
	}
	if system {
		return printLifecycle(cmd.Context(), cmd.OutOrStdout(), st, id, "md")
	}
	return nil
}

// noTranscript says why a session shows no messages: the SDK answers a
// session without a transcript to read with none.
func noTranscript(w io.Writer, id string) {
	fmt.Fprintf(w, "scribe: session %s has no transcript to read (an empty file, or only subagent files): no messages\n", id)
}

func NewCmdInfo(f *cmdutil.Factory) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "info ID",
		Short: "One session's listing fields plus counts (entries, skipped lines, subagents, compactions, bytes)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) (err error) {
			st, _, done, err := f.OpenStoreOf(cmd)
			if err != nil {
				return err
			}
			defer done(&err)
			id, err := st.Resolve(cmd.Context(), args[0])
			if err != nil {
				return cmdutil.ResolveErr(err)
			}
			info, err := sessionInfo(cmd.Context(), st, id)
			if err != nil {
				return err
			}
			if asJSON {
				return cmdutil.WriteJSON(cmd.OutOrStdout(), info)
			}
			printInfo(cmd.OutOrStdout(), info)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return c
}

// infoReport is `scribe info`: the listing fields and what the file holds.
type infoReport struct {
	*jsonl.SessionInfo
	Path          string   `json:"path"`
	Entries       int      `json:"entries"`
	Lines         int      `json:"lines"`
	SkippedLines  []int    `json:"skippedLines"`
	TornTail      bool     `json:"tornTail"`
	Subagents     []string `json:"subagents"`
	Compactions   int      `json:"compactions"`
	Bytes         int64    `json:"bytes"`
	SubagentBytes int64    `json:"subagentBytes"`
	Messages      int      `json:"messages"`
	Interrupted   string   `json:"interrupted"`
	State         string   `json:"state"`
	Status        string   `json:"status,omitempty"`
	// lastActivity is the record's UpdatedAt: the text's state is the live
	// one (liveState), the JSON's what the tail says.
	lastActivity time.Time
}

func sessionInfo(ctx context.Context, st sessions.Store, id string) (*infoReport, error) {
	si, err := st.Info(ctx, id)
	if err != nil {
		return nil, err
	}
	msgs, rep, err := st.Messages(ctx, id, jsonl.MessagesOptions{})
	if err != nil {
		return nil, err
	}
	if rep.Path == "" {
		// No transcript to describe: only an empty file, or only subagent
		// files (which the SDK's readers answer as an empty session).
		return nil, fmt.Errorf("%w: session %s", jsonl.ErrNotFound, id)
	}
	r := &infoReport{SessionInfo: si, Path: rep.Path, Messages: len(msgs), SkippedLines: []int{}}
	if si == nil {
		r.SessionInfo = &jsonl.SessionInfo{SessionID: id}
	}
	tr, err := st.Transcript(ctx, id)
	if err != nil {
		return nil, err
	}
	entries, full := tr.Entries, tr.Report
	r.Entries, r.Lines, r.Compactions, r.TornTail = len(entries), full.Lines, full.Compactions, full.Torn
	for _, m := range full.Malformed {
		r.SkippedLines = append(r.SkippedLines, m.Line)
	}
	r.Bytes, r.SubagentBytes = tr.Bytes, tr.AgentBytes
	if r.Subagents, err = st.Subagents(ctx, id); err != nil {
		return nil, err
	}
	if r.Subagents == nil {
		r.Subagents = []string{}
	}
	// How the conversation ends, judged on the whole rebuilt chain exactly
	// as resume judges it (ls judges from the tail window's rows).
	ch := transcript.BuildChain(entries, transcript.ChainOptions{})
	conv := append(ch.Entries, ch.Trailing...)
	rec := transcript.ClassifyAndRepair(conv, core.RecoveryOptions{NewUUID: func() string { return "00000000-0000-4000-8000-000000000000" }})
	r.Interrupted, r.State = "no", string(transcript.StateFromTail(conv))
	if rec.Class != core.InterruptionNone {
		r.Interrupted = string(rec.Class)
	}
	if si != nil {
		if recs, err := st.Records(ctx, jsonl.ListOptions{IncludeProgrammatic: true}); err == nil {
			for _, rec := range recs {
				if rec.ID == id {
					r.Status, r.lastActivity = string(rec.Status), rec.UpdatedAt
					break
				}
			}
		}
	}
	return r, nil
}

func printInfo(w io.Writer, r *infoReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	row("session", r.SessionID)
	row("title", r.Summary)
	if r.CustomTitle != "" {
		row("custom title", r.CustomTitle)
	}
	row("first prompt", r.FirstPrompt)
	row("branch", r.GitBranch)
	row("tag", r.Tag)
	row("cwd", r.Cwd)
	if r.CreatedAt != nil {
		row("created", time.UnixMilli(*r.CreatedAt).Local().Format(time.RFC3339))
	}
	if r.LastModified != 0 {
		row("modified", time.UnixMilli(r.LastModified).Local().Format(time.RFC3339))
	}
	row("file", r.Path)
	row("bytes", fmt.Sprintf("%d (%s), subagents %s", r.Bytes, cmdutil.HumanBytes(r.Bytes), cmdutil.HumanBytes(r.SubagentBytes)))
	row("lines", r.Lines)
	row("entries", r.Entries)
	row("messages", r.Messages)
	row("skipped lines", fmt.Sprintf("%d %v", len(r.SkippedLines), r.SkippedLines))
	row("torn tail", r.TornTail)
	row("compactions", r.Compactions)
	row("subagents", fmt.Sprintf("%d %v", len(r.Subagents), r.Subagents))
	row("status", r.Status)
	row("interrupted", r.Interrupted)
	state := r.State
	if !r.lastActivity.IsZero() {
		state = string(listing.LiveState(core.State(r.State), jsonl.SessionStatus(r.Status), r.lastActivity, time.Now()))
	}
	row("state", state)
	tw.Flush()
}

// isCloudBlock reports whether name is a cloud loader block (the team
// server), which ls reads as ls --remote does.
func isCloudBlock(name string) bool {
	id, err := core.ParseID(name)
	return name != "" && err == nil && id.Type == events.LoaderType
}

// printLifecycle shows a session's lifecycle records and checkpoints (its
// sidecar), in the order they were recorded, after the conversation: for
// `scribe show --system`. Nothing is printed for a session without any.
func printLifecycle(ctx context.Context, w io.Writer, st sessions.Store, id, format string) error {
	entries, err := st.Lifecycle(ctx, id)
	if err != nil || len(entries) == 0 {
		return err
	}
	if format == "md" {
		fmt.Fprintf(w, "## Scribe lifecycle\n\n")
	} else {
		noun := "records"
		if len(entries) == 1 {
			noun = "record"
		}
		fmt.Fprintf(w, "════ scribe lifecycle (%d %s) ════\n", len(entries), noun)
	}
	for i := range entries {
		e := &entries[i]
		var line string
		switch e.Type {
		case core.TypeLifecycle:
			lc, err := core.ParseLifecycle(e)
			if err != nil {
				line = "(unreadable lifecycle record: " + err.Error() + ")"
			} else {
				line = lc.Describe()
			}
		case core.TypeCheckpoint:
			cp, err := core.ParseCheckpoint(e)
			if err != nil {
				line = "(unreadable checkpoint: " + err.Error() + ")"
				break
			}
			line = fmt.Sprintf("checkpoint %s %q after %s", cp.ID, cp.Label, cp.MessageUUID)
			if cp.Commit != "" {
				line += " commit " + cp.Commit
			}
		default:
			line = "(" + e.Type + ")"
		}
		if format == "md" {
			fmt.Fprintf(w, "- *%s* %s\n", e.Timestamp, line)
		} else {
			fmt.Fprintf(w, "%s  %s\n", e.Timestamp, line)
		}
	}
	if format == "md" {
		fmt.Fprintln(w)
	}
	return nil
}
