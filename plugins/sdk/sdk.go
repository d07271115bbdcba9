// Package sdk is what a scribe plugin is written against. A plugin is a
// program whose main calls one of ServeSink, ServeLoader or ServeGuard:
//
//	func main() {
//		sdk.ServeSink(sdk.Info{Type: "audit", Version: "1.0.0", Config: defaultConfig()}, &auditSink{})
//	}
//
// scribe starts the program, checks its sha256 first, talks to it over
// gRPC on a Unix socket with mutual TLS (hashicorp/go-plugin), restarts it
// when it crashes or hangs, and stops it when it is done. The plugin gets
// its configuration as JSON (the `config` object of its block in scribe's
// HCL file) in Start or Configure, and logs with Logger: stdout belongs to
// the handshake, and whatever the plugin logs to stderr as hclog JSON is
// re-emitted by scribe under the component's name.
//
// See README.md beside this file for a walk-through: write, build, take
// the sha256, configure, run, debug.
package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/plugins/internal/shared"
	pb "github.com/e0dc0000/scribe/plugins/proto"
)

// ProtocolVersion is the version of scribe's plugin protocol this SDK
// speaks.
const ProtocolVersion = shared.ProtocolVersion

// DebugEnv, set to 1, starts a plugin in debug mode (so does a first
// argument of -debug or --debug): instead of waiting to be started by
// scribe, it serves at once and prints the reattach configuration that
// points scribe at it. See README.md, "Debugging".
const DebugEnv = shared.EnvDebug

// Info is what a plugin says about itself; scribe shows it in
// `scribe plugin describe`.
type Info struct {
	// Type is the plugin's name for what it does ("webhook"). Required.
	Type string
	// Version is the plugin's version ("1.2.0").
	Version string
	// Description is one line for people.
	Description string
	// Config, if set, is the plugin's configuration struct holding its
	// defaults; its JSON Schema is derived from it (see Schema).
	Config any
	// Schema, if set, is the JSON Schema of the configuration, used instead
	// of the one derived from Config.
	Schema json.RawMessage
	// DurableWrites (sinks only) says that a Write returning nil has made
	// the batch durable already, so scribe need not wait for a Flush to
	// forget it. It makes redelivery after a crash rarer.
	DurableWrites bool
}

func (i Info) describe(kind core.Kind) *pb.Description {
	schema := i.Schema
	if len(schema) == 0 {
		schema = Schema(i.Config)
	}
	return &pb.Description{
		Kind:            string(kind),
		Type:            i.Type,
		Version:         i.Version,
		ConfigSchema:    string(schema),
		Description:     i.Description,
		ProtocolVersion: ProtocolVersion,
	}
}

var (
	loggerOnce sync.Once
	logger     hclog.Logger
)

// Logger returns the plugin's logger: hclog JSON lines on stderr, at the
// level scribe runs at. scribe re-emits them under the component's name.
func Logger() hclog.Logger {
	loggerOnce.Do(func() {
		level := hclog.LevelFromString(os.Getenv(shared.EnvLogLevel))
		if level == hclog.NoLevel {
			level = hclog.Info
		}
		logger = hclog.New(&hclog.LoggerOptions{
			Level:      level,
			Output:     os.Stderr,
			JSONFormat: true,
		})
	})
	return logger
}

// DecodeConfig decodes a plugin's configuration into dst (which holds the
// defaults), refusing options dst has no field for, and calls Validate
// when dst has one. Its errors name the option.
func DecodeConfig(raw json.RawMessage, dst any) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		t = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return fmt.Errorf("config: unknown option %s (valid: %s)", name, strings.Join(optionNames(dst), ", "))
		}
		return fmt.Errorf("config: %w", err)
	}
	if v, ok := dst.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("config: %w", err)
		}
	}
	return nil
}

func optionNames(v any) []string {
	var s map[string]any
	_ = json.Unmarshal(Schema(v), &s)
	props, _ := s["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

type componentKey struct{}

// ComponentID returns, in Start or Configure, the "type/name" of the block
// scribe runs the plugin for ("plugin/audit").
func ComponentID(ctx context.Context) string {
	id, _ := ctx.Value(componentKey{}).(string)
	return id
}

func withComponent(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, componentKey{}, id)
}

// serve runs the go-plugin server for one component until scribe stops it.
func serve(kind core.Kind, info Info, p plugin.Plugin, onOrphan func()) {
	if info.Type == "" {
		fmt.Fprintln(os.Stderr, "scribe plugin: sdk.Info.Type is required")
		os.Exit(2)
	}
	cfg := &plugin.ServeConfig{
		HandshakeConfig:  shared.Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{shared.ProtocolVersion: {string(kind): p}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			opts = append(opts,
				grpc.MaxRecvMsgSize(shared.MaxMessageBytes),
				grpc.MaxSendMsgSize(shared.MaxMessageBytes))
			return grpc.NewServer(opts...)
		},
		Logger: Logger(),
	}
	if debugMode() {
		serveDebug(cfg, kind, info)
		return
	}
	if os.Getenv(shared.MagicCookieKey) != shared.MagicCookieValue {
		fmt.Fprintf(os.Stderr, "This is a scribe %s plugin (%s %s). scribe starts it; it is not run by hand.\n"+
			"To debug it, run it with %s=1 and point scribe at it (see the SDK's README).\n",
			kind, info.Type, info.Version, DebugEnv)
		os.Exit(1)
	}
	go watchParent(onOrphan)
	plugin.Serve(cfg)
}

func debugMode() bool {
	if os.Getenv(shared.EnvDebug) == "1" {
		return true
	}
	return len(os.Args) > 1 && (os.Args[1] == "-debug" || os.Args[1] == "--debug")
}

// serveDebug serves without the handshake (the process was started by a
// person or a debugger, not by scribe) and prints how to attach to it.
func serveDebug(cfg *plugin.ServeConfig, kind core.Kind, info Info) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reattach := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	cfg.Test = &plugin.ServeTestConfig{Context: ctx, ReattachConfigCh: reattach, CloseCh: closed}
	go plugin.Serve(cfg)
	select {
	case rc := <-reattach:
		b, _ := json.Marshal(shared.ReattachFrom(rc))
		// stdout: the configuration alone, for scripts; stderr: the how-to.
		fmt.Fprintf(os.Stdout, "%s\n", b)
		fmt.Fprintf(os.Stderr, "scribe %s plugin %q (version %s) is serving in debug mode, pid %d.\n"+
			"Attach scribe to it with, in the plugin's block:\n\n  reattach = %q\n\n"+
			"or in scribe's environment (NAME: the block's name, upper case, '-' as '_'):\n\n  export %sNAME='%s'\n\n"+
			"Stop it with Ctrl-C.\n",
			kind, info.Type, info.Version, os.Getpid(), b, shared.EnvReattachPrefix, b)
	case <-closed:
		fmt.Fprintln(os.Stderr, "scribe plugin: debug server stopped before it was ready")
		os.Exit(1)
	}
	<-closed
}

// watchParent ends the plugin when scribe is gone without stopping it (it
// was killed): the plugin is then a child of init, or of a subreaper.
func watchParent(onOrphan func()) {
	ppid := os.Getppid()
	for {
		time.Sleep(time.Second)
		if os.Getppid() != ppid {
			Logger().Warn("scribe exited without stopping the plugin; exiting", "parent_pid", ppid)
			if onOrphan != nil {
				done := make(chan struct{})
				go func() { defer close(done); onOrphan() }()
				select {
				case <-done:
				case <-time.After(5 * time.Second):
				}
			}
			os.Exit(0)
		}
	}
}
