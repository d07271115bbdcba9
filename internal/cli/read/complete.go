package read

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// Shell completion of session arguments: one helper, attached to every
// command that takes a session id (completionTargets), offering the ids of
// the sessions index with their titles as descriptions. The index answers
// from its file for unchanged transcripts, so completing stays fast with
// thousands of sessions.

// completionTargets are the commands whose positional arguments are
// session ids, by command path below the root; true when the command takes
// several.
var completionTargets = map[string]bool{
	"show": false, "info": false, "resume": false, "fork": false, "pull": false,
	"checkpoint": false, "checkpoints": false, "rename": false, "tag": false,
	"archive": false, "unarchive": false, "export": false,
	"push": true, "scan": true, "redact": true, "rm": true,
}

// addCompletions attaches the session-id completion to every command of
// completionTargets and the trash-id completion to trash restore.
func AddCompletions(f *cmdutil.Factory, root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(c.CommandPath(), root.Name()+" ")
		if many, ok := completionTargets[path]; ok {
			c.ValidArgsFunction = sessionCompleter(f, many)
		}
		if path == "trash restore" {
			c.ValidArgsFunction = trashCompleter(f)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completionTitle is a title fit for a completion description: one line,
// at most 60 characters.
func completionTitle(s string) string { return cmdutil.Clip(s, 60) }

// sessionCompleter completes the first positional argument (every one when
// many) with the ids of the indexed sessions that start with the prefix,
// each with its title; ids already on the line are left out.
func sessionCompleter(f *cmdutil.Factory, many bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 && !many {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		l, _, err := f.LocalLayout(cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		infos, _, err := l.ListIndexedWith(cmd.Context(), jsonl.ListOptions{IncludeProgrammatic: true, IncludeWorktrees: true},
			jsonl.IndexOptions{SkipLastEntryTail: true})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		given := map[string]bool{}
		for _, a := range args {
			given[strings.ToLower(a)] = true
		}
		prefix = strings.ToLower(prefix)
		var out []cobra.Completion
		for _, s := range infos {
			if strings.HasPrefix(s.SessionID, prefix) && !given[s.SessionID] {
				out = append(out, cobra.CompletionWithDesc(s.SessionID, completionTitle(s.Summary)))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// trashCompleter completes trash restore's argument with the trash ids,
// each described by its session's title and id.
func trashCompleter(f *cmdutil.Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return completeTrashIDs(f, cmd, args, prefix)
	}
}

func completeTrashIDs(f *cmdutil.Factory, cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	l, _, err := f.LocalLayout(cmd)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	items, _, err := l.ListTrash()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, it := range items {
		if strings.HasPrefix(it.ID, prefix) {
			desc := it.SessionID
			if it.Title != "" {
				desc = completionTitle(it.Title) + " (" + it.SessionID + ")"
			}
			out = append(out, cobra.CompletionWithDesc(it.ID, desc))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
