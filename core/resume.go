package core

import (
	"context"
	"errors"
	"fmt"
	"reflect"
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

// ErrMessageNotFound is returned (wrapped, naming the uuid) when a message
// uuid asked for (ResumeOptions.UpTo, a fork's UpTo) is not in the
// transcript.
var ErrMessageNotFound = errors.New("message not found")

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
	var failed []error
	for _, m := range res.Misses {
		why = append(why, fmt.Sprintf("%s: %v", m.Loader, m.Err))
		if !errors.Is(m.Err, ErrNotFound) && !errors.Is(m.Err, ErrEmptyTranscript) {
			failed = append(failed, m.Err)
		}
	}
	if len(failed) > 0 {
		// A loader has the session but could not serve it (a damaged
		// chain, a file over its limit, an unreachable server): that is
		// what the user must hear, never "not found".
		return res, fmt.Errorf("session %s: %w (%s)", ref.Key(), &unservedError{errs: failed}, strings.Join(why, "; "))
	}
	return res, fmt.Errorf("session %s: %w by any loader (%s)", ref.Key(), ErrNotFound, strings.Join(why, "; "))
}

// ErrNotServed is returned by Resumer.Load when no loader served a session
// and at least one of them failed for another reason than not having it
// (a damaged transcript, for instance). The error also wraps each of those
// failures.
var ErrNotServed = errors.New("cannot be resumed: a loader has it but could not serve it")

type unservedError struct{ errs []error }

func (e *unservedError) Error() string { return ErrNotServed.Error() }

func (e *unservedError) Unwrap() []error { return append([]error{ErrNotServed}, e.errs...) }

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

// ResumeOptions tune Resume.
type ResumeOptions struct {
	// Format rebuilds, repairs and validates the conversation (required;
	// transcript.Format{}).
	Format Format
	// Recovery tunes classification and repair; SessionID, CWD and Leaf
	// are filled from the session when empty.
	Recovery RecoveryOptions
	// DryRun computes the repairs without submitting them.
	DryRun bool
	// From restricts the loaders to these IDs.
	From []ID
	// UpTo resumes from this message (a checkpoint's MessageUUID) instead
	// of the session's leaf: the conversation is rebuilt from the
	// transcript as it stood when the row with this uuid was written (the
	// rows after it in the file are left out), so it ends at that message
	// even when the session went on, or branched away, after it. A uuid no
	// row of the transcript has is ErrMessageNotFound. Repairs hang from
	// that message: persisted, they make it the session's leaf, as
	// continuing from it would (a rewind).
	UpTo string
}

// ResumeResult is what Resume did.
type ResumeResult struct {
	*LoadResult
	Chain    Rebuilt
	Recovery Recovery
	// Conversation is what a host sends to the model: the rebuilt chain,
	// the queued commands after it, then the repairs.
	Conversation []Entry
	// Persisted counts the repairs the pipeline accepted (0 on a dry run).
	Persisted int
	// Copied counts the loaded entries the pipeline accepted when the
	// session was served by a loader other than the local store (they are
	// persisted before the repairs, so the local copy is whole);
	// CopyDuplicates the ones dedup found already stored.
	Copied, CopyDuplicates int
	// Violations are what the validator still finds in Conversation.
	Violations []Violation
}

// Resume loads a session from the first loader that has it, rebuilds its
// conversation, classifies how it ended and repairs it: synthetic results
// for tool calls left open, and the continue prompt after an interrupted
// turn. The repairs go through the pipeline (when p is not nil and this is
// not a dry run), so every sink persists them with their parentUuid links.
// When the local store (the pipeline's dedup seeder) served the session,
// dedup is seeded with what was loaded; when another loader did (the team
// server, a cache, a plugin), every loaded entry goes through the pipeline
// first, in order and byte for byte, so the local copy is the whole chain
// and a second resume finds it there. Either way a resumed session never
// writes a loaded entry twice. An empty or failed resume is an error.
func Resume(ctx context.Context, r *Resumer, p *Pipeline, ref SessionRef, opt ResumeOptions) (*ResumeResult, error) {
	if opt.Format == nil {
		return &ResumeResult{}, ErrNoFormat
	}
	lr, err := r.Load(ctx, ref, opt.From...)
	if err != nil {
		return &ResumeResult{LoadResult: lr}, err
	}
	t := lr.Transcript
	entries := t.Entries
	if opt.UpTo != "" {
		k := indexOfUUID(entries, opt.UpTo)
		if k < 0 {
			why := ""
			if len(t.Notes) > 0 {
				why = "; " + strings.Join(t.Notes, "; ")
			}
			return &ResumeResult{LoadResult: lr}, fmt.Errorf("session %s: %w: %s is not in the transcript %s served%s",
				ref.Key(), ErrMessageNotFound, opt.UpTo, lr.Served, why)
		}
		entries = entries[:k+1]
	}
	ch := opt.Format.Rebuild(entries, ref.AgentID != "")
	if opt.UpTo != "" {
		cutChainAt(&ch, opt.UpTo)
	}
	conv := append(append([]Entry(nil), ch.Entries...), ch.Trailing...)
	if !hasMessage(conv) {
		return &ResumeResult{LoadResult: lr, Chain: ch}, fmt.Errorf("session %s: %w from %s", ref.Key(), ErrEmptyTranscript, lr.Served)
	}
	ro := opt.Recovery
	last := conv[len(conv)-1]
	if ro.SessionID == "" {
		ro.SessionID = ref.SessionID
	}
	if ro.CWD == "" {
		for i := len(conv) - 1; i >= 0 && ro.CWD == ""; i-- {
			ro.CWD = conv[i].CWD
		}
	}
	if ro.Leaf == "" {
		// Split-assistant siblings may follow the leaf in the rebuilt
		// chain; the repairs hang from the leaf itself.
		ro.Leaf = ch.Leaf
		if len(ch.Trailing) > 0 || ro.Leaf == "" {
			ro.Leaf = last.UUID
		}
	}
	rec := opt.Format.Repair(conv, ro)
	res := &ResumeResult{LoadResult: lr, Chain: ch, Recovery: rec}
	res.Conversation = conv
	for _, rp := range rec.Repairs {
		res.Conversation = append(res.Conversation, rp.Entry)
	}
	res.Violations = opt.Format.Validate(res.Conversation)
	if p == nil || opt.DryRun {
		return res, nil
	}
	if r.storedLocally(p, lr.Served) {
		if len(rec.Repairs) == 0 {
			return res, nil
		}
		// The store the pipeline seeds dedup from served the session: it
		// holds every loaded entry already.
		uuids := make([]string, 0, len(t.Entries))
		for i := range t.Entries {
			if t.Entries[i].UUID != "" {
				uuids = append(uuids, t.Entries[i].UUID)
			}
		}
		if err := p.SeedSession(ctx, ref, uuids); err != nil {
			return res, fmt.Errorf("seed dedup for the repairs: %w", err)
		}
	} else if err := copyTranscript(ctx, p, ref, ro.CWD, t, res); err != nil {
		return res, err
	}
	for _, rp := range rec.Repairs {
		e := rp.Entry
		if e.CWD == "" {
			e.CWD = ro.CWD
		}
		out, err := p.Submit(ctx, e)
		if err != nil {
			return res, fmt.Errorf("persist repair %s: %w", rp.Kind, err)
		}
		switch out.Status {
		case Accepted:
			res.Persisted++
		case Refused:
			return res, fmt.Errorf("persist repair %s: refused by %s: %w", rp.Kind, out.Guard, out.Reason)
		}
	}
	if err := p.Flush(ctx); err != nil {
		return res, fmt.Errorf("persist the resumed session: %w", err)
	}
	return res, nil
}

// storedLocally reports whether the loader with this ID is the store the
// pipeline seeds its dedup from (the local store, as one instance in both
// roles): what it served is in the store already.
func (r *Resumer) storedLocally(p *Pipeline, served ID) bool {
	if p.seeder == nil {
		return false
	}
	for _, nl := range r.loaders {
		if nl.ID != served {
			continue
		}
		if reflect.TypeOf(nl.Loader) != reflect.TypeOf(p.seeder) || !reflect.TypeOf(nl.Loader).Comparable() {
			return false
		}
		return any(nl.Loader) == any(p.seeder)
	}
	return false
}

// copyTranscript submits every loaded entry, in order and byte for byte,
// before the repairs, when the session was served by a loader other than
// the local store (the team server, a cache, a plugin): the local copy is
// then the whole chain the repairs hang from, not the repairs alone. Dedup,
// seeded from the store, drops what the store already holds; the entries
// are routed to the resumed session whatever their lines say.
func copyTranscript(ctx context.Context, p *Pipeline, ref SessionRef, cwd string, t *Transcript, res *ResumeResult) error {
	for i := range t.Entries {
		e := t.Entries[i]
		e.SessionID = ref.SessionID
		if e.CWD == "" {
			e.CWD = cwd
		}
		if ref.AgentID != "" && (!e.IsSidechain || e.AgentID == "") {
			// A subagent's transcript goes back to its sidechain.
			e.IsSidechain, e.AgentID = true, ref.AgentID
		}
		out, err := p.Submit(ctx, e)
		if err != nil {
			return fmt.Errorf("copy entry %d of %d served by %s: %w", i+1, len(t.Entries), res.Served, err)
		}
		switch out.Status {
		case Accepted:
			res.Copied++
		case Duplicate:
			res.CopyDuplicates++
		case Refused:
			return fmt.Errorf("copy entry %d of %d served by %s: refused by %s: %w", i+1, len(t.Entries), res.Served, out.Guard, out.Reason)
		}
	}
	return nil
}

// indexOfUUID returns the position of the first entry with this uuid, or
// -1. The first: a row is written before anything that descends from it,
// so the entries up to its first copy hold its whole ancestry and none of
// its descendants.
func indexOfUUID(entries []Entry, uuid string) int {
	for i := range entries {
		if entries[i].UUID == uuid {
			return i
		}
	}
	return -1
}

// cutChainAt ends a chain rebuilt from the entries up to the row with this
// uuid at that row. The rebuild normally ends there already (the row is the
// newest one, so the leaf); when it went further (a damaged or hand-made
// file where a row written before the cut row names it as parent), what
// follows the row on the chain, and the queued commands below the other
// leaf, are dropped. A uuid not on the chain (a row the rebuild climbs
// over, such as a system row) leaves the chain as it is.
func cutChainAt(ch *Rebuilt, uuid string) {
	if ch.Leaf == uuid {
		// Split-assistant siblings put back after the leaf belong to it.
		return
	}
	for i := range ch.Entries {
		if ch.Entries[i].UUID != uuid {
			continue
		}
		ch.Entries = ch.Entries[:i+1]
		ch.Trailing = nil
		ch.Leaf = uuid
		return
	}
}
