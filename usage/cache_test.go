package usage

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// line is one assistant row with usage.
func line(ts time.Time, id string, in, out int64) string {
	return fmt.Sprintf(`{"type":"assistant","timestamp":%q,"requestId":"r-%s","message":{"id":"m-%s","model":"claude-haiku-4-5","usage":{"input_tokens":%d,"output_tokens":%d,"cache_read_input_tokens":7}}}`+"\n",
		ts.UTC().Format(time.RFC3339Nano), id, id, in, out)
}

// cacheFixture is a folder of transcripts, with lines of every kind: rows,
// bad rows, lines without usage, costUSD, a last line without its newline.
type cacheFixture struct {
	t     *testing.T
	dir   string
	files []File
	at    time.Time
}

func newCacheFixture(t *testing.T) *cacheFixture {
	f := &cacheFixture{t: t, dir: t.TempDir(), at: time.Date(2026, 3, 1, 9, 0, 0, 123456789, time.UTC)}
	for i := range 5 {
		var b strings.Builder
		for j := range 40 + i*30 {
			b.WriteString(line(f.at.Add(time.Duration(i*100+j)*time.Minute), fmt.Sprintf("%d-%d", i, j), int64(j), int64(i)))
			if j%7 == 0 {
				b.WriteString(`{"type":"user","message":{"content":"no usage"}}` + "\n")
				b.WriteString(`{"timestamp":"2026-03-01T00:00:00Z","message":{"id":"bad","usage":{"input_tokens":-1,"output_tokens":1}}}` + "\n")
			}
		}
		if i == 2 {
			b.WriteString(`{"timestamp":"2026-03-01T00:00:00Z","costUSD":1.25,"message":{"id":"c","model":"x","usage":{"input_tokens":1,"output_tokens":1}}}` + "\n")
		}
		if i == 3 { // a last line without its newline
			b.WriteString(strings.TrimSuffix(line(f.at, "tail", 99, 99), "\n"))
		}
		path := filepath.Join(f.dir, fmt.Sprintf("s%d.jsonl", i))
		f.write(path, b.String())
		f.files = append(f.files, File{Path: path, Session: fmt.Sprintf("s%d", i)})
	}
	return f
}

func (f *cacheFixture) write(path, s string) {
	f.t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

func (f *cacheFixture) appendTo(path, s string) {
	f.t.Helper()
	fh, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteString(s); err != nil {
		f.t.Fatal(err)
	}
}

// check reads through the cache and without it: the same rows and bad
// rows, and the cache's account as want says (-1: any).
func (f *cacheFixture) check(cacheDir, what string, unchanged, grown, read int) *Scan {
	f.t.Helper()
	cold, err := Read(context.Background(), f.files, "")
	if err != nil {
		f.t.Fatal(err)
	}
	warm, err := Read(context.Background(), f.files, cacheDir)
	if err != nil {
		f.t.Fatal(err)
	}
	if !reflect.DeepEqual(cold.Rows(), warm.Rows()) || !reflect.DeepEqual(cold.Bad, warm.Bad) {
		f.t.Fatalf("%s: through the cache %d rows %v, read whole %d rows %v", what, len(warm.Rows()), warm.Bad, len(cold.Rows()), cold.Bad)
	}
	st := warm.Cache
	for _, c := range []struct{ got, want int }{{st.Unchanged, unchanged}, {st.Grown, grown}, {st.Read, read}} {
		if c.want >= 0 && c.got != c.want {
			f.t.Fatalf("%s: cache %+v, want %d unchanged, %d grown, %d read", what, st, unchanged, grown, read)
		}
	}
	if st.SaveError != "" {
		f.t.Fatalf("%s: %s", what, st.SaveError)
	}
	return warm
}

// TestCacheWarmEqualsCold: whatever happened to the transcripts since the
// cache read them, reading through it gives the rows reading them whole
// gives; only what was appended is parsed, and a file that changed
// otherwise is read again whole.
func TestCacheWarmEqualsCold(t *testing.T) {
	f := newCacheFixture(t)
	cacheDir := filepath.Join(t.TempDir(), "cache")
	sc := f.check(cacheDir, "cold", 0, 0, 5)
	if len(sc.Rows()) == 0 || sc.Bad[BadTokens] == 0 || sc.Cache.Saved == 0 {
		t.Fatalf("cold: %d rows, bad %v, %+v", len(sc.Rows()), sc.Bad, sc.Cache)
	}
	time.Sleep(racyWindow) // the files' entries are no longer racy once read again
	f.check(cacheDir, "racy entries checked", -1, 0, 0)
	sc = f.check(cacheDir, "warm", 5, 0, 0)
	if sc.Cache.Bytes != int64(len(strings.TrimSuffix(line(f.at, "tail", 99, 99), "\n"))) || sc.Cache.Saved != 0 {
		t.Fatalf("warm: parsed %d bytes (want only the line without its newline), saved %d", sc.Cache.Bytes, sc.Cache.Saved)
	}

	// Appended rows, and the last line given its newline and more.
	f.appendTo(f.files[0].Path, line(f.at.Add(time.Hour), "new-0", 5, 5)+line(f.at.Add(2*time.Hour), "new-1", 6, 6))
	f.appendTo(f.files[3].Path, "\n"+line(f.at.Add(time.Hour), "new-3", 5, 5))
	sc = f.check(cacheDir, "appended", 3, 2, 0)
	if sc.Cache.Bytes >= 2000 {
		t.Fatalf("appended: %d bytes parsed, more than what was appended", sc.Cache.Bytes)
	}

	// A shrunk file, a file rewritten in place with the same size and
	// mtime, a file replaced by another (a new inode) and a new file are
	// read whole; a file that is gone is dropped.
	data, _ := os.ReadFile(f.files[1].Path)
	f.write(f.files[1].Path, string(data[:len(data)/2]))
	fi, _ := os.Stat(f.files[2].Path)
	data, _ = os.ReadFile(f.files[2].Path)
	copy(data, strings.Replace(string(data[:200]), `"input_tokens":0`, `"input_tokens":9`, 1))
	f.write(f.files[2].Path, string(data))
	if err := os.Chtimes(f.files[2].Path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	data, _ = os.ReadFile(f.files[4].Path)
	f.write(f.files[4].Path+".new", string(data)+line(f.at, "replaced", 1, 1))
	if err := os.Rename(f.files[4].Path+".new", f.files[4].Path); err != nil {
		t.Fatal(err)
	}
	f.write(filepath.Join(f.dir, "s5.jsonl"), line(f.at, "s5", 1, 2))
	f.files = append(f.files[1:], File{Path: filepath.Join(f.dir, "s5.jsonl"), Session: "s5"})
	sc = f.check(cacheDir, "shrunk, rewritten, replaced, new, gone", 1, 0, 4)
	if sc.Cache.Dropped != 1 {
		t.Fatalf("the gone file's entry was not dropped: %+v", sc.Cache)
	}
}

// TestCacheCorruptIsRebuilt: a cache file that is damaged, cut short, of
// another version or of another build is not used: the files it held are
// read again, and it is rewritten.
func TestCacheCorruptIsRebuilt(t *testing.T) {
	f := newCacheFixture(t)
	cacheDir := filepath.Join(t.TempDir(), "cache")
	f.check(cacheDir, "cold", 0, 0, 5)
	buckets, _ := filepath.Glob(filepath.Join(cacheDir, "usage-*.bin"))
	if len(buckets) == 0 {
		t.Fatal("no cache file written")
	}
	for _, damage := range []func([]byte) []byte{
		func(b []byte) []byte { b[len(b)-3] ^= 0x40; return b },           // a flipped bit
		func(b []byte) []byte { return b[:len(b)/2] },                     // cut short
		func(b []byte) []byte { b[8] = 99; return b },                     // another version
		func(b []byte) []byte { b[20] ^= 1; return b },                    // another build
		func([]byte) []byte { return []byte("not a cache at all") },       // garbage
		func(b []byte) []byte { return reseal(append(b, 0)) },             // a trailing byte, checksum right
		func(b []byte) []byte { b[cacheHeader] = 0x7f; return reseal(b) }, // a bad count, checksum right
	} {
		for _, p := range buckets {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, damage(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		sc := f.check(cacheDir, "damaged", -1, 0, -1)
		if len(sc.Cache.Discarded) != len(buckets) || sc.Cache.Read == 0 {
			t.Fatalf("damaged cache files: %+v", sc.Cache)
		}
		if sc := f.check(cacheDir, "rebuilt", -1, 0, 0); len(sc.Cache.Discarded) != 0 {
			t.Fatalf("the damaged cache files were not rewritten: %+v", sc.Cache)
		}
	}
	// A damaged file whose transcripts are all gone is rewritten too.
	for _, p := range buckets {
		if err := os.WriteFile(p, []byte("damaged"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f.files = nil
	for i, want := range []int{len(buckets), 0} {
		sc, err := Read(context.Background(), nil, cacheDir)
		if err != nil || len(sc.Rows()) != 0 || len(sc.Cache.Discarded) != want {
			t.Fatalf("read %d with no transcripts: %v %+v, want %d discarded", i, err, sc.Cache, want)
		}
	}
}

// reseal gives a changed cache file its right length and checksum.
func reseal(b []byte) []byte {
	payload := b[cacheHeader:]
	binary.LittleEndian.PutUint64(b[28:], uint64(len(payload)))
	binary.LittleEndian.PutUint32(b[36:], crc32.Checksum(payload, castagnoli))
	return b
}
