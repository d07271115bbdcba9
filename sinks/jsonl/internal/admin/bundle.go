package admin

// Bundles: a portable, path-independent archive of everything a session
// has (transcript, <id>/ folder with subagents, tool results and
// sidecars, <id>.* sidecars), as a gzipped tar:
//
//	manifest.json        (first) format, version, session id, original cwd
//	                     and project folder, and each file's size and sha256
//	session/<id>.jsonl
//	session/<id>/subagents/agent-<agentId>.jsonl ...
//	session/<id>.ccr-tip.json ...
//
// (Bundles written before the manifest moved first hold it last.) Import
// never writes more than the manifest declares: with the manifest first,
// an entry it does not list or whose size is not the declared one refuses
// the bundle before a byte of it is written, and each file is copied up to
// its declared size; with the manifest last, a first read hashes the whole
// bundle and writes nothing, and only a bundle that matches is read again
// and written, bounded the same way (a bundle bomb costs reading, never
// disk). Verify (import --dry-run) writes nothing at all. Import verifies
// every file against the manifest (a missing, extra or changed file
// refuses the whole bundle) in a staging folder inside the config dir
// (scribe/import-*, locked by the import; one whose import died is removed
// by the next import and by gc, and du counts it), then moves the files
// into the project folder of the new cwd
// (a `relocated` line records the new cwd when it differs, as Claude Code
// does when a session moves, so the listing reports it). It never
// overwrites: the same session already there (a transcript that starts
// with the bundle's bytes) is reported as such, a
// different one of the same id is ErrSessionExists, unless Fork, which
// imports the transcript as a fork (fresh uuids, new id).

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/listing"
	"github.com/e0dc0000/scribe/transcript/fork"
)

// BundleFormat names scribe's bundles in their manifest; BundleVersion is
// the version this build writes and reads.
const (
	BundleFormat  = "scribe-session-bundle"
	BundleVersion = 1
)

// ErrBadBundle is returned for a bundle that is not one, or whose files
// do not match its manifest.
var ErrBadBundle = errors.New("bad bundle")

// BundleFile is one file of a bundle, relative to the project folder.
type BundleFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// BundleManifest describes a bundle.
type BundleManifest struct {
	Format     string       `json:"format"`
	Version    int          `json:"version"`
	SessionID  string       `json:"sessionId"`
	Cwd        string       `json:"cwd,omitempty"`
	Project    string       `json:"project"`
	Title      string       `json:"title,omitempty"`
	ExportedAt time.Time    `json:"exportedAt"`
	Files      []BundleFile `json:"files"`
	// Skipped are the symlinks of the session's folder, which a bundle
	// does not carry.
	Skipped []string `json:"skipped,omitempty"`
}

// ExportBundle writes session id's bundle to w and returns its manifest.
func (l Layout) ExportBundle(ctx context.Context, id string, w io.Writer) (BundleManifest, error) {
	folders, err := l.sessionFolders(id)
	if err != nil {
		return BundleManifest{}, fmt.Errorf("export %s: %w", id, err)
	}
	mains, err := l.SessionMains(id)
	if err != nil || len(mains) == 0 {
		return BundleManifest{}, fmt.Errorf("export: %w: session %s", layout.ErrNotFound, id)
	}
	dir := filepath.Dir(mains[0])
	m := BundleManifest{Format: BundleFormat, Version: BundleVersion, SessionID: id, Project: filepath.Base(dir), ExportedAt: time.Now().UTC()}
	if len(folders) > 1 {
		return m, fmt.Errorf("export %s: the session is in %d project folders (%s): move or remove the others first", id, len(folders), strings.Join(folders, ", "))
	}
	if info, ok, _ := listing.ReadInfoFS(l.FS, mains[0], ""); ok {
		m.Cwd, m.Title = info.Cwd, info.Summary
	}
	names, err := sessionEntriesIn(l.FS, dir, id)
	if err != nil {
		return m, fmt.Errorf("export %s: %w", id, err)
	}
	// The manifest goes first, so that an import knows every file's size
	// before it writes one: the files are described (hashed) first, and
	// each is checked against its description as it is written.
	var files []sessions.TrashFile
	for _, n := range names {
		tree, err := describeTreeIn(l.FS, dir, n)
		if err != nil {
			return m, fmt.Errorf("export %s: %w", id, err)
		}
		for _, f := range tree {
			if f.Link != "" {
				m.Skipped = append(m.Skipped, f.Path)
			}
			if f.Dir || f.Link != "" {
				continue
			}
			files = append(files, f)
			m.Files = append(m.Files, BundleFile{Path: f.Path, Size: f.Size, SHA256: f.SHA256})
		}
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	raw, _ := json.MarshalIndent(m, "", "  ")
	err = tw.WriteHeader(&tar.Header{Name: "manifest.json", Mode: 0o600, Size: int64(len(raw)), ModTime: m.ExportedAt})
	if err == nil {
		_, err = tw.Write(raw)
	}
	for i, f := range files {
		if err != nil {
			break
		}
		if err = ctx.Err(); err != nil {
			return m, err
		}
		var bf BundleFile
		if bf, err = bundleAdd(l.FS, tw, dir, f); err == nil && bf != m.Files[i] {
			err = fmt.Errorf("%s changed while it was exported (sha256 %s, described as %s): export again", f.Path, bf.SHA256, f.SHA256)
		}
	}
	for _, c := range []io.Closer{tw, gz} {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return m, fmt.Errorf("export %s: write the bundle: %w", id, err)
	}
	return m, nil
}

// bundleAdd writes one file (the size it had when described) to the tar
// and returns its manifest entry, hashed from the bytes written.
func bundleAdd(fsys layout.FS, tw *tar.Writer, dir string, f sessions.TrashFile) (BundleFile, error) {
	fh, err := layout.FSOf(fsys).Open(filepath.Join(dir, filepath.FromSlash(f.Path)))
	if err != nil {
		return BundleFile{}, err
	}
	defer fh.Close()
	if err := tw.WriteHeader(&tar.Header{Name: "session/" + f.Path, Mode: 0o600, Size: f.Size, ModTime: f.ModTime, Format: tar.FormatPAX}); err != nil {
		return BundleFile{}, err
	}
	h := sha256.New()
	if n, err := io.Copy(io.MultiWriter(tw, h), io.NewSectionReader(fh, 0, f.Size)); err != nil || n != f.Size {
		return BundleFile{}, fmt.Errorf("read %s: %d of %d bytes: %v", f.Path, n, f.Size, err)
	}
	return BundleFile{Path: f.Path, Size: f.Size, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// ImportOptions tune an import.
type ImportOptions struct {
	// Cwd is the working directory to place the session under; "" keeps
	// the bundle's.
	Cwd string
	// Fork imports the transcript as a new session (fresh uuids) instead.
	Fork     bool
	LockWait time.Duration
	// Reopen gives the bundle again from its start, for a bundle whose
	// manifest comes last (read once to verify, writing nothing, then
	// again to stage it); nil refuses such a bundle.
	Reopen func() (io.ReadCloser, error)
}

// ImportResult says what an import did.
type ImportResult struct {
	SessionID string `json:"sessionId"`
	// ForkedFrom is the bundle's session id when imported as a fork.
	ForkedFrom string `json:"forkedFrom,omitempty"`
	Project    string `json:"project"`
	Cwd        string `json:"cwd"`
	Files      int    `json:"files"`
	// AlreadyPresent: the same session was there already (its transcript
	// starts with the bundle's).
	AlreadyPresent bool `json:"alreadyPresent,omitempty"`
	Relocated      bool `json:"relocated,omitempty"`
	// StaleStagingsRemoved counts the staging folders of imports that
	// died, removed before this one.
	StaleStagingsRemoved int `json:"staleStagingsRemoved,omitempty"`
	// MarkersRemoved counts the deletion markers (rm's, the SDK's
	// deleteSession's) of the imported session removed, so that Claude
	// Code and scribe write it again.
	MarkersRemoved int `json:"deletionMarkersRemoved,omitempty"`
}

// stagingPrefix names the staging folders of imports under scribe/.
const stagingPrefix = "import-"

// stageLock is the lock file inside a staging folder: its import holds it
// until the folder is gone, so that a folder whose lock is free (and
// names a holder) is left from an import that died.
const stageLock = ".lock"

// stageRole is the role a staging folder's holder writes in its lock.
const stageRole = "staging"

// stageDir makes a staging folder inside the config dir (on the same file
// system as the projects, so that placing is a rename), locked; done
// removes it and gives the lock back.
func (l Layout) stageDir(ctx context.Context) (stage string, done func(), err error) {
	base := filepath.Join(l.ConfigDir, "scribe")
	if err := os.MkdirAll(base, layout.DirMode); err != nil {
		return "", nil, fmt.Errorf("staging folder: %w", err)
	}
	stage, err = os.MkdirTemp(base, stagingPrefix)
	if err != nil {
		return "", nil, fmt.Errorf("staging folder: %w", err)
	}
	lk, err := durable.Acquire(ctx, filepath.Join(stage, stageLock), 0, stageRole)
	if err != nil {
		os.RemoveAll(stage)
		return "", nil, fmt.Errorf("staging folder: %w", err)
	}
	return stage, func() {
		os.RemoveAll(stage)
		lk.Release()
	}, nil
}

// StaleStaging is a staging folder left by an import that died.
type StaleStaging struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}

// StaleStagings lists the staging folders whose import (or relocate) died: their lock
// names a holder (the import wrote its record) and nobody holds it. A
// folder without that record is an import just starting, or one of a
// build that did not lock its staging: it is left alone for a minute.
func (l Layout) StaleStagings(now time.Time) ([]StaleStaging, error) {
	base := filepath.Join(l.ConfigDir, "scribe")
	ents, err := os.ReadDir(base)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("staging folders: %w", err)
	}
	var out []StaleStaging
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), stagingPrefix) {
			continue
		}
		dir := filepath.Join(base, e.Name())
		lock := filepath.Join(dir, stageLock)
		if durable.Held(lock) {
			continue
		}
		if durable.Role(lock) != stageRole {
			fi, err := e.Info()
			if err != nil || now.Sub(fi.ModTime()) < time.Minute {
				continue
			}
		}
		var n int64
		_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if fi, err := d.Info(); err == nil {
					n += fi.Size()
				}
			}
			return nil
		})
		out = append(out, StaleStaging{Path: dir, Bytes: n})
	}
	return out, nil
}

// RemoveStaleStagings removes the staging folders of imports that died
// and returns them (import and gc call it).
func (l Layout) RemoveStaleStagings() ([]StaleStaging, error) {
	stale, err := l.StaleStagings(time.Now())
	if err != nil {
		return nil, err
	}
	for i, st := range stale {
		if err := os.RemoveAll(st.Path); err != nil {
			return stale[:i], fmt.Errorf("remove the staging folder of a dead import %s: %w", st.Path, err)
		}
	}
	return stale, nil
}

// VerifyBundle checks a bundle against its manifest without importing it:
// it reads the bundle through and writes nothing.
func (l Layout) VerifyBundle(r io.Reader) (BundleManifest, error) {
	m, _, err := bundleUnpack(r, "", nil)
	if err != nil {
		return m, fmt.Errorf("verify: %w", err)
	}
	return m, nil
}

// ImportBundle verifies a bundle and places its session under the project
// of opt.Cwd (default the bundle's cwd). Staging folders left by imports
// that died are removed first (ImportResult.StaleStagingsRemoved).
func (l Layout) ImportBundle(ctx context.Context, r io.Reader, opt ImportOptions) (ImportResult, error) {
	stale, err := l.RemoveStaleStagings()
	if err != nil {
		return ImportResult{}, fmt.Errorf("import: %w", err)
	}
	stage, done, err := l.stageDir(ctx)
	if err != nil {
		return ImportResult{}, fmt.Errorf("import: %w", err)
	}
	defer done()
	m, again, err := bundleUnpack(r, stage, nil)
	if err == nil && again {
		// The manifest came last: the first read verified the bundle and
		// wrote nothing; this one stages it, bounded by the manifest.
		if opt.Reopen == nil {
			return ImportResult{}, fmt.Errorf("import: %w: its manifest comes after its files (an older bundle) and the input cannot be read twice", ErrBadBundle)
		}
		var rc io.ReadCloser
		if rc, err = opt.Reopen(); err == nil {
			m, _, err = bundleUnpack(rc, stage, &m)
			rc.Close()
		}
	}
	if err != nil {
		return ImportResult{}, fmt.Errorf("import: %w", err)
	}
	cwd := opt.Cwd
	if cwd == "" {
		cwd = m.Cwd
	}
	if cwd == "" {
		return ImportResult{}, fmt.Errorf("import: %w: the bundle records no cwd; give one", ErrBadBundle)
	}
	res := ImportResult{SessionID: m.SessionID, Cwd: cwd, Project: claudedir.SanitizePath(cwd), Files: len(m.Files), StaleStagingsRemoved: len(stale)}
	if opt.Fork {
		return l.importFork(ctx, stage, m, res)
	}
	lk, err := l.Lock(ctx, m.SessionID, opt.LockWait)
	if err != nil {
		return res, fmt.Errorf("import %s: %w", m.SessionID, err)
	}
	defer lk.Release()
	if dir, err := l.FindSession(m.SessionID, ""); err != nil {
		return res, fmt.Errorf("import %s: %w", m.SessionID, err)
	} else if dir != "" {
		same, _ := continues(claudedir.MainFile(dir, m.SessionID), claudedir.MainFile(stage, m.SessionID))
		if !same {
			return res, fmt.Errorf("import: %w: a different session %s is in %s (--fork imports the bundle as a new session)", ErrSessionExists, m.SessionID, dir)
		}
		res.AlreadyPresent, res.Project = true, filepath.Base(dir)
		return res, nil
	}
	if cwd != m.Cwd {
		line := `{"type":"relocated","relocatedCwd":` + string(core.AppendJSString(nil, cwd)) + `,"sessionId":"` + m.SessionID + `"}`
		if _, err := appendLineDurably(claudedir.MainFile(stage, m.SessionID), line); err != nil {
			return res, fmt.Errorf("import %s: %w", m.SessionID, err)
		}
		res.Relocated = true
	}
	if err := l.placeStaged(stage, res.Project, m.SessionID); err != nil {
		return res, err
	}
	// The session is back, as trash restore brings it back: markers left
	// by its deletion would stop Claude Code (and scribe) from writing it.
	n, err := l.RemoveDeletionMarkers(sessions.TrashItem{Project: res.Project, SessionID: m.SessionID})
	res.MarkersRemoved = n
	if err != nil {
		return res, fmt.Errorf("import %s: %w", m.SessionID, err)
	}
	return res, nil
}

// placeStaged moves the staged names of a session into a project folder.
func (l Layout) placeStaged(stage, folder, id string) error {
	dst := l.ProjectFolder(folder)
	if err := os.MkdirAll(dst, layout.DirMode); err != nil {
		return fmt.Errorf("import %s: %w", id, err)
	}
	names, err := sessionEntries(stage, id)
	if err != nil {
		return fmt.Errorf("import %s: %w", id, err)
	}
	// The transcript last: until it is there, nothing lists the session.
	sort.SliceStable(names, func(i, j int) bool { return names[i] != id+".jsonl" && names[j] == id+".jsonl" })
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(dst, n)); err == nil {
			return fmt.Errorf("import %s: %w: %s", id, ErrSessionExists, filepath.Join(dst, n))
		}
		if err := os.Rename(filepath.Join(stage, n), filepath.Join(dst, n)); err != nil {
			return fmt.Errorf("import %s: place %s: %w", id, n, err)
		}
	}
	return durable.SyncDir(dst)
}

func (l Layout) importFork(ctx context.Context, stage string, m BundleManifest, res ImportResult) (ImportResult, error) {
	buf, err := os.ReadFile(claudedir.MainFile(stage, m.SessionID))
	if err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	title := fork.SourceTitle(buf, forkSidecarTitle(nil, stage, m.SessionID))
	fk, err := fork.Fork(forkParseLines(buf), m.SessionID, fork.Options{SourceTitle: func() string { return title }})
	if err != nil {
		return res, fmt.Errorf("import %s as a fork: %w", m.SessionID, err)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	path := claudedir.MainFile(l.ProjectFolder(res.Project), fk.SessionID)
	if err := forkWriteNew(path, fk.Entries); err != nil {
		return res, fmt.Errorf("import %s as a fork: %w", m.SessionID, err)
	}
	res.ForkedFrom, res.SessionID, res.Files = m.SessionID, fk.SessionID, 1
	return res, nil
}

// continues reports whether the transcript at have starts with the bytes of
// the one at bundled: the same session, perhaps with lines appended since
// (a relocated line, new turns).
func continues(have, bundled string) (bool, error) {
	x, err := os.ReadFile(have)
	if err != nil {
		return false, err
	}
	y, err := os.ReadFile(bundled)
	if err != nil {
		return false, err
	}
	return bytes.HasPrefix(x, y), nil
}

// bundleUnpack reads a bundle and checks it against its manifest: every
// listed file present with its size and hash, nothing else, no path
// leaving the session's names. With stage "" it writes nothing. Otherwise
// it extracts into stage, never more than the manifest declares: known is
// the manifest a first read found, else the manifest must come first; when
// it comes last, the bundle is read through writing nothing and again
// reports that a second read (with known) must stage it.
func bundleUnpack(r io.Reader, stage string, known *BundleManifest) (m BundleManifest, again bool, err error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return m, false, fmt.Errorf("%w: not a gzipped tar: %v", ErrBadBundle, err)
	}
	tr := tar.NewReader(gz)
	got := map[string]BundleFile{}
	decl := known // the manifest that bounds what is written
	seen := false // a manifest.json was read
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return m, false, fmt.Errorf("%w: %v", ErrBadBundle, err)
		}
		if h.Name == "manifest.json" {
			if seen {
				return m, false, fmt.Errorf("%w: two manifests", ErrBadBundle)
			}
			seen = true
			if m, err = readManifest(tr); err != nil {
				return m, false, err
			}
			if known != nil && !sameManifest(m, *known) {
				return m, false, fmt.Errorf("%w: the manifest changed between two reads", ErrBadBundle)
			}
			if len(got) == 0 {
				decl = &m
			}
			continue
		}
		rel, ok := strings.CutPrefix(h.Name, "session/")
		if !ok || h.Typeflag != tar.TypeReg || path.Clean(rel) != rel || path.IsAbs(rel) || strings.HasPrefix(rel, "../") || rel == ".." {
			return m, false, fmt.Errorf("%w: unexpected entry %q", ErrBadBundle, h.Name)
		}
		if _, dup := got[rel]; dup {
			return m, false, fmt.Errorf("%w: %s twice", ErrBadBundle, rel)
		}
		dst := stage
		if decl != nil {
			f, ok := findBundleFile(*decl, rel)
			if !ok {
				return m, false, fmt.Errorf("%w: %s is not in the manifest", ErrBadBundle, rel)
			}
			if h.Size != f.Size {
				return m, false, fmt.Errorf("%w: %s holds %d bytes, the manifest declares %d (nothing written)", ErrBadBundle, rel, h.Size, f.Size)
			}
		} else {
			dst = "" // the manifest comes last: hash only, write nothing
		}
		bf, err := bundleExtract(tr, dst, rel, h.Size, h.ModTime)
		if err != nil {
			return m, false, err
		}
		got[rel] = bf
	}
	if !seen {
		return m, false, fmt.Errorf("%w: no manifest.json", ErrBadBundle)
	}
	for _, f := range m.Files {
		g, ok := got[f.Path]
		if !ok {
			return m, false, fmt.Errorf("%w: %s is missing", ErrBadBundle, f.Path)
		}
		if g != f {
			return m, false, fmt.Errorf("%w: %s does not match the manifest (size %d, sha256 %s; want %d, %s)", ErrBadBundle, f.Path, g.Size, g.SHA256, f.Size, f.SHA256)
		}
		delete(got, f.Path)
	}
	for p := range got {
		return m, false, fmt.Errorf("%w: %s is not in the manifest", ErrBadBundle, p)
	}
	return m, stage != "" && decl == nil && len(m.Files) > 0, nil
}

// readManifest reads and checks a bundle's manifest: its format, its
// session id, and that each file belongs to the session, once, with a
// size.
func readManifest(r io.Reader) (BundleManifest, error) {
	var m BundleManifest
	raw, err := io.ReadAll(io.LimitReader(r, 16<<20))
	if err != nil {
		return m, fmt.Errorf("%w: manifest: %v", ErrBadBundle, err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("%w: manifest: %v", ErrBadBundle, err)
	}
	if m.Format != BundleFormat || m.Version != BundleVersion {
		return m, fmt.Errorf("%w: format %q version %d (this build reads %s version %d)", ErrBadBundle, m.Format, m.Version, BundleFormat, BundleVersion)
	}
	if !claudedir.IsSessionID(m.SessionID) {
		return m, fmt.Errorf("%w: session id %q", ErrBadBundle, m.SessionID)
	}
	paths := make(map[string]bool, len(m.Files))
	for _, f := range m.Files {
		if f.Path != m.SessionID+".jsonl" && !strings.HasPrefix(f.Path, m.SessionID+"/") && !strings.HasPrefix(f.Path, m.SessionID+".") {
			return m, fmt.Errorf("%w: %s does not belong to session %s", ErrBadBundle, f.Path, m.SessionID)
		}
		if paths[f.Path] || f.Size < 0 {
			return m, fmt.Errorf("%w: manifest: %s listed twice or with a negative size", ErrBadBundle, f.Path)
		}
		paths[f.Path] = true
	}
	if !paths[m.SessionID+".jsonl"] {
		return m, fmt.Errorf("%w: no transcript %s.jsonl", ErrBadBundle, m.SessionID)
	}
	return m, nil
}

// sameManifest reports whether two reads found the same manifest.
func sameManifest(a, b BundleManifest) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func findBundleFile(m BundleManifest, p string) (BundleFile, bool) {
	for _, f := range m.Files {
		if f.Path == p {
			return f, true
		}
	}
	return BundleFile{}, false
}

// bundleExtract copies one file of a bundle, at most size bytes, into
// stage (stage "": hashes it only, writing nothing).
func bundleExtract(tr *tar.Reader, stage, rel string, size int64, mtime time.Time) (BundleFile, error) {
	h := sha256.New()
	src := io.LimitReader(tr, size)
	if stage == "" {
		n, err := io.Copy(h, src)
		if err != nil {
			return BundleFile{}, fmt.Errorf("%w: %s: %v", ErrBadBundle, rel, err)
		}
		return BundleFile{Path: rel, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
	}
	dst := filepath.Join(stage, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), layout.DirMode); err != nil {
		return BundleFile{}, fmt.Errorf("stage %s: %w", rel, err)
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, layout.FileMode)
	if err != nil {
		return BundleFile{}, fmt.Errorf("%w: %s: %v", ErrBadBundle, rel, err)
	}
	n, err := io.Copy(io.MultiWriter(f, h), src)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && !mtime.IsZero() {
		err = os.Chtimes(dst, mtime, mtime)
	}
	if err != nil {
		return BundleFile{}, fmt.Errorf("stage %s: %w", rel, err)
	}
	return BundleFile{Path: rel, Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}
