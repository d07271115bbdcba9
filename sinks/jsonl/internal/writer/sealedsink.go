package writer

// The sink's seam with a sealed archive (sealedstore.go, sealed.go).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/reader"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/sealed"
)

// scanOf scans a file of the sink as scanFile does, decrypting it in
// memory when the archive is sealed (and cutting a torn last frame).
func (s *Sink) scanOf(f *file) (*existing, error) {
	if s.sealed == nil {
		return scanFile(f.path)
	}
	plain, sf, _, err := s.sealed.Read(context.Background(), f.path, true)
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
	return f.path + claudedir.SealedSuffix, f.sf.Off
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
	key, err := s.sealed.DataKey(context.Background())
	if err != nil {
		return j.buf, j.seal, err
	}
	if f.fd == nil {
		if err := os.MkdirAll(filepath.Dir(disk), layout.DirMode); err != nil {
			return j.buf, j.seal, fmt.Errorf("create folder for %s: %w", disk, err)
		}
		_, statErr := os.Stat(disk)
		if f.sf.Index == 0 {
			// The extent record goes first: a sealed file never holds a
			// frame without one.
			if err := sealed.MakeExtent(key, disk, s.sealed.Rel(f.path), sealed.Extent{}); err != nil {
				return j.buf, j.seal, err
			}
			f.sf.Recorded, f.sf.Seq = 0, sealed.ExtentMadeSeq
		}
		fd, err := os.OpenFile(disk, os.O_WRONLY|os.O_CREATE, layout.FileMode)
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
	frame := sealed.AppendFrame(nil, key, s.sealed.Rel(f.path), f.sf.Index, f.sf.Off, f.sf.Prev, plain)
	clear(plain)
	if _, err := f.fd.WriteAt(frame, f.sf.Off); err != nil {
		// A part may have reached the file: cut it, so that the frame
		// written next starts where this one should have.
		_ = f.fd.Truncate(f.sf.Off)
		return j.buf, j.seal, err // an *fs.PathError: it names the file
	}
	f.sf.Off += int64(len(frame))
	f.sf.Index++
	f.sf.Prev = sealed.LastTag(frame)
	s.sealed.FramesWritten.Add(1)
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
	m["torn_frames_cut"] = s.sealed.TornCut.Load()
	m["frames_written"] = s.sealed.FramesWritten.Load()
	m["sealed_files_upgraded"] = s.sealed.Upgraded.Load()
}

// recordExtent writes the extent record of a sealed file whose frames
// were just synced (the file's fd.Sync returned). Called with s.io held,
// for each file by one goroutine at most.
func (s *Sink) recordExtent(f *file) error {
	if s.sealed == nil || f.sf == nil || f.sf.Recorded == f.sf.Index {
		return nil
	}
	key, err := s.sealed.DataKey(context.Background())
	if err != nil {
		return err
	}
	disk, _ := s.onDisk(f)
	e := sealed.Extent{Seq: f.sf.Seq + 1, Frames: f.sf.Index, End: f.sf.Off, Tag: f.sf.Prev}
	if err := sealed.UpdateExtent(key, disk, s.sealed.Rel(f.path), e); err != nil {
		return err
	}
	f.sf.Recorded, f.sf.Seq = e.Frames, e.Seq
	return nil
}

// loadSealed is Load on a sealed archive: the transcript is decrypted in
// memory and read as ReadFile reads a plain one.
func (s *Sink) loadSealed(ctx context.Context, ref core.SessionRef) (*core.Transcript, error) {
	path, err := s.sealed.Find(ctx, s.layout.Layout, ref)
	if err != nil {
		return nil, err
	}
	tr := &core.Transcript{Ref: ref, Source: s.opts.ID}
	plain, _, _, err := s.sealed.Read(ctx, path, false)
	if err != nil {
		return nil, err
	}
	if m := s.opts.LoadMaxBytes; m > 0 && int64(len(plain)) > m {
		return nil, fmt.Errorf("%w: %s is %d bytes, max_bytes %d", reader.ErrTooLarge, path, len(plain), m)
	}
	entries, rep, err := reader.ReadTranscript(bytes.NewReader(plain), int64(len(plain)), path, reader.ReadOptions{NoPrecompactSkip: ref.AgentID != ""})
	if err != nil {
		return nil, err
	}
	return reader.CheckedTranscript(tr, path, entries, rep)
}

// Sealed reports whether the sink's archive is sealed at rest.
func (s *Sink) Sealed() bool { return s.sealed != nil }

// DecryptTo writes every transcript of the sink's sealed archive, decrypted,
// into the folder view holds, laid out as the archive (projects/...), each
// file with its sealed file's mtime, files 0600 and folders 0700, so that
// the readers that need a file tree read it as they read a plain archive.
// Every file is made new (O_EXCL, O_NOFOLLOW) through view, which no path
// outside it can be swapped into. The caller chooses a private view on
// memory-backed storage and removes it after use.
func (s *Sink) DecryptTo(ctx context.Context, view *os.Root) (sealed.ViewReport, error) {
	if s.sealed == nil {
		return sealed.ViewReport{}, fmt.Errorf("%s is not a sealed archive", s.opts.ConfigDir)
	}
	return s.sealed.DecryptTo(ctx, view)
}

// DecryptFS decrypts every transcript of the sink's sealed archive into
// memory: an FS holding each at the path its plain file would have (the
// sealed file's name without its suffix), with the sealed file's mtime, for
// a Layout to read with no decrypted byte on disk.
func (s *Sink) DecryptFS(ctx context.Context) (layout.FS, sealed.ViewReport, error) {
	if s.sealed == nil {
		return nil, sealed.ViewReport{}, fmt.Errorf("%s is not a sealed archive", s.opts.ConfigDir)
	}
	return s.sealed.DecryptFS(ctx)
}
