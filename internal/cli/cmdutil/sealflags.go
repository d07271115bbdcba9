package cmdutil

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/internal/seal"
)

// SealFlags are the age keys of a command that writes or reads an
// encrypted file of scribe's own (a bundle): recipients (public, on the
// command line), or an identity or a passphrase from a file or a variable
// (never the secret itself on the command line or in the config).
type SealFlags struct {
	recipients     []string
	identityFile   string
	passphraseEnv  string
	passphraseFile string
}

// Add gives c the key flags (--recipient too when encrypt).
func (s *SealFlags) Add(c *cobra.Command, encrypt bool) {
	f := c.Flags()
	if encrypt {
		f.StringArrayVar(&s.recipients, "recipient", nil, "encrypt to this age X25519 public key (age1…; repeatable)")
	}
	f.StringVar(&s.identityFile, "identity-file", "", "age identity file (AGE-SECRET-KEY-1… lines)")
	f.StringVar(&s.passphraseEnv, "passphrase-env", "", "the passphrase is in this environment variable")
	f.StringVar(&s.passphraseFile, "passphrase-file", "", "the passphrase is in this file")
}

func (s *SealFlags) options() seal.Options {
	o := seal.Options{Recipients: s.recipients}
	o.Identity.File = s.identityFile
	o.Passphrase.Env, o.Passphrase.File = s.passphraseEnv, s.passphraseFile
	return o
}

// Sealer is nil when no key flag was given.
func (s *SealFlags) Sealer(cmd *cobra.Command) (*seal.Sealer, error) {
	o := s.options()
	if o.IsZero() {
		return nil, nil
	}
	if s.passphraseEnv != "" && s.passphraseFile != "" {
		return nil, &ExitError{Code: 2, Err: fmt.Errorf("--passphrase-env and --passphrase-file: give one")}
	}
	if err := o.Validate(); err != nil {
		return nil, &ExitError{Code: 2, Err: err}
	}
	o.Warn = hclog.New(&hclog.LoggerOptions{Name: "scribe", Output: cmd.ErrOrStderr()}).Warn
	sl, err := seal.New(cmd.Context(), o, os.Environ())
	if err != nil {
		return nil, &ExitError{Code: 2, Err: err}
	}
	return sl, nil
}

// ageMagic starts every age file.
var ageMagic = []byte("age-encryption.org/")

// OpenMaybeSealed returns r decrypted when it is an age file, else as it
// is; an age file with no key given, or the wrong key, is an error.
func OpenMaybeSealed(cmd *cobra.Command, r io.Reader, keys *SealFlags) (io.Reader, bool, error) {
	br := bufio.NewReader(r)
	head, _ := br.Peek(len(ageMagic))
	if !bytes.Equal(head, ageMagic) {
		return br, false, nil
	}
	sl, err := keys.Sealer(cmd)
	if err != nil {
		return nil, true, err
	}
	if sl == nil {
		return nil, true, &ExitError{Code: 2, Err: fmt.Errorf("the bundle is encrypted: give --identity-file, --passphrase-env or --passphrase-file")}
	}
	out, err := sl.Open(br)
	if err != nil {
		return nil, true, err
	}
	return out, true, nil
}
