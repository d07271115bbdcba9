package sinkhelper

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/e0dc0000/scribe/internal/seal"
)

// spoolBytes returns every file of the spool folder, concatenated.
func spoolBytes(t *testing.T, dir string) []byte {
	t.Helper()
	var all bytes.Buffer
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			all.Write(b)
		}
		return nil
	})
	return all.Bytes()
}

// TestEncryptedSpool: with spool_encryption, what a server outage spills
// holds no entry's bytes (the key file is sealed too); a restart with the
// key delivers everything in order; a wrong identity fails Start; no key
// at all leaves the records in the spool, counted as spool errors, never
// dropped, until the key is back.
func TestEncryptedSpool(t *testing.T) {
	dir := t.TempDir()
	f := newFake()
	f.setFail(func(int) error { return errors.New("down") })
	opts := testOptions(dir)
	opts.Retry.BackoffMin, opts.Retry.BackoffMax = time.Millisecond, 5*time.Millisecond
	id, _ := age.GenerateX25519Identity()
	other, _ := age.GenerateX25519Identity()
	opts.Encryption = seal.Options{Identity: seal.KeySource{Env: "SPOOL_KEY"}}
	opts.Environ = []string{"SPOOL_KEY=" + id.String()}
	s := start(t, opts, f.push)
	es, ids := mkEntries(t, 0, 40, 200)
	write(t, s, es)
	waitFor(t, "a failed attempt", func() bool { return s.Report()["failing"] == 1 })
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := s.Report(); r["shutdown_spilled"] != 40 {
		t.Fatalf("report %v", r)
	}
	disk := spoolBytes(t, dir)
	if len(disk) < 40*200 || bytes.Contains(disk, []byte("hello from")) || bytes.Contains(disk, []byte(ids[3])) || bytes.Contains(disk, []byte("xxxxxxxx")) {
		t.Fatalf("the spool holds plaintext (%d bytes)", len(disk))
	}
	if _, err := os.Stat(filepath.Join(dir, "key.age")); err != nil {
		t.Fatal(err)
	}

	wrong := opts
	wrong.Environ = []string{"SPOOL_KEY=" + other.String()}
	if s2, err := New(wrong, f.push); err != nil {
		t.Fatal(err)
	} else if err := s2.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "spool encryption") {
		t.Fatalf("a wrong identity: %v", err)
	}

	f.setFail(nil)
	none := opts
	none.Encryption = seal.Options{}
	none.FlushWait = 100 * time.Millisecond
	s3 := start(t, none, f.push)
	waitFor(t, "a spool error", func() bool { return s3.Report()["spool_errors"] > 0 })
	if err := s3.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := f.Stored(); len(got) != 0 {
		t.Fatalf("without the key %d entries went out", len(got))
	}

	s4 := start(t, opts, f.push)
	if err := s4.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s4.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	sameOrder(t, f.Stored(), ids)
}
