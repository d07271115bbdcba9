package plugins

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/core"
	pb "github.com/e0dc0000/scribe/plugins/proto"
)

// Guard runs a guard plugin. The process starts when the guard is created;
// one that crashed or hung is started again on a later Check.
//
// A guard fails closed: while its plugin is down, Check returns an error,
// which the pipeline counts as a refusal with that error as the reason.
type Guard struct {
	id  core.ID
	cfg *resolved
	sv  *supervisor
}

var (
	_ core.Guard    = (*Guard)(nil)
	_ core.Reporter = (*Guard)(nil)
)

// NewGuard starts a guard plugin and configures it.
func NewGuard(ctx context.Context, set core.Settings, cfg *Config) (*Guard, error) {
	r, err := resolve(set, cfg)
	if err != nil {
		return nil, fmt.Errorf("guard %s: %w", set.ID, err)
	}
	log := set.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	g := &Guard{id: set.ID, cfg: r}
	g.sv = newSupervisor(&launcher{id: set.ID, kind: core.KindGuard, cfg: r, log: log}, func(ctx context.Context, in *instance) error {
		cctx, cancel := context.WithTimeout(ctx, r.startTimeout)
		defer cancel()
		_, err := in.stub.(pb.GuardClient).Configure(cctx, &pb.ConfigureRequest{Config: r.pluginConfig(), ComponentId: set.ID.String()})
		if err != nil {
			return fmt.Errorf("plugin configure: %w", callError(err))
		}
		return nil
	})
	if _, err := g.sv.get(ctx); err != nil {
		return nil, fmt.Errorf("guard %s: %w", set.ID, err)
	}
	return g, nil
}

// Check asks the plugin about e: nil allows it; a refusal wraps
// core.ErrPersistenceDisabled with the plugin's reason.
func (g *Guard) Check(ctx context.Context, e *core.Entry) error {
	if err := ctx.Err(); err != nil {
		// The caller gave up: refuse without asking (or blaming) the
		// plugin.
		return fmt.Errorf("guard %s not asked, refusing: %w", g.id, err)
	}
	in, err := g.sv.get(ctx)
	if err != nil {
		return fmt.Errorf("guard %s unavailable, refusing: %w", g.id, err)
	}
	cctx, cancel := context.WithTimeout(ctx, g.cfg.callTimeout)
	defer cancel()
	// The request is encoded before Check returns: e.Raw is not kept.
	resp, err := in.stub.(pb.GuardClient).Check(cctx, &pb.CheckRequest{Entry: &pb.Entry{Raw: e.Raw, SessionId: e.SessionID, Cwd: e.CWD}})
	err = callError(err)
	if ctx.Err() != nil && err != nil {
		g.sv.done(in, nil)
		return fmt.Errorf("guard %s interrupted, refusing: %w", g.id, ctx.Err())
	}
	g.sv.done(in, err)
	if err != nil {
		return fmt.Errorf("guard %s failed, refusing: %w", g.id, err)
	}
	if resp.GetRefused() {
		return core.Refusal("%s", resp.GetReason())
	}
	return nil
}

// Status returns the guard's state and counters.
func (g *Guard) Status() Status { return g.sv.status(g.id, core.KindGuard) }

// Report implements core.Reporter.
func (g *Guard) Report() map[string]int64 { return g.sv.report() }

// Shutdown stops the plugin. Safe twice.
func (g *Guard) Shutdown(context.Context) error {
	g.sv.close()
	return nil
}

// Close is Shutdown for io.Closer users.
func (g *Guard) Close() error { return g.Shutdown(context.Background()) }
