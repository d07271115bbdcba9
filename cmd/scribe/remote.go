package main

// The command line's view of the team server: `scribe ls --remote`, session
// id prefixes resolved on the server when nothing local matches (pull,
// resume), and the client settings of commands a person waits for (push,
// pull): a server that cannot be reached ends the command in seconds, with
// every retry said on stderr.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/events"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// unreachableAttempts is how many attempts an interactive command makes to
// reach a server that refuses connections (or has no route, or no address)
// before it gives up.
const unreachableAttempts = 3

// interactive sets the target's client up for a command a person waits
// for: a server that cannot be reached ends it after unreachableAttempts
// attempts with an error naming the address, and every retry is printed on
// stderr (what names the command).
func (t *cloudTarget) interactive(stderr io.Writer, what string) {
	t.client.Unreachable = unreachableAttempts
	t.client.OnRetry = func(attempt, attempts int, wait time.Duration, err error) {
		fmt.Fprintf(stderr, "scribe: %s: attempt %d of %d failed: %v; retrying in %v\n",
			what, attempt, attempts, err, wait.Round(time.Millisecond))
	}
}

// errNoRemote: the configuration names no server to ask.
var errNoRemote = errors.New("no cloud loader configured")

// remoteTarget is the server of `ls --remote` and of the id resolver: the
// block named by from, else the first cloud loader of resume.loaders, else
// the first declared cloud loader.
func remoteTarget(cfg *config.Config, from string) (*cloudTarget, error) {
	if from != "" {
		return findCloudTarget(cfg, from, true)
	}
	for _, l := range cfg.Resume.Loaders {
		if _, ok := cfg.Lookup(core.KindLoader, l); ok && l.Type == events.LoaderType {
			return findCloudTarget(cfg, l.String(), true)
		}
	}
	for _, c := range cfg.Components {
		if c.Kind == core.KindLoader && c.ID.Type == events.LoaderType {
			return findCloudTarget(cfg, c.ID.String(), true)
		}
	}
	return nil, fmt.Errorf(`%w: declare a loader "cloud" block (and list it in resume.loaders), or name one with --from`, errNoRemote)
}

// resolveAnywhere is resolveSession, then the server: a full id is taken as
// it is; a prefix that matches no local session is looked up on the server
// that remote returns (one match is the id, several are an error listing
// them). remote returning errNoRemote keeps the local answer.
func resolveAnywhere(ctx context.Context, l jsonl.Layout, arg string, remote func() (*cloudTarget, error), stderr io.Writer) (string, error) {
	id, err := resolveSession(ctx, l, arg)
	var xe *exitError
	if err == nil || !errors.As(err, &xe) || xe.code != 1 || errors.Is(err, errAmbiguous) {
		// Found, ambiguous, not an id at all (2), or an I/O error.
		return id, err
	}
	t, terr := remote()
	if errors.Is(terr, errNoRemote) {
		return "", err
	}
	if terr != nil {
		return "", &exitError{code: 2, err: fmt.Errorf("%w; and the server: %w", err, terr)}
	}
	if t.client.OnRetry == nil {
		t.interactive(stderr, "look up "+arg)
	}
	prefix := strings.ToLower(arg)
	list, more, lerr := t.client.Sessions(ctx, prefix)
	if lerr != nil {
		return "", fmt.Errorf("%w; looking on the server: %w", err, lerr)
	}
	switch {
	case len(list) == 0:
		return "", &exitError{code: 1, err: fmt.Errorf("no session id starts with %q in %s or on %s (%s)",
			arg, l.ProjectsDir(), t.client.BaseURL, t.id)}
	case len(list) == 1 && !more:
		fmt.Fprintf(stderr, "scribe: %q is session %s on %s (none here)\n", arg, list[0].ID, t.client.BaseURL)
		return list[0].ID, nil
	}
	lines := make([]string, 0, len(list))
	for _, s := range list {
		lines = append(lines, fmt.Sprintf("  %s  %s", s.ID, clip(s.Title, 60)))
	}
	sort.Strings(lines)
	n := fmt.Sprint(len(list))
	if more {
		n = "more than " + n
	}
	return "", &exitError{code: 2, err: fmt.Errorf("%w: %q matches no local session and %s sessions on %s:\n%s",
		errAmbiguous, arg, n, t.client.BaseURL, strings.Join(lines, "\n"))}
}

// runRemoteLs is `scribe ls --remote`: the server's sessions with their
// titles, as a table or (asJSON) the server's listing as JSON.
func runRemoteLs(cmd *cobra.Command, cfg *config.Config, from string, asJSON bool, limit, offset int) error {
	t, err := remoteTarget(cfg, from)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	t.interactive(cmd.ErrOrStderr(), "ls --remote")
	list, more, err := t.client.Sessions(cmd.Context(), "")
	if err != nil {
		return err
	}
	if more {
		fmt.Fprintf(cmd.ErrOrStderr(), "scribe: %s has more sessions; these are the %d most recently active\n", t.client.BaseURL, len(list))
	}
	list = list[min(max(offset, 0), len(list)):]
	if limit > 0 && limit < len(list) {
		list = list[:limit]
	}
	out := cmd.OutOrStdout()
	if asJSON {
		return writeJSON(out, list)
	}
	if len(list) == 0 {
		fmt.Fprintf(out, "no sessions on %s (%s)\n", t.client.BaseURL, t.id)
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLAST ACTIVITY\tTITLE\tTAG\tSTATE\tENTRIES\tSUBAGENTS")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\n", s.ID, s.LastActivity.Local().Format("2006-01-02 15:04"),
			clip(s.Title, 60), s.Tag, s.State, s.Entries, s.Subagents)
	}
	return tw.Flush()
}

// resumeRemote is the server resume resolves prefixes on: the loader of
// --from when it is a cloud loader, else the first cloud loader of
// resume.loaders (none: errNoRemote, as resume would not ask a server).
func resumeRemote(cfg *config.Config, from string) (*cloudTarget, error) {
	if id, err := core.ParseID(from); from != "" && err == nil && id.Type == events.LoaderType {
		return findCloudTarget(cfg, from, true)
	}
	for _, l := range cfg.Resume.Loaders {
		if _, ok := cfg.Lookup(core.KindLoader, l); ok && l.Type == events.LoaderType {
			return findCloudTarget(cfg, l.String(), true)
		}
	}
	return nil, errNoRemote
}
