package admin

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/transcript"
)

// CopySession copies everything a session has in this store (its
// transcript, its folder: subagents, tool results, sidecars) into the same
// project folder of dst, passing each line of every .jsonl file through
// line (nil copies them as they are). It is how a command works on a
// transformed copy (export --redact) without touching the session.
func (l Layout) CopySession(ctx context.Context, id string, dst Layout, line func(path string, b []byte) []byte) error {
	mains, err := l.SessionMains(id)
	if err != nil {
		return err
	}
	if len(mains) == 0 {
		return fmt.Errorf("%w: session %s", layout.ErrNotFound, id)
	}
	dir := filepath.Dir(mains[0])
	names, err := sessionEntries(dir, id)
	if err != nil {
		return err
	}
	to := dst.ProjectFolder(filepath.Base(dir))
	for _, n := range names {
		root := filepath.Join(dir, n)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			out := filepath.Join(to, rel)
			switch {
			case d.IsDir():
				return os.MkdirAll(out, layout.DirMode)
			case !d.Type().IsRegular():
				return nil // symlinks and the like stay behind
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if line != nil && strings.HasSuffix(p, ".jsonl") {
				var buf bytes.Buffer
				buf.Grow(len(data))
				if err := transcript.EachLine(bytes.NewReader(data), func(b []byte, terminated bool) {
					buf.Write(line(p, b))
					if terminated {
						buf.WriteByte('\n')
					}
				}); err != nil {
					return err
				}
				data = buf.Bytes()
			}
			if err := os.MkdirAll(filepath.Dir(out), layout.DirMode); err != nil {
				return err
			}
			return os.WriteFile(out, data, layout.FileMode)
		})
		if err != nil {
			return fmt.Errorf("copy session %s: %w", id, err)
		}
	}
	return nil
}
