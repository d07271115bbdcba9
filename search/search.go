// Package search is scribe's full-text index of the sessions: every
// prompt, answer, thinking block, tool input and tool output of every
// transcript and subagent, ranked with BM25, with a snippet, the session
// id and the message uuid.
//
// The engine is SQLite FTS5 through the pure-Go modernc.org/sqlite (see
// bench/results/search.md for the measurements behind the choice). The
// index, <config dir>/scribe/index/search.db, is a cache like the sessions
// index: every search checks it against every transcript (see fresh.go:
// the stat of each file, folded into one digest per project folder, so an
// untouched folder costs no row of the index; the check runs beside the
// query), and a changed folder's files are compared one by one (inode,
// size, mtime, a hash of the first indexed bytes up to 4 KiB, and the
// offset indexed up to): only what was appended since is read, a file
// that was replaced or cut is reindexed, and the documents of files that
// are gone are dropped, so removed sessions vanish from it. An index that
// cannot be opened, is of another schema, or that SQLite finds damaged is
// thrown away and rebuilt.
package search

import (
	"bufio"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"

	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// schemaVersion is PRAGMA user_version of an index this build writes.
const schemaVersion = 3

// headBytes is how much of a file's start is hashed to notice a file that
// was replaced in place.
const headBytes = 4096

const schema = `
CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, project TEXT NOT NULL,
  session TEXT NOT NULL, agent TEXT NOT NULL, inode INTEGER NOT NULL, size INTEGER NOT NULL,
  mtime INTEGER NOT NULL, offset INTEGER NOT NULL, head BLOB NOT NULL);
CREATE TABLE meta(rowid INTEGER PRIMARY KEY, file INTEGER NOT NULL, uuid TEXT NOT NULL,
  role TEXT NOT NULL, ts TEXT NOT NULL);
CREATE INDEX meta_file ON meta(file);
CREATE INDEX files_project ON files(project);
CREATE TABLE folders(name TEXT PRIMARY KEY, digest BLOB NOT NULL);
CREATE VIRTUAL TABLE docs USING fts5(text, tokenize = 'unicode61 remove_diacritics 2');
`

// Index is an open search index.
//
// Any number of processes may search one index at once: reads never wait
// (SQLite's WAL), and what writes (creating the file, a sync that changes
// it, a rebuild, Forget) is done by one process at a time, under an flock
// on <index>.lock (durable.Acquire); a process that finds the lock held
// waits for it, then looks again at what is left to do. SQLite's busy
// timeout covers the moments a reader still has to wait (a checkpoint,
// the WAL's recovery).
type Index struct {
	db     *sql.DB
	layout jsonl.Layout
	path   string
	ino    uint64 // the index file's inode when it was opened
	// optimizeAfter is how many documents one sync adds before it merges
	// the full-text index into one segment (optimizeDocs; tests set less).
	optimizeAfter int
	// Rebuilt says why the index file was thrown away on open ("" when it
	// was used).
	Rebuilt string
}

// Open opens (or creates, or rebuilds) the index of a config folder.
func Open(l jsonl.Layout) (*Index, error) {
	return OpenAt(l, l.SearchIndexFile())
}

// OpenAt is Open with the index file at path.
func OpenAt(l jsonl.Layout, path string) (*Index, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("search index folder: %w", err)
	}
	x := &Index{layout: l, path: path, optimizeAfter: optimizeDocs}
	why, err := x.open(false)
	if err == nil && why == "" {
		return x, nil
	}
	// Creating it, or throwing it away: one process at a time, and the
	// question asked again under the lock (another may have just made it).
	x.closeDB()
	lk, err := x.lock(context.Background())
	if err != nil {
		return nil, err
	}
	defer lk.Release()
	why, err = x.open(true)
	if err == nil && why == "" {
		return x, nil
	}
	if err != nil {
		why = err.Error()
	}
	if err := x.replace(why); err != nil {
		return nil, err
	}
	return x, nil
}

// lockWait bounds how long a process waits for another's write to the
// index (a first index of a large history can take minutes).
const lockWait = 30 * time.Minute

// lock takes the index's write lock, waiting for another process's
// write; the index is opened again if that process replaced its file.
func (x *Index) lock(ctx context.Context) (*durable.Lock, error) {
	lk, _, err := x.lockWaited(ctx)
	return lk, err
}

// lockWaited is lock, and says whether another process held the lock
// first (what it wrote may make the caller's view of the files old).
func (x *Index) lockWaited(ctx context.Context) (*durable.Lock, bool, error) {
	path := x.path + ".lock"
	waited := false
	lk, err := durable.Acquire(ctx, path, 0, "search")
	if errors.Is(err, durable.ErrLocked) {
		waited = true
		lk, err = durable.Acquire(ctx, path, lockWait, "search")
	}
	if err != nil {
		return nil, waited, fmt.Errorf("search index: wait for another process's write: %w", err)
	}
	if err := x.reopenIfReplaced(); err != nil {
		lk.Release()
		return nil, waited, err
	}
	return lk, waited, nil
}

// reopenIfReplaced opens the index file again when another process
// replaced it (a rebuild) while this one had it open.
func (x *Index) reopenIfReplaced() error {
	if x.db == nil {
		return nil
	}
	if fi, err := os.Stat(x.path); err == nil && inodeOf(fi) == x.ino {
		return nil
	}
	x.closeDB()
	why, err := x.open(true)
	if err == nil && why != "" {
		err = errors.New(why)
	}
	if err != nil {
		return fmt.Errorf("search index: open it again after another process rebuilt it: %w", err)
	}
	return nil
}

// replace throws the index file away and creates an empty one; the caller
// holds the lock.
func (x *Index) replace(why string) error {
	x.closeDB()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(x.path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove the unusable search index %s: %w", x.path+suffix, err)
		}
	}
	if _, err := x.open(true); err != nil {
		return fmt.Errorf("create the search index %s: %w", x.path, err)
	}
	x.Rebuilt = why
	return nil
}

func (x *Index) closeDB() {
	if x.db != nil {
		x.db.Close()
		x.db = nil
	}
}

func inodeOf(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// open opens the file and says why it cannot be used as it is ("" if it
// can). It creates the schema in an empty file only when create is set
// (the caller holds the lock); else an empty file is "no schema yet".
func (x *Index) open(create bool) (string, error) {
	// cache_size: up to 32 MiB of pages kept between queries by a process
	// that keeps the index open (scribe mcp, the web UI), allocated only as
	// used. _txlock=immediate: every transaction here writes, and one begun
	// deferred that reads first cannot wait for another writer (SQLite
	// answers SQLITE_BUSY at once when it upgrades).
	db, err := sql.Open("sqlite", "file:"+x.path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=cache_size(-32768)&_txlock=immediate")
	if err != nil {
		return "", err
	}
	db.SetMaxOpenConns(1)
	x.db = db
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return "", fmt.Errorf("read the schema version: %w", err)
	}
	if err := os.Chmod(x.path, 0o600); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if fi, err := os.Stat(x.path); err == nil {
		x.ino = inodeOf(fi)
	}
	if v == 0 {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
			return "", err
		}
		if n != 0 {
			return "unknown schema", nil
		}
		if !create {
			return "no schema yet", nil
		}
		tx, err := db.Begin()
		if err != nil {
			return "", fmt.Errorf("create the schema: %w", err)
		}
		defer tx.Rollback()
		if _, err := tx.Exec(schema + fmt.Sprintf("PRAGMA user_version = %d;", schemaVersion)); err != nil {
			return "", fmt.Errorf("create the schema: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return "", fmt.Errorf("create the schema: %w", err)
		}
		return "", nil
	}
	if v != schemaVersion {
		return fmt.Sprintf("schema version %d, this build writes %d", v, schemaVersion), nil
	}
	// No PRAGMA quick_check here: it reads the whole file (3 s on a 330 MiB
	// index), and every search opens the index. Damage SQLite finds later
	// (SQLITE_CORRUPT, SQLITE_NOTADB) makes SearchFresh rebuild instead.
	return "", nil
}

// Close closes the index.
func (x *Index) Close() error {
	if x.db == nil {
		return nil
	}
	return x.db.Close()
}

// SyncStats says what Sync did.
type SyncStats struct {
	Files int `json:"files"`
	// Folders is how many project folders were listed, Changed how many of
	// them differed from their digest and were compared file by file.
	Folders   int   `json:"folders"`
	Changed   int   `json:"changed"`
	New       int   `json:"new"`
	Appended  int   `json:"appended"`
	Reindexed int   `json:"reindexed"`
	Removed   int   `json:"removed"`
	Bytes     int64 `json:"bytes"`
	Documents int   `json:"documents"`
	// Others is how many changed folders another process synced while
	// this one waited for the write lock.
	Others int `json:"others"`
	// Optimized is set when this sync added so many documents that it
	// merged the full-text index into one segment afterwards.
	Optimized bool `json:"optimized,omitempty"`
}

type known struct {
	id, inode, size, mtime, offset int64
	head                           []byte
}

// syncFile brings one file's documents in line with it and says whether
// the index now holds the file whole as listed (no torn tail, no growth).
func (x *Index) syncFile(ctx context.Context, tx *sql.Tx, f jsonl.SessionFile, have map[string]known, st *SyncStats) (bool, error) {
	k, ok := have[f.Path]
	if ok && k.inode == int64(f.Inode) && k.size == f.Size && k.mtime == f.ModTime.UnixNano() && k.offset == f.Size {
		return true, nil // untouched since it was indexed whole
	}
	var head []byte
	if ok {
		// The stored hash is read only for a file that changed.
		if err := tx.QueryRow("SELECT head FROM files WHERE id = ?", k.id).Scan(&k.head); err != nil {
			return false, fmt.Errorf("search: %w", err)
		}
		var err error
		if head, err = headHash(f.Path, min(k.offset, headBytes)); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return false, nil // gone since it was listed: the next sync drops it
			}
			return false, fmt.Errorf("search: %w", err)
		}
	}
	from := int64(0)
	switch {
	case ok && k.inode == int64(f.Inode) && f.Size >= k.offset && string(k.head) == string(head):
		if f.Size == k.offset {
			return true, nil
		}
		from = k.offset
		st.Appended++
	case ok:
		if err := dropFile(tx, k.id, false); err != nil {
			return false, err
		}
		st.Reindexed++
	default:
		res, err := tx.Exec("INSERT INTO files(path, project, session, agent, inode, size, mtime, offset, head) VALUES(?,?,?,?,?,?,0,0,'')",
			f.Path, f.Project, f.SessionID, f.AgentID, int64(f.Inode), f.Size)
		if err != nil {
			return false, fmt.Errorf("search: %w", err)
		}
		k.id, _ = res.LastInsertId()
		st.New++
	}
	end, docs, err := indexFrom(ctx, tx, k.id, f.Path, from)
	if err != nil {
		return false, err
	}
	st.Bytes += end - from
	st.Documents += docs
	if head, err = headHash(f.Path, min(end, headBytes)); err != nil {
		return false, fmt.Errorf("search: %w", err)
	}
	if _, err := tx.Exec("UPDATE files SET inode=?, size=?, mtime=?, offset=?, head=? WHERE id=?", int64(f.Inode), f.Size, f.ModTime.UnixNano(), end, head, k.id); err != nil {
		return false, fmt.Errorf("search: %w", err)
	}
	return end == f.Size, nil
}

// headHash hashes the first n bytes of a file (those indexed, up to
// headBytes): a file rewritten in place no longer has them.
func headHash(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, n)); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return h.Sum(nil), nil
}

// dropFile removes a file's documents (and its row when whole).
func dropFile(tx *sql.Tx, id int64, whole bool) error {
	stmts := []string{"DELETE FROM docs WHERE rowid IN (SELECT rowid FROM meta WHERE file = ?)", "DELETE FROM meta WHERE file = ?"}
	if whole {
		stmts = append(stmts, "DELETE FROM files WHERE id = ?")
	}
	for _, s := range stmts {
		if _, err := tx.Exec(s, id); err != nil {
			return fmt.Errorf("search: drop a file's documents: %w", err)
		}
	}
	return nil
}

// indexFrom indexes the complete lines of path from offset on and returns
// the offset after the last complete line.
func indexFrom(ctx context.Context, tx *sql.Tx, fileID int64, path string, offset int64) (int64, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return offset, 0, fmt.Errorf("search: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return offset, 0, fmt.Errorf("search: %w", err)
	}
	insMeta, err := tx.Prepare("INSERT INTO meta(file, uuid, role, ts) VALUES(?,?,?,?)")
	if err != nil {
		return offset, 0, fmt.Errorf("search: %w", err)
	}
	defer insMeta.Close()
	insDoc, err := tx.Prepare("INSERT INTO docs(rowid, text) VALUES(?,?)")
	if err != nil {
		return offset, 0, fmt.Errorf("search: %w", err)
	}
	defer insDoc.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	n := 0
	for {
		raw, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return offset, n, nil // a torn last line waits for its newline
		}
		if err != nil {
			return offset, n, fmt.Errorf("search: read %s: %w", path, err)
		}
		offset += int64(len(raw))
		for _, d := range Documents(raw[:len(raw)-1]) {
			res, err := insMeta.Exec(fileID, d.UUID, d.Role, d.Timestamp)
			if err != nil {
				return offset, n, fmt.Errorf("search: %w", err)
			}
			rowid, _ := res.LastInsertId()
			if _, err := insDoc.Exec(rowid, d.Text); err != nil {
				return offset, n, fmt.Errorf("search: %w", err)
			}
			n++
		}
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return offset, n, err
			}
		}
	}
}

// Query is a search.
type Query struct {
	Text string
	// Project is a project folder's name ("" for every project).
	Project string
	Since   time.Time
	// Role is user, assistant or tool ("" for every role).
	Role  string
	Limit int
	// WithText fills each hit's Text (scribe mcp looks for the secrets
	// around its snippet there).
	WithText bool
	// Marks are what a snippet puts before and after each matched word
	// (zero: "[" and "]").
	Marks [2]string
}

// marks are q's snippet marks.
func (q *Query) marks() (string, string) {
	if q.Marks == [2]string{} {
		return "[", "]"
	}
	return q.Marks[0], q.Marks[1]
}

// Mark puts q's marks around a matched word.
func (q *Query) Mark(word string) string {
	open, close := q.marks()
	return open + word + close
}

// Hit is one matching message.
type Hit struct {
	SessionID string  `json:"sessionId"`
	AgentID   string  `json:"agentId,omitempty"`
	UUID      string  `json:"uuid"`
	Role      string  `json:"role"`
	Timestamp string  `json:"timestamp"`
	Project   string  `json:"project"`
	Snippet   string  `json:"snippet"`
	Score     float64 `json:"score"`
	// Text is the message's indexed text, with Query.WithText only.
	Text string `json:"-"`
}

// ErrBadQuery is returned for a query with no words.
var ErrBadQuery = errors.New("bad query")

// queryTimeout bounds one query: a guard against a query that would
// hang, far above what any query takes (milliseconds).
const queryTimeout = 30 * time.Second

var errQueryTimeout = fmt.Errorf("search: the query took longer than %s", queryTimeout)

// Search runs a query (Sync first for fresh answers), best match first.
func (x *Index) Search(ctx context.Context, q Query) ([]Hit, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, queryTimeout, errQueryTimeout)
	defer cancel()
	hits, err := x.search(ctx, q)
	if err != nil && errors.Is(context.Cause(ctx), errQueryTimeout) {
		err = fmt.Errorf("%w: %w", errQueryTimeout, err)
	}
	return hits, err
}

func (x *Index) search(ctx context.Context, q Query) ([]Hit, error) {
	match := ftsQuery(q.Text)
	if match == "" {
		return nil, fmt.Errorf("%w: %q has no words", ErrBadQuery, q.Text)
	}
	// First the best rowids (filters joined in only when given), then the
	// snippets of those alone: snippet() over every match would cost what
	// the whole result costs.
	sqlq := "SELECT docs.rowid, rank FROM docs"
	var where []string
	args := []any{match}
	if q.Project != "" || !q.Since.IsZero() || q.Role != "" {
		sqlq += " JOIN meta m ON m.rowid = docs.rowid JOIN files f ON f.id = m.file"
	}
	if q.Project != "" {
		where, args = append(where, "f.project = ?"), append(args, q.Project)
	}
	if !q.Since.IsZero() {
		where, args = append(where, "m.ts >= ?"), append(args, q.Since.UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	if q.Role != "" {
		where, args = append(where, "m.role = ?"), append(args, q.Role)
	}
	sqlq += " WHERE docs MATCH ?"
	for _, w := range where {
		sqlq += " AND " + w
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	sqlq += " ORDER BY rank LIMIT ?"
	args = append(args, limit)
	ids, scores, err := x.topRows(ctx, sqlq, args)
	if err != nil || len(ids) == 0 {
		if err != nil {
			err = fmt.Errorf("search %q: %w", q.Text, err)
		}
		return nil, err
	}
	marks := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
	open, close := q.marks()
	args = []any{open, close, match}
	for _, id := range ids {
		args = append(args, id)
	}
	rows, err := x.db.QueryContext(ctx, `SELECT docs.rowid, f.session, f.agent, m.uuid, m.role, m.ts, f.project,
  snippet(docs, 0, ?, ?, '…', 16), `+textColumn(q.WithText)+`
FROM docs JOIN meta m ON m.rowid = docs.rowid JOIN files f ON f.id = m.file
WHERE docs MATCH ? AND docs.rowid IN (`+marks+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", q.Text, err)
	}
	defer rows.Close()
	byID := map[int64]Hit{}
	for rows.Next() {
		var h Hit
		var id int64
		if err := rows.Scan(&id, &h.SessionID, &h.AgentID, &h.UUID, &h.Role, &h.Timestamp, &h.Project, &h.Snippet, &h.Text); err != nil {
			return nil, fmt.Errorf("search %q: %w", q.Text, err)
		}
		byID[id] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search %q: %w", q.Text, err)
	}
	out := make([]Hit, 0, len(ids))
	for i, id := range ids {
		if h, ok := byID[id]; ok {
			h.Score = scores[i]
			out = append(out, h)
		}
	}
	return out, nil
}

// textColumn is the message text when asked for, else an empty column.
func textColumn(want bool) string {
	if want {
		return "docs.text"
	}
	return "''"
}

func (x *Index) topRows(ctx context.Context, q string, args []any) ([]int64, []float64, error) {
	rows, err := x.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var ids []int64
	var scores []float64
	for rows.Next() {
		var id int64
		var sc float64
		if err := rows.Scan(&id, &sc); err != nil {
			return nil, nil, err
		}
		ids, scores = append(ids, id), append(scores, sc)
	}
	return ids, scores, rows.Err()
}

// MaxTerms is how many distinct words and "quoted phrases" of a query are
// searched, and MaxTokens how many tokens (runs of letters and digits, as
// the index cuts text) they hold in all: the terms past either are
// dropped (Terms says how many) rather than make the query slow (FTS5
// reads a token's list of documents once per use); every term must
// appear, so more rarely narrows a result.
const (
	MaxTerms  = 64
	MaxTokens = 256
)

// Terms cuts what a user typed into its words and "quoted phrases",
// each once (the same word in other case is the same term, as the index
// folds case), the first MaxTerms of them within MaxTokens; dropped is
// how many distinct terms were left out.
func Terms(s string) (terms []string, dropped int) {
	seen := map[string]bool{}
	tokens := 0
	for len(s) > 0 {
		s = strings.TrimLeft(s, " \t\n")
		if s == "" {
			break
		}
		var t string
		if s[0] == '"' {
			end := strings.IndexByte(s[1:], '"')
			if end < 0 {
				t, s = s[1:], ""
			} else {
				t, s = s[1:end+1], s[end+2:]
			}
		} else if i := strings.IndexAny(s, " \t\n"); i >= 0 {
			t, s = s[:i], s[i:]
		} else {
			t, s = s, ""
		}
		if strings.TrimSpace(t) == "" {
			continue
		}
		key := strings.ToLower(strings.Join(strings.Fields(t), " "))
		if seen[key] {
			continue
		}
		seen[key] = true
		n := countTokens(t)
		if len(terms) == MaxTerms || tokens+n > MaxTokens {
			dropped++
			continue
		}
		terms, tokens = append(terms, t), tokens+n

	}
	return terms, dropped
}

// countTokens counts the runs of letters and digits in t.
func countTokens(t string) int {
	n, in := 0, false
	for _, r := range t {
		word := unicode.IsLetter(r) || unicode.IsDigit(r)
		if word && !in {
			n++
		}
		in = word
	}
	return n
}

// ftsQuery turns what a user typed into an FTS5 query: every word, or
// "quoted phrase", must appear; nothing in it is FTS5 syntax. Repeated
// terms are given once and at most MaxTerms are (Terms).
func ftsQuery(s string) string {
	terms, _ := Terms(s)
	for i, t := range terms {
		terms[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return strings.Join(terms, " ")
}

// Forget drops every document of the given sessions from the index, if
// there is one: rm, gc and relocate call it in the same step as the move,
// so the text of a removed session is not kept in the index until the
// next search. It returns how many files it dropped.
func Forget(l jsonl.Layout, sessionIDs ...string) (int, error) {
	path := l.SearchIndexFile()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) || len(sessionIDs) == 0 {
		return 0, nil
	}
	x, err := OpenAt(l, path)
	if err != nil {
		return 0, err
	}
	defer x.Close()
	lk, err := x.lock(context.Background())
	if err != nil {
		return 0, err
	}
	defer lk.Release()
	tx, err := x.db.Begin()
	if err != nil {
		return 0, fmt.Errorf("search: %w", err)
	}
	defer tx.Rollback()
	n := 0
	for _, id := range sessionIDs {
		// The folders lose their digest: the next search compares their
		// files one by one, so nothing hangs on the move having happened.
		if _, err := tx.Exec("UPDATE folders SET digest = X'' WHERE name IN (SELECT project FROM files WHERE session = ?)", id); err != nil {
			return n, fmt.Errorf("search: %w", err)
		}
		rows, err := tx.Query("SELECT id FROM files WHERE session = ?", id)
		if err != nil {
			return n, fmt.Errorf("search: %w", err)
		}
		var ids []int64
		for rows.Next() {
			var fid int64
			if err := rows.Scan(&fid); err == nil {
				ids = append(ids, fid)
			}
		}
		rows.Close()
		for _, fid := range ids {
			if err := dropFile(tx, fid, true); err != nil {
				return n, err
			}
			n++
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("search: commit: %w", err)
	}
	return n, nil
}
