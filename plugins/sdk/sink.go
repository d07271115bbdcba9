package sdk

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/plugins/internal/shared"
	pb "github.com/e0dc0000/scribe/plugins/proto"
)

// Sink is what a sink plugin implements: core.Sink, with its configuration
// handed to Start as JSON.
//
// Lifecycle: Start once, then Write and Flush, one call at a time, then
// Shutdown. A process that crashes is started again and gets Start again;
// the batches it had taken but not flushed are sent again, with the same
// batch ids (see BatchFrom), so a sink that writes somewhere shared can
// recognise a batch it already holds.
type Sink interface {
	// Start receives the `config` object of the plugin's block ("{}" when
	// there is none). An error here stops scribe from starting.
	Start(ctx context.Context, config json.RawMessage) error
	// Write gets a batch in order. The entries are the plugin's to keep.
	Write(ctx context.Context, entries []core.Entry) error
	// Flush returns nil when every batch written before it is durable.
	Flush(ctx context.Context) error
	// Shutdown flushes and releases what the sink holds.
	Shutdown(ctx context.Context) error
}

// Batch identifies the batch a Write carries.
type Batch struct {
	// Stream names scribe's queue for this sink; it changes only when the
	// queue's spool folder is deleted.
	Stream string
	// ID increases from batch to batch within the stream; a batch sent
	// again keeps its ID and its entries.
	ID uint64
}

// Key returns "<stream>-<id>": an idempotency key for the batch.
func (b Batch) Key() string { return b.Stream + "-" + strconv.FormatUint(b.ID, 10) }

type batchKey struct{}

// BatchFrom returns the batch of the Write whose context ctx is.
func BatchFrom(ctx context.Context) (Batch, bool) {
	b, ok := ctx.Value(batchKey{}).(Batch)
	return b, ok
}

// ServeSink serves impl as a scribe sink plugin. It returns when scribe
// stops the plugin.
func ServeSink(info Info, impl Sink) {
	s := &sinkServer{info: info, impl: impl}
	serve(core.KindSink, info, &shared.SinkPlugin{Impl: s}, s.orphaned)
}

// sinkServer is the gRPC face of a Sink.
type sinkServer struct {
	pb.UnimplementedSinkServer
	info Info
	impl Sink

	mu      sync.Mutex // one call at a time, as the contract promises the sink
	started bool
	stream  string
	last    uint64 // the last batch id this process took
}

func (s *sinkServer) Describe(context.Context, *pb.DescribeRequest) (*pb.Description, error) {
	return s.info.describe(core.KindSink), nil
}

func (s *sinkServer) Start(ctx context.Context, req *pb.StartRequest) (*pb.StartResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		// A host attached again (debug mode) without shutting down first.
		if err := s.impl.Shutdown(ctx); err != nil {
			Logger().Warn("shutdown before a second start failed", "error", err)
		}
		s.started = false
	}
	if err := s.impl.Start(withComponent(ctx, req.GetComponentId()), req.GetConfig()); err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	s.started, s.stream, s.last = true, req.GetStream(), 0
	return &pb.StartResponse{}, nil
}

func (s *sinkServer) Write(ctx context.Context, req *pb.WriteRequest) (*pb.WriteResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return nil, status.Error(codes.FailedPrecondition, "write before start")
	}
	id := req.GetBatchId()
	if id != 0 && id <= s.last {
		// Sent again after a call timed out on the host's side: this
		// process already took it.
		return &pb.WriteResponse{AckedBatchId: id, Durable: s.info.DurableWrites}, nil
	}
	entries, err := shared.EntriesFromProto(req.GetEntries())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "batch %d: %v", id, err)
	}
	ctx = context.WithValue(ctx, batchKey{}, Batch{Stream: s.stream, ID: id})
	if err := s.impl.Write(ctx, entries); err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	s.last = id
	return &pb.WriteResponse{AckedBatchId: id, Durable: s.info.DurableWrites}, nil
}

func (s *sinkServer) Flush(ctx context.Context, _ *pb.FlushRequest) (*pb.FlushResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return nil, status.Error(codes.FailedPrecondition, "flush before start")
	}
	if err := s.impl.Flush(ctx); err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	return &pb.FlushResponse{}, nil
}

func (s *sinkServer) Shutdown(ctx context.Context, _ *pb.ShutdownRequest) (*pb.ShutdownResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return &pb.ShutdownResponse{}, nil
	}
	s.started = false
	if err := s.impl.Shutdown(ctx); err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	return &pb.ShutdownResponse{}, nil
}

func (s *sinkServer) orphaned() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = s.Shutdown(ctx, &pb.ShutdownRequest{})
}
