package sealed

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// ErrMixedArchive is returned when a folder would hold sealed and plain
// transcripts side by side: a sealed archive configured without
// encryption, or encryption configured over plain transcripts.
var ErrMixedArchive = errors.New("sealed and plain transcripts cannot share an archive")

// ErrArchiveKey is returned when a sealed archive's key cannot be had: no
// identity, a wrong one, a key source that fails.
var ErrArchiveKey = errors.New("sealed archive key")

// Store is a sealed archive: its folder, how to get its data key,
// and what reading and writing its frames counted.
type Store struct {
	root    string
	opts    seal.Options
	environ []string
	log     hclog.Logger

	mu  sync.Mutex
	key *seal.RecordKey

	TornCut, FramesWritten, Upgraded atomic.Int64
}

// File is where a sealed transcript's next frame goes.
type File struct {
	Off   int64        // the file's size on disk
	Index uint64       // the next frame's index
	Prev  [tagLen]byte // the last frame's tag (the chain's head)
	// recorded is the frame count the extent record on disk names, seq
	// the last write of that record.
	Recorded, Seq uint64
}

// NewStore checks that the archive at root is what the options say
// (sealed with keys, plain without) and returns its store, nil for a
// plain archive. No key is read yet.
func NewStore(root string, o seal.Options, environ []string, log hclog.Logger) (*Store, error) {
	if o.IsZero() {
		// A plain store (Claude's own folder, too) costs one stat here.
		if at(root).IsSealed() {
			return nil, fmt.Errorf("%w: %s is a sealed archive; give this sink its encryption block", ErrMixedArchive, root)
		}
		return nil, nil
	}
	_, plain, err := at(root).archiveKinds()
	if err != nil {
		return nil, err
	}
	if plain {
		return nil, fmt.Errorf("%w: %s holds plain transcripts; seal a new folder", ErrMixedArchive, root)
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("encryption: %w", err)
	}
	if o.Identity.IsZero() && o.Passphrase.IsZero() {
		return nil, errors.New("encryption: an archive is read to deduplicate and resume: give an identity (or a passphrase), not only recipients")
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	o.Warn = log.Warn
	return &Store{root: root, opts: o, environ: environ, log: log}, nil
}

// archiveKinds reports whether the folder holds a sealed archive (its key,
// or sealed transcripts) and whether it holds plain transcripts.
func (l Layout) archiveKinds() (sealed, plain bool, err error) {
	if _, err := os.Stat(filepath.Join(l.ConfigDir, claudedir.ArchiveKeyName)); err == nil {
		sealed = true
	}
	err = filepath.WalkDir(l.ProjectsDir(), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == l.ProjectsDir() {
				return filepath.SkipAll // no tree (yet): writes will say what is wrong
			}
			return err
		}
		switch n := d.Name(); {
		case d.IsDir():
		case strings.HasSuffix(n, ".jsonl"+claudedir.SealedSuffix):
			sealed = true
		case strings.HasSuffix(n, ".jsonl"):
			plain = true
		}
		if sealed && plain {
			return filepath.SkipAll
		}
		return nil
	})
	if err != nil {
		return false, false, fmt.Errorf("look at %s: %w", l.ConfigDir, err)
	}
	return sealed, plain, nil
}

// IsSealed reports whether the folder is a sealed archive (it has the
// archive's key), which only the readers that support one may read.
func (l Layout) IsSealed() bool {
	_, err := os.Stat(filepath.Join(l.ConfigDir, claudedir.ArchiveKeyName))
	return err == nil
}

// DataKey opens the archive's data key (making it the first time).
func (st *Store) DataKey(ctx context.Context) (*seal.RecordKey, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.key != nil {
		return st.key, nil
	}
	sl, err := seal.New(ctx, st.opts, st.environ)
	if err != nil {
		return nil, fmt.Errorf("%w of %s: %v", ErrArchiveKey, st.root, err)
	}
	if err := os.MkdirAll(st.root, layout.DirMode); err != nil {
		return nil, fmt.Errorf("%w of %s: %v", ErrArchiveKey, st.root, err)
	}
	keyPath := filepath.Join(st.root, claudedir.ArchiveKeyName)
	if _, err := os.Lstat(keyPath); errors.Is(err, fs.ErrNotExist) {
		// A new key over sealed transcripts would make them, or what
		// is written next, unreadable: the key file was lost (a backup
		// that skipped it), never to be made again.
		if sealed, _, err := at(st.root).archiveKinds(); err != nil || sealed {
			return nil, fmt.Errorf("%w of %s: %s is missing but the archive holds sealed transcripts; restore it from a backup (no new key made: it could not open them)",
				ErrArchiveKey, st.root, keyPath)
		}
	}
	k, err := sl.RecordKey(keyPath)
	if err != nil {
		return nil, fmt.Errorf("%w of %s: %v", ErrArchiveKey, st.root, err)
	}
	if err := st.keyOpensArchive(k, keyPath); err != nil {
		return nil, err
	}
	st.key = k
	return k, nil
}

// wellFormedExtent reports whether the extent record at p has a slot a key
// could open (its magic, its length): a record cut to nothing or zeroed
// says nothing about the key.
func wellFormedExtent(p string) bool {
	b, err := os.ReadFile(p)
	return err == nil && len(b) >= ExtentSlotLen && bytes.HasPrefix(b, extentMagic)
}

// keyOpensArchive checks the data key against the archive's extent
// records (up to keySamples of them): a key file from another archive (a
// wrong backup restored, archives sharing an identity) opens none, and
// writing new sessions with it would leave the archive under two keys, one
// half unreadable whichever key file stays. One record that does not open
// is that file's damage, reported when it is read.
func (st *Store) keyOpensArchive(k *seal.RecordKey, keyPath string) error {
	const keySamples = 8
	var samples []string
	projects := at(st.root).ProjectsDir()
	_ = filepath.WalkDir(projects, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ".jsonl"+claudedir.SealedSuffix+claudedir.ExtentSuffix) && wellFormedExtent(p) {
			samples = append(samples, p)
			if len(samples) == keySamples {
				return filepath.SkipAll
			}
		}
		return nil
	})
	var first error
	for _, p := range samples {
		disk := strings.TrimSuffix(p, claudedir.ExtentSuffix)
		_, err := ReadExtent(k, disk, st.Rel(strings.TrimSuffix(disk, claudedir.SealedSuffix)))
		if err == nil {
			return nil
		}
		first = cmp.Or(first, err)
	}
	if first == nil {
		return nil
	}
	return fmt.Errorf("%w of %s: the data key in %s opens none of %d extent records of the archive (a key file from another archive, or those records damaged): nothing is written with it: %w",
		ErrArchiveKey, st.root, keyPath, len(samples), first)
}

// Rel is the name a frame of the transcript at path is bound to.
func (st *Store) Rel(path string) string {
	r, err := filepath.Rel(st.root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(r)
}

// Read decrypts the sealed transcript whose plain name is path (a missing
// file is empty). With cut (the writer), a torn last frame is cut off the
// file (synced, counted, logged) and a format 1 file is rewritten in
// format 2; without, a torn frame is only skipped and reported.
func (st *Store) Read(ctx context.Context, path string, cut bool) ([]byte, *File, sealedTail, error) {
	disk := path + claudedir.SealedSuffix
	// The extent record is read before the file: it names only frames
	// already on disk, so the file read after it holds at least as much,
	// even while a writer appends.
	var key *seal.RecordKey
	var ext *Extent
	var extErr error
	_, noExtent := os.Lstat(disk + claudedir.ExtentSuffix)
	if noExtent == nil {
		var err error
		if key, err = st.DataKey(ctx); err != nil {
			return nil, nil, sealedTail{}, err
		}
		ext, extErr = ReadExtent(key, disk, st.Rel(path))
	}
	data, err := os.ReadFile(disk)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		return nil, nil, sealedTail{}, fmt.Errorf("read %s: %w", disk, err)
	}
	if missing && noExtent != nil {
		return nil, &File{}, sealedTail{}, nil
	}
	if key == nil {
		if key, err = st.DataKey(ctx); err != nil {
			return nil, nil, sealedTail{}, err
		}
	}
	rel := st.Rel(path)
	if extErr != nil {
		if missing {
			// A record torn while the file was being made (it is
			// written before the file): the file was never there.
			return nil, &File{}, sealedTail{}, nil
		}
		return nil, nil, sealedTail{}, extErr
	}
	if missing {
		if ext != nil && ext.Frames > 0 {
			return nil, nil, sealedTail{}, fmt.Errorf("%w: %s is gone, its extent record names %d frames (%d bytes): deleted",
				ErrSealedDamaged, disk, ext.Frames, ext.End)
		}
		return nil, &File{}, sealedTail{}, nil
	}
	plain, t, err := Open(make([]byte, 0, len(data)), key, disk, rel, data, ext)
	if err != nil {
		return nil, nil, t, err
	}
	if ext == nil && !t.v1 && t.frames > 0 {
		return nil, nil, t, fmt.Errorf("%w: %s has no extent record beside it (%s deleted?): what it must hold cannot be checked",
			ErrSealedDamaged, disk, filepath.Base(disk+claudedir.ExtentSuffix))
	}
	sf := &File{Off: t.end, Index: t.frames, Prev: t.prev}
	if ext != nil {
		sf.Recorded, sf.Seq = ext.Frames, ext.Seq
	}
	switch {
	case cut && t.v1:
		if sf, err = st.upgrade(key, disk, rel, plain, t); err != nil {
			return nil, nil, t, err
		}
	case cut && t.cut > 0:
		if err := truncateSync(disk, t.end); err != nil {
			return nil, nil, t, err
		}
		st.TornCut.Add(1)
		st.log.Warn("cut a torn last frame (a write was interrupted)", "file", disk, "bytes", t.cut, "frames_kept", t.frames)
	}
	return plain, sf, t, nil
}

// upgrade rewrites a format 1 file in format 2, frame for frame (its torn
// tail, if any, left out and counted as cut), its extent record first: a
// crash between the two leaves the format 1 file, which holds as many
// frames as the record says.
func (st *Store) upgrade(key *seal.RecordKey, disk, rel string, plain []byte, t sealedTail) (*File, error) {
	var out []byte
	sf := &File{}
	from := 0
	for _, to := range t.bounds {
		out = AppendFrame(out, key, rel, sf.Index, int64(len(out)), sf.Prev, plain[from:to])
		sf.Prev, sf.Index, sf.Off = LastTag(out), sf.Index+1, int64(len(out))
		from = to
	}
	if err := MakeExtent(key, disk, rel, Extent{Frames: sf.Index, End: sf.Off, Tag: sf.Prev}); err != nil {
		return nil, err
	}
	if err := layout.ReplaceFile(disk, out); err != nil {
		return nil, fmt.Errorf("rewrite %s in sealed format 2: %w", disk, err)
	}
	sf.Recorded, sf.Seq = sf.Index, ExtentMadeSeq
	st.Upgraded.Add(1)
	if t.cut > 0 {
		st.TornCut.Add(1)
	}
	st.log.Info("rewrote a sealed transcript in format 2 (authenticated headers, extent record)", "file", disk, "frames", sf.Index, "torn_bytes_cut", t.cut)
	return sf, nil
}

func truncateSync(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("cut torn frame of %s: %w", path, err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("cut torn frame of %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	return nil
}

// Find returns the plain name of ref's sealed transcript, in the project
// folder FindSession finds; ErrNotFound on a miss.
func (st *Store) Find(ctx context.Context, l layout.Layout, ref core.SessionRef) (string, error) {
	if !claudedir.IsSessionID(ref.SessionID) {
		return "", fmt.Errorf("%w: session %q (not a UUID)", layout.ErrNotFound, ref.SessionID)
	}
	d, err := l.FindSession(ref.SessionID, ref.CWD)
	if err != nil {
		return "", err
	}
	if d != "" && ref.AgentID == "" {
		main := claudedir.MainFile(d, ref.SessionID)
		if _, err := os.Stat(main + claudedir.SealedSuffix); err == nil {
			return main, nil
		}
	}
	if d != "" && ref.AgentID != "" {
		var found string
		want := "agent-" + ref.AgentID + ".jsonl" + claudedir.SealedSuffix
		err := filepath.WalkDir(filepath.Join(d, ref.SessionID, "subagents"), func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if !de.IsDir() && de.Name() == want {
				found = strings.TrimSuffix(p, claudedir.SealedSuffix)
				return filepath.SkipAll
			}
			return nil
		})
		if err != nil || found != "" {
			return found, err
		}
	}
	if ref.AgentID != "" {
		return "", fmt.Errorf("%w: agent %s of session %s", layout.ErrNotFound, ref.AgentID, ref.SessionID)
	}
	return "", fmt.Errorf("%w: session %s", layout.ErrNotFound, ref.SessionID)
}
