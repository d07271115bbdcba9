package layout

import (
	"io"

	"github.com/e0dc0000/scribe/internal/durable"
)

// ReplaceFile writes the parts, one after the other, to path atomically
// (durable.Replace: mode 0600, folders made 0700 when missing). A reader
// sees the old content or the new, never a part.
func ReplaceFile(path string, parts ...[]byte) error {
	_, err := durable.Replace(path, durable.Options{Perm: FileMode, DirPerm: DirMode}, func(w io.Writer) error {
		for _, p := range parts {
			if _, err := w.Write(p); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}
