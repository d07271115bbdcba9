package main_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/internal/peer"
)

// sealedMain is the sealed main transcript of session id in the archive.
func (se *sealedEnv) sealedMain(t *testing.T, id string) string {
	t.Helper()
	var main string
	_ = filepath.WalkDir(se.sealed, func(p string, d fs.DirEntry, err error) error {
		if err == nil && filepath.Base(p) == id+".jsonl"+claudedir.SealedSuffix {
			main = p
		}
		return err
	})
	if main == "" {
		t.Fatal("no sealed main transcript")
	}
	return main
}

// oneMore is a user line of session id that record appends.
func oneMore(id, uuid string) string {
	return `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"one more"},"uuid":"` + uuid +
		`","timestamp":"2026-01-10T12:00:00.000Z","cwd":"/home/alice/src/shop","sessionId":"` + id + `"}` + "\n"
}

// sealedFrames returns where each frame of a sealed file starts and ends,
// in either format (1: 20-byte headers, 2: 32-byte headers; the length is
// at bytes 12-16 of both).
func sealedFrames(t *testing.T, b []byte) (hdrLen int, spans [][2]int) {
	t.Helper()
	hdrLen = 32
	if bytes.HasPrefix(b, []byte("scribe-sealed-1\n")) {
		hdrLen = 20
	}
	for off := 16; off+hdrLen <= len(b); {
		n := int(binary.BigEndian.Uint32(b[off+12 : off+16]))
		spans = append(spans, [2]int{off, off + hdrLen + n})
		off += hdrLen + n
	}
	return hdrLen, spans
}

// damagedEverywhere writes the damaged bytes into main and checks that
// record (appending a line), show and ls fail, naming it, and that no
// byte of it is cut.
func (se *sealedEnv) damagedEverywhere(t *testing.T, id, main string, before []byte, want string) {
	t.Helper()
	if err := os.WriteFile(main, before, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"record", "--config", se.sealedCfg},
		{"show", id, "--from", "jsonl/archive", "--config", se.sealedCfg},
		{"ls", "--all", "--from", "jsonl/archive", "--config", se.sealedCfg},
	} {
		out, errs, code := runScribe(t, runOpts{base: se.env, stdin: oneMore(id, "0e0e0e0e-0000-4000-8000-0000000000f1")}, args...)
		if code != 1 || !strings.Contains(errs, main) || !strings.Contains(errs, want) {
			t.Errorf("%v: exit %d, want 1 with an error naming %s and saying %q\nstdout: %.300s\nstderr: %s", args, code, main, want, out, errs)
		}
	}
	if after, _ := os.ReadFile(main); !bytes.Equal(after, before) {
		t.Errorf("the damaged file changed: %d bytes, was %d (authenticated frames cut)", len(after), len(before))
	}
	se.noViewsLeft(t, "the damaged archive")
}

// TestSealedForgedHeaderCutsNothing: the attack. One frame's length
// is changed in its header, and its check recomputed as an attacker can (a
// crc32c in format 1; a format 2 header is authenticated with the data key,
// which the attacker does not have). Every later frame then looked like a
// torn tail, and the next record cut them (exit 0). Now record, show and ls
// fail naming the file, and not a byte is cut.
func TestSealedForgedHeaderCutsNothing(t *testing.T) {
	p := peer.Find(t)
	se := newSealedEnv(t, p)
	id := se.ids["withSummaryAndSubagent"]
	main := se.sealedMain(t, id)
	for i := 0; i < 3; i++ { // more frames
		se.okIn(t, oneMore(id, "0e0e0e0e-0000-4000-8000-00000000000"+string(rune('1'+i))), "record", "--config", se.sealedCfg)
	}
	b, _ := os.ReadFile(main)
	hdrLen, spans := sealedFrames(t, b)
	if len(spans) < 3 {
		t.Fatalf("want at least 3 frames, got %d", len(spans))
	}
	h := b[spans[1][0]:]
	binary.BigEndian.PutUint32(h[12:16], binary.BigEndian.Uint32(h[12:16])+uint32(len(b)))
	if hdrLen == 20 {
		binary.BigEndian.PutUint32(h[16:20], crc32.Checksum(h[:16], crc32.MakeTable(crc32.Castagnoli)))
	}
	se.damagedEverywhere(t, id, main, b, "damaged")
}

// TestSealedTruncationAndRollbackSeen: a sealed file cut at a frame
// boundary (which is also what a rollback to an older copy of an
// append-only file is) read as a shorter, valid session (exit 0). Now
// record, show and ls fail naming the file; nothing is cut or rewritten.
func TestSealedTruncationAndRollbackSeen(t *testing.T) {
	p := peer.Find(t)
	se := newSealedEnv(t, p)
	id := se.ids["withSummaryAndSubagent"]
	main := se.sealedMain(t, id)
	older, _ := os.ReadFile(main)
	se.okIn(t, oneMore(id, "0e0e0e0e-0000-4000-8000-000000000001"), "record", "--config", se.sealedCfg)
	b, _ := os.ReadFile(main)
	_, spans := sealedFrames(t, b)
	se.damagedEverywhere(t, id, main, b[:spans[len(spans)-1][0]], "truncated")
	se.damagedEverywhere(t, id, main, older, "rolled back")

	// The file deleted, its extent record left.
	if err := os.Remove(main); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"ls", "--all", "--from", "jsonl/archive", "--config", se.sealedCfg},
		{"record", "--config", se.sealedCfg},
	} {
		_, errs, code := runScribe(t, runOpts{base: se.env, stdin: oneMore(id, "0e0e0e0e-0000-4000-8000-0000000000f2")}, args...)
		if code != 1 || !strings.Contains(errs, main) || !strings.Contains(errs, "deleted") {
			t.Errorf("%v after the file was deleted: exit %d, want 1 naming %s as deleted\n%s", args, code, main, errs)
		}
	}
	if _, err := os.Stat(main); err == nil {
		t.Error("record made the deleted file again")
	}
}

// TestSealedMissingKeyFileRefused: the archive's key file gone (a backup
// that skipped it) with sealed transcripts present: record minted a new
// key and exited 0. Now it refuses, naming the archive, and makes none.
func TestSealedMissingKeyFileRefused(t *testing.T) {
	p := peer.Find(t)
	se := newSealedEnv(t, p)
	id := se.ids["withSummaryAndSubagent"]
	keyFile := filepath.Join(se.sealed, claudedir.ArchiveKeyName)
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, se.sealed)
	out, errs, code := runScribe(t, runOpts{base: se.env, stdin: oneMore(id, "0e0e0e0e-0000-4000-8000-000000000001")}, "record", "--config", se.sealedCfg)
	if code != 1 || !strings.Contains(errs, se.sealed) || !strings.Contains(errs, claudedir.ArchiveKeyName) {
		t.Errorf("record without the key file: exit %d, want 1 naming %s and its key file\nstdout: %.300s\nstderr: %s", code, se.sealed, out, errs)
	}
	if _, err := os.Stat(keyFile); err == nil {
		t.Error("a new key was minted over the sealed archive")
	}
	if after := snapshot(t, se.sealed); after != before {
		t.Errorf("the archive changed:\nbefore %s\nafter  %s", before, after)
	}
	// The readers: ls said "no sessions" and exited 0, show said the
	// session was not found.
	for _, args := range [][]string{
		{"ls", "--all", "--from", "jsonl/archive", "--config", se.sealedCfg},
		{"show", id, "--from", "jsonl/archive", "--config", se.sealedCfg},
	} {
		out, errs, code := runScribe(t, runOpts{base: se.env}, args...)
		if code != 1 || !strings.Contains(errs, claudedir.ArchiveKeyName) {
			t.Errorf("%v without the key file: exit %d, want 1 naming its key file\nstdout: %.300s\nstderr: %s", args, code, out, errs)
		}
	}
}

// TestSealedExtentSlotChangedHidesNoTruncation: the extent record keeps two
// slots and a reader takes the newest authentic one, so that a slot torn
// mid-write leaves the older. Changing one slot (any byte) and cutting the
// file back to what the other slot names read as a shorter, valid session
// (a session recorded in one run lost every line: show printed nothing,
// exit 0). Now each such cut is damage naming the file, and nothing is cut.
func TestSealedExtentSlotChangedHidesNoTruncation(t *testing.T) {
	p := peer.Find(t)
	se := newSealedEnv(t, p)
	id := se.ids["withSummaryAndSubagent"]
	main := se.sealedMain(t, id)
	se.okIn(t, oneMore(id, "0e0e0e0e-0000-4000-8000-000000000001"), "record", "--config", se.sealedCfg)
	b, _ := os.ReadFile(main)
	rec, _ := os.ReadFile(main + claudedir.ExtentSuffix)
	_, spans := sealedFrames(t, b)
	cuts := []int{16}
	for _, sp := range spans[:len(spans)-1] {
		cuts = append(cuts, sp[1])
	}
	for _, slot := range []int{0, 512} {
		for _, cut := range cuts {
			changed := bytes.Clone(rec)
			if len(changed) > slot+40 {
				changed[slot+40] ^= 0xff
			}
			if err := os.WriteFile(main+claudedir.ExtentSuffix, changed, 0o600); err != nil {
				t.Fatal(err)
			}
			t.Logf("slot at %d changed, file cut to %d bytes", slot, cut)
			se.damagedEverywhere(t, id, main, b[:cut], "damaged")
		}
	}
}

// okIn runs scribe with stdin and fails the test on a non-zero exit.
func (se *sealedEnv) okIn(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, errs, code := runScribe(t, runOpts{base: se.env, stdin: stdin}, args...)
	if code != 0 {
		t.Fatalf("scribe %v: exit %d\n%s", args, code, errs)
	}
	return out
}

// TestSealedReadsNothingToDisk: a sealed archive is read decrypted in
// memory, never through a folder on disk: a folder planted where the old
// decrypted views went (a symbolic link to a folder on disk, a folder
// others can read) is never written to, and nothing is left in TMPDIR.
func TestSealedReadsNothingToDisk(t *testing.T) {
	p := peer.Find(t)
	se := newSealedEnv(t, p)
	id := se.ids["withSummaryAndSubagent"]
	show := []string{"show", id, "--from", "jsonl/archive", "--config", se.sealedCfg}
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, root, disk string)
	}{
		{"symbolic link to a folder on disk", func(t *testing.T, root, disk string) {
			if err := os.Symlink(disk, root); err != nil {
				t.Fatal(err)
			}
		}},
		{"folder others can read", func(t *testing.T, root, _ string) {
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(root, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, disk, tmp := t.TempDir(), t.TempDir(), t.TempDir()
			root := filepath.Join(base, "scribe-sealed-views")
			c.plant(t, root, disk)
			out, errs, code := se.run(t, []string{"SCRIBE_SEALED_VIEW_DIR=" + base, "XDG_RUNTIME_DIR=" + base, "TMPDIR=" + tmp}, show...)
			if code != 0 || !strings.Contains(out, "Fix the login bug") {
				t.Fatalf("show: exit %d\n%.300s\n%s", code, out, errs)
			}
			for _, d := range []string{disk, root, tmp} {
				if ents, _ := os.ReadDir(d); len(ents) > 0 {
					t.Errorf("%s holds %d entries: something was decrypted into it", d, len(ents))
				}
			}
		})
	}
}

// TestSealedKeyFileOfAnotherArchiveRefused: archive.key.age replaced by the
// key file of another archive sealed to the same identity (a wrong backup
// restored): record wrote a new session under that other data key, exit 0,
// leaving the archive under two keys (one half unreadable whichever key
// file stays). Now the key is checked against the archive's extent records
// first: record refuses naming the key file, and writes nothing.
func TestSealedKeyFileOfAnotherArchiveRefused(t *testing.T) {
	p := peer.Find(t)
	se := newSealedEnv(t, p)
	other := filepath.Join(t.TempDir(), "other")
	otherCfg := filepath.Join(t.TempDir(), "other.hcl")
	writeFile(t, otherCfg, archiveHCL(other, fmt.Sprintf("{ identity = { file = %q } }", se.identity)))
	const newID = "0e0e0e0e-0000-4000-8000-0000000000d1"
	se.okIn(t, oneMore(newID, "0e0e0e0e-0000-4000-8000-0000000000d2"), "record", "--config", otherCfg)
	keyFile := filepath.Join(se.sealed, claudedir.ArchiveKeyName)
	otherKey, err := os.ReadFile(filepath.Join(other, claudedir.ArchiveKeyName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, otherKey, 0o600); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, se.sealed)
	out, errs, code := runScribe(t, runOpts{base: se.env, stdin: oneMore("0e0e0e0e-0000-4000-8000-0000000000d3", "0e0e0e0e-0000-4000-8000-0000000000d4")}, "record", "--config", se.sealedCfg)
	if code != 1 || !strings.Contains(errs, keyFile) {
		t.Errorf("record with another archive's key file: exit %d, want 1 naming %s\nstdout: %.300s\nstderr: %s", code, keyFile, out, errs)
	}
	if after := snapshot(t, se.sealed); after != before {
		t.Errorf("the archive changed:\nbefore %s\nafter  %s", before, after)
	}
}

// TestSealedOneDamagedFileLeavesTheRestReadable: one damaged transcript made
// every reader fail for the whole archive (show of a healthy session: exit
// 1, nothing printed), so its healthy sessions could not be read at all.
// Now the damaged file is left out, named, the rest is read, and the
// command still exits 1.
func TestSealedOneDamagedFileLeavesTheRestReadable(t *testing.T) {
	p := peer.Find(t)
	se := newSealedEnv(t, p)
	damaged, healthy := se.ids["withSummaryAndSubagent"], se.ids["branched"]
	main := se.sealedMain(t, damaged)
	b, _ := os.ReadFile(main)
	if err := os.WriteFile(main, b[:16], 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := runScribe(t, runOpts{base: se.env}, "show", healthy, "--json", "--from", "jsonl/archive", "--config", se.sealedCfg)
	if code != 1 || !strings.Contains(errs, main) || !strings.Contains(out, healthy) {
		t.Errorf("show of a healthy session beside a damaged one: exit %d, want 1 naming %s, with the session printed\nstdout: %.300s\nstderr: %s", code, main, out, errs)
	}
	out, errs, code = runScribe(t, runOpts{base: se.env}, "ls", "--all", "--from", "jsonl/archive", "--config", se.sealedCfg)
	if code != 1 || !strings.Contains(errs, main) || !strings.Contains(out, healthy) || strings.Contains(out, damaged) {
		t.Errorf("ls beside a damaged session: exit %d, want 1 naming %s, listing %s and not %s\nstdout: %.600s\nstderr: %s", code, main, healthy, damaged, out, errs)
	}
	se.noViewsLeft(t, "an archive with a damaged file")
}
