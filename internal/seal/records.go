package seal

import (
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"sync"

	"github.com/e0dc0000/scribe/internal/durable"
	"golang.org/x/crypto/chacha20poly1305"
)

// RecordKey encrypts many small records (a disk spool's frames) cheaply:
// a random 32-byte data key, kept in a file sealed with age to the
// Sealer's recipients, and XChaCha20-Poly1305 per record under a random
// nonce, binding associated data (a record's sequence number, say) so a
// record cannot be moved to another place unnoticed.
type RecordKey struct {
	aead cipher.AEAD
	mac  []byte    // a subkey for MAC, derived from the data key
	macs sync.Pool // of hmac hashes under mac
}

// MACSize is how many bytes MAC appends.
const MACSize = 16

// RecordKey loads the data key kept sealed in path, or makes one and
// keeps it there (0600, written to a temporary file, synced and renamed).
// Opening an existing key needs the Sealer's identity or passphrase; a
// wrong one is an error, never a new key.
func (s *Sealer) RecordKey(path string) (*RecordKey, error) {
	return s.recordKey(path, true)
}

// ExistingRecordKey is RecordKey without the making: a missing key file
// is an error wrapping fs.ErrNotExist.
func (s *Sealer) ExistingRecordKey(path string) (*RecordKey, error) {
	return s.recordKey(path, false)
}

func (s *Sealer) recordKey(path string, create bool) (*RecordKey, error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		key, err := s.OpenBytes(b)
		if err != nil {
			return nil, fmt.Errorf("record key %s: %w", path, err)
		}
		return newRecordKey(key)
	case !errors.Is(err, fs.ErrNotExist) || !create:
		return nil, fmt.Errorf("record key: %w", err)
	}
	key := newKey()
	sealed, err := s.SealBytes(key)
	if err != nil {
		return nil, err
	}
	if err := writeNew(path, sealed); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return s.recordKey(path, false) // another process made it first
		}
		return nil, fmt.Errorf("record key %s: %w", path, err)
	}
	return newRecordKey(key)
}

func newKey() []byte {
	key := make([]byte, chacha20poly1305.KeySize)
	if _, err := rand.Read(key); err != nil {
		panic(fmt.Sprintf("seal: no randomness: %v", err)) // crypto/rand never fails on supported systems
	}
	return key
}

func newRecordKey(key []byte) (*RecordKey, error) {
	aead, err := chacha20poly1305.NewX(key)
	if err != nil {
		return nil, fmt.Errorf("record key: %w", err)
	}
	mac, err := hkdf.Key(sha256.New, key, nil, "scribe record key: header mac", 32)
	if err != nil {
		return nil, fmt.Errorf("record key: %w", err)
	}
	return &RecordKey{aead: aead, mac: mac}, nil
}

// MAC appends to dst a MACSize-byte authentication code of the parts
// (HMAC-SHA256 under a key derived from the data key, truncated): what a
// reader must trust before it can find the record it guards, a frame's
// length say.
func (k *RecordKey) MAC(dst []byte, parts ...[]byte) []byte {
	h, _ := k.macs.Get().(hash.Hash)
	if h == nil {
		h = hmac.New(sha256.New, k.mac)
	}
	h.Reset()
	for _, p := range parts {
		h.Write(p)
	}
	var sum [sha256.Size]byte
	out := append(dst, h.Sum(sum[:0])[:MACSize]...)
	k.macs.Put(h)
	return out
}

// Overhead is how many bytes Seal adds to a record.
func (k *RecordKey) Overhead() int { return k.aead.NonceSize() + k.aead.Overhead() }

// Seal appends nonce || ciphertext of plaintext, bound to ad, to dst.
func (k *RecordKey) Seal(dst, plaintext, ad []byte) []byte {
	n := k.aead.NonceSize()
	out := append(dst, make([]byte, n)...)
	nonce := out[len(out)-n:]
	if _, err := rand.Read(nonce); err != nil {
		panic(fmt.Sprintf("seal: no randomness: %v", err)) // crypto/rand never fails on supported systems
	}
	return k.aead.Seal(out, nonce, plaintext, ad)
}

// Open appends the plaintext of a sealed record to dst; a changed record,
// other associated data or another key is an error.
func (k *RecordKey) Open(dst, sealed, ad []byte) ([]byte, error) {
	n := k.aead.NonceSize()
	if len(sealed) < n+k.aead.Overhead() {
		return nil, errors.New("open sealed record: too short")
	}
	out, err := k.aead.Open(dst, sealed[:n], sealed[n:], ad)
	if err != nil {
		return nil, fmt.Errorf("open sealed record: %w", err)
	}
	return out, nil
}

// writeNew writes data to path, which must not exist, durably: a
// temporary file in the same folder, synced, linked into place (failing
// with fs.ErrExist when path appeared), and the folder synced.
func writeNew(path string, data []byte) error {
	return durable.WriteFileNew(path, data, 0o600)
}
