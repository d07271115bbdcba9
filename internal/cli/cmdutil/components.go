package main

import (
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/service"
)

// factories lists every built-in component (service.Builtin is the one
// list).
func factories() []core.Factory { return service.Builtin() }

func findFactory(kind core.Kind, typ string) (core.Factory, error) {
	if err := fullFor(kind, typ); err != nil {
		return nil, err
	}
	return service.FindFactory(factories(), kind, typ)
}
