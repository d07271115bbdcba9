package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/plugins/internal/shared"
	pb "github.com/e0dc0000/scribe/plugins/proto"
)

// Loader is what a loader plugin implements: core.Loader, with its
// configuration handed to Configure as JSON first. Load may be called from
// several goroutines at once.
type Loader interface {
	// Configure receives the `config` object of the plugin's block.
	Configure(ctx context.Context, config json.RawMessage) error
	// Load returns the session's entries in file order, or an error
	// wrapping core.ErrNotFound.
	Load(ctx context.Context, ref core.SessionRef) (*core.Transcript, error)
}

// StreamLoader is an optional interface of a Loader that hands a large
// session over entry by entry instead of holding it whole; the SDK sends
// the entries to scribe in pages as they come. emit returns an error when
// scribe has stopped listening; LoadStream should return it.
type StreamLoader interface {
	LoadStream(ctx context.Context, ref core.SessionRef, emit func(core.Entry) error) (partial bool, notes []string, err error)
}

// ServeLoader serves impl as a scribe loader plugin. It returns when scribe
// stops the plugin.
func ServeLoader(info Info, impl Loader) {
	serve(core.KindLoader, info, &shared.LoaderPlugin{Impl: &loaderServer{info: info, impl: impl}}, nil)
}

// pageBytes is the default size of one page of a loaded session.
const pageBytes = 1 << 20

type loaderServer struct {
	pb.UnimplementedLoaderServer
	info Info
	impl Loader

	mu         sync.RWMutex
	configured bool
}

func (s *loaderServer) Describe(context.Context, *pb.DescribeRequest) (*pb.Description, error) {
	return s.info.describe(core.KindLoader), nil
}

func (s *loaderServer) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.impl.Configure(withComponent(ctx, req.GetComponentId()), req.GetConfig()); err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	s.configured = true
	return &pb.ConfigureResponse{}, nil
}

func (s *loaderServer) Load(req *pb.LoadRequest, stream pb.Loader_LoadServer) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.configured {
		return status.Error(codes.FailedPrecondition, "load before configure")
	}
	ctx := stream.Context()
	ref := shared.RefFromProto(req.GetRef())
	limit := int(req.GetPageBytes())
	if limit <= 0 {
		limit = pageBytes
	}
	p := &pager{stream: stream, limit: limit}
	var partial bool
	var notes []string
	var err error
	if sl, ok := s.impl.(StreamLoader); ok {
		partial, notes, err = sl.LoadStream(ctx, ref, p.add)
	} else {
		var t *core.Transcript
		t, err = s.impl.Load(ctx, ref)
		if err == nil && t != nil {
			for i := range t.Entries {
				if err = p.add(t.Entries[i]); err != nil {
					break
				}
			}
			partial, notes = t.Partial, t.Notes
		}
	}
	if errors.Is(err, core.ErrNotFound) {
		return status.Error(codes.NotFound, err.Error())
	}
	if err != nil {
		if p.sendErr != nil {
			return p.sendErr
		}
		return status.Error(codes.Unknown, err.Error())
	}
	return p.finish(partial, notes)
}

// pager gathers entries into pages of about limit bytes.
type pager struct {
	stream  pb.Loader_LoadServer
	limit   int
	page    []*pb.Entry
	size    int
	sendErr error
}

func (p *pager) add(e core.Entry) error {
	if p.sendErr != nil {
		return p.sendErr
	}
	p.page = append(p.page, shared.EntryToProto(&e))
	p.size += len(e.Raw) + 16
	if p.size >= p.limit {
		if err := p.stream.Send(&pb.LoadPage{Entries: p.page}); err != nil {
			p.sendErr = err
			return err
		}
		p.page, p.size = nil, 0
	}
	return nil
}

func (p *pager) finish(partial bool, notes []string) error {
	return p.stream.Send(&pb.LoadPage{Entries: p.page, Partial: partial, Notes: notes})
}
