//go:build !lite

package main

import (
	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
)

// needsFull is the light build's hand-over to the full build (lite.go);
// this is the full build, which holds every component.
func needsFull(*config.Config, []byte) error { return nil }

// fullFor is the light build's hand-over for a component type (lite.go).
func fullFor(core.Kind, string) error { return nil }

// buildName says which build this is, for scribe version.
func buildName() string { return "full build" }
