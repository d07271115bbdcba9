package sealed

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/internal/memfs"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// ViewReport says what DecryptTo wrote.
type ViewReport struct {
	// Files is the number of transcripts decrypted.
	Files int
	// TornFrames lists the files whose torn last frame (a write cut short)
	// was skipped; the writer cuts it at its next start.
	TornFrames []string
	// Damaged lists the transcripts left out of the view because they are
	// damaged (ErrSealedDamaged, naming each): the rest of the archive is
	// still read, and the caller fails the command at its end.
	Damaged []error
}

// DecryptArchive is DecryptTo for the sealed archive in dir, opened with o,
// into the folder view.
func DecryptArchive(ctx context.Context, dir string, o seal.Options, environ []string, view string) (ViewReport, error) {
	r, err := os.OpenRoot(view)
	if err != nil {
		return ViewReport{}, err
	}
	defer r.Close()
	return DecryptArchiveInto(ctx, dir, o, environ, r)
}

// DecryptArchiveInto is DecryptArchive into the folder view holds.
func DecryptArchiveInto(ctx context.Context, dir string, o seal.Options, environ []string, view *os.Root) (ViewReport, error) {
	st, err := NewStore(dir, o, environ, nil)
	if err != nil {
		return ViewReport{}, err
	}
	if st == nil {
		return ViewReport{}, fmt.Errorf("%s is not a sealed archive", dir)
	}
	return st.DecryptTo(ctx, view)
}

// DecryptTo writes every transcript of the archive, decrypted, into the
// folder view holds (see DecryptArchiveInto).
func (st *Store) DecryptTo(ctx context.Context, view *os.Root) (ViewReport, error) {
	return st.decryptEach(ctx, func(rel string, plain []byte, mod time.Time) error {
		err := writeViewFile(view, rel, plain, mod)
		clear(plain)
		return err
	})
}

// DecryptArchiveFS is DecryptFS for the sealed archive in dir, opened with o.
func DecryptArchiveFS(ctx context.Context, dir string, o seal.Options, environ []string) (layout.FS, ViewReport, error) {
	st, err := NewStore(dir, o, environ, nil)
	if err != nil {
		return nil, ViewReport{}, err
	}
	if st == nil {
		return nil, ViewReport{}, fmt.Errorf("%s is not a sealed archive", dir)
	}
	return st.DecryptFS(ctx)
}

// DecryptFS decrypts every transcript of the archive into memory: an FS
// holding each at the path its plain file would have.
func (st *Store) DecryptFS(ctx context.Context) (layout.FS, ViewReport, error) {
	m := &memfs.FS{}
	rep, err := st.decryptEach(ctx, func(rel string, plain []byte, mod time.Time) error {
		m.Add(filepath.Join(st.root, rel), plain, mod)
		return nil
	})
	if err != nil {
		return nil, rep, err
	}
	return layout.MemFS(m), rep, nil
}

// decryptEach decrypts every transcript of the archive, handing each to
// put with its path relative to the archive and its sealed file's mtime.
func (st *Store) decryptEach(ctx context.Context, put func(rel string, plain []byte, mod time.Time) error) (ViewReport, error) {
	var rep ViewReport
	// Sealed transcripts without the key file are not "nothing recorded
	// yet": dataKey refuses them, naming the missing key.
	if sealed, _, err := at(st.root).archiveKinds(); err != nil || !sealed {
		return rep, err // nothing recorded yet: no key made, nothing to read
	}
	if _, err := st.DataKey(ctx); err != nil {
		return rep, err
	}
	projects := at(st.root).ProjectsDir()
	err := filepath.WalkDir(projects, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == projects {
				return nil
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".jsonl"+claudedir.SealedSuffix+claudedir.ExtentSuffix) {
			// An extent record whose file is gone: a deleted transcript.
			disk := strings.TrimSuffix(p, claudedir.ExtentSuffix)
			if _, err := os.Lstat(disk); errors.Is(err, fs.ErrNotExist) {
				_, _, _, err := st.Read(ctx, strings.TrimSuffix(disk, claudedir.SealedSuffix), false)
				return rep.leaveOut(err)
			}
			return nil
		}
		if d.IsDir() || !strings.HasSuffix(p, ".jsonl"+claudedir.SealedSuffix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		plainName := strings.TrimSuffix(p, claudedir.SealedSuffix)
		plain, _, t, err := st.Read(ctx, plainName, false)
		if err != nil {
			return rep.leaveOut(err)
		}
		if t.cut > 0 {
			rep.TornFrames = append(rep.TornFrames, p)
		}
		rel, err := filepath.Rel(st.root, plainName)
		if err != nil {
			return err
		}
		if err := put(rel, plain, fi.ModTime()); err != nil {
			return fmt.Errorf("decrypt %s into the view: %w", p, err)
		}
		rep.Files++
		return nil
	})
	if err != nil {
		return rep, err
	}
	return rep, nil
}

// leaveOut records a damaged transcript as left out of the view (nil: the
// walk goes on); any other error ends it.
func (rep *ViewReport) leaveOut(err error) error {
	if err != nil && errors.Is(err, ErrSealedDamaged) {
		rep.Damaged = append(rep.Damaged, err)
		return nil
	}
	return err
}

// writeViewFile makes rel in view, new, holding b, with mtime when.
func writeViewFile(view *os.Root, rel string, b []byte, when time.Time) error {
	if err := view.MkdirAll(filepath.Dir(rel), layout.DirMode); err != nil {
		return err
	}
	f, err := view.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, layout.FileMode)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return view.Chtimes(rel, when, when)
}
