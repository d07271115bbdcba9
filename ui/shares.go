package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/e0dc0000/scribe/internal/durable"
)

// Share links are kept in one small JSON file (on scribe serve,
// <data_dir>/ui-shares.json): each record says which tenant's session (and
// message) a link shows and until when. The file is rewritten whole
// (durable: a temporary file renamed over it) under a lock, and read again
// when it changed, so that processes sharing the folder agree.

// ErrNoShare is returned for a share link that is not the caller's, or
// does not exist.
var ErrNoShare = errors.New("no such share link")

// Share is one share link.
type Share struct {
	// ID is the link's secret part: /s/<ID>.
	ID      string `json:"id"`
	Tenant  string `json:"tenant"`
	Session string `json:"session"`
	// Message, when set, is the only message the link shows.
	Message string    `json:"message,omitempty"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	// Revoked is when it was revoked (nil: it was not).
	Revoked *time.Time `json:"revoked,omitempty"`
}

// Active reports whether the link still opens at now.
func (s *Share) Active(now time.Time) bool { return s.Revoked == nil && now.Before(s.Expires) }

// shareFile is the file's content.
type shareFile struct {
	Version int     `json:"version"`
	Shares  []Share `json:"shares"`
}

// keepGone is how long a revoked or expired record is kept (listed as
// such) before it is dropped from the file.
const keepGone = 30 * 24 * time.Hour

// ShareBook is the share links of a server.
type ShareBook struct {
	path string

	mu    sync.Mutex
	stamp string // size and mtime of the file as last read
	recs  []Share
}

// OpenShareBook reads (or starts) the share links kept in path.
func OpenShareBook(path string) (*ShareBook, error) {
	b := &ShareBook{path: path}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.reload(); err != nil {
		return nil, err
	}
	return b, nil
}

// reload reads the file again when it changed (b.mu held).
func (b *ShareBook) reload() error {
	fi, err := os.Stat(b.path)
	if errors.Is(err, os.ErrNotExist) {
		b.recs, b.stamp = nil, ""
		return nil
	}
	if err != nil {
		return fmt.Errorf("share links: %w", err)
	}
	stamp := fmt.Sprint(fi.Size(), fi.ModTime().UnixNano())
	if stamp == b.stamp {
		return nil
	}
	data, err := os.ReadFile(b.path)
	if err != nil {
		return fmt.Errorf("share links: %w", err)
	}
	var f shareFile
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("share links: %s: %w", b.path, err)
	}
	b.recs, b.stamp = f.Shares, stamp
	return nil
}

// change runs fn on the records under the file's lock, then writes them.
func (b *ShareBook) change(ctx context.Context, fn func(recs []Share) ([]Share, error)) error {
	if err := durable.MkdirAll(filepath.Dir(b.path), 0o700); err != nil {
		return fmt.Errorf("share links: %w", err)
	}
	lock, err := durable.Acquire(ctx, b.path+".lock", 10*time.Second, "share links")
	if err != nil {
		return fmt.Errorf("share links: %w", err)
	}
	defer lock.Release()
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.reload(); err != nil {
		return err
	}
	recs, err := fn(slices.Clone(b.recs))
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(shareFile{Version: 1, Shares: recs}, "", "  ")
	if err != nil {
		return err
	}
	if err := durable.WriteFile(b.path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("share links: %w", err)
	}
	b.recs, b.stamp = recs, ""
	return nil
}

// Create makes a share link of tenant's session (and message, when not
// "") that opens until expires.
func (b *ShareBook) Create(ctx context.Context, tenant, session, message string, now, expires time.Time) (Share, error) {
	s := Share{ID: shareID(), Tenant: tenant, Session: session, Message: message, Created: now.UTC(), Expires: expires.UTC()}
	err := b.change(ctx, func(recs []Share) ([]Share, error) {
		recs = slices.DeleteFunc(recs, func(r Share) bool { return gone(&r, now) })
		return append(recs, s), nil
	})
	return s, err
}

// gone reports whether a record ended more than keepGone ago.
func gone(r *Share, now time.Time) bool {
	end := r.Expires
	if r.Revoked != nil && r.Revoked.Before(end) {
		end = *r.Revoked
	}
	return now.Sub(end) > keepGone
}

// Revoke ends tenant's share link id now; ErrNoShare when tenant has no
// such link.
func (b *ShareBook) Revoke(ctx context.Context, tenant, id string, now time.Time) error {
	return b.change(ctx, func(recs []Share) ([]Share, error) {
		for i := range recs {
			if recs[i].ID == id && recs[i].Tenant == tenant {
				if recs[i].Revoked == nil {
					at := now.UTC()
					recs[i].Revoked = &at
				}
				return recs, nil
			}
		}
		return nil, ErrNoShare
	})
}

// Active is the share link id when it still opens at now.
func (b *ShareBook) Active(id string, now time.Time) (Share, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.reload() != nil {
		return Share{}, false // a file that cannot be read opens nothing
	}
	for _, s := range b.recs {
		if subtle.ConstantTimeCompare([]byte(s.ID), []byte(id)) == 1 {
			return s, s.Active(now)
		}
	}
	return Share{}, false
}

// List is tenant's share links, newest first.
func (b *ShareBook) List(tenant string) ([]Share, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.reload(); err != nil {
		return nil, err
	}
	var out []Share
	for i := len(b.recs) - 1; i >= 0; i-- { // the last made first among equals
		if b.recs[i].Tenant == tenant {
			out = append(out, b.recs[i])
		}
	}
	slices.SortStableFunc(out, func(a, b Share) int { return b.Created.Compare(a.Created) })
	return out, nil
}

// shareID is a new link's secret: 32 random bytes, URL-safe.
func shareID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}
