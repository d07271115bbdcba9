package main

// The command line's view of the team server: `scribe ls --remote`, session
// id prefixes resolved on the server when nothing local matches (pull,
// resume), and the client settings of commands a person waits for (push,
// pull): a server that cannot be reached ends the command in seconds, with
// every retry said on stderr.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/internal/memfs"
	"github.com/e0dc0000/scribe/sinks/events"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/stores"
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

// runRemoteLs is `scribe ls --remote`: the server's sessions listed by the
// local listing's own code, so titles (custom title, AI title, last
// prompt, summary, first prompt), the project (cwd) and --json are what
// `ls` gives for the same sessions. Each session's main transcript and
// lifecycle sidecar are fetched as pull fetches them (internal rows left
// out) into a temporary folder, in the project folder of their first cwd,
// each transcript's mtime the latest timestamp of its rows: the last
// activity Claude Code's own writes would have left (the server's last
// write, when no row has a timestamp).
func runRemoteLs(cmd *cobra.Command, cfg *config.Config, from string, opt jsonl.ListOptions, status jsonl.SessionStatus,
	keep func(*jsonl.SessionInfo) bool, asJSON bool, table lsTable) error {
	t, err := remoteTarget(cfg, from)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	stderr := cmd.ErrOrStderr()
	t.interactive(stderr, "ls --remote")
	ctx := cmd.Context()
	list, more, err := t.client.Sessions(ctx, "")
	if err != nil {
		return err
	}
	if more {
		fmt.Fprintf(stderr, "scribe: %s has more sessions; these are the %d most recently pushed\n", t.client.BaseURL, len(list))
	}
	var bar *progressBar
	if isCharDevice(os.Stderr) {
		bar = newProgressBar(stderr, "ls --remote", false)
	}
	l, cleanup, rs, err := fetchRemoteListing(ctx, t, list, bar)
	if err != nil {
		return err
	}
	defer cleanup()
	if opt.Dir == "" && status == "" {
		// Every session ls would list: say how many it would not.
		all, err := l.List(ctx, jsonl.ListOptions{IncludeProgrammatic: true, SkipLastEntryTail: true})
		if err != nil {
			return err
		}
		if unlisted := len(list) - rs.empty - len(all); unlisted > 0 {
			fmt.Fprintf(stderr, "scribe: %d sessions on %s are not listed, as ls would not list them (a subagent's first line, or nothing to title them with)\n", unlisted, t.client.BaseURL)
		}
	}
	opt.NoIndex = true
	infos, recs, err := listSessions(ctx, stores.NewReader(t.id.String(), t.client.BaseURL, l), opt, status, keep, asJSON)
	if err != nil {
		return err
	}
	if rs.noTimestamp > 0 {
		fmt.Fprintf(stderr, "scribe: %d sessions on %s have no row with a timestamp: their last activity is the server's last write\n", rs.noTimestamp, t.client.BaseURL)
	}
	if rs.empty > 0 {
		fmt.Fprintf(stderr, "scribe: %d sessions on %s have no main transcript (only subagents or internal rows): not listed\n", rs.empty, t.client.BaseURL)
	}
	out := cmd.OutOrStdout()
	if asJSON {
		return writeInfosJSON(out, infos)
	}
	if len(infos) == 0 {
		fmt.Fprintf(out, "no sessions listed on %s (%s)\n", t.client.BaseURL, t.id)
		return nil
	}
	printSessionTable(out, recs, outputWidth(stdoutFile(out)), table.colored, table.now)
	return nil
}

// remoteListStats counts what fetchRemoteListing could not give as ls
// would.
type remoteListStats struct {
	noTimestamp, empty int
}

// fetchRemoteListing fetches the sessions of list into memory, laid out
// as Claude Code lays out its folder (see runRemoteLs). bar, when not nil, shows the sessions fetched.
func fetchRemoteListing(ctx context.Context, t *cloudTarget, list []events.SessionInfo, bar *progressBar) (jsonl.Layout, func(), remoteListStats, error) {
	var rs remoteListStats
	// In memory, laid out as Claude Code lays out its folder: nothing of
	// the server's sessions is written to disk to list them.
	mem := &memfs.FS{}
	cleanup := func() {}
	l := jsonl.Layout{ConfigDir: t.id.String(), FS: jsonl.MemFS(mem)}
	var (
		mu  sync.Mutex
		got atomic.Int64 // bytes fetched
	)
	if bar != nil {
		bar.start(-1, len(list), &got)
		defer bar.finish()
	}
	err := durable.Each(ctx, remoteListWorkers, len(list), func(ctx context.Context, i int) error {
		s := list[i]
		if bar != nil {
			defer bar.sessionDone()
		}
		if !claudedir.IsSessionID(s.ID) {
			return fmt.Errorf("the server lists %q, which is not a session id", clip(s.ID, 60))
		}
		ps, err := fetchPull(ctx, t, s.ID, false, &pullReport{}, nil)
		if errors.Is(err, core.ErrNotFound) {
			mu.Lock()
			rs.empty++
			mu.Unlock()
			return nil
		}
		if err != nil {
			return fmt.Errorf("session %s: %w", s.ID, err)
		}
		got.Add(int64(ps.main.data.Len()))
		if ps.main.entries == 0 {
			mu.Lock()
			rs.empty++
			mu.Unlock()
			return nil
		}
		cwd := ps.firstCWD
		if cwd == "" {
			cwd = ps.agentCWD
		}
		proj := l.ProjectFolder("unknown-cwd")
		if cwd != "" {
			proj = l.ProjectDir(cwd)
		}
		at := ps.lastAt
		if at.IsZero() {
			at = s.LastActivity
			mu.Lock()
			rs.noTimestamp++
			mu.Unlock()
		}
		if ps.side.entries > 0 {
			mem.Add(claudedir.SidecarFile(proj, s.ID), bytes.Clone(ps.side.data.Bytes()), at)
		}
		mem.Add(claudedir.MainFile(proj, s.ID), bytes.Clone(ps.main.data.Bytes()), at)
		return nil
	})
	if err != nil {
		cleanup()
		return jsonl.Layout{}, nil, rs, err
	}
	return l, cleanup, rs, nil
}

// remoteListWorkers is how many sessions ls --remote fetches side by side.
const remoteListWorkers = 4

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
