package jsonl

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

	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/internal/seal"
)

// frameSpans returns where each frame of a format 2 file starts and ends.
func frameSpans(t *testing.T, b []byte) [][2]int {
	t.Helper()
	var out [][2]int
	for off := len(sealedMagic); off < len(b); {
		n := int(binary.BigEndian.Uint32(b[off+12 : off+16]))
		out = append(out, [2]int{off, off + frameHeaderLen + n})
		off += frameHeaderLen + n
	}
	return out
}

// wantDamaged checks that a restarted writer refuses the file, naming it,
// cuts nothing and leaves every byte as it was.
func wantDamaged(t *testing.T, dir string, o seal.Options, disk string, want string) {
	t.Helper()
	before, _ := os.ReadFile(disk)
	rep, err := appendAfterRestart(t, dir, o, "u-9")
	if !errors.Is(err, ErrSealedDamaged) || !strings.Contains(err.Error(), disk) || !strings.Contains(err.Error(), want) {
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
		dir, o := t.TempDir(), sealKey(t)
		sealedSession(t, dir, o)
		disk := mainPath(dir) + SealedSuffix
		older, _ := os.ReadFile(disk)
		if _, err := appendAfterRestart(t, dir, o, "u-2"); err != nil {
			t.Fatal(err)
		}
		return dir, o, disk, older
	}
	t.Run("cut at a frame boundary", func(t *testing.T) {
		dir, o, disk, _ := setup(t)
		b, _ := os.ReadFile(disk)
		fr := frameSpans(t, b)
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
		if err := os.Remove(disk + ExtentSuffix); err != nil {
			t.Fatal(err)
		}
		wantDamaged(t, dir, o, disk, "no extent record")
	})
	t.Run("extent record of another file", func(t *testing.T) {
		dir, o, disk, _ := setup(t)
		other := AgentFile(Layout{dir}.ProjectDir(cwd), sess, "a1b2c3") + SealedSuffix + ExtentSuffix
		b, err := os.ReadFile(other)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(disk+ExtentSuffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
		wantDamaged(t, dir, o, disk, "fails authentication")
	})
	t.Run("file deleted, its record left", func(t *testing.T) {
		dir, o, disk, _ := setup(t)
		if err := os.Remove(disk); err != nil {
			t.Fatal(err)
		}
		if _, err := appendAfterRestart(t, dir, o, "u-9"); !errors.Is(err, ErrSealedDamaged) || !strings.Contains(err.Error(), "deleted") {
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
			dir, o := t.TempDir(), sealKey(t)
			sealedSession(t, dir, o)
			disk := mainPath(dir) + SealedSuffix
			b, _ := os.ReadFile(disk)
			b[len(sealedMagic)+field.at] ^= 0x40
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
		dst = append(dst, sealedMagicV1...)
	}
	off := int64(len(dst))
	hdr := make([]byte, frameHeaderLenV1)
	copy(hdr, frameMagicV1)
	binary.BigEndian.PutUint64(hdr[4:], index)
	binary.BigEndian.PutUint32(hdr[12:], uint32(len(plain)+key.Overhead()))
	binary.BigEndian.PutUint32(hdr[16:], crc32.Checksum(hdr[:16], crcTable))
	ad := append(append(append([]byte{}, frameAD...), rel...), 0)
	ad = append(ad, hdr[:16]...)
	ad = binary.BigEndian.AppendUint64(ad, uint64(off))
	return key.Seal(append(dst, hdr...), plain, ad)
}

// v1Archive writes a format 1 main transcript of three frames and returns
// its path on disk and the lines.
func v1Archive(t *testing.T, dir string, o seal.Options) (string, []string) {
	t.Helper()
	sl, err := seal.New(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := sl.RecordKey(filepath.Join(dir, ArchiveKeyName))
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{coretest.Line("user", sess, "u-1", ""), coretest.Line("assistant", sess, "a-1", "u-1"), coretest.Line("user", sess, "u-2", "a-1")}
	disk := mainPath(dir) + SealedSuffix
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
	dir, o := t.TempDir(), sealKey(t)
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
	if !bytes.HasPrefix(b, sealedMagic) {
		t.Errorf("the file was not rewritten in format 2: %q", b[:16])
	}
	if _, err := os.Stat(disk + ExtentSuffix); err != nil {
		t.Errorf("no extent record after the rewrite: %v", err)
	}
	want := append(lines, coretest.Line("user", sess, "u-3", "a-1"))
	if got := sealedLines(t, dir, o, mainPath(dir)); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("after the rewrite:\n%q\nwant\n%q", got, want)
	}

	// The forged length on format 1.
	dir2 := t.TempDir()
	disk2, _ := v1Archive(t, dir2, o)
	b2, _ := os.ReadFile(disk2)
	h := b2[len(sealedMagicV1):]
	binary.BigEndian.PutUint32(h[12:16], binary.BigEndian.Uint32(h[12:16])+5000)
	binary.BigEndian.PutUint32(h[16:20], crc32.Checksum(h[:16], crcTable))
	if err := os.WriteFile(disk2, b2, 0o600); err != nil {
		t.Fatal(err)
	}
	wantDamaged(t, dir2, o, disk2, "a changed length")
}

// TestSealedMissingKeyFile: with sealed transcripts present and the key
// file gone, the writer refuses, naming the archive, and makes no key.
func TestSealedMissingKeyFile(t *testing.T) {
	dir, o := t.TempDir(), sealKey(t)
	sealedSession(t, dir, o)
	keyFile := filepath.Join(dir, ArchiveKeyName)
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	s := newSealedSink(t, dir, o)
	if err := s.Start(context.Background()); !errors.Is(err, ErrArchiveKey) || !strings.Contains(err.Error(), dir) {
		t.Errorf("Start: %v, want ErrArchiveKey naming %s", err, dir)
	}
	if _, err := os.Stat(keyFile); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a new key was made over the sealed archive (%v)", err)
	}
}
