package plugins

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/spool"
	pb "github.com/e0dc0000/scribe/plugins/proto"
)

// Description is what a plugin binary says about itself.
type Description struct {
	Path            string          `json:"path"`
	SHA256          string          `json:"sha256"`
	Kind            string          `json:"kind"`
	Type            string          `json:"type"`
	Version         string          `json:"version"`
	Description     string          `json:"description,omitempty"`
	ProtocolVersion uint32          `json:"protocol_version"`
	ConfigSchema    json.RawMessage `json:"config_schema"`
}

// DescribeOptions tunes Describe.
type DescribeOptions struct {
	// Args are passed to the binary.
	Args []string
	// Environ is the host environment PATH, HOME and TMPDIR are taken from.
	Environ []string
	// StartTimeout bounds the whole; default 10s.
	StartTimeout time.Duration
	// Logger receives the plugin's log lines; default none.
	Logger hclog.Logger
}

// Describe starts the plugin binary at path just long enough to ask what
// it is (its kind, type, version and configuration schema), then stops it.
// It trusts the binary as it is: the sha256 it reports is the one to put in
// the configuration.
func Describe(ctx context.Context, path string, opts DescribeOptions) (*Description, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if err := executable(abs); err != nil {
		return nil, err
	}
	sum, err := FileSHA256(abs)
	if err != nil {
		return nil, fmt.Errorf("read plugin binary: %w", err)
	}
	raw, _ := hex.DecodeString(sum)
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 10 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	cfg := &Config{Command: abs, Args: opts.Args, SHA256: sum, StartTimeout: opts.StartTimeout.String(), CallTimeout: opts.StartTimeout.String(), QueueSize: 1}
	set := core.Settings{ID: core.ID{Type: "plugin", Name: "describe"}, Logger: log, Environ: opts.Environ}
	r, err := resolve(set, cfg)
	if err != nil {
		return nil, err
	}
	r.reattach = nil
	r.sum = raw
	l := &launcher{id: set.ID, cfg: r, log: log}
	in, err := l.connect()
	if err != nil {
		return nil, err
	}
	defer in.stop(stopGrace)
	for _, kind := range []core.Kind{core.KindSink, core.KindLoader, core.KindGuard} {
		err := l.bind(ctx, in, kind)
		if err == nil {
			return describeFrom(abs, sum, in.desc), nil
		}
		if !errors.Is(err, ErrWrongKind) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: %s serves none of sink, loader, guard", ErrWrongKind, abs)
}

func describeFrom(path, sum string, d *pb.Description) *Description {
	schema := json.RawMessage(d.GetConfigSchema())
	if !json.Valid(schema) {
		schema, _ = json.Marshal(d.GetConfigSchema())
	}
	return &Description{
		Path: path, SHA256: sum, Kind: d.GetKind(), Type: d.GetType(), Version: d.GetVersion(),
		Description: d.GetDescription(), ProtocolVersion: d.GetProtocolVersion(), ConfigSchema: schema,
	}
}

// ProbeResult is what Probe found out about a configured plugin component.
type ProbeResult struct {
	Status
	// StartTime is how long launch, handshake, Describe and Start (or
	// Configure) took.
	StartTime time.Duration `json:"start_ns"`
	// Spool is what a sink's spool holds on disk (possibly in use by a
	// running scribe): entries waiting for the plugin.
	Spool *spool.BatchStats `json:"spool,omitempty"`
}

// Probe starts a configured plugin component the way the host would (the
// sha256 check, the environment, the handshake, Describe, and Start or
// Configure with its configuration), reports what it found, and stops it.
// A sink's queue is not touched: its spool is only read.
func Probe(ctx context.Context, kind core.Kind, set core.Settings, cfg *Config) ProbeResult {
	res := ProbeResult{Status: Status{ID: set.ID.String(), Kind: string(kind), State: StateFailed, Counters: map[string]int64{}}}
	if kind == core.KindSink && set.Host.ConfigDir != "" {
		if st, err := spool.InspectBatches(SpoolDir(set.Host.ConfigDir, set.ID)); err == nil {
			res.Spool = &st
			res.Queued, res.Spooled = st.Entries, st.Entries
		}
	}
	r, err := resolve(set, cfg)
	if err != nil {
		res.LastError = err.Error()
		return res
	}
	log := set.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	start := time.Now()
	l := &launcher{id: set.ID, kind: kind, cfg: r, log: log}
	in, err := l.launch(ctx)
	if err != nil {
		res.LastError = err.Error()
		return res
	}
	defer in.stop(stopGrace)
	cctx, cancel := context.WithTimeout(ctx, r.startTimeout)
	defer cancel()
	switch kind {
	case core.KindSink:
		c := in.stub.(pb.SinkClient)
		if _, err = c.Start(cctx, &pb.StartRequest{Config: r.pluginConfig(), ComponentId: set.ID.String(), Stream: "probe"}); err == nil {
			_, err = c.Shutdown(cctx, &pb.ShutdownRequest{})
		}
	case core.KindLoader:
		_, err = in.stub.(pb.LoaderClient).Configure(cctx, &pb.ConfigureRequest{Config: r.pluginConfig(), ComponentId: set.ID.String()})
	case core.KindGuard:
		_, err = in.stub.(pb.GuardClient).Configure(cctx, &pb.ConfigureRequest{Config: r.pluginConfig(), ComponentId: set.ID.String()})
	}
	res.StartTime = time.Since(start)
	res.PID = in.pid()
	res.Reattached = in.reattached
	res.PluginType = in.desc.GetType()
	res.PluginVersion = in.desc.GetVersion()
	if err != nil {
		res.LastError = fmt.Sprintf("plugin refused its configuration: %v", callError(err))
		return res
	}
	res.State = StateOK
	return res
}
