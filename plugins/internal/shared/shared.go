// Package shared holds what both sides of the plugin protocol agree on: the
// go-plugin handshake, the plugin set of each protocol version, the reattach
// format, and the conversions between core's types and the wire's.
//
// The host (package plugins) and the SDK (package plugins/sdk) both import
// it; plugin authors never do.
package shared

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/e0dc0000/scribe/core"
	pb "github.com/e0dc0000/scribe/plugins/proto"
)

// ProtocolVersion is the version of the plugin protocol this build speaks.
const ProtocolVersion = 1

// The magic cookie tells a plugin binary that scribe started it. It is not
// a secret: it only keeps a plugin from being run by hand by mistake.
const (
	MagicCookieKey   = "SCRIBE_PLUGIN_MAGIC_COOKIE"
	MagicCookieValue = "6f9c2b1e0d4a4c7b9e3f51a8d2c6e0b7f4a1d9c3e8b2a5f7"
)

// Handshake is the go-plugin handshake of both sides.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   MagicCookieKey,
	MagicCookieValue: MagicCookieValue,
}

// Environment variables the host sets for a plugin (beside go-plugin's own).
const (
	// EnvLogLevel carries the host's log level, so a plugin does not send
	// lines the host would drop.
	EnvLogLevel = "SCRIBE_PLUGIN_LOG_LEVEL"
	// EnvDebug, set to 1 when a developer starts a plugin by hand, makes
	// the SDK serve in debug mode and print its reattach configuration.
	EnvDebug = "SCRIBE_PLUGIN_DEBUG"
	// EnvReattachPrefix + the component name in upper case is the variable
	// the host looks up (in the environment it is given) to attach to a
	// plugin running in a debugger.
	EnvReattachPrefix = "SCRIBE_PLUGIN_REATTACH_"
)

// MaxMessageBytes bounds one gRPC message either way: a batch of entries, a
// page of a loaded session.
const MaxMessageBytes = 256 << 20

// The names of the plugins in a plugin set, one per kind.
const (
	NameSink   = string(core.KindSink)
	NameLoader = string(core.KindLoader)
	NameGuard  = string(core.KindGuard)
)

// HostPlugins is the host's plugin set for each protocol version.
func HostPlugins() map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		1: {
			NameSink:   &SinkPlugin{},
			NameLoader: &LoaderPlugin{},
			NameGuard:  &GuardPlugin{},
		},
	}
}

// SinkPlugin carries the Sink service over go-plugin. The plugin side sets
// Impl; the host side gets a pb.SinkClient from Dispense.
type SinkPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl pb.SinkServer
}

// GRPCServer implements plugin.GRPCPlugin.
func (p *SinkPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterSinkServer(s, p.Impl)
	return nil
}

// GRPCClient implements plugin.GRPCPlugin.
func (p *SinkPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pb.NewSinkClient(c), nil
}

// LoaderPlugin carries the Loader service over go-plugin.
type LoaderPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl pb.LoaderServer
}

// GRPCServer implements plugin.GRPCPlugin.
func (p *LoaderPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterLoaderServer(s, p.Impl)
	return nil
}

// GRPCClient implements plugin.GRPCPlugin.
func (p *LoaderPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pb.NewLoaderClient(c), nil
}

// GuardPlugin carries the Guard service over go-plugin.
type GuardPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl pb.GuardServer
}

// GRPCServer implements plugin.GRPCPlugin.
func (p *GuardPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterGuardServer(s, p.Impl)
	return nil
}

// GRPCClient implements plugin.GRPCPlugin.
func (p *GuardPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pb.NewGuardClient(c), nil
}

// Reattach is the JSON form of go-plugin's ReattachConfig: what a plugin in
// debug mode prints and what the host's `reattach` setting holds.
//
//	{"protocol":"grpc","protocol_version":1,"pid":4242,"test":true,
//	 "addr":{"network":"unix","address":"/tmp/plugin1234"}}
type Reattach struct {
	Protocol        string       `json:"protocol"`
	ProtocolVersion int          `json:"protocol_version"`
	Pid             int          `json:"pid"`
	Test            bool         `json:"test"`
	Addr            ReattachAddr `json:"addr"`
}

// ReattachAddr is a net.Addr as JSON.
type ReattachAddr struct {
	Network string `json:"network"`
	Address string `json:"address"`
}

// ParseReattach decodes and checks a Reattach.
func ParseReattach(s string) (*Reattach, error) {
	var r Reattach
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("reattach configuration: %w", err)
	}
	if r.Protocol != string(plugin.ProtocolGRPC) {
		return nil, fmt.Errorf("reattach configuration: protocol %q: only %q is supported", r.Protocol, plugin.ProtocolGRPC)
	}
	if r.ProtocolVersion != ProtocolVersion {
		return nil, fmt.Errorf("reattach configuration: protocol_version %d: this scribe speaks %d", r.ProtocolVersion, ProtocolVersion)
	}
	switch r.Addr.Network {
	case "unix":
	case "tcp":
		host, _, err := net.SplitHostPort(r.Addr.Address)
		if err != nil {
			return nil, fmt.Errorf("reattach configuration: addr %q: %w", r.Addr.Address, err)
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("reattach configuration: addr %q: only loopback addresses are allowed", r.Addr.Address)
		}
	default:
		return nil, fmt.Errorf("reattach configuration: addr.network %q: want unix or tcp", r.Addr.Network)
	}
	if r.Addr.Address == "" {
		return nil, fmt.Errorf("reattach configuration: addr.address is empty")
	}
	return &r, nil
}

// Config returns the go-plugin form.
func (r *Reattach) Config() (*plugin.ReattachConfig, error) {
	var addr net.Addr
	var err error
	switch r.Addr.Network {
	case "unix":
		addr, err = net.ResolveUnixAddr("unix", r.Addr.Address)
	default:
		addr, err = net.ResolveTCPAddr("tcp", r.Addr.Address)
	}
	if err != nil {
		return nil, fmt.Errorf("reattach configuration: %w", err)
	}
	return &plugin.ReattachConfig{
		Protocol:        plugin.Protocol(r.Protocol),
		ProtocolVersion: r.ProtocolVersion,
		Addr:            addr,
		Pid:             r.Pid,
		Test:            r.Test,
	}, nil
}

// ReattachFrom turns go-plugin's ReattachConfig into its JSON form.
func ReattachFrom(c *plugin.ReattachConfig) Reattach {
	return Reattach{
		Protocol:        string(c.Protocol),
		ProtocolVersion: c.ProtocolVersion,
		Pid:             c.Pid,
		Test:            c.Test,
		Addr:            ReattachAddr{Network: c.Addr.Network(), Address: c.Addr.String()},
	}
}

// EntryToProto copies an entry onto the wire: its raw line, plus the
// routing fields when the host filled them in.
func EntryToProto(e *core.Entry) *pb.Entry {
	return &pb.Entry{Raw: append([]byte(nil), e.Raw...), SessionId: e.SessionID, Cwd: e.CWD}
}

// EntryFromProto parses a wire entry. The entry keeps m.Raw.
func EntryFromProto(m *pb.Entry) (core.Entry, error) {
	e, err := core.ParseEntryOwned(m.GetRaw())
	if err != nil {
		return core.Entry{}, err
	}
	if m.GetSessionId() != "" {
		e.SessionID = m.GetSessionId()
	}
	if m.GetCwd() != "" {
		e.CWD = m.GetCwd()
	}
	return e, nil
}

// EntriesFromProto parses a batch; the first bad line fails it with its
// index.
func EntriesFromProto(ms []*pb.Entry) ([]core.Entry, error) {
	out := make([]core.Entry, len(ms))
	for i, m := range ms {
		e, err := EntryFromProto(m)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", i, err)
		}
		out[i] = e
	}
	return out, nil
}

// RefToProto converts a session reference.
func RefToProto(r core.SessionRef) *pb.SessionRef {
	return &pb.SessionRef{SessionId: r.SessionID, AgentId: r.AgentID, Cwd: r.CWD}
}

// RefFromProto converts a session reference.
func RefFromProto(m *pb.SessionRef) core.SessionRef {
	return core.SessionRef{SessionID: m.GetSessionId(), AgentID: m.GetAgentId(), CWD: m.GetCwd()}
}
