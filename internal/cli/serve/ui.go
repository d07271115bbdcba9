package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/cli/read"
	"github.com/e0dc0000/scribe/internal/cli/uicmd"
	"github.com/e0dc0000/scribe/internal/cli/usagecmd"
	"github.com/e0dc0000/scribe/server"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/events"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/sinks/sinkhelper"
	"github.com/e0dc0000/scribe/stores"
	"github.com/e0dc0000/scribe/transcript/fork"
	"github.com/e0dc0000/scribe/ui"
)

// sharesFile is the share links' file in the server's data_dir.
const sharesFile = "ui-shares.json"

// mountUI serves the web viewer under /ui/ (ui.Portal): a tenant signs in
// with one of the server's tokens and reads its own sessions through the
// server's routes with that token (the team server as a store, as /mcp
// reads it); share links read their tenant's session with the server's
// reader token for it (uiTokens), redacted with the redact block server {
// redact } names (else the configuration's default redact processor).
// The links are kept in <data_dir>/ui-shares.json.
func mountUI(srv *server.Server, cfg *config.Config, sc *server.Config, toks *uiTokens) (*ui.Portal, error) {
	dir := srv.DataDir()
	if dir == "" {
		base, err := os.UserConfigDir()
		if err != nil {
			return nil, fmt.Errorf("a folder for the share links (set server { data_dir }): %w", err)
		}
		dir = filepath.Join(base, "scribe", "serve")
	}
	book, err := ui.OpenShareBook(filepath.Join(dir, sharesFile))
	if err != nil {
		return nil, err
	}
	remote := func(name, token string) *freshRemote {
		return &freshRemote{name: name, maxAge: time.Second, open: func() *stores.Remote {
			return stores.NewRemote(name, &events.Client{BaseURL: "http://" + srv.Addr(), Token: sinkhelper.NewToken(token),
				HTTP: sinkhelper.NewHTTPClient(), Retry: sinkhelper.RetryConfig{MaxAttempts: 1}})
		}}
	}
	p, err := ui.NewPortal(ui.PortalOptions{Base: "/ui", Hosts: uiHosts(sc, srv), Search: uicmd.Search, Shares: book,
		Usage: uicmd.UsageFunc(usagecmd.PricerOf(cfg)), Markdown: read.WriteMarkdown, Bundle: bundleOf,
		Poll: 2 * time.Second, ListTTL: 5 * time.Second,
		Check: toks.check,
		Open: func(_ context.Context, tok string, p ui.Principal) (sessions.Store, error) {
			if p.Write {
				return managedRemote{remote("serve/"+p.Tenant, tok)}, nil
			}
			return remote("serve/"+p.Tenant, tok), nil
		},
		ShareStore: func(_ context.Context, tenant string) (sessions.Store, error) {
			tok, ok := toks.reader(tenant)
			if !ok {
				return nil, fmt.Errorf("no token of the server names tenant %q any more", tenant)
			}
			return remote("share/"+tenant, tok), nil
		},
		Redactor: func(ctx context.Context) (ui.Redact, error) {
			red, _, _, err := cmdutil.RedactorNamed(ctx, cfg, jsonl.Layout{}, sc.Redact, "server.redact")
			if err != nil {
				return nil, err
			}
			return func(b []byte) []byte { out, _ := red.Redact(b); return out }, nil
		}})
	if err != nil {
		return nil, err
	}
	srv.Mount("/ui", p, server.OwnAuthentication())
	return p, nil
}

// freshRemote is the team server read as a store (stores.Remote) that
// keeps what it read for maxAge only: a Remote keeps its listing and
// every session it fetched for good, right for a command, but a viewer
// that stays open must see new sessions and new messages. A call made
// past maxAge reads through a new Remote.
type freshRemote struct {
	name   string
	maxAge time.Duration
	open   func() *stores.Remote

	mu  sync.Mutex
	cur *stores.Remote
	at  time.Time
}

var (
	_ sessions.Store = (*freshRemote)(nil)
	_ ui.Stamper     = (*freshRemote)(nil)
)

// now is the Remote to read through.
func (f *freshRemote) now() *stores.Remote {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cur == nil || time.Since(f.at) >= f.maxAge {
		f.cur, f.at = f.open(), time.Now()
	}
	return f.cur
}

// expire makes the next call read through a new Remote.
func (f *freshRemote) expire() {
	f.mu.Lock()
	f.cur = nil
	f.mu.Unlock()
}

func (f *freshRemote) Name() string  { return f.name }
func (f *freshRemote) Where() string { return f.now().Where() }
func (f *freshRemote) List(ctx context.Context, opt sessions.ListOptions) ([]sessions.Info, error) {
	return f.now().List(ctx, opt)
}
func (f *freshRemote) Records(ctx context.Context, opt sessions.ListOptions) ([]sessions.Record, error) {
	return f.now().Records(ctx, opt)
}
func (f *freshRemote) Resolve(ctx context.Context, arg string) (string, error) {
	return f.now().Resolve(ctx, arg)
}
func (f *freshRemote) Info(ctx context.Context, id string) (*sessions.Info, error) {
	return f.now().Info(ctx, id)
}
func (f *freshRemote) Messages(ctx context.Context, id string, opt sessions.MessagesOptions) ([]sessions.Message, *sessions.MessagesReport, error) {
	return f.now().Messages(ctx, id, opt)
}
func (f *freshRemote) Subagents(ctx context.Context, id string) ([]string, error) {
	return f.now().Subagents(ctx, id)
}
func (f *freshRemote) SubagentMessages(ctx context.Context, id, agent string, opt sessions.MessagesOptions) ([]sessions.Message, *sessions.MessagesReport, error) {
	return f.now().SubagentMessages(ctx, id, agent, opt)
}
func (f *freshRemote) Transcript(ctx context.Context, id string) (*sessions.Transcript, error) {
	return f.now().Transcript(ctx, id)
}
func (f *freshRemote) AgentTranscript(ctx context.Context, id, agent string) (*sessions.Transcript, error) {
	return f.now().AgentTranscript(ctx, id, agent)
}
func (f *freshRemote) Lifecycle(ctx context.Context, id string) ([]core.Entry, error) {
	return f.now().Lifecycle(ctx, id)
}
func (f *freshRemote) Close(context.Context) error { return nil }

// SubagentParents implements sessions.SubagentParents.
func (f *freshRemote) SubagentParents(ctx context.Context, id string) (map[string]string, error) {
	return f.now().SubagentParents(ctx, id)
}

// bundleOf is the viewer's bundle download on serve: the session as
// export --format bundle --from the server writes it, from one fetch of
// it (what the server holds: its transcripts and lifecycle records).
func bundleOf(st sessions.Store) ui.ExportFunc {
	var f *freshRemote
	switch s := st.(type) {
	case *freshRemote:
		f = s
	case managedRemote:
		f = s.freshRemote
	default:
		return nil
	}
	return func(ctx context.Context, _ sessions.Store, id string, w io.Writer) error {
		r := f.now()
		return read.BundleWriter(r)(ctx, r, id, w)
	}
}

// Stamp is the server's listing of the session (its last activity and
// entries): a live page reads the session again only when it changed.
func (f *freshRemote) Stamp(ctx context.Context, id string) (string, error) {
	list, _, err := f.now().Client().Sessions(ctx, id)
	if err != nil {
		return "", err
	}
	for _, s := range list {
		if s.ID == id {
			return fmt.Sprint(s.LastActivity.UnixNano(), "/", s.Entries), nil
		}
	}
	return "", errors.New("no such session")
}

// managedRemote is the team server read with a token that has the write
// scope: rename and tag append the SDK's lines (jsonl.RenameLine,
// TagLine) to the session through the server's events route, as Claude
// Code's own rename and tag append them to its transcript; Move to trash
// and the trash page go through the server's trash (a read-only token's
// freshRemote has neither).
type managedRemote struct{ *freshRemote }

var _ sessions.Manager = managedRemote{}

// Rename appends the SDK's custom-title line.
func (m managedRemote) Rename(ctx context.Context, id, title string, _ sessions.ManageOptions) (sessions.ManageResult, error) {
	line, err := jsonl.RenameLine(id, title)
	if err != nil {
		return sessions.ManageResult{}, err
	}
	return m.appendMeta(ctx, id, line)
}

// Tag appends the SDK's tag line.
func (m managedRemote) Tag(ctx context.Context, id, tag string, clear bool, _ sessions.ManageOptions) (sessions.ManageResult, error) {
	line, err := jsonl.TagLine(id, tag, clear)
	if err != nil {
		return sessions.ManageResult{}, err
	}
	return m.appendMeta(ctx, id, line)
}

var _ sessions.Forker = managedRemote{}

// forkBatch is how many entries of a fork one events post carries.
const forkBatch = 200

// Fork posts a fork of session id, as every store forks (the SDK's
// forkSession), to a new session through the server's events route.
func (m managedRemote) Fork(ctx context.Context, id string, opt fork.Options) (string, string, error) {
	r := m.now()
	newID, entries, err := r.ForkEntries(ctx, id, opt)
	if err != nil {
		return "", "", err
	}
	defer m.expire()
	post := func(batch []core.Entry) error {
		evs := make([]events.Event, len(batch))
		for i, e := range batch {
			evs[i] = events.Event{Type: e.Type, Payload: e.Raw}
		}
		_, err := r.Client().PostEvents(ctx, newID, evs)
		return err
	}
	trash := func(ctx context.Context) error {
		_, err := r.Trash(ctx, newID, sessions.TrashOptions{Reason: "a fork cut short"})
		return err
	}
	if err := postFork(ctx, entries, post, trash, forkRetryWait); err != nil {
		return "", "", fmt.Errorf("post the fork of %s as %s: %w", id, newID, err)
	}
	return newID, m.name, nil
}

// forkTrashTimeout bounds moving a fork cut short to the trash.
const forkTrashTimeout = 30 * time.Second

// forkRetryWait is the wait before a batch of a fork is posted again (it
// doubles each time; three posts in all).
const forkRetryWait = 250 * time.Millisecond

// postFork posts a fork's entries in batches, each posted up to three
// times (the server keeps an entry once by its uuid, so a batch posted
// again adds nothing twice). A fork cut short after some batches went in
// is moved to the trash, so no half fork is listed; the error says where
// what was posted went (trash is ErrNotFound when nothing was).
func postFork(ctx context.Context, entries []core.Entry, post func([]core.Entry) error, trash func(context.Context) error, wait time.Duration) error {
	for start := 0; start < len(entries); start += forkBatch {
		batch := entries[start:min(start+forkBatch, len(entries))]
		err := post(batch)
		for try, w := 1, wait; err != nil && try < 3 && ctx.Err() == nil; try, w = try+1, 2*w {
			select {
			case <-ctx.Done():
			case <-time.After(w):
				err = post(batch)
			}
		}
		if err == nil {
			continue
		}
		// A post that failed may still have stored its entries: what the
		// server holds of the fork goes to the trash, if anything.
		// Also when the fork was cut short by its request going away: the
		// half fork must not stay listed.
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), forkTrashTimeout)
		terr := trash(tctx)
		cancel()
		switch {
		case terr == nil:
			return fmt.Errorf("%d of %d entries posted, what was posted moved to the trash: %w", start, len(entries), err)
		case errors.Is(terr, sessions.ErrNotFound):
			return fmt.Errorf("nothing posted: %w", err)
		default:
			return fmt.Errorf("%d of %d entries posted, and what was posted could not be moved to the trash (%v): %w", start, len(entries), terr, err)
		}
	}
	return nil
}

// appendMeta posts line to session id and forgets what was read, so the
// next page shows it.
func (m managedRemote) appendMeta(ctx context.Context, id, line string) (sessions.ManageResult, error) {
	e, err := core.ParseEntry([]byte(line))
	if err != nil {
		return sessions.ManageResult{}, err
	}
	if _, err := m.now().Client().PostEvents(ctx, id, []events.Event{{Type: e.Type, Payload: e.Raw}}); err != nil {
		return sessions.ManageResult{}, fmt.Errorf("append to session %s: %w", id, err)
	}
	m.expire()
	return sessions.ManageResult{SessionID: id, Files: []string{m.name + ":" + id}, Line: line}, nil
}

var _ sessions.Trasher = managedRemote{}

// Trash moves the session to the server's trash (stores.Remote.Trash) and
// forgets what was read, so the list no longer shows it.
func (m managedRemote) Trash(ctx context.Context, id string, opt sessions.TrashOptions) ([]sessions.TrashItem, error) {
	defer m.expire()
	return m.now().Trash(ctx, id, opt)
}

// TrashItems lists the tenant's trash on the server.
func (m managedRemote) TrashItems(ctx context.Context) ([]sessions.TrashItem, []string, error) {
	return m.now().TrashItems(ctx)
}

// Restore puts a trash item back on the server.
func (m managedRemote) Restore(ctx context.Context, ref string, opt sessions.RestoreOptions) (sessions.TrashItem, error) {
	defer m.expire()
	return m.now().Restore(ctx, ref, opt)
}

// EmptyTrash empties the tenant's trash on the server.
func (m managedRemote) EmptyTrash(ctx context.Context, olderThan time.Duration, dryRun bool, now time.Time) ([]sessions.TrashItem, error) {
	return m.now().EmptyTrash(ctx, olderThan, dryRun, now)
}
