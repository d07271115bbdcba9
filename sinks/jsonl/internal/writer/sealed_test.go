package writer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/sealed"
)

func newSealedSink(t *testing.T, dir string, o seal.Options) *Sink {
	t.Helper()
	return newSink(t, dir, func(opt *Options) { opt.Encryption = o })
}

// sealedLines decrypts a sealed transcript (its plain name) into lines.
func sealedLines(t *testing.T, dir string, o seal.Options, path string) []string {
	t.Helper()
	st, err := sealed.NewStore(dir, o, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain, _, _, err := st.Read(context.Background(), path, false)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(plain), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestSealedSinkContract(t *testing.T) {
	o := jsonltest.SealKey(t)
	coretest.RunSinkContract(t, coretest.SinkHarness{
		New: func(t *testing.T) core.Sink { return newSealedSink(t, t.TempDir(), o) },
		Read: func(t *testing.T, s core.Sink, ref core.SessionRef) []string {
			root := s.(*Sink).opts.ConfigDir
			dir := Layout{Layout: layout.Layout{ConfigDir: root}}.ProjectDir(ref.CWD)
			if ref.AgentID != "" {
				return sealedLines(t, root, o, claudedir.AgentFile(dir, ref.SessionID, ref.AgentID))
			}
			return sealedLines(t, root, o, claudedir.MainFile(dir, ref.SessionID))
		},
		Sessions:   true,
		Sidechains: true,
	})
}

// sealedSession records a main transcript (two batches, so two frames), a
// subagent and a lifecycle record into a sealed archive, and returns the
// lines written to the main file.
func sealedSession(t *testing.T, dir string, o seal.Options) []string {
	t.Helper()
	ctx := context.Background()
	s := newSealedSink(t, dir, o)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	u1 := coretest.Line("user", sess, "u-1", "")
	a1 := coretest.Line("assistant", sess, "a-1", "u-1")
	side := strings.Replace(coretest.Line("user", sess, "s-1", ""), `"isSidechain":false`, `"isSidechain":true,"agentId":"a1b2c3"`, 1)
	for _, batch := range [][]string{{u1}, {a1, side}} {
		if err := s.Write(ctx, entries(t, batch...)); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	return []string{u1, a1}
}

func TestSealedArchiveHoldsNoPlainText(t *testing.T) {
	dir, o := t.TempDir(), jsonltest.SealKey(t)
	want := sealedSession(t, dir, o)
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		names = append(names, rel)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, marker := range []string{`"type":"user"`, "u-1", `"message"`} {
			if bytes.Contains(b, []byte(marker)) {
				t.Errorf("%s holds %q in plain text", rel, marker)
			}
		}
		if strings.HasSuffix(p, ".jsonl") {
			t.Errorf("%s: a plain transcript in a sealed archive", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := sealedLines(t, dir, o, mainPath(dir)); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("main transcript decrypted:\n%q\nwant\n%q", got, want)
	}
	if !(Layout{Layout: layout.Layout{ConfigDir: dir}}).sealed().IsSealed() {
		t.Errorf("IsSealed is false; files %v", names)
	}
	if _, err := os.Stat(mainPath(dir) + claudedir.SealedSuffix); err != nil {
		t.Errorf("no sealed main file: %v (files %v)", err, names)
	}
}

func TestSealedSeedAndLoad(t *testing.T) {
	dir, o := t.TempDir(), jsonltest.SealKey(t)
	want := sealedSession(t, dir, o)
	ctx := context.Background()
	s := newSealedSink(t, dir, o)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(ctx)
	seed, err := s.Seed(ctx, core.SessionRef{SessionID: sess})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seed.UUIDs) != "[u-1 a-1]" {
		t.Errorf("seed uuids %v, want [u-1 a-1]", seed.UUIDs)
	}
	tr, err := s.Load(ctx, core.SessionRef{SessionID: sess})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range tr.Entries {
		got = append(got, string(e.Raw))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("loaded %q, want %q", got, want)
	}
	if tr, err := s.Load(ctx, core.SessionRef{SessionID: sess, AgentID: "a1b2c3"}); err != nil || len(tr.Entries) != 1 {
		t.Errorf("agent load: %v, %v", tr, err)
	}
	if _, err := s.Load(ctx, core.SessionRef{SessionID: "0565a3a4-0000-4000-8000-000000000009"}); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("missing session: %v, want ErrNotFound", err)
	}
}

// appendAfterRestart writes one more entry through a new sink and says
// what the sink counted.
func appendAfterRestart(t *testing.T, dir string, o seal.Options, uuid string) (map[string]int64, error) {
	t.Helper()
	ctx := context.Background()
	s := newSealedSink(t, dir, o)
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	err := s.Write(ctx, entries(t, coretest.Line("user", sess, uuid, "a-1")))
	if err == nil {
		err = s.Flush(ctx)
	}
	rep := s.Report()
	_ = s.Shutdown(ctx)
	return rep, err
}

func TestSealedTornTailIsCutAndCounted(t *testing.T) {
	cases := map[string]func(whole, next []byte) []byte{
		"short body":       func(whole, next []byte) []byte { return next[:len(next)-7] },
		"short header":     func(whole, next []byte) []byte { return next[:9] },
		"header then zero": func(whole, next []byte) []byte { return append(bytes.Clone(next[:15]), make([]byte, 300)...) },
		"zero fill":        func(whole, next []byte) []byte { return make([]byte, 4096) },
	}
	for name, tear := range cases {
		t.Run(name, func(t *testing.T) {
			dir, o := t.TempDir(), jsonltest.SealKey(t)
			want := sealedSession(t, dir, o)
			disk := mainPath(dir) + claudedir.SealedSuffix
			whole, _ := os.ReadFile(disk)
			// The extent record as it was before the write a crash cut
			// short (it is written once the frame is synced).
			record, _ := os.ReadFile(disk + claudedir.ExtentSuffix)
			// The frame a further write would have added, torn.
			if _, err := appendAfterRestart(t, dir, o, "u-2"); err != nil {
				t.Fatal(err)
			}
			full, _ := os.ReadFile(disk)
			torn := append(bytes.Clone(whole), tear(whole, full[len(whole):])...)
			if err := os.WriteFile(disk, torn, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(disk+claudedir.ExtentSuffix, record, 0o600); err != nil {
				t.Fatal(err)
			}
			rep, err := appendAfterRestart(t, dir, o, "u-3")
			if err != nil {
				t.Fatal(err)
			}
			if rep["torn_frames_cut"] != 1 {
				t.Errorf("torn_frames_cut = %d, want 1", rep["torn_frames_cut"])
			}
			got := sealedLines(t, dir, o, mainPath(dir))
			want = append(want, coretest.Line("user", sess, "u-3", "a-1"))
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("after the cut and a write:\n%q\nwant\n%q", got, want)
			}
		})
	}
}

// TestSealedDamageIsNeverCut: a complete frame that fails authentication,
// a corrupt header, frames swapped or copied from another file: the sink
// refuses the file, naming it, and leaves every byte where it was.
func TestSealedDamageIsNeverCut(t *testing.T) {
	type damage func(t *testing.T, dir string, b []byte) []byte
	frames := func(t *testing.T, b []byte) [][2]int {
		var out [][2]int
		off := len(sealed.Magic)
		for off < len(b) {
			n := int(uint32(b[off+12])<<24 | uint32(b[off+13])<<16 | uint32(b[off+14])<<8 | uint32(b[off+15]))
			out = append(out, [2]int{off, off + sealed.FrameHeaderLen + n})
			off += sealed.FrameHeaderLen + n
		}
		if len(out) < 2 {
			t.Fatalf("want at least 2 frames, got %d", len(out))
		}
		return out
	}
	cases := map[string]damage{
		"byte of the last frame's body": func(t *testing.T, _ string, b []byte) []byte {
			b[len(b)-30] ^= 0x01
			return b
		},
		"last byte (the tag)": func(t *testing.T, _ string, b []byte) []byte {
			b[len(b)-1] ^= 0x80
			return b
		},
		"length of the first frame": func(t *testing.T, _ string, b []byte) []byte {
			b[len(sealed.Magic)+15] ^= 0x04
			return b
		},
		"frames swapped": func(t *testing.T, _ string, b []byte) []byte {
			fr := frames(t, b)
			out := bytes.Clone(b[:fr[0][0]])
			out = append(out, b[fr[1][0]:fr[1][1]]...)
			return append(out, b[fr[0][0]:fr[0][1]]...)
		},
		"frame from another file": func(t *testing.T, dir string, b []byte) []byte {
			other, err := os.ReadFile(claudedir.AgentFile(Layout{Layout: layout.Layout{ConfigDir: dir}}.ProjectDir(cwd), sess, "a1b2c3") + claudedir.SealedSuffix)
			if err != nil {
				t.Fatal(err)
			}
			// The agent file's first frame in the place of the main file's
			// first: same index, same offset, so that only the binding to
			// the file's name can catch it.
			return append(b[:len(sealed.Magic)], other[len(sealed.Magic):]...)
		},
	}
	for name, hurt := range cases {
		t.Run(name, func(t *testing.T) {
			dir, o := t.TempDir(), jsonltest.SealKey(t)
			sealedSession(t, dir, o)
			disk := mainPath(dir) + claudedir.SealedSuffix
			b, _ := os.ReadFile(disk)
			bad := hurt(t, dir, bytes.Clone(b))
			if err := os.WriteFile(disk, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			rep, err := appendAfterRestart(t, dir, o, "u-9")
			if !errors.Is(err, sealed.ErrSealedDamaged) || !strings.Contains(err.Error(), disk) {
				t.Errorf("err = %v, want ErrSealedDamaged naming %s", err, disk)
			}
			if rep["torn_frames_cut"] != 0 {
				t.Errorf("torn_frames_cut = %d, want 0", rep["torn_frames_cut"])
			}
			after, _ := os.ReadFile(disk)
			if !bytes.Equal(after, bad) {
				t.Errorf("the damaged file changed: %d bytes, was %d", len(after), len(bad))
			}
		})
	}
}

func TestSealedKeysAndMixing(t *testing.T) {
	ctx := context.Background()
	dir, o := t.TempDir(), jsonltest.SealKey(t)
	sealedSession(t, dir, o)

	wrong := newSealedSink(t, dir, jsonltest.SealKey(t))
	if err := wrong.Start(ctx); !errors.Is(err, sealed.ErrArchiveKey) || !strings.Contains(err.Error(), dir) {
		t.Errorf("wrong key: %v, want ErrArchiveKey naming %s", err, dir)
	}
	missing := newSealedSink(t, dir, seal.Options{Identity: seal.KeySource{File: filepath.Join(dir, "no-such-key")}})
	if err := missing.Start(ctx); !errors.Is(err, sealed.ErrArchiveKey) {
		t.Errorf("missing key file: %v, want ErrArchiveKey", err)
	}
	if _, err := New(Options{ConfigDir: dir}); !errors.Is(err, sealed.ErrMixedArchive) {
		t.Errorf("plain sink on a sealed archive: %v, want ErrMixedArchive", err)
	}
	plain := t.TempDir()
	s := newSink(t, plain, nil)
	_ = s.Start(ctx)
	if err := s.Write(ctx, entries(t, coretest.Line("user", sess, "u-1", ""))); err != nil {
		t.Fatal(err)
	}
	_ = s.Shutdown(ctx)
	if _, err := New(Options{ConfigDir: plain, Encryption: o}); !errors.Is(err, sealed.ErrMixedArchive) {
		t.Errorf("sealed sink on a plain archive: %v, want ErrMixedArchive", err)
	}
	if _, err := New(Options{ConfigDir: t.TempDir(), Encryption: seal.Options{Recipients: []string{mustRecipient(t)}}}); err == nil {
		t.Error("recipients only: no error, but the archive could never be read back to deduplicate")
	}
	c := DefaultConfig()
	c.Encryption = o
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "never sealed") {
		t.Errorf("encryption on Claude's own folder: %v", err)
	}
	c.Dir = t.TempDir()
	if err := c.Validate(); err != nil {
		t.Errorf("encryption on an archive folder: %v", err)
	}
}

func mustRecipient(t *testing.T) string {
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id.Recipient().String()
}
