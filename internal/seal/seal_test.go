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
