package service

import (
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/guards"
	"github.com/e0dc0000/scribe/plugins"
	"github.com/e0dc0000/scribe/processors/filter"
	"github.com/e0dc0000/scribe/processors/redact"
	"github.com/e0dc0000/scribe/sinks/events"
	"github.com/e0dc0000/scribe/sinks/ingress"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/sinks/memcache"
	"github.com/e0dc0000/scribe/sinks/postgres"
	"github.com/e0dc0000/scribe/sinks/s3"
	"github.com/e0dc0000/scribe/sinks/summary"
)

// Builtin lists every built-in component. There is no init()
// registration: adding a component means adding it here.
func Builtin() []core.Factory {
	return []core.Factory{
		// sinks
		jsonl.Factory(),
		memcache.SinkFactory(),
		ingress.Factory(),
		events.Factory(),
		postgres.SinkFactory(),
		s3.SinkFactory(),
		// loaders
		memcache.LoaderFactory(),
		summary.Factory(),
		events.LoaderFactory(),
		postgres.LoaderFactory(),
		s3.LoaderFactory(),
		// guards
		guards.EnvFactory(),
		guards.FlagFactory(),
		guards.ConfigFactory(),
		// a sink behind a processor of its own (built from two blocks)
		redactedFactory{},
		// processors
		filter.Factory(),
		redact.Factory(),
		// out-of-process plugins: sink, loader and guard of type "plugin"
		plugins.SinkFactory(),
		plugins.LoaderFactory(),
		plugins.GuardFactory(),
	}
}
