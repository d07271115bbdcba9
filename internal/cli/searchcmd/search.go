// Package searchcmd is scribe search (the full build's: it holds SQLite)
// and the search index's forgetting of sessions other commands moved.
package searchcmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/search"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

func NewCmdSearch(f *cmdutil.Factory) *cobra.Command {
	var (
		project, since, role string
		asJSON, forget       bool
		limit                int
	)
	c := &cobra.Command{
		Use: "search",
		Long: `search finds the messages that hold every word (or "quoted phrase") of QUERY,
best match first (BM25), with a snippet, the session id and the message uuid
(for scribe show or scribe fork --up-to). --role keeps prompts (user), answers
and thinking (assistant), or tool inputs and outputs (tool); --since keeps
messages from a date (2026-03-01, RFC 3339) or an age (7d, 12h) on; --project
keeps one project. A word or phrase given twice is searched once; past 64
distinct words and phrases (or 256 words inside them) the rest are dropped,
and search says so on stderr.

The index (<config dir>/scribe/index/search.db) is a cache: each search first
checks it against the transcripts, reads only what was appended, reindexes
what was rewritten, drops what was removed, and rebuilds it when it cannot be
trusted.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if forget {
				return forgetSessions(cmd, args)
			}
			switch role {
			case "", search.RoleUser, search.RoleAssistant, search.RoleTool:
			default:
				return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--role %q: want user, assistant or tool", role)}
			}
			q := search.Query{Text: strings.Join(args, " "), Role: role, Limit: limit}
			var err error
			if q.Since, err = cmdutil.ParseSince(since); err != nil {
				return err
			}
			l, _, err := f.LocalLayout(cmd)
			if err != nil {
				return err
			}
			if q.Project, err = cmdutil.ProjectFolder(project); err != nil {
				return err
			}
			x, err := search.Open(l)
			if err != nil {
				return err
			}
			defer x.Close()
			hits, st, err := x.SearchFresh(cmd.Context(), q, f.IOStreams.ProgressCounter(cmd.ErrOrStderr(), "indexing"))
			if x.Rebuilt != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "scribe: the search index was rebuilt (%s)\n", x.Rebuilt)
			}
			if st.New+st.Reindexed+st.Removed > 0 {
				merged := ""
				if st.Optimized {
					merged = ", merged into one segment"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "scribe: search index: %d new, %d appended, %d reindexed, %d removed files (%s read)%s\n",
					st.New, st.Appended, st.Reindexed, st.Removed, cmdutil.HumanBytes(st.Bytes), merged)
			}
			if _, dropped := search.Terms(q.Text); dropped > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "scribe: the query holds more than %d distinct words and phrases (or %d words in them): %d dropped, the first ones searched\n",
					search.MaxTerms, search.MaxTokens, dropped)
			}
			if errors.Is(err, search.ErrBadQuery) {
				return &cmdutil.ExitError{Code: 2, Err: err}
			}
			if err != nil {
				return err
			}
			if asJSON {
				if hits == nil {
					hits = []search.Hit{}
				}
				return cmdutil.WriteJSON(cmd.OutOrStdout(), hits)
			}
			out := cmd.OutOrStdout()
			if len(hits) == 0 {
				fmt.Fprintln(out, "no matches")
				return nil
			}
			for _, h := range hits {
				where := h.SessionID
				if h.AgentID != "" {
					where += " agent " + h.AgentID
				}
				fmt.Fprintf(out, "%s  %s  %s  %s\n  %s\n", where, h.UUID, h.Role, h.Timestamp, strings.ReplaceAll(h.Snippet, "\n", " "))
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&project, "project", "", "only the sessions of the project of this path")
	fl.StringVar(&since, "since", "", "only messages from this date (2026-03-01) or age (7d, 12h) on")
	fl.StringVar(&role, "role", "", "only user, assistant or tool text")
	fl.BoolVar(&asJSON, "json", false, "print the hits as JSON")
	fl.IntVar(&limit, "limit", 20, "at most this many hits")
	fl.BoolVar(&forget, "forget", false, "drop the sessions given as arguments from the index of --config-dir (the light build's forgetSearch)")
	_ = fl.MarkHidden("forget")
	return c
}

// forgetSessions is search --forget: the light build, which has no SQLite,
// asks for it when rm, gc or relocate moved sessions.
func forgetSessions(cmd *cobra.Command, ids []string) error {
	dir, _ := cmd.Flags().GetString("config-dir")
	if dir == "" {
		return &cmdutil.ExitError{Code: 2, Err: errors.New("search --forget: --config-dir is required")}
	}
	_, err := search.Forget(jsonl.Layout{ConfigDir: dir}, ids...)
	return err
}

// DropFromSearch drops sessions from the search index (the full build's
// Factory.DropFromSearch).
func DropFromSearch(l jsonl.Layout, ids []string) error {
	_, err := search.Forget(l, ids...)
	return err
}
