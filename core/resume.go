package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// NamedLoader is a loader with its ID, in the order resume tries them.
type NamedLoader struct {
	ID     ID
	Loader Loader
}

// Miss says why a loader did not serve a session.
type Miss struct {
	Loader ID
	Err    error
}

// ErrEmptyTranscript is returned when a loader "found" a session that has
// nothing to resume: resume treats it as a miss, never as a fresh session.
var ErrEmptyTranscript = errors.New("transcript has no conversation entries")

// LoadResult is what Resumer.Load found.
type LoadResult struct {
	Transcript *Transcript
	// Served is the loader that had the session.
	Served ID
	// Misses lists, in order, why each earlier loader did not serve.
	Misses []Miss
}

// Resumer tries loaders in their configured order.
type Resumer struct {
	loaders []NamedLoader
}

// NewResumer returns a resumer over the loaders, tried in order.
func NewResumer(loaders []NamedLoader) *Resumer {
	return &Resumer{loaders: loaders}
}

// Loaders returns the loaders in order.
func (r *Resumer) Loaders() []NamedLoader { return r.loaders }

// Load asks each loader in turn; the first that returns a transcript with
// at least one user or assistant entry wins. A loader error other than
// ErrNotFound is a miss too (the next loader may still have the session),
// and every miss is reported. When none serves, the error lists them all
// and wraps ErrNotFound.
func (r *Resumer) Load(ctx context.Context, ref SessionRef, only ...ID) (*LoadResult, error) {
	res := &LoadResult{}
	tried := 0
	for _, nl := range r.loaders {
		if len(only) > 0 && !containsID(only, nl.ID) {
			continue
		}
		tried++
		t, err := nl.Loader.Load(ctx, ref)
		if err == nil && (t == nil || !hasMessage(t.Entries)) {
			err = ErrEmptyTranscript
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			res.Misses = append(res.Misses, Miss{Loader: nl.ID, Err: err})
			continue
		}
		t.Source = nl.ID
		if t.Ref.SessionID == "" {
			t.Ref = ref
		}
		res.Transcript, res.Served = t, nl.ID
		return res, nil
	}
	if tried == 0 {
		return nil, fmt.Errorf("no loader %v is configured", only)
	}
	var why []string
	for _, m := range res.Misses {
		why = append(why, fmt.Sprintf("%s: %v", m.Loader, m.Err))
	}
	return res, fmt.Errorf("session %s: %w by any loader (%s)", ref.Key(), ErrNotFound, strings.Join(why, "; "))
}

func hasMessage(es []Entry) bool {
	for i := range es {
		if es[i].IsMessage() {
			return true
		}
	}
	return false
}

func containsID(ids []ID, id ID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
