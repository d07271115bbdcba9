package service

import (
	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/guards"
	"github.com/e0dc0000/scribe/processors/filter"
	"github.com/e0dc0000/scribe/processors/redact"
	"github.com/e0dc0000/scribe/sinks/events"
	"github.com/e0dc0000/scribe/sinks/ingress"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/sinks/memcache"
	"github.com/e0dc0000/scribe/sinks/summary"
)

// Builtin lists every built-in component of this build. There is no
// init() registration: adding a component means adding it here, or to
// heavyFactories (components_full.go) when it brings a large dependency
// (a database driver, a cloud SDK, RPC), which the light build leaves out.
func Builtin() []core.Factory {
	return append([]core.Factory{
		// sinks
		jsonl.Factory(),
		memcache.SinkFactory(),
		ingress.Factory(),
		events.Factory(),
		// loaders
		memcache.LoaderFactory(),
		summary.Factory(func(dir string) summary.Transcripts { return jsonl.Layout{ConfigDir: dir} }),
		events.LoaderFactory(),
		// guards
		guards.EnvFactory(),
		guards.FlagFactory(),
		guards.ConfigFactory(),
		// a sink behind a processor of its own (built from two blocks)
		redactedFactory{},
		// processors
		filter.Factory(),
		redact.Factory(),
	}, heavyFactories()...)
}

// HeavyTypes are the component types only the full build holds, by kind:
// a light build (`-tags lite`) that is to build one hands the command to
// the full binary. TestHeavyTypes keeps the list equal to what
// heavyFactories returns.
var HeavyTypes = map[core.Kind][]string{
	core.KindSink:   {"postgres", "s3", "plugin"},
	core.KindLoader: {"postgres", "s3", "plugin"},
	core.KindGuard:  {"plugin"},
}

// IsHeavy reports whether a component type is one only the full build
// holds.
func IsHeavy(kind core.Kind, typ string) bool {
	for _, t := range HeavyTypes[kind] {
		if t == typ {
			return true
		}
	}
	return false
}

// FullOnly returns the first component the configuration puts to use
// (pipeline sinks, guards and processors, the parts of a redacted sink,
// resume loaders) whose type only the full build holds; ok is false when
// the light build can run it. Blocks declared and not used do not count:
// the built-in configuration declares postgres, s3 and plugin examples.
func FullOnly(cfg *config.Config) (kind core.Kind, id core.ID, ok bool) {
	p := cfg.Pipeline
	for _, use := range []struct {
		kind core.Kind
		ids  []core.ID
	}{{core.KindSink, p.Sinks}, {core.KindGuard, p.Guards}, {core.KindProcessor, p.Processors}, {core.KindLoader, cfg.Resume.Loaders}} {
		for _, id := range use.ids {
			if IsHeavy(use.kind, id.Type) {
				return use.kind, id, true
			}
			if use.kind != core.KindSink || id.Type != redactedType {
				continue
			}
			comp, found := cfg.Lookup(core.KindSink, id)
			var rc RedactedConfig
			if !found || comp.Decode(&rc) != nil {
				continue // service.Build says what is wrong
			}
			if sid, err := core.ParseID(rc.Sink); err == nil && IsHeavy(core.KindSink, sid.Type) {
				return core.KindSink, sid, true
			}
		}
	}
	return "", core.ID{}, false
}
