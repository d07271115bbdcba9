// Package memcache keeps recent sessions in memory, bounded by bytes. It is
// a sink (the pipeline fills it as entries pass) and a loader (resume asks
// it first, before any file is read).
//
// It serves a session only if it saw the session from its first entry (a
// root row with a null parentUuid, or a compact boundary): a cache that
// joined a session halfway must not pass half a conversation off as whole.
// Whole sessions are evicted, least recently used first.
package memcache

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/e0dc0000/scribe/core"
)

// Config is the block of a memcache component.
type Config struct {
	// MaxBytes bounds the raw bytes kept for all sessions. Default 64 MiB.
	MaxBytes int64 `json:"max_bytes"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() *Config { return &Config{MaxBytes: 64 << 20} }

// Validate implements core.Validator.
func (c *Config) Validate() error {
	if c.MaxBytes <= 0 {
		return fmt.Errorf("max_bytes %d: want a positive number of bytes", c.MaxBytes)
	}
	return nil
}

// Cache is the memory cache: a core.Sink and a core.Loader.
type Cache struct {
	max int64

	mu       sync.Mutex
	sessions map[string]*list.Element // key: SessionRef.Key()
	lru      *list.List               // front = most recent
	bytes    int64
	closed   bool

	hits, misses, evictions, partial atomic.Int64
}

type session struct {
	key      string
	ref      core.SessionRef
	lines    [][]byte
	bytes    int64
	complete bool // the cache saw the session's first entry
	started  bool // a chain entry has been seen
}

var (
	_ core.Sink     = (*Cache)(nil)
	_ core.Loader   = (*Cache)(nil)
	_ core.Reporter = (*Cache)(nil)
)

// New returns a cache holding at most maxBytes of raw lines.
func New(maxBytes int64) *Cache {
	return &Cache{max: maxBytes, sessions: make(map[string]*list.Element), lru: list.New()}
}

// Start implements core.Sink.
func (c *Cache) Start(context.Context) error { return nil }

// Write implements core.Sink: it keeps a copy of each entry.
func (c *Cache) Write(_ context.Context, entries []core.Entry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return core.Permanent(errors.New("memcache: write after shutdown"))
	}
	for i := range entries {
		e := &entries[i]
		if e.SessionID == "" {
			continue
		}
		ref := e.Ref()
		if ref.AgentID == "" && e.AgentID != "" && e.IsMetadata() {
			ref.AgentID = e.AgentID
		}
		key := ref.Key()
		el := c.sessions[key]
		if el == nil {
			el = c.lru.PushFront(&session{key: key, ref: core.SessionRef{SessionID: ref.SessionID, AgentID: ref.AgentID}})
			c.sessions[key] = el
		} else {
			c.lru.MoveToFront(el)
		}
		s := el.Value.(*session)
		if e.IsChain() && !s.started {
			s.started = true
			s.complete = (e.ParentUUID.Present && e.ParentUUID.Null) || e.Subtype == core.SubtypeCompactBoundary
		}
		line := bytes.Clone(e.Raw)
		s.lines = append(s.lines, line)
		s.bytes += int64(len(line))
		c.bytes += int64(len(line))
	}
	c.evict()
	return nil
}

// evict drops least recently used sessions until the cache fits. The most
// recent session stays even if it alone is over the bound.
func (c *Cache) evict() {
	for c.bytes > c.max && c.lru.Len() > 1 {
		el := c.lru.Back()
		s := el.Value.(*session)
		c.lru.Remove(el)
		delete(c.sessions, s.key)
		c.bytes -= s.bytes
		c.evictions.Add(1)
	}
}

// Flush implements core.Sink. The cache holds entries in memory only: it is
// never the store that makes them survive a crash.
func (c *Cache) Flush(context.Context) error { return nil }

// Shutdown implements core.Sink.
func (c *Cache) Shutdown(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

// Volatile implements core.Volatile: the cache promises no durability, so
// what it drops never holds acknowledgements back.
func (c *Cache) Volatile() bool { return true }

// Load implements core.Loader.
func (c *Cache) Load(ctx context.Context, ref core.SessionRef) (*core.Transcript, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memcache: %w", err)
	}
	c.mu.Lock()
	el := c.sessions[ref.Key()]
	if el == nil {
		c.mu.Unlock()
		c.misses.Add(1)
		return nil, fmt.Errorf("memcache: %w", core.ErrNotFound)
	}
	s := el.Value.(*session)
	if !s.complete {
		c.mu.Unlock()
		c.partial.Add(1)
		return nil, fmt.Errorf("memcache: %w (the cache joined the session after its start)", core.ErrNotFound)
	}
	c.lru.MoveToFront(el)
	lines := append([][]byte(nil), s.lines...)
	c.mu.Unlock()
	t := &core.Transcript{Ref: ref, Entries: make([]core.Entry, 0, len(lines))}
	for _, l := range lines {
		e, err := core.ParseEntry(l)
		if err != nil {
			return nil, fmt.Errorf("memcache: cached line: %w", err)
		}
		t.Entries = append(t.Entries, e)
	}
	c.hits.Add(1)
	return t, nil
}

// Report implements core.Reporter.
func (c *Cache) Report() map[string]int64 {
	c.mu.Lock()
	n, b := int64(len(c.sessions)), c.bytes
	c.mu.Unlock()
	return map[string]int64{
		"sessions": n, "bytes": b,
		"hits": c.hits.Load(), "misses": c.misses.Load(),
		"evictions": c.evictions.Load(), "refused_partial": c.partial.Load(),
	}
}

// Factories: the same type serves as a sink and as a loader. The host
// creates one cache per component ID and hands it out for both roles.

type factory struct{ kind core.Kind }

// SinkFactory makes memcache sinks.
func SinkFactory() core.SinkFactory { return factory{core.KindSink} }

// LoaderFactory makes memcache loaders.
func LoaderFactory() core.LoaderFactory { return factory{core.KindLoader} }

func (f factory) Kind() core.Kind  { return f.kind }
func (factory) Type() string       { return "memcache" }
func (factory) DefaultConfig() any { return DefaultConfig() }

func (factory) CreateSink(_ context.Context, set core.Settings, cfg any) (core.Sink, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("sink %s: wrong config type %T", set.ID, cfg)
	}
	return New(c.MaxBytes), nil
}

func (factory) CreateLoader(_ context.Context, set core.Settings, cfg any) (core.Loader, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("loader %s: wrong config type %T", set.ID, cfg)
	}
	return New(c.MaxBytes), nil
}
