// Package filter is a processor that drops entries by type or subtype
// before any sink sees them: a mirror that should not carry `progress`
// rows, say. Every drop is counted, by type, with its reason.
package filter

import (
	"context"
	"fmt"
	"sync"

	"github.com/e0dc0000/scribe/core"
)

// Config is the processor's block:
//
//	processor "filter" "noise" {
//	  drop_types    = ["progress"]
//	  drop_subtypes = ["api_error"]
//	}
type Config struct {
	// DropTypes are entry types dropped ("progress", "queue-operation").
	DropTypes []string `json:"drop_types"`
	// DropSubtypes are system subtypes dropped ("api_error").
	DropSubtypes []string `json:"drop_subtypes"`
}

// Validate implements core.Validator.
func (c *Config) Validate() error {
	for _, t := range c.DropTypes {
		if t == core.TypeUser || t == core.TypeAssistant {
			return fmt.Errorf("drop_types %q: dropping conversation rows breaks every session's chain", t)
		}
		if t == "" {
			return fmt.Errorf("drop_types: an empty type")
		}
	}
	return nil
}

// Processor drops the entries its Config names.
type Processor struct {
	types, subtypes map[string]bool
	mu              sync.Mutex
	dropped         map[string]int64
}

var (
	_ core.Processor = (*Processor)(nil)
	_ core.Reporter  = (*Processor)(nil)
)

// New returns a filter for c.
func New(c Config) *Processor {
	p := &Processor{types: map[string]bool{}, subtypes: map[string]bool{}, dropped: map[string]int64{}}
	for _, t := range c.DropTypes {
		p.types[t] = true
	}
	for _, t := range c.DropSubtypes {
		p.subtypes[t] = true
	}
	return p
}

// Process implements core.Processor: it returns e itself or drops it.
func (p *Processor) Process(_ context.Context, e core.Entry) (core.Entry, error) {
	key := ""
	switch {
	case p.types[e.Type]:
		key = e.Type
	case e.Type == core.TypeSystem && e.Subtype != "" && p.subtypes[e.Subtype]:
		key = "system/" + e.Subtype
	default:
		return e, nil
	}
	p.mu.Lock()
	p.dropped[key]++
	p.mu.Unlock()
	return e, fmt.Errorf("%w: type %s is filtered out", core.ErrDropped, key)
}

// Report implements core.Reporter: drops by type.
func (p *Processor) Report() map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int64, len(p.dropped))
	for k, v := range p.dropped {
		out["dropped_"+k] = v
	}
	return out
}

// Factory makes filter processors.
func Factory() core.ProcessorFactory { return factory{} }

type factory struct{}

func (factory) Kind() core.Kind    { return core.KindProcessor }
func (factory) Type() string       { return "filter" }
func (factory) DefaultConfig() any { return &Config{} }

func (factory) CreateProcessor(_ context.Context, set core.Settings, cfg any) (core.Processor, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("processor %s: wrong config type %T", set.ID, cfg)
	}
	return New(*c), nil
}
