package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/processors/redact"
)

// A sink of type "redacted" applies a processor to one sink only, the team
// mirror redacted while the local copy stays as Claude Code wrote it:
//
//	sink "redacted" "team" {
//	  processor = "redact/team"   # a processor block
//	  sink      = "events/team"   # a sink block, not itself in pipeline.sinks
//	}
//
// It is built here because it is made of two other components' blocks.

// RedactedConfig is the block of a "redacted" sink.
type RedactedConfig struct {
	Processor string `json:"processor"`
	Sink      string `json:"sink"`
}

// Validate implements core.Validator.
func (c *RedactedConfig) Validate() error {
	if _, err := core.ParseID(c.Processor); err != nil {
		return fmt.Errorf("processor: %w", err)
	}
	if _, err := core.ParseID(c.Sink); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	return nil
}

const redactedType = "redacted"

// redactedFactory makes "redacted" sinks; svc is nil in Builtin(), where
// it only decodes and checks blocks.
type redactedFactory struct{ svc *Service }

func (redactedFactory) Kind() core.Kind    { return core.KindSink }
func (redactedFactory) Type() string       { return redactedType }
func (redactedFactory) DefaultConfig() any { return &RedactedConfig{} }

func (f redactedFactory) CreateSink(ctx context.Context, set core.Settings, cfg any) (core.Sink, error) {
	c, ok := cfg.(*RedactedConfig)
	if !ok {
		return nil, fmt.Errorf("sink %s: wrong config type %T", set.ID, cfg)
	}
	if f.svc == nil {
		return nil, errors.New("a redacted sink is built by service.Build")
	}
	s := f.svc
	pid, _ := core.ParseID(c.Processor)
	sid, _ := core.ParseID(c.Sink)
	if sid.Type == "redacted" {
		return nil, fmt.Errorf("sink %s: sink %s is itself a redacted sink", set.ID, sid)
	}
	for _, id := range s.Config.Pipeline.Sinks {
		if id == sid {
			return nil, fmt.Errorf("sink %s: %s is also in pipeline.sinks: it would get every entry twice, once unredacted", set.ID, sid)
		}
	}
	pf, pc, err := s.decode(core.KindProcessor, pid)
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", set.ID, err)
	}
	procFactory, ok := pf.(core.ProcessorFactory)
	if !ok {
		return nil, fmt.Errorf("sink %s: %s makes no processors", set.ID, pid)
	}
	proc, err := procFactory.CreateProcessor(ctx, s.settings(pid), pc)
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", set.ID, err)
	}
	s.keep(proc)
	sf, sc, err := s.decode(core.KindSink, sid)
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", set.ID, err)
	}
	inner, err := sf.(core.SinkFactory).CreateSink(ctx, s.settings(sid), sc)
	if err != nil {
		return nil, fmt.Errorf("sink %s: %w", set.ID, err)
	}
	return redact.WrapSink(inner, proc), nil
}
