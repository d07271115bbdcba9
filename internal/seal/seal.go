// Package seal encrypts what scribe keeps of its own (the redact trash, and
// anything else that must not sit on disk in plaintext) with age
// (filippo.io/age): to X25519 recipients, or with a passphrase (scrypt).
// Keys come from a file, an environment variable or a command, never from
// the configuration itself. Opening with a wrong key is an error naming
// what failed; there is no plaintext fallback.
package seal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"filippo.io/age"
)

// ErrNoKey is returned by New when no key is configured: the caller then
// stores plaintext on purpose (and says so), or refuses.
var ErrNoKey = errors.New("no encryption key configured")

// KeySource says where a secret comes from: exactly one of a file, an
// environment variable or a command (its standard output). Trailing
// newlines are trimmed.
type KeySource struct {
	File    string   `json:"file,omitempty" config:"path"`
	Env     string   `json:"env,omitempty"`
	Command []string `json:"command,omitempty" config:"command"`
}

// IsZero reports whether no source is set.
func (k KeySource) IsZero() bool { return k.File == "" && k.Env == "" && len(k.Command) == 0 }

// Validate checks that at most one source is set.
func (k KeySource) Validate() error {
	n := 0
	if k.File != "" {
		n++
	}
	if k.Env != "" {
		n++
	}
	if len(k.Command) > 0 {
		n++
	}
	if n > 1 {
		return errors.New("give one of file, env or command")
	}
	return nil
}

// boundKey is the context key of BoundReads.
type boundKey struct{}

// BoundReads returns ctx carrying bound: a key read under the returned
// context (a key command, above all) also ends when bound ends, while ctx
// itself goes on (the context a sink is started with may outlive the
// start). A key read that bound ends is an error saying so.
func BoundReads(ctx, bound context.Context) context.Context {
	return context.WithValue(ctx, boundKey{}, bound)
}

// keyCommandWait is how long a key command's output is waited for once
// its context ended and it was killed (a child it left may hold it open).
const keyCommandWait = time.Second

// Read returns the secret. environ is the environment to look Env up in.
// A key command runs under ctx (and BoundReads' bound): one that has not
// answered when ctx ends is killed, and the read is an error saying so.
func (k KeySource) Read(ctx context.Context, environ []string) ([]byte, error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
	if b, ok := ctx.Value(boundKey{}).(context.Context); ok {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(b, func() { cancel(context.Cause(b)) })
		defer stop()
	}
	var b []byte
	switch {
	case k.File != "":
		var err error
		if b, err = os.ReadFile(k.File); err != nil {
			return nil, fmt.Errorf("read key file: %w", err)
		}
	case k.Env != "":
		v, ok := lookup(environ, k.Env)
		if !ok {
			return nil, fmt.Errorf("key variable %s is not set", k.Env)
		}
		b = []byte(v)
	case len(k.Command) > 0:
		cmd := exec.CommandContext(ctx, k.Command[0], k.Command[1:]...)
		cmd.Env = environ
		cmd.WaitDelay = keyCommandWait
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil && ctx.Err() != nil {
			return nil, fmt.Errorf("key command %s gave no key in time (%w): a command that waits for a terminal or a pinentry cannot answer here", k.Command[0], context.Cause(ctx))
		}
		if err != nil {
			return nil, fmt.Errorf("key command %s: %w: %s", k.Command[0], err, strings.TrimSpace(stderr.String()))
		}
		b = out
	default:
		return nil, ErrNoKey
	}
	b = bytes.TrimRight(b, "\r\n")
	if len(b) == 0 {
		return nil, fmt.Errorf("the key from %s is empty", k.describe())
	}
	return b, nil
}

func (k KeySource) describe() string {
	switch {
	case k.File != "":
		return "file " + k.File
	case k.Env != "":
		return "variable " + k.Env
	default:
		return "command " + strings.Join(k.Command, " ")
	}
}

func lookup(environ []string, key string) (string, bool) {
	for i := len(environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(environ[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// Options configure a Sealer: recipients (age1… public keys, which are not
// secret) and, to open, an identity (AGE-SECRET-KEY-1… lines); or a
// passphrase. Recipients and a passphrase cannot be mixed.
type Options struct {
	// Recipients are age X25519 public keys to encrypt to.
	Recipients []string `json:"recipients,omitempty"`
	// Identity gives the age secret keys that open sealed files; with no
	// Recipients, their public keys are the recipients.
	Identity KeySource `json:"identity,omitempty"`
	// Passphrase encrypts and opens with scrypt instead.
	Passphrase KeySource `json:"passphrase,omitempty"`
	// Warn, when set, is told of a key file that others than its owner
	// may read (as ssh warns of an identity file).
	Warn func(msg string, args ...any) `json:"-"`
}

// warnLoose tells o.Warn when k is a file that its group or others may
// read or write.
func (o Options) warnLoose(k KeySource) {
	if k.File == "" || o.Warn == nil {
		return
	}
	fi, err := os.Stat(k.File)
	if err != nil {
		return
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 {
		o.Warn("key file is open to group or others; make it private (chmod 600)", "file", k.File, "mode", fmt.Sprintf("%#o", m))
	}
}

// IsZero reports whether no key is configured.
func (o Options) IsZero() bool {
	return len(o.Recipients) == 0 && o.Identity.IsZero() && o.Passphrase.IsZero()
}

// Validate checks the options without reading any key.
func (o Options) Validate() error {
	if err := o.Identity.Validate(); err != nil {
		return fmt.Errorf("identity: %w", err)
	}
	if err := o.Passphrase.Validate(); err != nil {
		return fmt.Errorf("passphrase: %w", err)
	}
	if !o.Passphrase.IsZero() && (len(o.Recipients) > 0 || !o.Identity.IsZero()) {
		return errors.New("give recipients and an identity, or a passphrase, not both")
	}
	for _, r := range o.Recipients {
		if _, err := age.ParseX25519Recipient(r); err != nil {
			return fmt.Errorf("recipient %q: %w", r, err)
		}
	}
	return nil
}

// Sealer encrypts and opens. Open needs an identity or the passphrase;
// a Sealer with recipients only can seal but not open.
type Sealer struct {
	recipients []age.Recipient
	identities []age.Identity
}

// New reads the keys o names. It returns ErrNoKey when o is empty.
func New(ctx context.Context, o Options, environ []string) (*Sealer, error) {
	if o.IsZero() {
		return nil, ErrNoKey
	}
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	s := &Sealer{}
	if !o.Passphrase.IsZero() {
		pw, err := o.Passphrase.Read(ctx, environ)
		if err != nil {
			return nil, fmt.Errorf("seal: passphrase: %w", err)
		}
		o.warnLoose(o.Passphrase)
		r, err := age.NewScryptRecipient(string(pw))
		if err != nil {
			return nil, fmt.Errorf("seal: passphrase: %w", err)
		}
		id, err := age.NewScryptIdentity(string(pw))
		if err != nil {
			return nil, fmt.Errorf("seal: passphrase: %w", err)
		}
		s.recipients, s.identities = []age.Recipient{r}, []age.Identity{id}
		return s, nil
	}
	for _, r := range o.Recipients {
		rc, err := age.ParseX25519Recipient(r)
		if err != nil {
			return nil, fmt.Errorf("seal: recipient %q: %w", r, err)
		}
		s.recipients = append(s.recipients, rc)
	}
	if !o.Identity.IsZero() {
		b, err := o.Identity.Read(ctx, environ)
		if err != nil {
			return nil, fmt.Errorf("seal: identity: %w", err)
		}
		o.warnLoose(o.Identity)
		ids, err := age.ParseIdentities(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("seal: identity: %w", err)
		}
		s.identities = ids
		if len(o.Recipients) == 0 {
			for _, id := range ids {
				if x, ok := id.(*age.X25519Identity); ok {
					s.recipients = append(s.recipients, x.Recipient())
				}
			}
		}
	}
	if len(s.recipients) == 0 {
		return nil, errors.New("seal: no recipient to encrypt to")
	}
	return s, nil
}

// Seal returns a writer that encrypts into w; Close finishes the file.
func (s *Sealer) Seal(w io.Writer) (io.WriteCloser, error) {
	wc, err := age.Encrypt(w, s.recipients...)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return wc, nil
}

// SealBytes encrypts data.
func (s *Sealer) SealBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	wc, err := s.Seal(&buf)
	if err != nil {
		return nil, err
	}
	if _, err := wc.Write(data); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	if err := wc.Close(); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return buf.Bytes(), nil
}

// Open decrypts what Seal wrote. A wrong key, or bytes that are not an
// age file or were changed, is an error.
func (s *Sealer) Open(r io.Reader) (io.Reader, error) {
	if len(s.identities) == 0 {
		return nil, errors.New("open sealed file: no identity or passphrase configured to open it")
	}
	out, err := age.Decrypt(r, s.identities...)
	if err != nil {
		return nil, fmt.Errorf("open sealed file: %w", err)
	}
	return out, nil
}

// OpenBytes decrypts data, checking it whole (age authenticates each
// chunk; a cut or changed file fails).
func (s *Sealer) OpenBytes(data []byte) ([]byte, error) {
	r, err := s.Open(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("open sealed file: %w", err)
	}
	return b, nil
}
