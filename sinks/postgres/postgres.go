// Package postgres stores sessions in a PostgreSQL table laid out as the
// Agent SDK's reference PostgreSQL SessionStore adapter lays it out, so an
// SDK app using that adapter and scribe share one table. It is a sink, a
// loader and a listing (backend.Lister).
//
// The table (default claude_session_entries):
//
//	id          bigserial primary key   append order
//	project_key text not null           the sanitized cwd (claudedir.SanitizePath)
//	session_id  text not null
//	subpath     text                    NULL, or subagents/agent-<id>
//	entry       jsonb not null          the line as an object (the adapter's column)
//	created_at  timestamptz not null default now()
//	raw         text                    scribe: the exact line, so loads give back Claude Code's bytes
//	uuid        text                    scribe: the entry's uuid, stored once per transcript
//
// with the adapter's index on (project_key, session_id, subpath, id) and
// scribe's unique index on (project_key, session_id, subpath with NULL as
// the empty string, uuid) where uuid is not null. Start creates the table, or adds scribe's
// columns and index to a table the adapter made; rows without raw (written
// by the adapter) are read from entry.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/ident"
	"github.com/e0dc0000/scribe/sinks/backend"
)

// DefaultTable is the reference adapter's table name.
const DefaultTable = "claude_session_entries"

// Config is the block of a postgres component.
type Config struct {
	// URL is the connection string (postgres://user@host:port/db?...). A
	// password is better given through PGPASSFILE or the server's own
	// authentication than written here.
	URL string `json:"url"`
	// Table is the table's name, optionally schema-qualified.
	Table string `json:"table"`
	// MaxConns bounds the connection pool.
	MaxConns int32 `json:"max_conns"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() *Config { return &Config{Table: DefaultTable, MaxConns: 4} }

// Validate implements core.Validator.
func (c *Config) Validate() error {
	if c.URL == "" {
		return errors.New(`url: required, e.g. "postgres://scribe@127.0.0.1:5432/scribe"`)
	}
	if _, err := pgxpool.ParseConfig(c.URL); err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if !validTable(c.Table) {
		return fmt.Errorf("table %q: want a name of letters, digits and '_' (optionally schema.name)", c.Table)
	}
	if c.MaxConns <= 0 {
		return fmt.Errorf("max_conns %d: want a positive number", c.MaxConns)
	}
	return nil
}

// Store is the PostgreSQL backend: a core.Sink, core.Loader, core.Seeder
// and backend.Lister.
type Store struct {
	cfg     Config
	log     hclog.Logger
	workDir string
	table   string // quoted identifier
	index   string // prefix for index names

	mu     sync.Mutex
	pool   *pgxpool.Pool
	closed bool
	// projects remembers each session's project key, so its metadata
	// lines (which carry no cwd) land beside its entries.
	projects map[string]string

	inserted, duplicates, nulRepaired, legacyRows, eventsSkipped, statements atomic.Int64
}

var (
	_ core.Sink       = (*Store)(nil)
	_ core.Idempotent = (*Store)(nil)
	_ core.Loader     = (*Store)(nil)
	_ core.Seeder     = (*Store)(nil)
	_ core.Reporter   = (*Store)(nil)
	_ backend.Lister  = (*Store)(nil)

	_ core.EntryChecker = (*Store)(nil)
)

// CheckEntry implements core.EntryChecker.
func (s *Store) CheckEntry(e *core.Entry) error { return backend.CheckEntry("postgres", e) }

// New returns an unstarted store. workDir is the project of entries that
// carry no cwd and belong to no session seen before.
func New(cfg Config, log hclog.Logger, workDir string) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	q := pgx.Identifier{cfg.Table}
	base := cfg.Table
	if schema, name, ok := cut(cfg.Table); ok {
		q, base = pgx.Identifier{schema, name}, name
	}
	return &Store{cfg: cfg, log: log, workDir: workDir, table: q.Sanitize(), index: base, projects: map[string]string{}}, nil
}

func cut(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == '.' {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

// Start connects and creates or migrates the table.
func (s *Store) Start(ctx context.Context) error {
	_, err := s.db(ctx)
	return err
}

// db returns the pool, connecting and migrating on first use (a store used
// only as a loader is never started by the pipeline).
func (s *Store) db(ctx context.Context) (*pgxpool.Pool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, core.Permanent(errors.New("postgres: store is shut down"))
	}
	if s.pool != nil {
		return s.pool, nil
	}
	pc, err := pgxpool.ParseConfig(s.cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres: url: %w", err)
	}
	pc.MaxConns = s.cfg.MaxConns
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if err := s.migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	s.pool = pool
	return pool, nil
}

// migrate creates the table as the reference adapter does, then adds
// scribe's columns and indexes when they are missing. It is idempotent and
// runs under an advisory lock so that several scribe processes starting at
// once do not race.
func (s *Store) migrate(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Release()
	stmts := []string{
		`SELECT pg_advisory_lock(hashtext('scribe-migrate:' || $1))`,
		`CREATE TABLE IF NOT EXISTS ` + s.table + ` (
			id BIGSERIAL PRIMARY KEY,
			project_key TEXT NOT NULL,
			session_id TEXT NOT NULL,
			subpath TEXT,
			entry JSONB NOT NULL,
			created_at TIMESTAMPTZ NOT NULL DEFAULT NOW())`,
		`CREATE INDEX IF NOT EXISTS ` + pgx.Identifier{s.index + "_session_idx"}.Sanitize() + ` ON ` + s.table +
			` (project_key, session_id, subpath, id)`,
		`ALTER TABLE ` + s.table + ` ADD COLUMN IF NOT EXISTS raw TEXT`,
		`ALTER TABLE ` + s.table + ` ADD COLUMN IF NOT EXISTS uuid TEXT`,
		`CREATE UNIQUE INDEX IF NOT EXISTS ` + pgx.Identifier{s.index + "_uuid_key"}.Sanitize() + ` ON ` + s.table +
			` (project_key, session_id, (COALESCE(subpath, '')), uuid) WHERE uuid IS NOT NULL`,
		// Loads by session id alone (no project key known) use it.
		`CREATE INDEX IF NOT EXISTS ` + pgx.Identifier{s.index + "_session_id_idx"}.Sanitize() + ` ON ` + s.table + ` (session_id)`,
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtext('scribe-migrate:' || $1))`, s.cfg.Table)
	for i, q := range stmts {
		var args []any
		if i == 0 {
			args = []any{s.cfg.Table}
		}
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			return fmt.Errorf("postgres: create or migrate table %s: %w", s.cfg.Table, err)
		}
	}
	return nil
}

// Flush implements core.Sink. Every Write commits before it returns, so
// there is nothing left to make durable.
func (s *Store) Flush(ctx context.Context) error { return ctx.Err() }

// Shutdown implements core.Sink: it closes the pool. Safe twice and
// without Start.
func (s *Store) Shutdown(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pool != nil {
		s.pool.Close()
		s.pool = nil
	}
	s.closed = true
	return nil
}

// Report implements core.Reporter.
func (s *Store) Report() map[string]int64 {
	return map[string]int64{
		"inserted": s.inserted.Load(), "duplicates": s.duplicates.Load(), "insert_statements": s.statements.Load(),
		"nul_repaired": s.nulRepaired.Load(), "rows_without_raw": s.legacyRows.Load(), "events_skipped": s.eventsSkipped.Load(),
	}
}

// SinkFactory makes postgres sinks.
func SinkFactory() core.SinkFactory { s, _ := factories(); return s }

// LoaderFactory makes postgres loaders (the same component as the sink).
func LoaderFactory() core.LoaderFactory { _, l := factories(); return l }

func factories() (core.SinkFactory, core.LoaderFactory) {
	return backend.Factories("postgres", DefaultConfig, func(_ context.Context, set core.Settings, c *Config) (backend.Store, error) {
		st, err := New(*c, set.Logger, set.Host.WorkDir)
		if err != nil {
			return nil, err
		}
		return st, nil
	})
}

// Idempotent implements core.Idempotent: each uuid is stored (or served)
// once, so an entry written again changes nothing.
func (s *Store) Idempotent() bool { return true }

// validTable reports whether t is a SQL name, optionally schema-qualified.
func validTable(t string) bool {
	if schema, name, ok := strings.Cut(t, "."); ok {
		return ident.SQLName(schema) && ident.SQLName(name)
	}
	return ident.SQLName(t)
}
