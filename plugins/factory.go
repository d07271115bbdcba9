// Package plugins runs scribe's out-of-process components: sinks, loaders
// and guards that third parties build against plugins/sdk and that scribe
// starts as separate processes through hashicorp/go-plugin, over gRPC.
//
// The host side checks a binary's sha256 before every start, gives it only
// an allow-listed environment, speaks to it over a Unix socket with mutual
// TLS (AutoMTLS), re-emits its log lines under the component's name, and
// restarts it when it crashes or hangs. A plugin sink sits behind a queue
// of its own, spilling to disk, so nothing the plugin does reaches the
// pipeline or the other sinks.
//
// All three kinds are configured the same way, with the type "plugin":
//
//	sink "plugin" "audit" {
//	  command = "/usr/local/lib/scribe/audit-sink"
//	  sha256  = "…"
//	  config  = { url = "http://127.0.0.1:8080/audit" }
//	}
//
// The protocol is plugins/proto/scribe.proto (version 1); the SDK for
// plugin authors is plugins/sdk; examples are in plugins/examples.
package plugins

import (
	"context"
	"fmt"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/plugins/internal/shared"
)

// Type is the component type of every plugin component.
const Type = "plugin"

// The handshake, for those who build plugins without the SDK.
const (
	ProtocolVersion  = shared.ProtocolVersion
	MagicCookieKey   = shared.MagicCookieKey
	MagicCookieValue = shared.MagicCookieValue
)

// SinkFactory creates plugin sinks.
func SinkFactory() core.SinkFactory { return sinkFactory{} }

// LoaderFactory creates plugin loaders.
func LoaderFactory() core.LoaderFactory { return loaderFactory{} }

// GuardFactory creates plugin guards.
func GuardFactory() core.GuardFactory { return guardFactory{} }

type sinkFactory struct{}

func (sinkFactory) Kind() core.Kind    { return core.KindSink }
func (sinkFactory) Type() string       { return Type }
func (sinkFactory) DefaultConfig() any { return DefaultConfig() }

func (sinkFactory) CreateSink(_ context.Context, set core.Settings, cfg any) (core.Sink, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("sink %s: wrong config type %T", set.ID, cfg)
	}
	return NewSink(set, c)
}

type loaderFactory struct{}

func (loaderFactory) Kind() core.Kind    { return core.KindLoader }
func (loaderFactory) Type() string       { return Type }
func (loaderFactory) DefaultConfig() any { return DefaultConfig() }

func (loaderFactory) CreateLoader(ctx context.Context, set core.Settings, cfg any) (core.Loader, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("loader %s: wrong config type %T", set.ID, cfg)
	}
	return NewLoader(ctx, set, c)
}

type guardFactory struct{}

func (guardFactory) Kind() core.Kind    { return core.KindGuard }
func (guardFactory) Type() string       { return Type }
func (guardFactory) DefaultConfig() any { return DefaultConfig() }

func (guardFactory) CreateGuard(ctx context.Context, set core.Settings, cfg any) (core.Guard, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("guard %s: wrong config type %T", set.ID, cfg)
	}
	return NewGuard(ctx, set, c)
}
