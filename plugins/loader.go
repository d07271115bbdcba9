package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/plugins/internal/shared"
	pb "github.com/e0dc0000/scribe/plugins/proto"
)

// Loader runs a loader plugin. The process starts when the loader is
// created; one that crashed or hung is started again on the next Load.
type Loader struct {
	id  core.ID
	cfg *resolved
	sv  *supervisor
}

var (
	_ core.Loader   = (*Loader)(nil)
	_ core.Reporter = (*Loader)(nil)
)

// NewLoader starts a loader plugin and configures it.
func NewLoader(ctx context.Context, set core.Settings, cfg *Config) (*Loader, error) {
	r, err := resolve(set, cfg)
	if err != nil {
		return nil, fmt.Errorf("loader %s: %w", set.ID, err)
	}
	log := set.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	l := &Loader{id: set.ID, cfg: r}
	l.sv = newSupervisor(&launcher{id: set.ID, kind: core.KindLoader, cfg: r, log: log}, func(ctx context.Context, in *instance) error {
		cctx, cancel := context.WithTimeout(ctx, r.startTimeout)
		defer cancel()
		_, err := in.stub.(pb.LoaderClient).Configure(cctx, &pb.ConfigureRequest{Config: r.pluginConfig(), ComponentId: set.ID.String()})
		if err != nil {
			return fmt.Errorf("plugin configure: %w", callError(err))
		}
		return nil
	})
	if _, err := l.sv.get(ctx); err != nil {
		return nil, fmt.Errorf("loader %s: %w", set.ID, err)
	}
	return l, nil
}

// Load asks the plugin for a session. A page that takes longer than
// call_timeout to come counts as a hung plugin.
func (l *Loader) Load(ctx context.Context, ref core.SessionRef) (*core.Transcript, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("loader %s: %w", l.id, err)
	}
	in, err := l.sv.get(ctx)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			err = cerr
		}
		return nil, fmt.Errorf("loader %s: %w", l.id, err)
	}
	t, err := l.load(ctx, in, ref)
	if errors.Is(err, core.ErrNotFound) {
		l.sv.done(in, nil)
		return nil, err
	}
	if cerr := ctx.Err(); err != nil && cerr != nil {
		// The caller gave up: the plugin did nothing wrong.
		l.sv.done(in, nil)
		return nil, fmt.Errorf("loader %s: %w", l.id, cerr)
	}
	l.sv.done(in, err)
	if err != nil {
		return nil, fmt.Errorf("loader %s: %w", l.id, err)
	}
	return t, nil
}

func (l *Loader) load(ctx context.Context, in *instance, ref core.SessionRef) (*core.Transcript, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var hung atomic.Bool
	watchdog := time.AfterFunc(l.cfg.callTimeout, func() { hung.Store(true); cancel() })
	defer watchdog.Stop()
	stream, err := in.stub.(pb.LoaderClient).Load(cctx, &pb.LoadRequest{Ref: shared.RefToProto(ref)})
	if err != nil {
		return nil, l.loadError(err, hung.Load())
	}
	t := &core.Transcript{Ref: ref, Source: l.id}
	for {
		page, err := stream.Recv()
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			return nil, l.loadError(err, hung.Load())
		}
		watchdog.Reset(l.cfg.callTimeout)
		for _, m := range page.GetEntries() {
			e, err := shared.EntryFromProto(m)
			if err != nil {
				return nil, fmt.Errorf("session %s: entry %d: %w", ref.Key(), len(t.Entries), err)
			}
			t.Entries = append(t.Entries, e)
		}
		if page.GetPartial() {
			t.Partial = true
		}
		t.Notes = append(t.Notes, page.GetNotes()...)
	}
}

func (l *Loader) loadError(err error, hung bool) error {
	if status.Code(err) == codes.NotFound {
		return fmt.Errorf("loader %s: %s: %w", l.id, status.Convert(err).Message(), core.ErrNotFound)
	}
	if hung {
		return fmt.Errorf("%w: no page within %s", ErrTimeout, l.cfg.callTimeout)
	}
	return callError(err)
}

// Status returns the loader's state and counters.
func (l *Loader) Status() Status { return l.sv.status(l.id, core.KindLoader) }

// Report implements core.Reporter.
func (l *Loader) Report() map[string]int64 { return l.sv.report() }

// Shutdown stops the plugin. Safe twice.
func (l *Loader) Shutdown(context.Context) error {
	l.sv.close()
	return nil
}

// Close is Shutdown for io.Closer users.
func (l *Loader) Close() error { return l.Shutdown(context.Background()) }
