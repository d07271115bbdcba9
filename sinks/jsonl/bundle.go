package jsonl

// Bundles: a portable, path-independent archive of everything a session
// has (transcript, <id>/ folder with subagents, tool results and
// sidecars, <id>.* sidecars), as a gzipped tar:
//
//	session/<id>.jsonl
//	session/<id>/subagents/agent-<agentId>.jsonl ...
//	session/<id>.ccr-tip.json ...
//	manifest.json        (last) format, version, session id, original cwd
//	                     and project folder, and each file's size and sha256
//
// Import verifies every file against the manifest (a missing, extra or
// changed file refuses the whole bundle) in a staging folder inside the
// config dir, then moves the files into the project folder of the new cwd
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

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/transcript"
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
	mains, err := l.sessionMains(id)
	if err != nil || len(mains) == 0 {
		return BundleManifest{}, fmt.Errorf("export: %w: session %s", ErrNotFound, id)
	}
	dir := filepath.Dir(mains[0])
	m := BundleManifest{Format: BundleFormat, Version: BundleVersion, SessionID: id, Project: filepath.Base(dir), ExportedAt: time.Now().UTC()}
	if len(folders) > 1 {
		return m, fmt.Errorf("export %s: the session is in %d project folders (%s): move or remove the others first", id, len(folders), strings.Join(folders, ", "))
	}
	if info, ok, _ := ReadLite(mains[0], ""); ok {
		m.Cwd, m.Title = info.Cwd, info.Summary
	}
	names, err := sessionEntries(dir, id)
	if err != nil {
		return m, fmt.Errorf("export %s: %w", id, err)
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, n := range names {
		files, err := describeTree(dir, n)
		if err != nil {
			return m, fmt.Errorf("export %s: %w", id, err)
		}
		for _, f := range files {
			if f.Link != "" {
				m.Skipped = append(m.Skipped, f.Path)
			}
			if f.Dir || f.Link != "" {
				continue
			}
			if err := ctx.Err(); err != nil {
				return m, err
			}
			bf, err := bundleAdd(tw, dir, f)
			if err != nil {
				return m, fmt.Errorf("export %s: %w", id, err)
			}
			m.Files = append(m.Files, bf)
		}
	}
	raw, _ := json.MarshalIndent(m, "", "  ")
	if err := tw.WriteHeader(&tar.Header{Name: "manifest.json", Mode: 0o600, Size: int64(len(raw)), ModTime: m.ExportedAt}); err == nil {
		_, err = tw.Write(raw)
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
func bundleAdd(tw *tar.Writer, dir string, f TrashFile) (BundleFile, error) {
	fh, err := os.Open(filepath.Join(dir, filepath.FromSlash(f.Path)))
	if err != nil {
		return BundleFile{}, err
	}
	defer fh.Close()
	if err := tw.WriteHeader(&tar.Header{Name: "session/" + f.Path, Mode: 0o600, Size: f.Size, ModTime: f.ModTime, Format: tar.FormatPAX}); err != nil {
		return BundleFile{}, err
	}
	h := sha256.New()
	if n, err := io.Copy(io.MultiWriter(tw, h), io.LimitReader(fh, f.Size)); err != nil || n != f.Size {
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
}

// stageDir makes a staging folder inside the config dir (on the same file
// system as the projects, so that placing is a rename).
func (l Layout) stageDir() (string, error) {
	base := filepath.Join(l.ConfigDir, "scribe")
	if err := os.MkdirAll(base, dirMode); err != nil {
		return "", fmt.Errorf("staging folder: %w", err)
	}
	stage, err := os.MkdirTemp(base, "import-")
	if err != nil {
		return "", fmt.Errorf("staging folder: %w", err)
	}
	return stage, nil
}

// VerifyBundle checks a bundle against its manifest without importing it.
func (l Layout) VerifyBundle(r io.Reader) (BundleManifest, error) {
	stage, err := l.stageDir()
	if err != nil {
		return BundleManifest{}, fmt.Errorf("verify: %w", err)
	}
	defer os.RemoveAll(stage)
	m, err := bundleUnpack(r, stage)
	if err != nil {
		return m, fmt.Errorf("verify: %w", err)
	}
	return m, nil
}

// ImportBundle verifies a bundle and places its session under the project
// of opt.Cwd (default the bundle's cwd).
func (l Layout) ImportBundle(ctx context.Context, r io.Reader, opt ImportOptions) (ImportResult, error) {
	stage, err := l.stageDir()
	if err != nil {
		return ImportResult{}, fmt.Errorf("import: %w", err)
	}
	defer os.RemoveAll(stage)
	m, err := bundleUnpack(r, stage)
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
	res := ImportResult{SessionID: m.SessionID, Cwd: cwd, Project: SanitizePath(cwd), Files: len(m.Files)}
	if opt.Fork {
		return l.importFork(ctx, stage, m, res)
	}
	lk, err := l.lockSession(ctx, m.SessionID, opt.LockWait)
	if err != nil {
		return res, fmt.Errorf("import %s: %w", m.SessionID, err)
	}
	defer lk.release()
	if dir, err := l.FindSession(m.SessionID, ""); err != nil {
		return res, fmt.Errorf("import %s: %w", m.SessionID, err)
	} else if dir != "" {
		same, _ := continues(MainFile(dir, m.SessionID), MainFile(stage, m.SessionID))
		if !same {
			return res, fmt.Errorf("import: %w: a different session %s is in %s (--fork imports the bundle as a new session)", ErrSessionExists, m.SessionID, dir)
		}
		res.AlreadyPresent, res.Project = true, filepath.Base(dir)
		return res, nil
	}
	if cwd != m.Cwd {
		line := `{"type":"relocated","relocatedCwd":` + string(core.AppendJSString(nil, cwd)) + `,"sessionId":"` + m.SessionID + `"}`
		if _, err := appendLineDurably(MainFile(stage, m.SessionID), line); err != nil {
			return res, fmt.Errorf("import %s: %w", m.SessionID, err)
		}
		res.Relocated = true
	}
	return res, l.placeStaged(stage, res.Project, m.SessionID)
}

// placeStaged moves the staged names of a session into a project folder.
func (l Layout) placeStaged(stage, folder, id string) error {
	dst := l.ProjectFolder(folder)
	if err := os.MkdirAll(dst, dirMode); err != nil {
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
	buf, err := os.ReadFile(MainFile(stage, m.SessionID))
	if err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	title := transcript.ForkSourceTitle(buf, forkSidecarTitle(stage, m.SessionID))
	fk, err := transcript.Fork(forkParseLines(buf), m.SessionID, transcript.ForkOptions{SourceTitle: func() string { return title }})
	if err != nil {
		return res, fmt.Errorf("import %s as a fork: %w", m.SessionID, err)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	path := MainFile(l.ProjectFolder(res.Project), fk.SessionID)
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

// bundleUnpack extracts a bundle into stage and checks it against its
// manifest: every listed file present with its size and hash, nothing
// else, no path leaving the session's names.
func bundleUnpack(r io.Reader, stage string) (BundleManifest, error) {
	var m BundleManifest
	gz, err := gzip.NewReader(r)
	if err != nil {
		return m, fmt.Errorf("%w: not a gzipped tar: %v", ErrBadBundle, err)
	}
	tr := tar.NewReader(gz)
	got := map[string]BundleFile{}
	var rawManifest []byte
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return m, fmt.Errorf("%w: %v", ErrBadBundle, err)
		}
		if h.Name == "manifest.json" {
			if rawManifest, err = io.ReadAll(io.LimitReader(tr, 16<<20)); err != nil {
				return m, fmt.Errorf("%w: manifest: %v", ErrBadBundle, err)
			}
			continue
		}
		rel, ok := strings.CutPrefix(h.Name, "session/")
		if !ok || h.Typeflag != tar.TypeReg || path.Clean(rel) != rel || path.IsAbs(rel) || strings.HasPrefix(rel, "../") || rel == ".." {
			return m, fmt.Errorf("%w: unexpected entry %q", ErrBadBundle, h.Name)
		}
		bf, err := bundleExtract(tr, stage, rel, h.ModTime)
		if err != nil {
			return m, err
		}
		got[rel] = bf
	}
	if rawManifest == nil {
		return m, fmt.Errorf("%w: no manifest.json", ErrBadBundle)
	}
	if err := json.Unmarshal(rawManifest, &m); err != nil {
		return m, fmt.Errorf("%w: manifest: %v", ErrBadBundle, err)
	}
	if m.Format != BundleFormat || m.Version != BundleVersion {
		return m, fmt.Errorf("%w: format %q version %d (this build reads %s version %d)", ErrBadBundle, m.Format, m.Version, BundleFormat, BundleVersion)
	}
	if !IsSessionID(m.SessionID) {
		return m, fmt.Errorf("%w: session id %q", ErrBadBundle, m.SessionID)
	}
	for _, f := range m.Files {
		if f.Path != m.SessionID+".jsonl" && !strings.HasPrefix(f.Path, m.SessionID+"/") && !strings.HasPrefix(f.Path, m.SessionID+".") {
			return m, fmt.Errorf("%w: %s does not belong to session %s", ErrBadBundle, f.Path, m.SessionID)
		}
		g, ok := got[f.Path]
		if !ok {
			return m, fmt.Errorf("%w: %s is missing", ErrBadBundle, f.Path)
		}
		if g != f {
			return m, fmt.Errorf("%w: %s does not match the manifest (size %d, sha256 %s; want %d, %s)", ErrBadBundle, f.Path, g.Size, g.SHA256, f.Size, f.SHA256)
		}
		delete(got, f.Path)
	}
	for p := range got {
		return m, fmt.Errorf("%w: %s is not in the manifest", ErrBadBundle, p)
	}
	if _, ok := findBundleFile(m, m.SessionID+".jsonl"); !ok {
		return m, fmt.Errorf("%w: no transcript %s.jsonl", ErrBadBundle, m.SessionID)
	}
	return m, nil
}

func findBundleFile(m BundleManifest, p string) (BundleFile, bool) {
	for _, f := range m.Files {
		if f.Path == p {
			return f, true
		}
	}
	return BundleFile{}, false
}

func bundleExtract(tr *tar.Reader, stage, rel string, mtime time.Time) (BundleFile, error) {
	dst := filepath.Join(stage, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(dst), dirMode); err != nil {
		return BundleFile{}, fmt.Errorf("stage %s: %w", rel, err)
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return BundleFile{}, fmt.Errorf("%w: %s: %v", ErrBadBundle, rel, err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), tr)
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
