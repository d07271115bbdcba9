package cmdutil

import (
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/service"
)

// Factories lists every built-in component of this build (service.Builtin
// is the one list).
func Factories() []core.Factory { return service.Builtin() }

// FindFactory is the factory of a component type; in the light build, a
// type only the full build holds hands the command to it (FullFor).
func (f *Factory) FindFactory(kind core.Kind, typ string) (core.Factory, error) {
	if f.FullFor != nil {
		if err := f.FullFor(kind, typ); err != nil {
			return nil, err
		}
	}
	return service.FindFactory(Factories(), kind, typ)
}
