package seal

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
)

var ctx = context.Background()

// TestX25519RoundTripAndWrongKey: sealed to a recipient, opened by its
// identity (from a file); another identity fails, naming the failure; a
// changed or cut file fails; no plaintext is in the sealed bytes.
func TestX25519RoundTripAndWrongKey(t *testing.T) {
	id, _ := age.GenerateX25519Identity()
	other, _ := age.GenerateX25519Identity()
	dir := t.TempDir()
	idFile := filepath.Join(dir, "key.txt")
	otherFile := filepath.Join(dir, "other.txt")
	os.WriteFile(idFile, []byte("# a comment\n"+id.String()+"\n"), 0o600)
	os.WriteFile(otherFile, []byte(other.String()+"\n"), 0o600)

	sender, err := New(ctx, Options{Recipients: []string{id.Recipient().String()}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain := []byte(`{"type":"user","toolUseResult":{"stdout":"DB_PASSWORD=hunter2hunter2"}}` + "\n")
	sealed, err := sender.SealBytes(plain)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("hunter2")) {
		t.Fatal("plaintext in the sealed bytes")
	}
	if _, err := sender.OpenBytes(sealed); err == nil {
		t.Fatal("a sealer with recipients only opened a file")
	}
	owner, err := New(ctx, Options{Identity: KeySource{File: idFile}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := owner.OpenBytes(sealed); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open: %v", err)
	}
	stranger, _ := New(ctx, Options{Identity: KeySource{File: otherFile}}, nil)
	if _, err := stranger.OpenBytes(sealed); err == nil || !strings.Contains(err.Error(), "open sealed file") {
		t.Fatalf("a wrong identity: %v", err)
	}
	bad := bytes.Clone(sealed)
	bad[len(bad)-5] ^= 1
	if _, err := owner.OpenBytes(bad); err == nil {
		t.Fatal("a changed file opened")
	}
	if _, err := owner.OpenBytes(sealed[:len(sealed)-10]); err == nil {
		t.Fatal("a cut file opened")
	}
	if _, err := owner.OpenBytes(plain); err == nil {
		t.Fatal("plaintext opened as a sealed file")
	}
}

// TestPassphraseFromEnvAndCommand: a passphrase from a variable or a
// command; the wrong one fails.
func TestPassphraseFromEnvAndCommand(t *testing.T) {
	a, err := New(ctx, Options{Passphrase: KeySource{Env: "PASS"}}, []string{"PASS=s3cret pass phrase"})
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := a.SealBytes([]byte("original"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(ctx, Options{Passphrase: KeySource{Command: []string{"printf", "s3cret pass phrase\n"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.OpenBytes(sealed); err != nil || string(got) != "original" {
		t.Fatalf("open with the command's passphrase: %q %v", got, err)
	}
	c, _ := New(ctx, Options{Passphrase: KeySource{Env: "PASS"}}, []string{"PASS=wrong"})
	if _, err := c.OpenBytes(sealed); err == nil {
		t.Fatal("a wrong passphrase opened the file")
	}
}

// TestConfigErrors: no key is ErrNoKey (the caller decides, loudly); a
// missing variable, a failing command, an empty key, mixed options and a
// bad recipient are errors.
func TestConfigErrors(t *testing.T) {
	if _, err := New(ctx, Options{}, nil); !errors.Is(err, ErrNoKey) {
		t.Fatalf("no key: %v", err)
	}
	id, _ := age.GenerateX25519Identity()
	for name, o := range map[string]Options{
		"missing env":   {Passphrase: KeySource{Env: "NOPE"}},
		"failing cmd":   {Passphrase: KeySource{Command: []string{"false"}}},
		"empty key":     {Passphrase: KeySource{Command: []string{"true"}}},
		"two sources":   {Passphrase: KeySource{Env: "A", File: "b"}},
		"mixed":         {Recipients: []string{id.Recipient().String()}, Passphrase: KeySource{Env: "A"}},
		"bad recipient": {Recipients: []string{"age1nope"}},
		"missing file":  {Identity: KeySource{File: filepath.Join(t.TempDir(), "none")}},
	} {
		if _, err := New(ctx, o, []string{"A=x"}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestRecordKey: a data key made once, sealed in its file; records open
// only with the same key and associated data; a wrong identity cannot
// load the key (no new key is made in its place).
func TestRecordKey(t *testing.T) {
	id, _ := age.GenerateX25519Identity()
	other, _ := age.GenerateX25519Identity()
	env := []string{"ID=" + id.String(), "OTHER=" + other.String()}
	s, err := New(ctx, Options{Identity: KeySource{Env: "ID"}}, env)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "spool", "key.age")
	k1, err := s.RecordKey(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %v %v", fi, err)
	}
	rec := k1.Seal(nil, []byte(`{"type":"user","uuid":"u1"}`), []byte("seq 7"))
	if bytes.Contains(rec, []byte("uuid")) || len(rec) != 27+k1.Overhead() {
		t.Fatalf("sealed record %d bytes", len(rec))
	}
	k2, err := s.RecordKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k2.Open(nil, rec, []byte("seq 7")); err != nil || string(got) != `{"type":"user","uuid":"u1"}` {
		t.Fatalf("open with the reloaded key: %q %v", got, err)
	}
	if _, err := k2.Open(nil, rec, []byte("seq 8")); err == nil {
		t.Fatal("a record opened at another place")
	}
	bad := bytes.Clone(rec)
	bad[len(bad)-1] ^= 1
	if _, err := k2.Open(nil, bad, []byte("seq 7")); err == nil {
		t.Fatal("a changed record opened")
	}
	if _, err := k2.Open(nil, rec[:10], nil); err == nil {
		t.Fatal("a cut record opened")
	}
	before, _ := os.ReadFile(path)
	wrong, _ := New(ctx, Options{Identity: KeySource{Env: "OTHER"}}, env)
	if _, err := wrong.RecordKey(path); err == nil {
		t.Fatal("a wrong identity loaded the key")
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("a wrong identity replaced the key")
	}
}
