package admin

// The trash: nothing scribe does unlinks a transcript unless the user
// empties the trash. rm, gc and relocate move everything that belongs to a
// session out of its project folder into
//
//	<config dir>/scribe/trash/<trash id>/
//	├── manifest.json               where each file came from, its size, sha256, mode, mtime
//	└── data/<project folder>/...   the moved names, as they were
//
// What belongs to session <id> in a project folder: <id>.jsonl, the
// <id>/ folder (subagents and their meta files, tool-results/,
// custom-title.json, archived.json, scribe's lifecycle sidecar) and every
// <id>.* sidecar (.ccr-tip.json, .precompact.json, .cast, the CLI's
// .jsonl.compact.tmp.* and .jsonl.superseded-* files): the names Claude
// Code's own retention sweep removes with a transcript. The moves are
// renames (the trash is on the same file system as the projects, checked
// first), done under the session's lock, and the sessions index forgets the
// session in the same step. Restore verifies every file's hash, refuses to
// overwrite anything, and renames the names back: the files come back
// byte for byte, with their modes and mtimes.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/listing"
)

// TrashFormat is the version of manifest.json.
const TrashFormat = 1

// ErrTrashDamaged is returned when a trash item's files are not what its
// manifest says (missing, other size or hash).
var ErrTrashDamaged = errors.New("trash item does not match its manifest")

// ErrTrashNotFound is returned for a trash reference that names no item.
var ErrTrashNotFound = errors.New("no such trash item")

// TrashDir is <config dir>/scribe/trash.
func (l Layout) TrashDir() string { return filepath.Join(l.ConfigDir, "scribe", "trash") }

// sessionEntries lists the names in projectDir that belong to session id.
func sessionEntries(projectDir, id string) ([]string, error) {
	return sessionEntriesIn(nil, projectDir, id)
}

// sessionEntriesIn is sessionEntries in fsys.
func sessionEntriesIn(fsys layout.FS, projectDir, id string) ([]string, error) {
	ents, err := layout.FSOf(fsys).ReadDir(projectDir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if n := e.Name(); n == id || strings.HasPrefix(n, id+".") {
			out = append(out, n)
		}
	}
	return out, nil
}

// sessionFolders lists the project folders (names) holding anything of id.
func (l Layout) sessionFolders(id string) ([]string, error) {
	folders, err := l.ProjectFolders()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, folder := range folders {
		if names, _ := sessionEntriesIn(l.FS, l.ProjectFolder(folder), id); len(names) > 0 {
			out = append(out, folder)
		}
	}
	return out, nil
}

// describeTree lists every file under root/rel (rel included) with its
// hash, as manifest entries relative to base.
func describeTree(base, rel string) ([]sessions.TrashFile, error) {
	return describeTreeIn(nil, base, rel)
}

// describeTreeIn is describeTree in fsys (links not followed), in lexical
// order as filepath.WalkDir walks.
func describeTreeIn(fsys layout.FS, base, rel string) ([]sessions.TrashFile, error) {
	fsys = layout.FSOf(fsys)
	var out []sessions.TrashFile
	var walk func(p string, fi fs.FileInfo) error
	walk = func(p string, fi fs.FileInfo) error {
		r, _ := filepath.Rel(base, p)
		tf := sessions.TrashFile{Path: filepath.ToSlash(r), Mode: uint32(fi.Mode().Perm()), ModTime: fi.ModTime().UTC()}
		var err error
		switch {
		case fi.IsDir():
			tf.Dir = true
		case fi.Mode()&fs.ModeSymlink != 0:
			tf.Link, err = os.Readlink(p)
		case fi.Mode().IsRegular():
			tf.Size = fi.Size()
			tf.SHA256, err = hashFileIn(fsys, p)
		default:
			return fmt.Errorf("%s: not a regular file, folder or symlink", p)
		}
		out = append(out, tf)
		if err != nil || !fi.IsDir() {
			return err
		}
		ents, err := fsys.ReadDir(p)
		if err != nil {
			return err
		}
		for _, e := range ents {
			cfi, err := e.Info()
			if err != nil {
				return err
			}
			if err := walk(filepath.Join(p, e.Name()), cfi); err != nil {
				return err
			}
		}
		return nil
	}
	root := filepath.Join(base, rel)
	fi, err := fsys.Lstat(root)
	if err != nil {
		return nil, err
	}
	return out, walk(root, fi)
}

func hashFile(p string) (string, error) { return hashFileIn(nil, p) }

func hashFileIn(fsys layout.FS, p string) (string, error) {
	f, err := layout.FSOf(fsys).Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, fi.Size())); err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func sameDevice(a, b string) (bool, error) {
	var sa, sb unix.Stat_t
	if err := unix.Stat(a, &sa); err != nil {
		return false, fmt.Errorf("stat %s: %w", a, err)
	}
	if err := unix.Stat(b, &sb); err != nil {
		return false, fmt.Errorf("stat %s: %w", b, err)
	}
	return sa.Dev == sb.Dev, nil
}

// MoveToTrash moves every copy of a session (one trash item per project
// folder holding it) to the trash, under its lock, and drops it from the
// sessions index. With DryRun it only says what it would move.
func (l Layout) MoveToTrash(ctx context.Context, id string, opt sessions.TrashOptions) ([]sessions.TrashItem, error) {
	if !claudedir.IsSessionID(id) {
		return nil, fmt.Errorf("trash: %w: session %q (not a UUID)", layout.ErrBadID, id)
	}
	folders, err := l.sessionFolders(id)
	if err != nil {
		return nil, fmt.Errorf("trash %s: %w", id, err)
	}
	if len(folders) == 0 {
		return nil, fmt.Errorf("trash: %w: session %s", layout.ErrNotFound, id)
	}
	lk, err := l.Lock(ctx, id, opt.LockWait)
	if err != nil {
		return nil, fmt.Errorf("trash %s: %w", id, err)
	}
	defer lk.Release()
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	var items []sessions.TrashItem
	for _, folder := range folders {
		if err := ctx.Err(); err != nil {
			return items, err
		}
		it, err := l.trashOne(id, folder, opt, now().UTC())
		if err != nil {
			return items, fmt.Errorf("trash %s: %w", id, err)
		}
		items = append(items, it)
	}
	return items, nil
}

func (l Layout) trashOne(id, folder string, opt sessions.TrashOptions, at time.Time) (sessions.TrashItem, error) {
	projectDir := l.ProjectFolder(folder)
	names, err := sessionEntries(projectDir, id)
	if err != nil {
		return sessions.TrashItem{}, err
	}
	it := sessions.TrashItem{Format: TrashFormat, ID: at.Format("20060102T150405.000000000Z") + "-" + id, SessionID: id,
		Project: folder, Reason: opt.Reason, TrashedAt: at, Entries: names}
	if info, ok, _ := listing.ReadInfo(claudedir.MainFile(projectDir, id), ""); ok {
		it.Cwd, it.Title = info.Cwd, info.Summary
	}
	for _, n := range names {
		files, err := describeTree(l.ConfigDir, filepath.Join("projects", folder, n))
		if err != nil {
			return it, fmt.Errorf("describe %s: %w", n, err)
		}
		for _, f := range files {
			it.Bytes += f.Size
		}
		it.Files = append(it.Files, files...)
	}
	if opt.DryRun {
		return it, nil
	}
	itemDir := filepath.Join(l.TrashDir(), it.ID)
	if err := os.MkdirAll(l.TrashDir(), layout.DirMode); err != nil {
		return it, fmt.Errorf("create %s: %w", l.TrashDir(), err)
	}
	if err := os.Mkdir(itemDir, layout.DirMode); err != nil {
		return it, fmt.Errorf("create trash item %s: %w", it.ID, err)
	}
	data := filepath.Join(itemDir, "data", folder)
	if err := os.MkdirAll(data, layout.DirMode); err != nil {
		return it, fmt.Errorf("create %s: %w", data, err)
	}
	if same, err := sameDevice(projectDir, data); err != nil {
		return it, err
	} else if !same {
		os.RemoveAll(itemDir)
		return it, fmt.Errorf("the trash %s is on another file system than %s: nothing moved", l.TrashDir(), projectDir)
	}
	if opt.Markers {
		if it.DeletionMarkers, err = l.WriteDeletionMarkers(folder, id); err != nil {
			os.RemoveAll(itemDir)
			return it, err
		}
	}
	if err := writeManifest(itemDir, it); err != nil {
		return it, err
	}
	for _, n := range names {
		if err := os.Rename(filepath.Join(projectDir, n), filepath.Join(data, n)); err != nil {
			err = fmt.Errorf("move %s to the trash: %w", n, err)
			if _, statErr := os.Lstat(claudedir.MainFile(projectDir, id)); statErr == nil && len(it.DeletionMarkers) > 0 {
				// The transcript is still there: its markers would stop
				// Claude Code from saving it.
				if _, merr := l.RemoveDeletionMarkers(it); merr != nil {
					err = errors.Join(err, merr)
				}
			}
			return it, err
		}
	}
	if err := durable.SyncDir(projectDir); err != nil {
		return it, err
	}
	if err := durable.SyncDir(data); err != nil {
		return it, err
	}
	it.Complete = true
	if err := writeManifest(itemDir, it); err != nil {
		return it, err
	}
	if _, err := l.index().ForgetIndexed(folder, id+".jsonl"); err != nil {
		return it, err
	}
	if opt.Seal != nil {
		if err := l.sealItem(&it, opt.Seal); err != nil {
			return it, err
		}
	}
	return it, nil
}

func writeManifest(itemDir string, it sessions.TrashItem) error {
	b, err := json.MarshalIndent(it, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	return layout.ReplaceFile(filepath.Join(itemDir, "manifest.json"), append(b, '\n'))
}

// ListTrash returns the trash items, oldest first, and a problem line for
// each folder in the trash whose manifest cannot be read.
func (l Layout) ListTrash() ([]sessions.TrashItem, []string, error) {
	ents, err := os.ReadDir(l.TrashDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read the trash: %w", err)
	}
	var items []sessions.TrashItem
	var problems []string
	for _, e := range ents {
		if !e.IsDir() || !isTrashID(e.Name()) {
			continue // not a session's item (scribe redact keeps its originals in trash/redact/)
		}
		raw, err := os.ReadFile(filepath.Join(l.TrashDir(), e.Name(), "manifest.json"))
		var it sessions.TrashItem
		if err == nil {
			err = json.Unmarshal(raw, &it)
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: unreadable manifest: %v", e.Name(), err))
			continue
		}
		items = append(items, it)
	}
	sort.Slice(items, func(i, j int) bool { return items[i].ID < items[j].ID })
	return items, problems, nil
}

// isTrashID reports whether name is a trash item's folder name:
// <YYYYMMDD>T<hhmmss>.<9 digits>Z-<session id>.
func isTrashID(name string) bool {
	const stamp = len("20060102T150405.000000000Z-")
	if len(name) != stamp+36 || name[8] != 'T' || name[15] != '.' || name[stamp-2:stamp] != "Z-" {
		return false
	}
	for i, c := range name[:stamp-2] {
		if i != 8 && i != 15 && (c < '0' || c > '9') {
			return false
		}
	}
	return claudedir.IsSessionID(name[stamp:])
}

// FindTrash resolves a trash id, a session id or a unique prefix of
// either to one trash item.
func (l Layout) FindTrash(ref string) (sessions.TrashItem, error) {
	items, _, err := l.ListTrash()
	if err != nil {
		return sessions.TrashItem{}, err
	}
	// Case does not matter: a trash id holds an upper-case T and Z, a
	// session id may be typed in upper case.
	var hits []sessions.TrashItem
	for _, it := range items {
		if strings.EqualFold(it.ID, ref) {
			return it, nil
		}
		if hasPrefixFold(it.ID, ref) || hasPrefixFold(it.SessionID, ref) {
			hits = append(hits, it)
		}
	}
	switch len(hits) {
	case 0:
		return sessions.TrashItem{}, fmt.Errorf("%w: %q", ErrTrashNotFound, ref)
	case 1:
		return hits[0], nil
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	return sessions.TrashItem{}, fmt.Errorf("%q names %d trash items: %s", ref, len(hits), strings.Join(ids, ", "))
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// verifyTrash checks that the item's data is what its manifest says.
func (l Layout) verifyTrash(it sessions.TrashItem) error {
	data := filepath.Join(l.TrashDir(), it.ID, "data")
	for _, f := range it.Files {
		p := filepath.Join(data, strings.TrimPrefix(filepath.FromSlash(f.Path), "projects"+string(filepath.Separator)))
		fi, err := os.Lstat(p)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrTrashDamaged, f.Path, err)
		}
		switch {
		case f.Dir:
			if !fi.IsDir() {
				return fmt.Errorf("%w: %s is no longer a folder", ErrTrashDamaged, f.Path)
			}
		case f.Link != "":
			if t, _ := os.Readlink(p); t != f.Link {
				return fmt.Errorf("%w: %s links elsewhere", ErrTrashDamaged, f.Path)
			}
		default:
			h, err := hashFile(p)
			if err != nil || fi.Size() != f.Size || h != f.SHA256 {
				return fmt.Errorf("%w: %s changed (size %d, want %d)", ErrTrashDamaged, f.Path, fi.Size(), f.Size)
			}
		}
	}
	return nil
}

// RestoreTrash moves a trash item back where it came from: every hash is
// checked first, and nothing is overwritten (ErrSessionExists when a name
// is taken). The item leaves the trash.
func (l Layout) RestoreTrash(ctx context.Context, ref string, lockWait time.Duration) (sessions.TrashItem, error) {
	it, err := l.FindTrash(ref)
	if err != nil {
		return it, fmt.Errorf("restore: %w", err)
	}
	if it.Sealed {
		return it, fmt.Errorf("restore %s: %w: give the identity or the passphrase it was sealed with (nothing restored)", it.ID, ErrTrashSealed)
	}
	projectDir := l.ProjectFolder(it.Project)
	for _, n := range it.Entries {
		if _, err := os.Lstat(filepath.Join(projectDir, n)); err == nil {
			return it, fmt.Errorf("restore %s: %w: %s (nothing restored)", it.ID, ErrSessionExists, filepath.Join(projectDir, n))
		}
	}
	lk, err := l.Lock(ctx, it.SessionID, lockWait)
	if err != nil {
		return it, fmt.Errorf("restore %s: %w", it.ID, err)
	}
	defer lk.Release()
	if _, err := l.restoreItem(it); err != nil {
		return it, fmt.Errorf("restore %s: %w", it.ID, err)
	}
	if it.MarkersRemoved, err = l.RemoveDeletionMarkers(it); err != nil {
		return it, fmt.Errorf("restore %s: restored, but: %w", it.ID, err)
	}
	return it, nil
}

// EmptyTrash deletes the trash items trashed more than olderThan ago
// (every item when olderThan is 0) and returns them; with dryRun it only
// returns them. It is the one place scribe unlinks transcripts.
func (l Layout) EmptyTrash(olderThan time.Duration, dryRun bool, now time.Time) ([]sessions.TrashItem, error) {
	items, _, err := l.ListTrash()
	if err != nil {
		return nil, err
	}
	var out []sessions.TrashItem
	for _, it := range items {
		if olderThan > 0 && now.Sub(it.TrashedAt) < olderThan {
			continue
		}
		if !dryRun {
			if err := os.RemoveAll(filepath.Join(l.TrashDir(), it.ID)); err != nil {
				return out, fmt.Errorf("empty the trash: %s: %w", it.ID, err)
			}
		}
		out = append(out, it)
	}
	if len(out) > 0 && !dryRun {
		return out, durable.SyncDir(l.TrashDir())
	}
	return out, nil
}
