package jsonl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/e0dc0000/scribe/internal/seal"
)

// ViewReport says what DecryptTo wrote.
type ViewReport struct {
	// Files is the number of transcripts decrypted.
	Files int
	// TornFrames lists the files whose torn last frame (a write cut short)
	// was skipped; the writer cuts it at its next start.
	TornFrames []string
}

// Sealed reports whether the sink's archive is sealed at rest.
func (s *Sink) Sealed() bool { return s.sealed != nil }

// DecryptTo writes every transcript of the sink's sealed archive, decrypted,
// into view laid out as the archive (projects/...), each file with its
// sealed file's mtime, files 0600 and folders 0700, so that the readers
// that need a file tree read it as they read a plain archive. The caller
// chooses a view on memory-backed storage and removes it after use.
func (s *Sink) DecryptTo(ctx context.Context, view string) (ViewReport, error) {
	if s.sealed == nil {
		return ViewReport{}, fmt.Errorf("%s is not a sealed archive", s.opts.ConfigDir)
	}
	return s.sealed.decryptTo(ctx, view)
}

// DecryptArchive is DecryptTo for the sealed archive in dir, opened with o.
func DecryptArchive(ctx context.Context, dir string, o seal.Options, environ []string, view string) (ViewReport, error) {
	st, err := newSealedStore(dir, o, environ, nil)
	if err != nil {
		return ViewReport{}, err
	}
	if st == nil {
		return ViewReport{}, fmt.Errorf("%s is not a sealed archive", dir)
	}
	return st.decryptTo(ctx, view)
}

func (st *sealedStore) decryptTo(ctx context.Context, view string) (ViewReport, error) {
	var rep ViewReport
	if !(Layout{ConfigDir: st.root}).IsSealed() {
		return rep, nil // nothing recorded yet: no key made, nothing to read
	}
	if _, err := st.dataKey(ctx); err != nil {
		return rep, err
	}
	projects := Layout{ConfigDir: st.root}.ProjectsDir()
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
		if d.IsDir() || !strings.HasSuffix(p, ".jsonl"+SealedSuffix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		plainName := strings.TrimSuffix(p, SealedSuffix)
		plain, _, t, err := st.read(ctx, plainName, false)
		if err != nil {
			return err
		}
		if t.cut > 0 {
			rep.TornFrames = append(rep.TornFrames, p)
		}
		rel, err := filepath.Rel(st.root, plainName)
		if err != nil {
			return err
		}
		out := filepath.Join(view, rel)
		if err := os.MkdirAll(filepath.Dir(out), dirMode); err != nil {
			return err
		}
		err = os.WriteFile(out, plain, fileMode)
		clear(plain)
		if err != nil {
			return fmt.Errorf("decrypt %s into the view: %w", p, err)
		}
		rep.Files++
		return os.Chtimes(out, fi.ModTime(), fi.ModTime())
	})
	if err != nil {
		return rep, err
	}
	return rep, nil
}
