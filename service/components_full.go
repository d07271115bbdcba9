//go:build !lite

package service

import (
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/plugins"
	"github.com/e0dc0000/scribe/sinks/postgres"
	"github.com/e0dc0000/scribe/sinks/s3"
)

// Light reports whether this is the light build, which holds no heavy
// component (HeavyTypes).
const Light = false

// heavyFactories are the components with large dependencies: PostgreSQL
// (pgx), S3 (the AWS SDK) and out-of-process plugins (go-plugin, gRPC).
func heavyFactories() []core.Factory {
	return []core.Factory{
		postgres.SinkFactory(),
		s3.SinkFactory(),
		postgres.LoaderFactory(),
		s3.LoaderFactory(),
		// out-of-process plugins: sink, loader and guard of type "plugin"
		plugins.SinkFactory(),
		plugins.LoaderFactory(),
		plugins.GuardFactory(),
	}
}
