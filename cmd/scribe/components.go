package main

import (
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/guards"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// factories lists every built-in component. There is no init()
// registration: adding a component means adding it here.
func factories() []core.Factory {
	return []core.Factory{
		// sinks
		jsonl.Factory(),
		// guards
		guards.EnvFactory(),
		guards.FlagFactory(),
		guards.ConfigFactory(),
	}
}

// cloudSinkTypes are the sink types that talk to a server; while one is
// configured the local store drains every 10 ms.
var cloudSinkTypes = map[string]bool{"ingress": true, "events": true}
