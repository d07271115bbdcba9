package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/backend"
)

// maxInsertBytes and maxInsertRows bound one INSERT statement.
const (
	maxInsertBytes = 8 << 20
	maxInsertRows  = 5000
)

// Write implements core.Sink: the batch is one INSERT per 8 MiB or 5000
// rows (the rows passed as arrays and unnested: a function scan yields
// them in array order, so ids follow the batch's order; no sort, which
// would spill large batches to disk), each committed before the next
// starts and all before Write returns. A uuid already stored for the
// transcript is skipped by the unique index and counted as a duplicate.
// When a statement fails, the entries before it are stored: the error is
// a core.PartialError saying how many.
func (s *Store) Write(ctx context.Context, entries []core.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	if _, err := s.db(ctx); err != nil {
		return err
	}
	keys, err := s.projectKeys(ctx, entries)
	if err != nil {
		return err
	}
	var b insertBatch
	start := 0 // the first entry of the batch being built
	for i := range entries {
		e := &entries[i]
		if e.SessionID == "" {
			if err := s.insert(ctx, &b, start); err != nil {
				return err
			}
			return &core.PartialError{N: i, Err: s.CheckEntry(e)}
		}
		sub, skip := backend.EntrySubpath(e)
		if skip {
			s.eventsSkipped.Add(1)
			continue
		}
		b.add(keys[e.SessionID], e, sub, s.jsonbText(string(e.Raw)))
		if b.bytes >= maxInsertBytes || len(b.raws) >= maxInsertRows {
			if err := s.insert(ctx, &b, start); err != nil {
				return err
			}
			start = i + 1
		}
	}
	return s.insert(ctx, &b, start)
}

// insertBatch is the columns of one INSERT.
type insertBatch struct {
	pks, sids, raws, objs []string
	subs, uuids           []*string
	bytes                 int
}

func (b *insertBatch) add(pk string, e *core.Entry, sub, obj string) {
	b.pks = append(b.pks, pk)
	b.sids = append(b.sids, e.SessionID)
	b.subs = append(b.subs, nullable(sub))
	b.uuids = append(b.uuids, nullable(e.UUID))
	b.raws = append(b.raws, string(e.Raw))
	b.objs = append(b.objs, obj)
	b.bytes += 2 * len(e.Raw)
}

// insert runs the batch's INSERT and empties it. start is the index in
// Write's entries of the batch's first entry, for the PartialError.
func (s *Store) insert(ctx context.Context, b *insertBatch, start int) error {
	n := len(b.raws)
	if n == 0 {
		return nil
	}
	pool, err := s.db(ctx)
	if err == nil {
		var tag pgconn.CommandTag
		tag, err = pool.Exec(ctx, `INSERT INTO `+s.table+` (project_key, session_id, subpath, uuid, entry, raw)
		SELECT pk, sid, sub, u, e::jsonb, r
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS x(pk, sid, sub, u, e, r)
		ON CONFLICT (project_key, session_id, (COALESCE(subpath, '')), uuid) WHERE uuid IS NOT NULL DO NOTHING`,
			b.pks, b.sids, b.subs, b.uuids, b.objs, b.raws)
		if err == nil {
			s.statements.Add(1)
			s.inserted.Add(tag.RowsAffected())
			s.duplicates.Add(int64(n) - tag.RowsAffected())
		}
	}
	*b = insertBatch{}
	if err != nil {
		err = fmt.Errorf("postgres: insert %d entries into %s: %w", n, s.cfg.Table, err)
		if start > 0 {
			return &core.PartialError{N: start, Err: err}
		}
		return err
	}
	return nil
}

// jsonbText is the line as the entry column takes it. jsonb cannot hold
// the NUL character: an escaped NUL becomes U+FFFD there (counted); raw
// keeps the line as it was.
func (s *Store) jsonbText(raw string) string {
	if !strings.Contains(raw, `\u0000`) {
		return raw
	}
	s.nulRepaired.Add(1)
	return strings.ReplaceAll(raw, `\u0000`, `\ufffd`)
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// projectKeys decides each session's project key: the one it is already
// stored under, else the sanitized cwd of its first entry that has one,
// else the host's working directory.
func (s *Store) projectKeys(ctx context.Context, entries []core.Entry) (map[string]string, error) {
	s.mu.Lock()
	keys := map[string]string{}
	var unknown []string
	for i := range entries {
		sid := entries[i].SessionID
		if _, ok := keys[sid]; ok || sid == "" {
			continue
		}
		if k, ok := s.projects[sid]; ok {
			keys[sid] = k
			continue
		}
		keys[sid] = ""
		unknown = append(unknown, sid)
	}
	pool := s.pool
	s.mu.Unlock()
	if len(unknown) == 0 {
		return keys, nil
	}
	rows, err := pool.Query(ctx, `SELECT DISTINCT ON (session_id) session_id, project_key FROM `+s.table+
		` WHERE session_id = ANY($1) ORDER BY session_id, id`, unknown)
	if err != nil {
		return nil, fmt.Errorf("postgres: look up the project of %d sessions: %w", len(unknown), err)
	}
	for rows.Next() {
		var sid, pk string
		if err := rows.Scan(&sid, &pk); err != nil {
			rows.Close()
			return nil, fmt.Errorf("postgres: look up projects: %w", err)
		}
		keys[sid] = pk
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: look up projects: %w", err)
	}
	for i := range entries {
		e := &entries[i]
		if k, ok := keys[e.SessionID]; ok && k == "" && e.CWD != "" {
			keys[e.SessionID] = claudedir.SanitizePath(e.CWD)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sid := range unknown {
		if keys[sid] == "" {
			keys[sid] = claudedir.SanitizePath(s.workDir)
		}
		s.projects[sid] = keys[sid]
	}
	return keys, nil
}

// Load implements core.Loader: the transcript's rows in id order, raw when
// scribe wrote them, else entry as jsonb prints it (deep-equal, not byte
// for byte; counted). A uuid stored twice (the reference adapter does not
// stop that) is served once, said in the notes.
func (s *Store) Load(ctx context.Context, ref core.SessionRef) (*core.Transcript, error) {
	return s.load(ctx, ref, backend.Subpath(ref))
}

// LoadSubpath implements backend.SubpathLoader.
func (s *Store) LoadSubpath(ctx context.Context, sessionID, subpath string) (*core.Transcript, error) {
	return s.load(ctx, core.SessionRef{SessionID: sessionID}, subpath)
}

func (s *Store) load(ctx context.Context, ref core.SessionRef, sub string) (*core.Transcript, error) {
	what := ref.SessionID
	if sub != "" {
		what += "/" + sub
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("postgres: load %s: %w", what, err)
	}
	pool, err := s.db(ctx)
	if err != nil {
		return nil, err
	}
	pk, err := s.findProject(ctx, pool, ref, sub)
	if err != nil {
		return nil, err
	}
	if pk == "" {
		return nil, fmt.Errorf("postgres: %w: no rows for %s in table %s", core.ErrNotFound, what, s.cfg.Table)
	}
	q := `SELECT raw, entry::text FROM ` + s.table + ` WHERE project_key = $1 AND session_id = $2 AND `
	args := []any{pk, ref.SessionID}
	if sub == "" {
		q += `subpath IS NULL ORDER BY id`
	} else {
		q += `subpath = $3 ORDER BY id`
		args = append(args, sub)
	}
	rows, err := pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: load %s: %w", what, err)
	}
	defer rows.Close()
	t := &core.Transcript{Ref: ref}
	var once backend.UUIDOnce
	legacy := 0
	for rows.Next() {
		var raw *string
		var obj string
		if err := rows.Scan(&raw, &obj); err != nil {
			return nil, fmt.Errorf("postgres: load %s: %w", what, err)
		}
		line := obj
		if raw != nil {
			line = *raw
		} else {
			legacy++
		}
		e, err := core.ParseEntryOwned([]byte(line))
		if err != nil {
			return nil, fmt.Errorf("postgres: load %s: row %d: %w", what, len(t.Entries)+1, err)
		}
		if once.Keep(&e) {
			t.Entries = append(t.Entries, e)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: load %s: %w", what, err)
	}
	if legacy > 0 {
		s.legacyRows.Add(int64(legacy))
		t.Notes = append(t.Notes, fmt.Sprintf("%d rows without raw (written by another client) read from their jsonb entry", legacy))
	}
	if once.Repeats > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d rows repeat a uuid already read; served once", once.Repeats))
	}
	if len(t.Entries) == 0 {
		return nil, fmt.Errorf("postgres: %w: no rows for %s in table %s", core.ErrNotFound, what, s.cfg.Table)
	}
	return t, nil
}

// findProject returns the project key that holds the session's subpath,
// preferring the one of ref.CWD; "" when none does.
func (s *Store) findProject(ctx context.Context, pool interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, ref core.SessionRef, sub string) (string, error) {
	want := ""
	if ref.CWD != "" {
		want = claudedir.SanitizePath(ref.CWD)
	}
	var pk string
	err := pool.QueryRow(ctx, `SELECT project_key FROM `+s.table+` WHERE session_id = $1 AND COALESCE(subpath, '') = $2
		GROUP BY project_key ORDER BY (project_key = $3) DESC, MIN(id) LIMIT 1`, ref.SessionID, sub, want).Scan(&pk)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("postgres: find %s: %w", ref.Key(), err)
	}
	return pk, nil
}

// Seed implements core.Seeder: the uuids the transcript holds and its
// uuid-less metadata lines.
func (s *Store) Seed(ctx context.Context, ref core.SessionRef) (core.Seed, error) {
	return backend.Seed(ctx, s, ref)
}

// ListSessions implements backend.Lister as the reference adapter's
// listSessions does: the latest created_at of each main transcript.
func (s *Store) ListSessions(ctx context.Context, projectKey string) ([]backend.Listed, error) {
	pool, err := s.db(ctx)
	if err != nil {
		return nil, err
	}
	q := `SELECT project_key, session_id, (EXTRACT(EPOCH FROM MAX(created_at)) * 1000)::bigint FROM ` + s.table +
		` WHERE subpath IS NULL AND ($1 = '' OR project_key = $1) GROUP BY project_key, session_id`
	rows, err := pool.Query(ctx, q, projectKey)
	if err != nil {
		return nil, fmt.Errorf("postgres: list sessions: %w", err)
	}
	defer rows.Close()
	var out []backend.Listed
	for rows.Next() {
		var l backend.Listed
		if err := rows.Scan(&l.ProjectKey, &l.SessionID, &l.MTime); err != nil {
			return nil, fmt.Errorf("postgres: list sessions: %w", err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list sessions: %w", err)
	}
	return out, nil
}

// ListSubagents implements backend.Lister.
func (s *Store) ListSubagents(ctx context.Context, projectKey, sessionID string) ([]string, error) {
	pool, err := s.db(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, `SELECT DISTINCT subpath FROM `+s.table+
		` WHERE project_key = $1 AND session_id = $2 AND subpath IS NOT NULL ORDER BY subpath`, projectKey, sessionID)
	if err != nil {
		return nil, fmt.Errorf("postgres: list subagents of %s: %w", sessionID, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var sub string
		if err := rows.Scan(&sub); err != nil {
			return nil, fmt.Errorf("postgres: list subagents of %s: %w", sessionID, err)
		}
		if id, ok := backend.AgentOfSubpath(sub); ok {
			out = append(out, id)
		}
	}
	return out, rows.Err()
}

// DeleteSession implements backend.Deleter: every row of the session under
// projectKey, its subpaths too, as the reference adapter's delete of a
// main key.
func (s *Store) DeleteSession(ctx context.Context, projectKey, sessionID string) (int, error) {
	pool, err := s.db(ctx)
	if err != nil {
		return 0, err
	}
	tag, err := pool.Exec(ctx, `DELETE FROM `+s.table+` WHERE project_key = $1 AND session_id = $2`, projectKey, sessionID)
	if err != nil {
		return 0, fmt.Errorf("postgres: delete %s/%s: %w", projectKey, sessionID, err)
	}
	s.mu.Lock()
	if s.projects[sessionID] == projectKey {
		delete(s.projects, sessionID)
	}
	s.mu.Unlock()
	return int(tag.RowsAffected()), nil
}
