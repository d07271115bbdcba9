package admin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// A sealed trash item: with TrashOptions.Seal, every regular file of the
// item is encrypted (data/<project>/<name> becomes <name>.age, the
// plaintext removed) once the move is durable; the manifest keeps the
// plaintext's size and sha256, so a restore checks what it decrypted
// against them before anything goes back.

// ErrTrashSealed is returned when a sealed trash item is restored without
// the key that opens it.
var ErrTrashSealed = errors.New("the trash item is encrypted")

const sealedSuffix = ".age"

// trashFilePath is where a manifest file lies in an item's data folder.
func (l Layout) trashFilePath(it sessions.TrashItem, f sessions.TrashFile) string {
	data := filepath.Join(l.TrashDir(), it.ID, "data")
	return filepath.Join(data, strings.TrimPrefix(filepath.FromSlash(f.Path), "projects"+string(filepath.Separator)))
}

// sealItem encrypts the item's regular files in place.
func (l Layout) sealItem(it *sessions.TrashItem, seal func([]byte) ([]byte, error)) error {
	for _, f := range it.Files {
		if f.Dir || f.Link != "" {
			continue
		}
		p := l.trashFilePath(*it, f)
		plain, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("seal %s: %w", f.Path, err)
		}
		sealed, err := seal(plain)
		if err != nil {
			return fmt.Errorf("seal %s: %w", f.Path, err)
		}
		if err := layout.ReplaceFile(p+sealedSuffix, sealed); err != nil {
			return fmt.Errorf("seal %s: %w", f.Path, err)
		}
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("seal %s: %w", f.Path, err)
		}
		if err := durable.SyncDir(filepath.Dir(p)); err != nil {
			return err
		}
	}
	it.Sealed = true
	return writeManifest(filepath.Join(l.TrashDir(), it.ID), *it)
}

// unsealItem decrypts every file of a sealed item and checks each against
// the manifest before it writes any plaintext back.
func (l Layout) unsealItem(it *sessions.TrashItem, open func([]byte) ([]byte, error)) error {
	if open == nil {
		return fmt.Errorf("%w: give the identity or the passphrase it was sealed with (nothing restored)", ErrTrashSealed)
	}
	plain := map[string][]byte{}
	for _, f := range it.Files {
		if f.Dir || f.Link != "" {
			continue
		}
		p := l.trashFilePath(*it, f)
		sealed, err := os.ReadFile(p + sealedSuffix)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrTrashDamaged, f.Path, err)
		}
		b, err := open(sealed)
		if err != nil {
			return fmt.Errorf("open %s: %w (nothing restored)", f.Path, err)
		}
		sum := sha256.Sum256(b)
		if int64(len(b)) != f.Size || hex.EncodeToString(sum[:]) != f.SHA256 {
			return fmt.Errorf("%w: %s decrypts to other bytes than were trashed", ErrTrashDamaged, f.Path)
		}
		plain[p] = b
	}
	for p, b := range plain {
		if err := layout.ReplaceFile(p, b); err != nil {
			return err
		}
		if err := os.Remove(p + sealedSuffix); err != nil {
			return err
		}
	}
	it.Sealed = false
	return writeManifest(filepath.Join(l.TrashDir(), it.ID), *it)
}

// RestoreTrashSealed is RestoreTrash for an item that may be sealed: open
// decrypts what Seal encrypted (nil when no key was given).
func (l Layout) RestoreTrashSealed(ctx context.Context, ref string, lockWait time.Duration, open func([]byte) ([]byte, error)) (sessions.TrashItem, error) {
	it, err := l.FindTrash(ref)
	if err != nil {
		return it, fmt.Errorf("restore: %w", err)
	}
	if it.Sealed {
		if err := l.unsealItem(&it, open); err != nil {
			return it, fmt.Errorf("restore %s: %w", it.ID, err)
		}
	}
	return l.RestoreTrash(ctx, ref, lockWait)
}
