package writer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/sealed"
)

// wantDamaged checks that a restarted writer refuses the file, naming it,
// cuts nothing and leaves every byte as it was.
func wantDamaged(t *testing.T, dir string, o seal.Options, disk string, want string) {
	t.Helper()
	before, _ := os.ReadFile(disk)
	rep, err := appendAfterRestart(t, dir, o, "u-9")
	if !errors.Is(err, sealed.ErrSealedDamaged) || !strings.Contains(err.Error(), disk) || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want ErrSealedDamaged naming %s and saying %q", err, disk, want)
	}
	if rep["torn_frames_cut"] != 0 {
		t.Errorf("torn_frames_cut = %d, want 0", rep["torn_frames_cut"])
	}
	if after, _ := os.ReadFile(disk); !bytes.Equal(after, before) {
		t.Errorf("the damaged file changed: %d bytes, was %d", len(after), len(before))
	}
}

// TestSealedTruncationAndRollback: a file cut at a frame boundary, a file
// rolled back to an older copy, a file whose extent record is gone, a file
// deleted with its record left: each is damage, nothing is cut or made
// again.
func TestSealedTruncationAndRollback(t *testing.T) {
	setup := func(t *testing.T) (string, seal.Options, string, []byte) {
		dir, o := t.TempDir(), jsonltest.SealKey(t)
		sealedSession(t, dir, o)
		disk := mainPath(dir) + claudedir.SealedSuffix
		older, _ := os.ReadFile(disk)
		if _, err := appendAfterRestart(t, dir, o, "u-2"); err != nil {
			t.Fatal(err)
		}
		return dir, o, disk, older
	}
	t.Run("cut at a frame boundary", func(t *testing.T) {
		dir, o, disk, _ := setup(t)
		b, _ := os.ReadFile(disk)
		fr := sealed.FrameSpans(b)
		if err := os.WriteFile(disk, b[:fr[len(fr)-1][0]], 0o600); err != nil {
			t.Fatal(err)
		}
		wantDamaged(t, dir, o, disk, "truncated")
	})
	t.Run("rolled back to an older copy", func(t *testing.T) {
		dir, o, disk, older := setup(t)
		if err := os.WriteFile(disk, older, 0o600); err != nil {
			t.Fatal(err)
		}
		wantDamaged(t, dir, o, disk, "rolled back")
	})
	t.Run("extent record deleted", func(t *testing.T) {
		dir, o, disk, _ := setup(t)
		if err := os.Remove(disk + claudedir.ExtentSuffix); err != nil {
			t.Fatal(err)
		}
		wantDamaged(t, dir, o, disk, "no extent record")
	})
	t.Run("extent record of another file", func(t *testing.T) {
		dir, o, disk, _ := setup(t)
		other := claudedir.AgentFile(Layout{Layout: layout.Layout{ConfigDir: dir}}.ProjectDir(cwd), sess, "a1b2c3") + claudedir.SealedSuffix + claudedir.ExtentSuffix
		b, err := os.ReadFile(other)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(disk+claudedir.ExtentSuffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
		wantDamaged(t, dir, o, disk, "fails authentication")
	})
	t.Run("the newest slot torn", func(t *testing.T) {
		// A write of the record caught mid-way (a reader racing it, a
		// power cut): the older slot still stands, no false damage.
		dir, o, disk, _ := setup(t)
		b, _ := os.ReadFile(disk + claudedir.ExtentSuffix)
		if len(b) < sealed.ExtentSlotAt+sealed.ExtentSlotLen {
			t.Fatalf("the record has one slot (%d bytes)", len(b))
		}
		sl, _ := seal.New(context.Background(), o, nil)
		key, _ := sl.ExistingRecordKey(filepath.Join(dir, claudedir.ArchiveKeyName))
		e, err := sealed.ReadExtent(key, disk, "projects/"+filepath.Base(filepath.Dir(disk))+"/"+sess+".jsonl")
		if err != nil {
			t.Fatal(err)
		}
		at := int(e.Seq%2) * sealed.ExtentSlotAt
		b[at+40] ^= 0xff
		if err := os.WriteFile(disk+claudedir.ExtentSuffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := appendAfterRestart(t, dir, o, "u-3"); err != nil {
			t.Errorf("with the newest slot torn: %v", err)
		}
	})
	t.Run("both slots changed", func(t *testing.T) {
		dir, o, disk, _ := setup(t)
		b, _ := os.ReadFile(disk + claudedir.ExtentSuffix)
		b[40] ^= 0xff
		b[sealed.ExtentSlotAt+40] ^= 0xff
		if err := os.WriteFile(disk+claudedir.ExtentSuffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
		wantDamaged(t, dir, o, disk, "fails authentication")
	})
	t.Run("file deleted, its record left", func(t *testing.T) {
		dir, o, disk, _ := setup(t)
		if err := os.Remove(disk); err != nil {
			t.Fatal(err)
		}
		if _, err := appendAfterRestart(t, dir, o, "u-9"); !errors.Is(err, sealed.ErrSealedDamaged) || !strings.Contains(err.Error(), "deleted") {
			t.Errorf("err = %v, want ErrSealedDamaged saying deleted", err)
		}
		if _, err := os.Stat(disk); err == nil {
			t.Error("the deleted file was made again")
		}
	})
}

// TestSealedForgedHeader: a frame's length changed in its header (the
// issue's attack on format 1, where the attacker recomputes the crc) is
// damage at that frame, never a torn tail: nothing is cut.
func TestSealedForgedHeader(t *testing.T) {
	for _, field := range []struct {
		name string
		at   int // offset in the header
	}{{"length", 15}, {"index", 11}, {"magic", 0}, {"mac", 20}} {
		t.Run(field.name, func(t *testing.T) {
			dir, o := t.TempDir(), jsonltest.SealKey(t)
			sealedSession(t, dir, o)
			disk := mainPath(dir) + claudedir.SealedSuffix
			b, _ := os.ReadFile(disk)
			b[len(sealed.Magic)+field.at] ^= 0x40
			if err := os.WriteFile(disk, b, 0o600); err != nil {
				t.Fatal(err)
			}
			wantDamaged(t, dir, o, disk, "frame 0")
		})
	}
}

// appendFrameV1 writes a frame as format 1 did (crc32c header, no mac).
func appendFrameV1(dst []byte, key *seal.RecordKey, rel string, index uint64, plain []byte) []byte {
	if len(dst) == 0 {
		dst = append(dst, sealed.MagicV1...)
	}
	off := int64(len(dst))
	hdr := make([]byte, sealed.FrameHeaderLenV1)
	copy(hdr, sealed.FrameMagicV1)
	binary.BigEndian.PutUint64(hdr[4:], index)
	binary.BigEndian.PutUint32(hdr[12:], uint32(len(plain)+key.Overhead()))
	binary.BigEndian.PutUint32(hdr[16:], crc32.Checksum(hdr[:16], sealed.CRCTable))
	return key.Seal(append(dst, hdr...), plain, sealed.FrameAssocV1(rel, hdr, off))
}

// v1Archive writes a format 1 main transcript of three frames and returns
// its path on disk and the lines.
func v1Archive(t *testing.T, dir string, o seal.Options) (string, []string) {
	t.Helper()
	sl, err := seal.New(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := sl.RecordKey(filepath.Join(dir, claudedir.ArchiveKeyName))
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{coretest.Line("user", sess, "u-1", ""), coretest.Line("assistant", sess, "a-1", "u-1"), coretest.Line("user", sess, "u-2", "a-1")}
	disk := mainPath(dir) + claudedir.SealedSuffix
	rel := "projects/" + filepath.Base(filepath.Dir(disk)) + "/" + sess + ".jsonl"
	var b []byte
	for i, l := range lines {
		b = appendFrameV1(b, key, rel, uint64(i), []byte(l+"\n"))
	}
	if err := os.MkdirAll(filepath.Dir(disk), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(disk, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return disk, lines
}

// TestSealedFormat1: a format 1 archive is still read; the first write
// rewrites the file in format 2 with its extent record (counted), every
// line kept; a format 1 length forged over later frames (crc recomputed)
// is damage, not a torn tail.
func TestSealedFormat1(t *testing.T) {
	dir, o := t.TempDir(), jsonltest.SealKey(t)
	disk, lines := v1Archive(t, dir, o)
	if got := sealedLines(t, dir, o, mainPath(dir)); strings.Join(got, "\n") != strings.Join(lines, "\n") {
		t.Fatalf("format 1 read as %q", got)
	}
	rep, err := appendAfterRestart(t, dir, o, "u-3")
	if err != nil {
		t.Fatal(err)
	}
	if rep["sealed_files_upgraded"] != 1 {
		t.Errorf("sealed_files_upgraded = %d, want 1", rep["sealed_files_upgraded"])
	}
	b, _ := os.ReadFile(disk)
	if !bytes.HasPrefix(b, sealed.Magic) {
		t.Errorf("the file was not rewritten in format 2: %q", b[:16])
	}
	if _, err := os.Stat(disk + claudedir.ExtentSuffix); err != nil {
		t.Errorf("no extent record after the rewrite: %v", err)
	}
	want := append(lines, coretest.Line("user", sess, "u-3", "a-1"))
	if got := sealedLines(t, dir, o, mainPath(dir)); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("after the rewrite:\n%q\nwant\n%q", got, want)
	}

	// The forged length on format 1, the later headers' crcs left right
	// or broken too.
	for _, breakLater := range []bool{false, true} {
		dir2 := t.TempDir()
		disk2, _ := v1Archive(t, dir2, o)
		b2, _ := os.ReadFile(disk2)
		h := b2[len(sealed.MagicV1):]
		first := sealed.FrameHeaderLenV1 + int(binary.BigEndian.Uint32(h[12:16]))
		binary.BigEndian.PutUint32(h[12:16], binary.BigEndian.Uint32(h[12:16])+5000)
		binary.BigEndian.PutUint32(h[16:20], crc32.Checksum(h[:16], sealed.CRCTable))
		if breakLater {
			for off := first; off < len(h); off += sealed.FrameHeaderLenV1 + int(binary.BigEndian.Uint32(h[off+12:off+16])) {
				h[off+19] ^= 0xff
			}
		}
		if err := os.WriteFile(disk2, b2, 0o600); err != nil {
			t.Fatal(err)
		}
		wantDamaged(t, dir2, o, disk2, "a changed length")
	}
}

// TestSealedMissingKeyFile: with sealed transcripts present and the key
// file gone, the writer refuses, naming the archive, and makes no key.
func TestSealedMissingKeyFile(t *testing.T) {
	dir, o := t.TempDir(), jsonltest.SealKey(t)
	sealedSession(t, dir, o)
	keyFile := filepath.Join(dir, claudedir.ArchiveKeyName)
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	s := newSealedSink(t, dir, o)
	if err := s.Start(context.Background()); !errors.Is(err, sealed.ErrArchiveKey) || !strings.Contains(err.Error(), dir) {
		t.Errorf("Start: %v, want ErrArchiveKey naming %s", err, dir)
	}
	if _, err := os.Stat(keyFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a new key was made over the sealed archive (%v)", err)
	}
}
