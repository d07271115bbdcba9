package jsonl

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
)

// ErrMixedArchive is returned when a folder would hold sealed and plain
// transcripts side by side: a sealed archive configured without
// encryption, or encryption configured over plain transcripts.
var ErrMixedArchive = errors.New("sealed and plain transcripts cannot share an archive")

// ErrArchiveKey is returned when a sealed archive's key cannot be had: no
// identity, a wrong one, a key source that fails.
var ErrArchiveKey = errors.New("sealed archive key")

// sealedStore is a sealed archive: its folder, how to get its data key,
// and what reading and writing its frames counted.
type sealedStore struct {
	root    string
	opts    seal.Options
	environ []string
	log     hclog.Logger

	mu  sync.Mutex
	key *seal.RecordKey

	tornCut, framesWritten, upgraded atomic.Int64
}

// sealedFile is where a sealed transcript's next frame goes.
type sealedFile struct {
	off   int64        // the file's size on disk
	index uint64       // the next frame's index
	prev  [tagLen]byte // the last frame's tag (the chain's head)
	// recorded is the frame count the extent record on disk names, seq
	// the last write of that record.
	recorded, seq uint64
}

// newSealedStore checks that the archive at root is what the options say
// (sealed with keys, plain without) and returns its store, nil for a
// plain archive. No key is read yet.
func newSealedStore(root string, o seal.Options, environ []string, log hclog.Logger) (*sealedStore, error) {
	if o.IsZero() {
		// A plain store (Claude's own folder, too) costs one stat here.
		if (Layout{ConfigDir: root}).IsSealed() {
			return nil, fmt.Errorf("%w: %s is a sealed archive; give this sink its encryption block", ErrMixedArchive, root)
		}
		return nil, nil
	}
	_, plain, err := (Layout{ConfigDir: root}).archiveKinds()
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
	return &sealedStore{root: root, opts: o, environ: environ, log: log}, nil
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

// dataKey opens the archive's data key (making it the first time).
func (st *sealedStore) dataKey(ctx context.Context) (*seal.RecordKey, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.key != nil {
		return st.key, nil
	}
	sl, err := seal.New(ctx, st.opts, st.environ)
	if err != nil {
		return nil, fmt.Errorf("%w of %s: %v", ErrArchiveKey, st.root, err)
	}
	if err := os.MkdirAll(st.root, dirMode); err != nil {
		return nil, fmt.Errorf("%w of %s: %v", ErrArchiveKey, st.root, err)
	}
	keyPath := filepath.Join(st.root, claudedir.ArchiveKeyName)
	if _, err := os.Lstat(keyPath); errors.Is(err, fs.ErrNotExist) {
		// A new key over sealed transcripts would make them, or what
		// is written next, unreadable: the key file was lost (a backup
		// that skipped it), never to be made again.
		if sealed, _, err := (Layout{ConfigDir: st.root}).archiveKinds(); err != nil || sealed {
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
	return err == nil && len(b) >= extentSlotLen && bytes.HasPrefix(b, extentMagic)
}

// keyOpensArchive checks the data key against the archive's extent
// records (up to keySamples of them): a key file from another archive (a
// wrong backup restored, archives sharing an identity) opens none, and
// writing new sessions with it would leave the archive under two keys, one
// half unreadable whichever key file stays. One record that does not open
// is that file's damage, reported when it is read.
func (st *sealedStore) keyOpensArchive(k *seal.RecordKey, keyPath string) error {
	const keySamples = 8
	var samples []string
	projects := Layout{ConfigDir: st.root}.ProjectsDir()
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
		_, err := readExtent(k, disk, st.rel(strings.TrimSuffix(disk, claudedir.SealedSuffix)))
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

// rel is the name a frame of the transcript at path is bound to.
func (st *sealedStore) rel(path string) string {
	r, err := filepath.Rel(st.root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(r)
}

// read decrypts the sealed transcript whose plain name is path (a missing
// file is empty). With cut (the writer), a torn last frame is cut off the
// file (synced, counted, logged) and a format 1 file is rewritten in
// format 2; without, a torn frame is only skipped and reported.
func (st *sealedStore) read(ctx context.Context, path string, cut bool) ([]byte, *sealedFile, sealedTail, error) {
	disk := path + claudedir.SealedSuffix
	// The extent record is read before the file: it names only frames
	// already on disk, so the file read after it holds at least as much,
	// even while a writer appends.
	var key *seal.RecordKey
	var ext *extent
	var extErr error
	_, noExtent := os.Lstat(disk + claudedir.ExtentSuffix)
	if noExtent == nil {
		var err error
		if key, err = st.dataKey(ctx); err != nil {
			return nil, nil, sealedTail{}, err
		}
		ext, extErr = readExtent(key, disk, st.rel(path))
	}
	data, err := os.ReadFile(disk)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		return nil, nil, sealedTail{}, fmt.Errorf("read %s: %w", disk, err)
	}
	if missing && noExtent != nil {
		return nil, &sealedFile{}, sealedTail{}, nil
	}
	if key == nil {
		if key, err = st.dataKey(ctx); err != nil {
			return nil, nil, sealedTail{}, err
		}
	}
	rel := st.rel(path)
	if extErr != nil {
		if missing {
			// A record torn while the file was being made (it is
			// written before the file): the file was never there.
			return nil, &sealedFile{}, sealedTail{}, nil
		}
		return nil, nil, sealedTail{}, extErr
	}
	if missing {
		if ext != nil && ext.frames > 0 {
			return nil, nil, sealedTail{}, fmt.Errorf("%w: %s is gone, its extent record names %d frames (%d bytes): deleted",
				ErrSealedDamaged, disk, ext.frames, ext.end)
		}
		return nil, &sealedFile{}, sealedTail{}, nil
	}
	plain, t, err := openSealed(make([]byte, 0, len(data)), key, disk, rel, data, ext)
	if err != nil {
		return nil, nil, t, err
	}
	if ext == nil && !t.v1 && t.frames > 0 {
		return nil, nil, t, fmt.Errorf("%w: %s has no extent record beside it (%s deleted?): what it must hold cannot be checked",
			ErrSealedDamaged, disk, filepath.Base(disk+claudedir.ExtentSuffix))
	}
	sf := &sealedFile{off: t.end, index: t.frames, prev: t.prev}
	if ext != nil {
		sf.recorded, sf.seq = ext.frames, ext.seq
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
		st.tornCut.Add(1)
		st.log.Warn("cut a torn last frame (a write was interrupted)", "file", disk, "bytes", t.cut, "frames_kept", t.frames)
	}
	return plain, sf, t, nil
}

// upgrade rewrites a format 1 file in format 2, frame for frame (its torn
// tail, if any, left out and counted as cut), its extent record first: a
// crash between the two leaves the format 1 file, which holds as many
// frames as the record says.
func (st *sealedStore) upgrade(key *seal.RecordKey, disk, rel string, plain []byte, t sealedTail) (*sealedFile, error) {
	var out []byte
	sf := &sealedFile{}
	from := 0
	for _, to := range t.bounds {
		out = appendFrame(out, key, rel, sf.index, int64(len(out)), sf.prev, plain[from:to])
		sf.prev, sf.index, sf.off = lastTag(out), sf.index+1, int64(len(out))
		from = to
	}
	if err := makeExtent(key, disk, rel, extent{frames: sf.index, end: sf.off, tag: sf.prev}); err != nil {
		return nil, err
	}
	if err := replaceFile(disk, out); err != nil {
		return nil, fmt.Errorf("rewrite %s in sealed format 2: %w", disk, err)
	}
	sf.recorded, sf.seq = sf.index, extentMadeSeq
	st.upgraded.Add(1)
	if t.cut > 0 {
		st.tornCut.Add(1)
	}
	st.log.Info("rewrote a sealed transcript in format 2 (authenticated headers, extent record)", "file", disk, "frames", sf.index, "torn_bytes_cut", t.cut)
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

// scanOf scans a file of the sink as scanFile does, decrypting it in
// memory when the archive is sealed (and cutting a torn last frame).
func (s *Sink) scanOf(f *file) (*existing, error) {
	if s.sealed == nil {
		return scanFile(f.path)
	}
	plain, sf, _, err := s.sealed.read(context.Background(), f.path, true)
	if err != nil {
		return nil, err
	}
	f.sf = sf
	return scanReader(f.path, bytes.NewReader(plain))
}

// onDisk is the file's path on disk and the size it has there once what
// the sink wrote is written (recheck compares it with the file's).
func (s *Sink) onDisk(f *file) (string, int64) {
	if s.sealed == nil {
		return f.path, f.size
	}
	if f.sf == nil {
		return f.path + claudedir.SealedSuffix, 0
	}
	return f.path + claudedir.SealedSuffix, f.sf.off
}

// writeSealed is writeJob for a sealed archive: the taken queue becomes one
// frame, written whole at the file's end (a failed write is cut back, so
// the next one starts there again), then synced per the policy. Called
// with s.io held.
func (s *Sink) writeSealed(j job) (rest wqueue, sealLeft bool, err error) {
	f := j.f
	disk, _ := s.onDisk(f)
	if f.sf == nil {
		return j.buf, j.seal, fmt.Errorf("write %s: the file was not read first", disk)
	}
	key, err := s.sealed.dataKey(context.Background())
	if err != nil {
		return j.buf, j.seal, err
	}
	if f.fd == nil {
		if err := os.MkdirAll(filepath.Dir(disk), dirMode); err != nil {
			return j.buf, j.seal, fmt.Errorf("create folder for %s: %w", disk, err)
		}
		_, statErr := os.Stat(disk)
		if f.sf.index == 0 {
			// The extent record goes first: a sealed file never holds a
			// frame without one.
			if err := makeExtent(key, disk, s.sealed.rel(f.path), extent{}); err != nil {
				return j.buf, j.seal, err
			}
			f.sf.recorded, f.sf.seq = 0, extentMadeSeq
		}
		fd, err := os.OpenFile(disk, os.O_WRONLY|os.O_CREATE, fileMode)
		if err != nil {
			return j.buf, j.seal, fmt.Errorf("open %s: %w", disk, err)
		}
		f.fd = fd
		s.filesOpen++
		if errors.Is(statErr, os.ErrNotExist) {
			f.created = true
			s.filesCreated.Add(1)
		}
	}
	plain := make([]byte, 0, j.buf.len()+1)
	if j.seal {
		plain = append(plain, '\n')
	}
	for _, b := range j.buf.segs {
		plain = append(plain, b...)
	}
	frame := appendFrame(nil, key, s.sealed.rel(f.path), f.sf.index, f.sf.off, f.sf.prev, plain)
	clear(plain)
	if _, err := f.fd.WriteAt(frame, f.sf.off); err != nil {
		// A part may have reached the file: cut it, so that the frame
		// written next starts where this one should have.
		_ = f.fd.Truncate(f.sf.off)
		return j.buf, j.seal, err // an *fs.PathError: it names the file
	}
	f.sf.off += int64(len(frame))
	f.sf.index++
	f.sf.prev = lastTag(frame)
	s.sealed.framesWritten.Add(1)
	if j.seal {
		s.tornSealed.Add(1)
	}
	s.bytesWritten.Add(int64(len(frame)))
	s.linesWritten.Add(int64(j.buf.lines))
	f.unsynced = true
	s.toSync[f] = struct{}{}
	return s.written(j)
}

// reportSealed adds a sealed archive's counters to the sink's report.
func (s *Sink) reportSealed(m map[string]int64) {
	if s.sealed == nil {
		return
	}
	m["torn_frames_cut"] = s.sealed.tornCut.Load()
	m["frames_written"] = s.sealed.framesWritten.Load()
	m["sealed_files_upgraded"] = s.sealed.upgraded.Load()
}

// recordExtent writes the extent record of a sealed file whose frames
// were just synced (the file's fd.Sync returned). Called with s.io held,
// for each file by one goroutine at most.
func (s *Sink) recordExtent(f *file) error {
	if s.sealed == nil || f.sf == nil || f.sf.recorded == f.sf.index {
		return nil
	}
	key, err := s.sealed.dataKey(context.Background())
	if err != nil {
		return err
	}
	disk, _ := s.onDisk(f)
	e := extent{seq: f.sf.seq + 1, frames: f.sf.index, end: f.sf.off, tag: f.sf.prev}
	if err := updateExtent(key, disk, s.sealed.rel(f.path), e); err != nil {
		return err
	}
	f.sf.recorded, f.sf.seq = e.frames, e.seq
	return nil
}

// loadSealed is Load on a sealed archive: the transcript is decrypted in
// memory and read as ReadFile reads a plain one.
func (s *Sink) loadSealed(ctx context.Context, ref core.SessionRef) (*core.Transcript, error) {
	path, err := s.sealed.find(ctx, s.layout, ref)
	if err != nil {
		return nil, err
	}
	tr := &core.Transcript{Ref: ref, Source: s.opts.ID}
	plain, _, _, err := s.sealed.read(ctx, path, false)
	if err != nil {
		return nil, err
	}
	if m := s.opts.LoadMaxBytes; m > 0 && int64(len(plain)) > m {
		return nil, fmt.Errorf("%w: %s is %d bytes, max_bytes %d", ErrTooLarge, path, len(plain), m)
	}
	entries, rep, err := readTranscript(bytes.NewReader(plain), int64(len(plain)), path, ReadOptions{NoPrecompactSkip: ref.AgentID != ""})
	if err != nil {
		return nil, err
	}
	return checkedTranscript(tr, path, entries, rep)
}

// find returns the plain name of ref's sealed transcript, in the project
// folder FindSession finds; ErrNotFound on a miss.
func (st *sealedStore) find(ctx context.Context, l Layout, ref core.SessionRef) (string, error) {
	if !claudedir.IsSessionID(ref.SessionID) {
		return "", fmt.Errorf("%w: session %q (not a UUID)", ErrNotFound, ref.SessionID)
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
		return "", fmt.Errorf("%w: agent %s of session %s", ErrNotFound, ref.AgentID, ref.SessionID)
	}
	return "", fmt.Errorf("%w: session %s", ErrNotFound, ref.SessionID)
}
