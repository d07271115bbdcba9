package cloud

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
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/cli/listing"
	"github.com/e0dc0000/scribe/sinks/events"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/stores"
)

// interactive sets the target's client up for a command a person waits
// for (cmdutil.Interactive).
func (t *Target) interactive(stderr io.Writer, what string) {
	cmdutil.Interactive(t.client, stderr, what)
}

// errNoRemote: the configuration names no server to ask.
var errNoRemote = errors.New("no cloud loader configured")

// remoteTarget is the server of `ls --remote` and of the id resolver: the
// block named by from, else the first cloud loader of resume.loaders, else
// the first declared cloud loader.
func remoteTarget(f *cmdutil.Factory, cfg *config.Config, from string) (*Target, error) {
	if from != "" {
		return findCloudTarget(f, cfg, from, true)
	}
	for _, l := range cfg.Resume.Loaders {
		if _, ok := cfg.Lookup(core.KindLoader, l); ok && l.Type == events.LoaderType {
			return findCloudTarget(f, cfg, l.String(), true)
		}
	}
	for _, c := range cfg.Components {
		if c.Kind == core.KindLoader && c.ID.Type == events.LoaderType {
			return findCloudTarget(f, cfg, c.ID.String(), true)
		}
	}
	return nil, fmt.Errorf(`%w: declare a loader "cloud" block (and list it in resume.loaders), or name one with --from`, errNoRemote)
}

// resolveAnywhere is resolveSession, then the server: a full id is taken as
// it is; a prefix that matches no local session is looked up on the server
// that remote returns (one match is the id, several are an error listing
// them). remote returning errNoRemote keeps the local answer.
func ResolveAnywhere(ctx context.Context, l jsonl.Layout, arg string, remote func() (*Target, error), stderr io.Writer) (string, error) {
	id, err := cmdutil.ResolveSession(ctx, l, arg)
	var xe *cmdutil.ExitError
	if err == nil || !errors.As(err, &xe) || xe.Code != 1 || errors.Is(err, cmdutil.ErrAmbiguous) {
		// Found, ambiguous, not an id at all (2), or an I/O error.
		return id, err
	}
	t, terr := remote()
	if errors.Is(terr, errNoRemote) {
		return "", err
	}
	if terr != nil {
		return "", &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("%w; and the server: %w", err, terr)}
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
		return "", &cmdutil.ExitError{Code: 1, Err: fmt.Errorf("no session id starts with %q in %s or on %s (%s)",
			arg, l.ProjectsDir(), t.client.BaseURL, t.id)}
	case len(list) == 1 && !more:
		fmt.Fprintf(stderr, "scribe: %q is session %s on %s (none here)\n", arg, list[0].ID, t.client.BaseURL)
		return list[0].ID, nil
	}
	lines := make([]string, 0, len(list))
	for _, s := range list {
		lines = append(lines, fmt.Sprintf("  %s  %s", s.ID, cmdutil.Clip(s.Title, 60)))
	}
	sort.Strings(lines)
	n := fmt.Sprint(len(list))
	if more {
		n = "more than " + n
	}
	return "", &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("%w: %q matches no local session and %s sessions on %s:\n%s",
		cmdutil.ErrAmbiguous, arg, n, t.client.BaseURL, strings.Join(lines, "\n"))}
}

// runRemoteLs is `scribe ls --remote`: the server's sessions listed by the
// local listing's own code, so titles (custom title, AI title, last
// prompt, summary, first prompt), the project (cwd) and --json are what
// `ls` gives for the same sessions. Each session's main transcript and
// lifecycle sidecar are fetched as pull fetches them (internal rows left
// out) into a temporary folder, in the project folder of their first cwd,
// each transcript's mtime the latest timestamp of its rows: the last
// activity Claude Code's own writes would have left (the server's last
// write, when no row has a timestamp).
func RunRemoteLs(f *cmdutil.Factory, cmd *cobra.Command, cfg *config.Config, from string, opt jsonl.ListOptions, status jsonl.SessionStatus,
	keep func(*jsonl.SessionInfo) bool, asJSON bool, table listing.Table) error {
	t, err := remoteTarget(f, cfg, from)
	if err != nil {
		return &cmdutil.ExitError{Code: 2, Err: err}
	}
	stderr := cmd.ErrOrStderr()
	t.interactive(stderr, "ls --remote")
	ctx := cmd.Context()
	r := stores.NewRemote(t.id.String(), t.client)
	list, err := r.Listed(ctx)
	if err != nil {
		return err
	}
	if rs := r.Stats(); rs.More {
		fmt.Fprintf(stderr, "scribe: %s has more sessions; these are the %d most recently pushed\n", t.client.BaseURL, len(list))
	}
	if f.IOStreams.IsStderrTTY() {
		bar := cmdutil.NewProgressBar(stderr, "ls --remote", false)
		var got atomic.Int64
		bar.Start(-1, len(list), &got)
		r.OnFetch = func(n int) { got.Add(int64(n)) }
		r.OnSession = bar.SessionDone
		defer bar.Finish()
	}
	opt.NoIndex = true
	if opt.Dir == "" && status == "" {
		// Every session ls would list: say how many it would not.
		all, err := r.List(ctx, jsonl.ListOptions{IncludeProgrammatic: true, SkipLastEntryTail: true, NoIndex: true})
		if err != nil {
			return err
		}
		if unlisted := len(list) - r.Stats().Empty - len(all); unlisted > 0 {
			fmt.Fprintf(stderr, "scribe: %d sessions on %s are not listed, as ls would not list them (a subagent's first line, or nothing to title them with)\n", unlisted, t.client.BaseURL)
		}
	}
	infos, recs, err := listing.Sessions(ctx, r, opt, status, keep, asJSON)
	if err != nil {
		return err
	}
	rs := r.Stats()
	if rs.NoTimestamp > 0 {
		fmt.Fprintf(stderr, "scribe: %d sessions on %s have no row with a timestamp: their last activity is the server's last write\n", rs.NoTimestamp, t.client.BaseURL)
	}
	if rs.Empty > 0 {
		fmt.Fprintf(stderr, "scribe: %d sessions on %s have no main transcript (only subagents or internal rows): not listed\n", rs.Empty, t.client.BaseURL)
	}
	out := cmd.OutOrStdout()
	if asJSON {
		return listing.WriteInfosJSON(out, infos)
	}
	if len(infos) == 0 {
		fmt.Fprintf(out, "no sessions listed on %s (%s)\n", t.client.BaseURL, t.id)
		return nil
	}
	listing.PrintTable(out, recs, cmdutil.OutputWidth(cmdutil.StdoutFile(out)), table.Colored, table.Now)
	return nil
}

// resumeRemote is the server resume resolves prefixes on: the loader of
// --from when it is a cloud loader, else the first cloud loader of
// resume.loaders (none: errNoRemote, as resume would not ask a server).
func ResumeRemote(f *cmdutil.Factory, cfg *config.Config, from string) (*Target, error) {
	if id, err := core.ParseID(from); from != "" && err == nil && id.Type == events.LoaderType {
		return findCloudTarget(f, cfg, from, true)
	}
	for _, l := range cfg.Resume.Loaders {
		if _, ok := cfg.Lookup(core.KindLoader, l); ok && l.Type == events.LoaderType {
			return findCloudTarget(f, cfg, l.String(), true)
		}
	}
	return nil, errNoRemote
}
