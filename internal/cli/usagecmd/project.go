package usagecmd

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/stores"
	"github.com/e0dc0000/scribe/usage"
)

// projectsShown is how many projects the error of a --project that
// matches none names.
const projectsShown = 5

// projectNames are the names a --project value can mean: itself as a
// project folder's name, and the folder Claude Code names for it as a
// path (~ expanded, made absolute).
func projectNames(project string) (map[string]bool, error) {
	names := map[string]bool{project: true}
	p, err := config.ExpandHome(project)
	if err != nil {
		return nil, &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--project: %w", err)}
	}
	if abs, err := filepath.Abs(p); err == nil {
		names[claudedir.SanitizePath(abs)] = true
	}
	return names, nil
}

// SessionProjects maps each session of a store to its project folder's
// name: the folder that holds it, else the one Claude Code names for its
// working directory.
func SessionProjects(ctx context.Context, st sessions.Store) (map[string]string, error) {
	out := map[string]string{}
	if local, ok := st.(*stores.Local); ok {
		stored, err := local.Layout().StoredSessions()
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		for _, s := range stored {
			out[s.ID] = filepath.Base(s.ProjectDir)
		}
		return out, nil
	}
	infos, err := st.List(ctx, sessions.ListOptions{IncludeProgrammatic: true, IncludeWorktrees: true, SkipLastEntryTail: true})
	if err != nil {
		return nil, err
	}
	for _, in := range infos {
		switch {
		case in.ProjectDir != "":
			out[in.SessionID] = filepath.Base(in.ProjectDir)
		case in.Cwd != "":
			out[in.SessionID] = claudedir.SanitizePath(in.Cwd)
		}
	}
	return out, nil
}

// onlyProject keeps the rows of the sessions of project (a folder's name
// or a path); a project no session is in is a usage error naming a few
// of those there are.
func onlyProject(ctx context.Context, st sessions.Store, project string, rows []*usage.Row) ([]*usage.Row, error) {
	names, err := projectNames(project)
	if err != nil {
		return nil, err
	}
	of, err := SessionProjects(ctx, st)
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	all := map[string]bool{}
	for id, name := range of {
		all[name] = true
		if names[name] {
			keep[id] = true
		}
	}
	if len(keep) == 0 {
		return nil, &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--project %q: no session of the store is in it; %s", project, someProjects(all))}
	}
	out := make([]*usage.Row, 0, len(rows))
	for _, r := range rows {
		if keep[r.Session] {
			out = append(out, r)
		}
	}
	return out, nil
}

// someProjects names the first few projects of all, in name order.
func someProjects(all map[string]bool) string {
	if len(all) == 0 {
		return "the store has no projects"
	}
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	sort.Strings(names)
	s := "its projects: " + strings.Join(names[:min(len(names), projectsShown)], ", ")
	if len(names) > projectsShown {
		s += fmt.Sprintf(" (and %d more)", len(names)-projectsShown)
	}
	return s
}
