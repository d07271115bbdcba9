package sealed

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
)

// FuzzOpenSealed: whatever the bytes, openSealed never panics, never
// reports whole frames past the end, and a cut is only ever the tail.
func FuzzOpenSealed(f *testing.F) {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		f.Fatal(err)
	}
	sl, err := seal.New(context.Background(), seal.Options{Recipients: []string{id.Recipient().String()}}, nil)
	if err != nil {
		f.Fatal(err)
	}
	key, err := sl.RecordKey(filepath.Join(f.TempDir(), claudedir.ArchiveKeyName))
	if err != nil {
		f.Fatal(err)
	}
	good := AppendFrame(nil, key, "projects/p/x.jsonl", 0, 0, [tagLen]byte{}, []byte("{}\n"))
	good = AppendFrame(good, key, "projects/p/x.jsonl", 1, int64(len(good)), LastTag(good), []byte("{\"a\":1}\n"))
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add(append(bytes.Clone(good), make([]byte, 64)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, tail, err := Open(nil, key, "x", "projects/p/x.jsonl", b, nil)
		if tail.end > int64(len(b)) || tail.end+tail.cut > int64(len(b)) {
			t.Fatalf("end %d cut %d of %d bytes", tail.end, tail.cut, len(b))
		}
		if err == nil && tail.end+tail.cut != int64(len(b)) {
			t.Fatalf("no error, but %d bytes neither whole frames nor cut", int64(len(b))-tail.end-tail.cut)
		}
	})
}

// sealedFrames makes a sealed file of n frames in memory and returns it
// with the plain text of each frame.
func sealedFrames(t *testing.T, n int) (*seal.RecordKey, []byte, [][]byte) {
	t.Helper()
	o := jsonltest.SealKey(t)
	sl, err := seal.New(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := sl.RecordKey(filepath.Join(t.TempDir(), claudedir.ArchiveKeyName))
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	var plains [][]byte
	var prev [tagLen]byte
	for i := 0; i < n; i++ {
		p := []byte(strings.Repeat(fmt.Sprintf(`{"uuid":"u-%d"}`+"\n", i), 1+i%3))
		b = AppendFrame(b, key, "projects/p/x.jsonl", uint64(i), int64(len(b)), prev, p)
		prev = LastTag(b)
		plains = append(plains, p)
	}
	return key, b, plains
}

// TestSealedTruncatedAnywhere: a file cut at any offset opens as its whole
// frames, the rest reported as a torn tail to cut, never as an error.
func TestSealedTruncatedAnywhere(t *testing.T) {
	key, b, plains := sealedFrames(t, 6)
	for cut := 0; cut <= len(b); cut++ {
		got, tail, err := Open(nil, key, "x", "projects/p/x.jsonl", b[:cut], nil)
		if err != nil {
			t.Fatalf("cut at %d of %d: %v", cut, len(b), err)
		}
		var want []byte
		for _, p := range plains[:tail.frames] {
			want = append(want, p...)
		}
		if !bytes.Equal(got, want) || tail.end+tail.cut != int64(cut) {
			t.Fatalf("cut at %d: %d frames, end %d, cut %d", cut, tail.frames, tail.end, tail.cut)
		}
	}
}

// TestSealedBitFlipsNeverPass: one flipped bit anywhere in a sealed file
// (headers, bodies, tags, the file's magic) is an error, never plain text
// and never a tail to cut.
func TestSealedBitFlipsNeverPass(t *testing.T) {
	key, b, _ := sealedFrames(t, 4)
	for i := range b {
		for _, bit := range []byte{0x01, 0x80} {
			bad := bytes.Clone(b)
			bad[i] ^= bit
			_, tail, err := Open(nil, key, "x", "projects/p/x.jsonl", bad, nil)
			if !errors.Is(err, ErrSealedDamaged) || tail.cut != 0 {
				t.Fatalf("bit %#x of byte %d flipped: err %v, cut %d", bit, i, err, tail.cut)
			}
		}
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
		other = AppendFrame(other, key, "projects/p/y.jsonl", uint64(i), int64(len(other)), prev, bytes.Repeat([]byte("x"), len(frameBodyPlain(t, key, b, i))))
		prev = LastTag(other)
	}
	spans := FrameSpans(b)
	whole := &Extent{Frames: 5, End: int64(len(b)), Tag: LastTag(b)}
	four := &Extent{Frames: 4, End: int64(spans[3][1]), Tag: LastTag(b[:spans[3][1]])}
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
		ext  *Extent
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
		"record of another length":                     {b, &Extent{Frames: 5, End: whole.End + 1, Tag: whole.Tag}},
		"record of another last frame":                 {b, &Extent{Frames: 5, End: whole.End, Tag: LastTag(other)}},
		"record claims more frames":                    {b, &Extent{Frames: 6, End: whole.End + 100}},
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
				ext  *Extent
			}{flip(at, 0x08), whole}
		}
	}
	for name, c := range damaged {
		_, tail, err := Open(nil, key, "x", rel, c.data, c.ext)
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
		_, tail, err := Open(nil, key, "x", rel, data, four)
		if err != nil || tail.frames != 4 || tail.cut > last || tail.end != four.End {
			t.Errorf("%s: err %v, %d frames, cut %d (one write is %d); want 4 frames and at most the last write cut", name, err, tail.frames, tail.cut, last)
		}
	}
}

// frameBodyPlain decrypts frame i of b (a file of rel projects/p/x.jsonl).
func frameBodyPlain(t *testing.T, key *seal.RecordKey, b []byte, i int) []byte {
	t.Helper()
	spans := FrameSpans(b)
	plain, _, err := Open(nil, key, "x", "projects/p/x.jsonl", b[:spans[i][1]], nil)
	if err != nil {
		t.Fatal(err)
	}
	if i == 0 {
		return plain
	}
	prev, _, _ := Open(nil, key, "x", "projects/p/x.jsonl", b[:spans[i-1][1]], nil)
	return plain[len(prev):]
}
