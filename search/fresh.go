package search

// The freshness check. Every search lists the transcripts (one ReadDir per
// project folder and the stat of each file, as jsonl.SessionFiles does)
// and folds each folder's (path, inode, size, mtime) into a digest; the
// index keeps, per folder, the digest of the listing it last synced whole.
// A folder whose digest is unchanged is not looked at further (its rows
// of the files table are not even read); a changed one is synced file by
// file. SearchFresh runs the listing beside the query and runs the query
// again when the sync changed any document, so a search costs about the
// longer of the two, not their sum.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// listing is the transcripts of every project folder, by folder.
type listing map[string][]jsonl.SessionFile

// list lists every project folder's transcripts (jsonl.SessionFiles), a
// few folders at a time: the cost is one stat per file, and the stats of
// different folders overlap.
func (x *Index) list(ctx context.Context) (listing, int, error) {
	folders, err := x.layout.ProjectFolders()
	if err != nil {
		return nil, 0, fmt.Errorf("search: list the transcripts: %w", err)
	}
	found := make([][]jsonl.SessionFile, len(folders))
	errs := make([]error, len(folders))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(1, min(runtime.GOMAXPROCS(0), len(folders), 4)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(folders); i = int(next.Add(1) - 1) {
				found[i], errs[i] = x.layout.SessionFiles(ctx, folders[i])
				if errors.Is(errs[i], jsonl.ErrNotFound) {
					errs[i] = nil // gone since the folders were listed
				}
			}
		}()
	}
	wg.Wait()
	by, n := listing{}, 0
	for i, name := range folders {
		if errs[i] != nil {
			return nil, 0, fmt.Errorf("search: list the transcripts: %w", errs[i])
		}
		if len(found[i]) > 0 {
			by[name], n = found[i], n+len(found[i])
		}
	}
	return by, n, nil
}

// digest folds a folder's listing into 32 bytes: any file added, removed,
// replaced, grown, cut or touched changes it.
func digest(files []jsonl.SessionFile) []byte {
	sorted := append([]jsonl.SessionFile(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	h := sha256.New()
	var num [24]byte
	for _, f := range sorted {
		h.Write([]byte(f.Path))
		binary.LittleEndian.PutUint64(num[0:], f.Inode)
		binary.LittleEndian.PutUint64(num[8:], uint64(f.Size))
		binary.LittleEndian.PutUint64(num[16:], uint64(f.ModTime.UnixNano()))
		h.Write([]byte{0})
		h.Write(num[:])
	}
	return h.Sum(nil)
}

// Sync brings the index in line with the transcripts.
func (x *Index) Sync(ctx context.Context, progress func(done, total int)) (SyncStats, error) {
	by, n, err := x.list(ctx)
	if err != nil {
		return SyncStats{Files: n}, err
	}
	st, _, err := x.syncListing(ctx, by, n, progress)
	return st, err
}

// changedFolders compares the listing's digests with the stored ones: the
// folders to sync, their new digests, how many files they hold, and the
// state of the stored digests it compared with (storedDigests).
func (x *Index) changedFolders(ctx context.Context, by listing) ([]string, map[string][]byte, int, []byte, error) {
	stored, state, err := x.storedDigests(ctx)
	if err != nil {
		return nil, nil, 0, nil, err
	}
	var changed []string
	total := 0
	digests := map[string][]byte{}
	for name, files := range by {
		if d := digest(files); !bytes.Equal(d, stored[name]) {
			changed, digests[name] = append(changed, name), d
			total += len(files)
		}
	}
	for name := range stored {
		if _, ok := by[name]; !ok {
			changed = append(changed, name)
		}
	}
	sort.Strings(changed)
	return changed, digests, total, state, nil
}

// storedDigests reads the folder digests the index holds, and a digest of
// them all (state): it changes whenever any process commits a sync that
// changed something.
func (x *Index) storedDigests(ctx context.Context) (map[string][]byte, []byte, error) {
	rows, err := x.db.QueryContext(ctx, "SELECT name, digest FROM folders ORDER BY name")
	if err != nil {
		return nil, nil, fmt.Errorf("search: read the folder digests: %w", err)
	}
	defer rows.Close()
	stored := map[string][]byte{}
	h := sha256.New()
	for rows.Next() {
		var name string
		var d []byte
		if err := rows.Scan(&name, &d); err != nil {
			return nil, nil, fmt.Errorf("search: read the folder digests: %w", err)
		}
		stored[name] = d
		h.Write([]byte(name))
		h.Write([]byte{0})
		h.Write(d)
		h.Write([]byte{0})
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("search: read the folder digests: %w", err)
	}
	return stored, h.Sum(nil), nil
}

// syncListing syncs the folders whose digest differs from the stored one;
// when none does, it reads 1 row per folder and writes nothing. A sync
// takes the index's write lock, and looks again at what differs once it
// has it: another process may have synced those folders meanwhile
// (SyncStats.Others). It also returns the state of the stored digests at
// its first look (storedDigests), before anything it wrote.
func (x *Index) syncListing(ctx context.Context, by listing, n int, progress func(done, total int)) (SyncStats, []byte, error) {
	st := SyncStats{Files: n, Folders: len(by)}
	changed, _, _, first, err := x.changedFolders(ctx, by)
	if err != nil || len(changed) == 0 {
		return st, first, err
	}
	st, err = x.syncChanged(ctx, by, st, len(changed), progress)
	return st, first, err
}

// syncChanged is syncListing once a first look found before folders to
// sync: under the write lock it looks again, and syncs what still differs.
func (x *Index) syncChanged(ctx context.Context, by listing, st SyncStats, before int, progress func(done, total int)) (SyncStats, error) {
	lk, waited, err := x.lockWaited(ctx)
	if err != nil {
		return st, err
	}
	defer lk.Release()
	if waited {
		// Another process wrote meanwhile, from a listing that may be
		// newer than this one: list again rather than undo its work.
		var n int
		if by, n, err = x.list(ctx); err != nil {
			return st, err
		}
		st.Files, st.Folders = n, len(by)
	}
	changed, digests, total, _, err := x.changedFolders(ctx, by)
	if err != nil {
		return st, err
	}
	st.Changed, st.Others = len(changed), max(before-len(changed), 0)
	if len(changed) == 0 {
		return st, nil
	}
	tx, err := x.db.BeginTx(ctx, nil)
	if err != nil {
		return st, fmt.Errorf("search: %w", err)
	}
	defer tx.Rollback()
	done := 0
	for _, name := range changed {
		if err := x.syncFolder(ctx, tx, name, by[name], digests[name], &st, func() {
			done++
			if progress != nil {
				progress(done, total)
			}
		}); err != nil {
			return st, err
		}
	}
	if err := tx.Commit(); err != nil {
		return st, fmt.Errorf("search: commit: %w", err)
	}
	if st.Documents >= x.optimizeAfter {
		// Still under the write lock: a first build, or a large catch-up,
		// leaves the index in many segments that every query then merges.
		if _, err := x.db.ExecContext(ctx, "INSERT INTO docs(docs) VALUES('optimize')"); err != nil {
			return st, fmt.Errorf("search: merge the index: %w", err)
		}
		st.Optimized = true
	}
	return st, nil
}

// optimizeDocs is how many documents one sync adds before the full-text
// index is merged into one segment after it: on 10,000 sessions (167k
// documents, a 160 MiB index) the merge takes 0.6 s after a 16 s build
// and takes a search's p50 from 5.0 to 3.8 ms and its worst from 98 to
// 30 ms (bench/searchbench). Smaller syncs leave it to FTS5's automerge.
const optimizeDocs = 5000

// syncFolder syncs one project folder's files file by file and stores its
// digest, an empty one when a file is not held whole (a torn last line, a
// file that grew while it was read): that folder is looked at again next
// time.
func (x *Index) syncFolder(ctx context.Context, tx *sql.Tx, name string, files []jsonl.SessionFile, d []byte, st *SyncStats, step func()) error {
	have := map[string]known{}
	rows, err := tx.QueryContext(ctx, "SELECT path, id, inode, size, mtime, offset FROM files WHERE project = ?", name)
	if err != nil {
		return fmt.Errorf("search: read the index: %w", err)
	}
	for rows.Next() {
		var p string
		var k known
		if err := rows.Scan(&p, &k.id, &k.inode, &k.size, &k.mtime, &k.offset); err != nil {
			rows.Close()
			return fmt.Errorf("search: read the index: %w", err)
		}
		have[p] = k
	}
	rows.Close()
	whole := true
	onDisk := make(map[string]bool, len(files))
	for _, f := range files {
		onDisk[f.Path] = true
		ok, err := x.syncFile(ctx, tx, f, have, st)
		if err != nil {
			return err
		}
		whole = whole && ok
		step()
	}
	for p, k := range have {
		if !onDisk[p] {
			if err := dropFile(tx, k.id, true); err != nil {
				return err
			}
			st.Removed++
		}
	}
	// Every folder with rows in files has a row here (so a folder that
	// vanishes is noticed by its digest alone), with an empty digest when
	// it is not held whole.
	if !whole {
		d = []byte{}
	}
	q, args := "INSERT OR REPLACE INTO folders(name, digest) VALUES(?, ?)", []any{name, d}
	if len(files) == 0 {
		q, args = "DELETE FROM folders WHERE name = ?", []any{name}
	}
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("search: %w", err)
	}
	return nil
}

// SearchFresh is what `scribe search` runs: the freshness check beside the
// query, a sync of what changed, and the query again if the sync changed
// any document. An index SQLite finds damaged is rebuilt (x.Rebuilt says
// why) and the search made on the new one.
func (x *Index) SearchFresh(ctx context.Context, q Query, progress func(done, total int)) ([]Hit, SyncStats, error) {
	hits, st, err := x.searchFresh(ctx, q, progress)
	if !isDamage(err) {
		return hits, st, err
	}
	if rerr := x.rebuild(err.Error()); rerr != nil {
		return nil, st, fmt.Errorf("%w (and rebuilding the index failed: %w)", err, rerr)
	}
	return x.searchFresh(ctx, q, progress)
}

// afterSpeculation, when a test sets it, runs after searchFresh's
// speculative search (where another process may commit a sync).
var afterSpeculation func()

func (x *Index) searchFresh(ctx context.Context, q Query, progress func(done, total int)) ([]Hit, SyncStats, error) {
	type listed struct {
		by  listing
		n   int
		err error
	}
	// What the index held when the speculative search began: another
	// process may commit a sync after it and before this one looks, and
	// then there is nothing left for this one to sync, yet its hits are
	// older than the index.
	_, seen, err := x.storedDigests(ctx)
	if err != nil {
		return nil, SyncStats{}, err
	}
	ch := make(chan listed, 1)
	go func() {
		by, n, err := x.list(ctx)
		ch <- listed{by, n, err}
	}()
	hits, qerr := x.Search(ctx, q)
	if afterSpeculation != nil {
		afterSpeculation()
	}
	l := <-ch
	if l.err != nil {
		return nil, SyncStats{}, l.err
	}
	if errors.Is(qerr, ErrBadQuery) {
		return nil, SyncStats{}, qerr
	}
	st, first, err := x.syncListing(ctx, l.by, l.n, progress)
	if err != nil {
		return nil, st, err
	}
	// Again when this sync changed the index, or another process's sync was
	// committed after the speculative search began (the stored digests
	// differ from what they were then).
	if qerr != nil || st.Documents+st.Reindexed+st.Removed+st.Others > 0 || !bytes.Equal(first, seen) {
		hits, qerr = x.Search(ctx, q)
	}
	return hits, st, qerr
}

// isDamage is an SQLite error that says the file is damaged.
func isDamage(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	c := se.Code() & 0xff
	return c == sqlite3.SQLITE_CORRUPT || c == sqlite3.SQLITE_NOTADB
}

// rebuild throws the damaged index file away and starts an empty one,
// unless another process did so while this one waited for the lock.
func (x *Index) rebuild(why string) error {
	ino := x.ino
	lk, err := x.lock(context.Background())
	if err != nil {
		return err
	}
	defer lk.Release()
	if x.ino != ino {
		x.Rebuilt = why + "; rebuilt by another process"
		return nil
	}
	return x.replace(why)
}
