package backend

import (
	"context"
	"fmt"

	"github.com/e0dc0000/scribe/core"
)

// Store is what a backend's component is: a sink and a loader at once.
type Store interface {
	core.Sink
	core.Loader
}

// storeFactory makes one backend type's components in either role.
type storeFactory[C any] struct {
	kind     core.Kind
	typ      string
	defaults func() *C
	create   func(context.Context, core.Settings, *C) (Store, error)
}

// Factories returns the sink and the loader factory of a backend type
// whose blocks decode into C (defaults gives a fresh *C holding the
// defaults) and whose components create makes.
func Factories[C any](typ string, defaults func() *C, create func(context.Context, core.Settings, *C) (Store, error)) (core.SinkFactory, core.LoaderFactory) {
	return storeFactory[C]{core.KindSink, typ, defaults, create}, storeFactory[C]{core.KindLoader, typ, defaults, create}
}

func (f storeFactory[C]) Kind() core.Kind    { return f.kind }
func (f storeFactory[C]) Type() string       { return f.typ }
func (f storeFactory[C]) DefaultConfig() any { return f.defaults() }

func (f storeFactory[C]) make(ctx context.Context, set core.Settings, cfg any) (Store, error) {
	c, ok := cfg.(*C)
	if !ok {
		return nil, fmt.Errorf("%s %s: wrong config type %T", f.kind, set.ID, cfg)
	}
	return f.create(ctx, set, c)
}

// CreateSink implements core.SinkFactory.
func (f storeFactory[C]) CreateSink(ctx context.Context, set core.Settings, cfg any) (core.Sink, error) {
	return f.make(ctx, set, cfg)
}

// CreateLoader implements core.LoaderFactory.
func (f storeFactory[C]) CreateLoader(ctx context.Context, set core.Settings, cfg any) (core.Loader, error) {
	return f.make(ctx, set, cfg)
}
