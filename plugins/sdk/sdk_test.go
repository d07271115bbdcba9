package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/plugins/internal/shared"
	pb "github.com/e0dc0000/scribe/plugins/proto"
)

func line(i int) []byte {
	return []byte(fmt.Sprintf(`{"type":"user","uuid":"u%d","sessionId":"s1","cwd":"/w"}`, i))
}

// dispense serves p in-process over a real gRPC connection.
func dispense(t *testing.T, name string, p plugin.Plugin) any {
	t.Helper()
	c, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{name: p})
	t.Cleanup(func() { _ = c.Close() })
	raw, err := c.Dispense(name)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

type memSink struct {
	mu      sync.Mutex
	config  string
	id      string
	lines   []string
	batches []Batch
}

func (s *memSink) Start(ctx context.Context, c json.RawMessage) error {
	s.config, s.id = string(c), ComponentID(ctx)
	return nil
}

func (s *memSink) Write(ctx context.Context, es []core.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := BatchFrom(ctx)
	s.batches = append(s.batches, b)
	for _, e := range es {
		s.lines = append(s.lines, string(e.Raw)+" "+e.SessionID)
	}
	return nil
}
func (s *memSink) Flush(context.Context) error    { return nil }
func (s *memSink) Shutdown(context.Context) error { return nil }

func TestSinkServer(t *testing.T) {
	impl := &memSink{}
	c := dispense(t, "sink", &shared.SinkPlugin{Impl: &sinkServer{info: Info{Type: "mem", DurableWrites: true}, impl: impl}}).(pb.SinkClient)
	ctx := context.Background()
	if _, err := c.Write(ctx, &pb.WriteRequest{BatchId: 1}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("write before start: %v", err)
	}
	if _, err := c.Start(ctx, &pb.StartRequest{Config: []byte(`{"a":1}`), ComponentId: "plugin/x", Stream: "st"}); err != nil {
		t.Fatal(err)
	}
	if impl.config != `{"a":1}` || impl.id != "plugin/x" {
		t.Fatalf("start got config %q id %q", impl.config, impl.id)
	}
	send := func(id uint64, n int) *pb.WriteResponse {
		req := &pb.WriteRequest{BatchId: id}
		for i := range n {
			req.Entries = append(req.Entries, &pb.Entry{Raw: line(int(id)*10 + i), SessionId: "routed"})
		}
		resp, err := c.Write(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := send(1, 2); r.AckedBatchId != 1 || !r.Durable {
		t.Fatalf("ack %+v", r)
	}
	send(1, 2) // sent again after a timeout on the host's side
	send(2, 1)
	if len(impl.lines) != 3 || len(impl.batches) != 2 || impl.batches[1] != (Batch{Stream: "st", ID: 2}) {
		t.Fatalf("lines %q batches %+v", impl.lines, impl.batches)
	}
	if !strings.HasSuffix(impl.lines[0], " routed") {
		t.Fatalf("routing field lost: %q", impl.lines[0])
	}
	if _, err := c.Write(ctx, &pb.WriteRequest{BatchId: 3, Entries: []*pb.Entry{{Raw: []byte("nope")}}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("garbage entry: %v", err)
	}
	d, err := c.Describe(ctx, &pb.DescribeRequest{})
	if err != nil || d.Kind != "sink" || d.Type != "mem" || d.ProtocolVersion != ProtocolVersion {
		t.Fatalf("describe %+v %v", d, err)
	}
}

type memLoader struct{ n int }

func (l *memLoader) Configure(context.Context, json.RawMessage) error { return nil }
func (l *memLoader) Load(_ context.Context, ref core.SessionRef) (*core.Transcript, error) {
	if ref.SessionID != "s1" {
		return nil, fmt.Errorf("no %s: %w", ref.SessionID, core.ErrNotFound)
	}
	t := &core.Transcript{Partial: true, Notes: []string{"n1"}}
	for i := range l.n {
		e, _ := core.ParseEntry(line(i))
		t.Entries = append(t.Entries, e)
	}
	return t, nil
}

func TestLoaderServerPages(t *testing.T) {
	c := dispense(t, "loader", &shared.LoaderPlugin{Impl: &loaderServer{info: Info{Type: "mem"}, impl: &memLoader{n: 5000}}}).(pb.LoaderClient)
	ctx := context.Background()
	if _, err := c.Configure(ctx, &pb.ConfigureRequest{Config: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	st, err := c.Load(ctx, &pb.LoadRequest{Ref: &pb.SessionRef{SessionId: "s1"}, PageBytes: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	pages, n := 0, 0
	var last *pb.LoadPage
	for {
		p, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		pages++
		n += len(p.Entries)
		last = p
	}
	if n != 5000 || pages < 10 || !last.Partial || len(last.Notes) != 1 {
		t.Fatalf("%d entries in %d pages, last %v", n, pages, last.GetNotes())
	}
	st, _ = c.Load(ctx, &pb.LoadRequest{Ref: &pb.SessionRef{SessionId: "s2"}})
	if _, err := st.Recv(); status.Code(err) != codes.NotFound {
		t.Fatalf("miss: %v", err)
	}
}

type refuseAll struct{}

func (refuseAll) Configure(context.Context, json.RawMessage) error { return nil }
func (refuseAll) Check(_ context.Context, e *core.Entry) error {
	if e.CWD == "/ok" {
		return nil
	}
	return core.Refusal("cwd %s is private", e.CWD)
}

func TestGuardServer(t *testing.T) {
	c := dispense(t, "guard", &shared.GuardPlugin{Impl: &guardServer{info: Info{Type: "g"}, impl: refuseAll{}}}).(pb.GuardClient)
	ctx := context.Background()
	if _, err := c.Check(ctx, &pb.CheckRequest{Entry: &pb.Entry{Raw: line(1)}}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("check before configure: %v", err)
	}
	if _, err := c.Configure(ctx, &pb.ConfigureRequest{}); err != nil {
		t.Fatal(err)
	}
	r, err := c.Check(ctx, &pb.CheckRequest{Entry: &pb.Entry{Raw: line(1)}})
	if err != nil || !r.Refused || r.Reason != "cwd /w is private" {
		t.Fatalf("%+v %v", r, err)
	}
	r, err = c.Check(ctx, &pb.CheckRequest{Entry: &pb.Entry{Raw: line(1), Cwd: "/ok"}})
	if err != nil || r.Refused {
		t.Fatalf("host-filled cwd: %+v %v", r, err)
	}
}

type cfg struct {
	URL     string            `json:"url" doc:"where"`
	Retries int               `json:"retries"`
	Headers map[string]string `json:"headers"`
	Tags    []string          `json:"tags"`
	Inner   struct {
		On bool `json:"on"`
	} `json:"inner"`
	secret string
}

func (c *cfg) Validate() error {
	if c.URL == "" {
		return errors.New("url is required")
	}
	return nil
}

func TestSchema(t *testing.T) {
	var s map[string]any
	if err := json.Unmarshal(Schema(&cfg{Retries: 3}), &s); err != nil {
		t.Fatal(err)
	}
	props := s["properties"].(map[string]any)
	if len(props) != 5 || s["additionalProperties"] != false {
		t.Fatalf("%v", s)
	}
	retries := props["retries"].(map[string]any)
	if retries["type"] != "integer" || retries["default"] != float64(3) {
		t.Fatalf("retries %v", retries)
	}
	if props["url"].(map[string]any)["description"] != "where" || props["headers"].(map[string]any)["type"] != "object" ||
		props["tags"].(map[string]any)["items"].(map[string]any)["type"] != "string" {
		t.Fatalf("%v", props)
	}
	if string(Schema(nil)) == "" {
		t.Fatal("no schema for nil")
	}
}

func TestDecodeConfig(t *testing.T) {
	c := &cfg{Retries: 3}
	if err := DecodeConfig([]byte(`{"url":"http://x"}`), c); err != nil || c.Retries != 3 || c.URL != "http://x" {
		t.Fatalf("%+v %v", c, err)
	}
	err := DecodeConfig([]byte(`{"url":"x","colour":1}`), &cfg{})
	if err == nil || !strings.Contains(err.Error(), `unknown option "colour" (valid: headers, inner, retries, tags, url)`) {
		t.Fatalf("unknown option: %v", err)
	}
	if err := DecodeConfig(nil, &cfg{}); err == nil || !strings.Contains(err.Error(), "url is required") {
		t.Fatalf("validate: %v", err)
	}
}
