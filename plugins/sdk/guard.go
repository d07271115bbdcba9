package sdk

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/plugins/internal/shared"
	pb "github.com/e0dc0000/scribe/plugins/proto"
)

// Guard is what a guard plugin implements: core.Guard, with its
// configuration handed to Configure as JSON first. Check may be called from
// several goroutines at once.
type Guard interface {
	// Configure receives the `config` object of the plugin's block.
	Configure(ctx context.Context, config json.RawMessage) error
	// Check returns nil to allow the entry, or an error saying why not
	// (core.Refusal builds one). It must not change the entry.
	Check(ctx context.Context, e *core.Entry) error
}

// ServeGuard serves impl as a scribe guard plugin. It returns when scribe
// stops the plugin.
func ServeGuard(info Info, impl Guard) {
	serve(core.KindGuard, info, &shared.GuardPlugin{Impl: &guardServer{info: info, impl: impl}}, nil)
}

type guardServer struct {
	pb.UnimplementedGuardServer
	info Info
	impl Guard

	mu         sync.RWMutex
	configured bool
}

func (s *guardServer) Describe(context.Context, *pb.DescribeRequest) (*pb.Description, error) {
	return s.info.describe(core.KindGuard), nil
}

func (s *guardServer) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.impl.Configure(withComponent(ctx, req.GetComponentId()), req.GetConfig()); err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	s.configured = true
	return &pb.ConfigureResponse{}, nil
}

func (s *guardServer) Check(ctx context.Context, req *pb.CheckRequest) (*pb.CheckResponse, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.configured {
		return nil, status.Error(codes.FailedPrecondition, "check before configure")
	}
	e, err := shared.EntryFromProto(req.GetEntry())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := s.impl.Check(ctx, &e); err != nil {
		reason := strings.TrimPrefix(err.Error(), core.ErrPersistenceDisabled.Error()+": ")
		return &pb.CheckResponse{Refused: true, Reason: reason}, nil
	}
	return &pb.CheckResponse{}, nil
}
