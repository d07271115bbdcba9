package jsonl

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/claudedir"
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
		if err := os.Remove(disk + claudedir.ExtentSuffix); err != nil {
			t.Fatal(err)
		}
		wantDamaged(t, dir, o, disk, "no extent record")
	})
	t.Run("extent record of another file", func(t *testing.T) {
		dir, o, disk, _ := setup(t)
		other := claudedir.AgentFile(Layout{ConfigDir: dir}.ProjectDir(cwd), sess, "a1b2c3") + claudedir.SealedSuffix + claudedir.ExtentSuffix
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
		if len(b) < extentSlotAt+extentSlotLen {
			t.Fatalf("the record has one slot (%d bytes)", len(b))
		}
		sl, _ := seal.New(context.Background(), o, nil)
		key, _ := sl.ExistingRecordKey(filepath.Join(dir, claudedir.ArchiveKeyName))
		e, err := readExtent(key, disk, "projects/"+filepath.Base(filepath.Dir(disk))+"/"+sess+".jsonl")
		if err != nil {
			t.Fatal(err)
		}
		at := int(e.seq%2) * extentSlotAt
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
		b[extentSlotAt+40] ^= 0xff
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
			disk := mainPath(dir) + claudedir.SealedSuffix
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
	return key.Seal(append(dst, hdr...), plain, frameAssocV1(rel, hdr, off))
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
		h := b2[len(sealedMagicV1):]
		first := frameHeaderLenV1 + int(binary.BigEndian.Uint32(h[12:16]))
		binary.BigEndian.PutUint32(h[12:16], binary.BigEndian.Uint32(h[12:16])+5000)
		binary.BigEndian.PutUint32(h[16:20], crc32.Checksum(h[:16], crcTable))
		if breakLater {
			for off := first; off < len(h); off += frameHeaderLenV1 + int(binary.BigEndian.Uint32(h[off+12:off+16])) {
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
	dir, o := t.TempDir(), sealKey(t)
	sealedSession(t, dir, o)
	keyFile := filepath.Join(dir, claudedir.ArchiveKeyName)
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

// TestSealedHostilePass: what an attacker who can write the files (but has
// no key) can do to a sealed file and its extent record. Every change is
// damage with nothing to cut, except bytes past what the record vouches
// for, and never more than one write's worth of them.
func TestSealedHostilePass(t *testing.T) {
	key, b, _ := sealedFrames(t, 5)
	const rel = "projects/p/x.jsonl"
	// Another file of the same archive, its frames the same sizes (so a
	// frame moved across lands at the same index and offset).
	var other []byte
	var prev [tagLen]byte
	for i := 0; i < 5; i++ {
		other = appendFrame(other, key, "projects/p/y.jsonl", uint64(i), int64(len(other)), prev, bytes.Repeat([]byte("x"), len(frameBodyPlain(t, key, b, i))))
		prev = lastTag(other)
	}
	spans := frameSpans(t, b)
	whole := &extent{frames: 5, end: int64(len(b)), tag: lastTag(b)}
	four := &extent{frames: 4, end: int64(spans[3][1]), tag: lastTag(b[:spans[3][1]])}
	frame := func(i int) []byte { return b[spans[i][0]:spans[i][1]] }
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	flip := func(at int, bit byte) []byte { c := bytes.Clone(b); c[at] ^= bit; return c }
	setLen := func(i int, n uint32) []byte {
		c := bytes.Clone(b)
		binary.BigEndian.PutUint32(c[spans[i][0]+12:], n)
		return c
	}
	head := b[:spans[0][0]]
	damaged := map[string]struct {
		data []byte
		ext  *extent
	}{
		"frames reordered":                             {cat(head, frame(0), frame(2), frame(1), frame(3), frame(4)), whole},
		"frame repeated":                               {cat(head, frame(0), frame(1), frame(1), frame(2), frame(3), frame(4)), whole},
		"last frame repeated at the end":               {cat(b, frame(4)), whole},
		"frame swapped in from another session's file": {cat(head, frame(0), frame(1), other[spans[2][0]:spans[2][1]], frame(3), frame(4)), whole},
		"cut at a frame boundary":                      {b[:spans[4][0]], whole},
		"cut mid-frame, inside the record":             {b[:spans[4][0]+50], whole},
		"huge declared length":                         {setLen(2, 0xffffffff), whole},
		"zero declared length":                         {setLen(2, 0), whole},
		"last tag zeroed, inside the record":           {cat(b[:len(b)-tagLen], make([]byte, tagLen)), whole},
		"record of another length":                     {b, &extent{frames: 5, end: whole.end + 1, tag: whole.tag}},
		"record of another last frame":                 {b, &extent{frames: 5, end: whole.end, tag: lastTag(other)}},
		"record claims more frames":                    {b, &extent{frames: 6, end: whole.end + 100}},
	}
	for i := range spans {
		for _, f := range []struct {
			name string
			at   int
		}{{"magic", 1}, {"index", 11}, {"length", 14}, {"mac", 25}, {"nonce", 40}, {"tag", -1}} {
			at := spans[i][0] + f.at
			if f.at < 0 {
				at = spans[i][1] - 1
			}
			damaged[fmt.Sprintf("frame %d %s bit flipped", i, f.name)] = struct {
				data []byte
				ext  *extent
			}{flip(at, 0x08), whole}
		}
	}
	for name, c := range damaged {
		_, tail, err := openSealed(nil, key, "x", rel, c.data, c.ext)
		if !errors.Is(err, ErrSealedDamaged) || tail.cut != 0 {
			t.Errorf("%s: err %v, cut %d; want damage, nothing cut", name, err, tail.cut)
		}
	}

	// Past what the record vouches for (the last write, before the record
	// was written): a torn write is cut, never more than that frame.
	last := int64(spans[4][1] - spans[4][0])
	torn := map[string][]byte{
		"cut mid-frame":               b[:spans[4][0]+50],
		"cut inside the header":       b[:spans[4][0]+9],
		"last tag zeroed (power cut)": cat(b[:len(b)-tagLen], make([]byte, tagLen)),
		"a bare header appended":      cat(b[:spans[4][0]], frame(4)[:12], make([]byte, 20)),
	}
	for name, data := range torn {
		_, tail, err := openSealed(nil, key, "x", rel, data, four)
		if err != nil || tail.frames != 4 || tail.cut > last || tail.end != four.end {
			t.Errorf("%s: err %v, %d frames, cut %d (one write is %d); want 4 frames and at most the last write cut", name, err, tail.frames, tail.cut, last)
		}
	}
}

// frameBodyPlain decrypts frame i of b (a file of rel projects/p/x.jsonl).
func frameBodyPlain(t *testing.T, key *seal.RecordKey, b []byte, i int) []byte {
	t.Helper()
	spans := frameSpans(t, b)
	plain, _, err := openSealed(nil, key, "x", "projects/p/x.jsonl", b[:spans[i][1]], nil)
	if err != nil {
		t.Fatal(err)
	}
	if i == 0 {
		return plain
	}
	prev, _, _ := openSealed(nil, key, "x", "projects/p/x.jsonl", b[:spans[i-1][1]], nil)
	return plain[len(prev):]
}
