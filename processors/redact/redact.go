// Package redact is a processor that replaces secrets in every JSON string
// value an entry carries (message text and content blocks, tool inputs and
// results, toolUseResult stdout and stderr, attachments, subagent entries)
// by a marker [REDACTED:rule-id:ab12cd34] before any sink sees them.
//
// The marker's suffix is the first 8 hex digits of HMAC-SHA256(key,
// secret): the same secret gives the same marker across entries and
// sessions, and a marker says nothing of the value to anyone without the
// key. Only the secret's bytes change: every other byte of the line (key
// order, spacing, escapes, the uuid, parentUuid and sessionId) stays as it
// was, so Claude Code and the SDK read a redacted session as before.
//
// The rules are scribe's own (BuiltinRules: 49 credential formats, each
// anchored on keywords) plus the block's own rules; see the README's
// "Secrets" section for why not gitleaks' detector.
package redact

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/internal/seal"
)

// Config is the processor's block:
//
//	processor "redact" "default" {
//	  builtin_rules  = true
//	  disable_rules  = ["generic-secret-assignment"]
//	  rules          = [{ id = "acme-token", regex = "acme_[a-z0-9]{32}", keywords = ["acme_"] }]
//	  allow_patterns = ["^AKIAIOSFODNN7EXAMPLE$"]
//	  allow_paths    = ["/home/me/src/secrets-tests"]
//	  key            = { file = "~/.config/scribe/redact.key" }
//	}
type Config struct {
	// BuiltinRules turns scribe's own rule set on. Default true.
	BuiltinRules bool `json:"builtin_rules"`
	// DisableRules are built-in rule ids left out.
	DisableRules []string `json:"disable_rules"`
	// Rules are the block's own rules, run after the built-in ones.
	Rules []Rule `json:"rules"`
	// Entropy, when positive, is the least entropy (bits per byte) of
	// every secret, whatever its rule.
	Entropy float64 `json:"entropy"`
	// AllowPatterns are regexes: a secret matching one is left alone.
	AllowPatterns []string `json:"allow_patterns"`
	// AllowPaths are regexes over the session's cwd (and, for scan and
	// redact, the transcript's path): entries there are left alone.
	AllowPaths []string `json:"allow_paths"`
	// Key gives the marker's HMAC key: a file, a variable or a command.
	// None: a random key kept in <config dir>/scribe/redact.key (0600).
	Key seal.KeySource `json:"key"`
	// Trash encrypts the originals `scribe redact` keeps in the trash.
	Trash seal.Options `json:"trash"`
}

// DefaultConfig returns the defaults.
func DefaultConfig() *Config { return &Config{BuiltinRules: true} }

// Validate implements core.Validator.
func (c *Config) Validate() error {
	_, err := c.detector()
	if err != nil {
		return err
	}
	if err := c.Key.Validate(); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	if err := c.Trash.Validate(); err != nil {
		return fmt.Errorf("trash: %w", err)
	}
	for _, p := range c.AllowPaths {
		if _, err := regexp.Compile(p); err != nil {
			return fmt.Errorf("allow_paths %q: %w", p, err)
		}
	}
	return nil
}

// detector compiles the configured rules.
func (c *Config) detector() (*Detector, error) {
	var rules []Rule
	if c.BuiltinRules {
		known := map[string]bool{}
		for _, r := range BuiltinRules() {
			known[r.ID] = true
		}
		off := map[string]bool{}
		for _, id := range c.DisableRules {
			if !known[id] {
				return nil, fmt.Errorf("disable_rules: no built-in rule %q", id)
			}
			off[id] = true
		}
		for _, r := range BuiltinRules() {
			if !off[r.ID] {
				rules = append(rules, r)
			}
		}
	}
	rules = append(rules, c.Rules...)
	if len(rules) == 0 {
		return nil, errors.New("no rules: builtin_rules is false and the block gives none")
	}
	if c.Entropy > 0 {
		for i := range rules {
			rules[i].Entropy = max(rules[i].Entropy, c.Entropy)
		}
	}
	return NewDetector(rules, c.AllowPatterns)
}

// KeyFile is where the per-install marker key is kept.
func KeyFile(claudeConfigDir string) string {
	return filepath.Join(claudeConfigDir, "scribe", "redact.key")
}

// LoadKey returns the marker key: from src when set, else the key in
// KeyFile, made (32 random bytes, 0600) when there is none.
func LoadKey(ctx context.Context, src seal.KeySource, claudeConfigDir string, environ []string) ([]byte, error) {
	if !src.IsZero() {
		k, err := src.Read(ctx, environ)
		if err != nil {
			return nil, fmt.Errorf("redaction key: %w", err)
		}
		return k, nil
	}
	path := KeyFile(claudeConfigDir)
	k, err := os.ReadFile(path)
	if err == nil && len(k) >= 16 {
		return k, nil
	}
	if err == nil {
		return nil, fmt.Errorf("redaction key %s: %d bytes, want 32", path, len(k))
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("redaction key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("redaction key folder: %w", err)
	}
	k = make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, fmt.Errorf("redaction key: %w", err)
	}
	err = durable.CreateFile(path, k, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Another process made it first: use theirs.
		return LoadKey(ctx, src, claudeConfigDir, environ)
	}
	if err != nil {
		return nil, fmt.Errorf("write redaction key %s: %w", path, err)
	}
	return k, nil
}

// Redactor finds and replaces secrets in lines; it is what the processor,
// `scribe scan` and `scribe redact` share. Safe for concurrent use.
type Redactor struct {
	det        *Detector
	key        []byte
	allowPaths []*regexp.Regexp
	known      known
}

// NewRedactor compiles c's rules with the marker key.
func NewRedactor(c *Config, key []byte) (*Redactor, error) {
	det, err := c.detector()
	if err != nil {
		return nil, err
	}
	r := &Redactor{det: det, key: key}
	for _, p := range c.AllowPaths {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("allow_paths %q: %w", p, err)
		}
		r.allowPaths = append(r.allowPaths, re)
	}
	return r, nil
}

// Rules returns the ids of the rules in use.
func (r *Redactor) Rules() []string { return r.det.Rules() }

// Allowed reports whether path (a cwd or a transcript's path) is one the
// allowlist leaves alone.
func (r *Redactor) Allowed(path string) bool {
	for _, re := range r.allowPaths {
		if path != "" && re.MatchString(path) {
			return true
		}
	}
	return false
}

// Scan returns the secrets in one line: what the rules find, and where a
// secret found before (in this line or an earlier one) recurs.
func (r *Redactor) Scan(line []byte) []Finding {
	fs := r.det.Scan(line)
	if len(fs) > 0 {
		r.known.remember(fs, line)
	}
	return r.known.recurrences(line, fs)
}

// Fingerprint is the keyed hash of a secret: 8 hex digits of
// HMAC-SHA256(key, secret).
func (r *Redactor) Fingerprint(secret string) string {
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte(secret))
	return hex.EncodeToString(m.Sum(nil)[:4])
}

// Marker is what replaces a secret found by rule.
func (r *Redactor) Marker(rule, secret string) string {
	return "[REDACTED:" + rule + ":" + r.Fingerprint(secret) + "]"
}

// Redact returns line with its secrets replaced, and what was found; the
// line itself when nothing was.
func (r *Redactor) Redact(line []byte) ([]byte, []Finding) {
	fs := r.Scan(line)
	if len(fs) == 0 {
		return line, nil
	}
	return Replace(line, fs, func(f Finding) string { return r.Marker(f.Rule, f.Secret) }), fs
}

// Processor is the pipeline stage.
type Processor struct {
	id  core.ID
	red *Redactor
	log hclog.Logger

	mu      sync.Mutex
	byRule  map[string]int64
	entries int64
	allowed int64
	// pending are per-session counts not yet turned into audit records.
	pending map[core.SessionRef]*sessionCounts
}

type sessionCounts struct {
	cwd     string
	rules   map[string]int64
	entries int64
}

var (
	_ core.Processor = (*Processor)(nil)
	_ core.Reporter  = (*Processor)(nil)
	_ core.Auditor   = (*Processor)(nil)
)

// New returns a processor named id over red.
func New(id core.ID, red *Redactor) *Processor {
	return &Processor{id: id, red: red, log: hclog.NewNullLogger(), byRule: map[string]int64{}, pending: map[core.SessionRef]*sessionCounts{}}
}

// Shutdown logs what the processor redacted (rules and counts) and says
// so when audit records were never taken by the host (AuditEntries): the
// counts are then only in this line. Safe twice.
func (p *Processor) Shutdown(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.entries > 0 {
		args := []any{"entries", p.entries}
		rules := make([]string, 0, len(p.byRule))
		for r := range p.byRule {
			rules = append(rules, r)
		}
		sort.Strings(rules)
		for _, r := range rules {
			args = append(args, r, p.byRule[r])
		}
		p.log.Info("secrets redacted", args...)
	}
	if n := len(p.pending); n > 0 {
		p.log.Warn("redaction records not written to the sessions' sidecars: the host took no audit records", "sessions", n)
	}
	return nil
}

// Redactor returns the processor's redactor.
func (p *Processor) Redactor() *Redactor { return p.red }

// Process implements core.Processor: e itself when it holds no secret,
// else a copy whose secrets are markers.
func (p *Processor) Process(_ context.Context, e core.Entry) (core.Entry, error) {
	if p.red.Allowed(e.CWD) {
		p.mu.Lock()
		p.allowed++
		p.mu.Unlock()
		return e, nil
	}
	out, fs := p.red.Redact(e.Raw)
	if len(fs) == 0 {
		return e, nil
	}
	p.count(e, fs)
	c := e
	c.Raw = out
	return c, nil
}

func (p *Processor) count(e core.Entry, fs []Finding) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.entries++
	ref := core.SessionRef{SessionID: e.SessionID}
	sc := p.pending[ref]
	if sc == nil && e.SessionID != "" {
		sc = &sessionCounts{cwd: e.CWD, rules: map[string]int64{}}
		p.pending[ref] = sc
	}
	if sc != nil {
		sc.entries++
	}
	for _, f := range fs {
		p.byRule[f.Rule]++
		if sc != nil {
			sc.rules[f.Rule]++
		}
	}
}

// Report implements core.Reporter: secrets redacted by rule
// ("redacted_<rule>"), entries changed, entries left alone by allow_paths.
func (p *Processor) Report() map[string]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int64{"entries_redacted": p.entries}
	if p.allowed > 0 {
		out["entries_allowed_by_path"] = p.allowed
	}
	for k, v := range p.byRule {
		out["redacted_"+k] = v
	}
	return out
}

// AuditEntries returns one lifecycle record (core.Redaction) per session
// redacted since the last call, ready to Submit: the host submits them
// before it shuts the pipeline down, so each session's sidecar says which
// rules fired how often (never a value).
func (p *Processor) AuditEntries() ([]core.Entry, error) {
	p.mu.Lock()
	pending := p.pending
	p.pending = map[core.SessionRef]*sessionCounts{}
	p.mu.Unlock()
	refs := make([]core.SessionRef, 0, len(pending))
	for r := range pending {
		refs = append(refs, r)
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].SessionID < refs[j].SessionID })
	var out []core.Entry
	for _, ref := range refs {
		sc := pending[ref]
		e, err := core.LifecycleEntry(core.LifecycleMeta{SessionID: ref.SessionID, CWD: sc.cwd},
			core.Redaction{By: p.id.String(), Rules: sc.rules, Entries: sc.entries})
		if err != nil {
			return out, fmt.Errorf("audit record of %s: %w", ref.SessionID, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// Factory makes redact processors.
func Factory() core.ProcessorFactory { return factory{} }

type factory struct{}

func (factory) Kind() core.Kind    { return core.KindProcessor }
func (factory) Type() string       { return "redact" }
func (factory) DefaultConfig() any { return DefaultConfig() }

func (factory) CreateProcessor(ctx context.Context, set core.Settings, cfg any) (core.Processor, error) {
	c, ok := cfg.(*Config)
	if !ok {
		return nil, fmt.Errorf("processor %s: wrong config type %T", set.ID, cfg)
	}
	key, err := LoadKey(ctx, c.Key, set.Host.ConfigDir, set.Environ)
	if err != nil {
		return nil, fmt.Errorf("processor %s: %w", set.ID, err)
	}
	red, err := NewRedactor(c, key)
	if err != nil {
		return nil, fmt.Errorf("processor %s: %w", set.ID, err)
	}
	p := New(set.ID, red)
	if set.Logger != nil {
		p.log = set.Logger
	}
	return p, nil
}
