package server

// Writing entries (append), state, open (see store.go).

import (
	"context"
	"errors"
	"time"

	"github.com/e0dc0000/scribe/internal/durable"
)

type appendResult struct {
	stored    int
	dups      int
	duplicate []bool // per item
	meta      *sessionMeta
}

// maxFenceAttempts bounds the retries of a write refused by the fence.
const maxFenceAttempts = 64

// append stores items (in order) in the session, each at most once.
// lastUUID, when not nil, is a PUT's Last-Uuid header: with one item that
// has a uuid, a mismatch returns *conflictError; an item already stored is
// reported in the result, not as an error.
func (st *store) append(ctx context.Context, tenant, session string, items []item, lastUUID *string) (*appendResult, error) {
	mu := st.lock(sessionKey(tenant, session))
	mu.Lock()
	defer mu.Unlock()

	res := &appendResult{duplicate: make([]bool, len(items))}
	done := make([]bool, len(items))
	res.markDuplicatesWithin(items, done)

	reconciled := false
	var ps publishState
	for attempt := 0; ; attempt++ {
		var meta *sessionMeta
		var rev uint64
		var err error
		if reconciled {
			meta, rev, err = st.reconcile(ctx, tenant, session)
		} else {
			meta, rev, err = st.loadMeta(ctx, tenant, session)
		}
		if err != nil {
			return nil, err
		}
		todo, err := st.pending(ctx, tenant, session, items, done, meta != nil, res)
		if err != nil {
			return nil, err
		}
		if lastUUID != nil && len(todo) == 1 && items[todo[0]].e.UUID != "" && meta != nil && meta.LastUUID != "" &&
			*lastUUID != meta.LastUUID {
			if !reconciled {
				// meta may be behind the stream (a writer between publish
				// and meta): look again before refusing.
				reconciled = true
				continue
			}
			res.meta = meta
			return res, &conflictError{last: meta.LastUUID}
		}
		if len(todo) == 0 {
			res.meta = meta
			return res, nil
		}

		meta, fenced, err := st.publishRound(ctx, tenant, session, items, todo, done, meta, rev, &ps, res)
		if err != nil {
			return nil, err
		}
		if !fenced {
			res.meta = meta
			return res, nil
		}
		st.m.FenceRetries.Add(1)
		if attempt >= maxFenceAttempts {
			return nil, errBusy
		}
		reconciled = true
		if attempt > 0 {
			if err := durable.Sleep(ctx, backoff(attempt, time.Millisecond, 100*time.Millisecond)); err != nil {
				return nil, err
			}
		}
	}
}

// markDuplicatesWithin marks the items whose id an earlier item of the
// same request has, as duplicates and done.
func (res *appendResult) markDuplicatesWithin(items []item, done []bool) {
	seen := make(map[string]bool, len(items))
	for i, it := range items {
		if seen[it.id] {
			res.duplicate[i], done[i] = true, true
			res.dups++
		}
		seen[it.id] = true
	}
}

// pending returns the indexes of the items not done yet, marking as
// duplicates (and done) those whose marker says the session holds them.
// Without meta (hasMeta false) the lookup is skipped: a marker exists only
// for a message in the stream, and the publish is fenced on 0 (none).
func (st *store) pending(ctx context.Context, tenant, session string, items []item, done []bool, hasMeta bool, res *appendResult) ([]int, error) {
	var todo []int
	var ids []string
	for i := range items {
		if !done[i] {
			todo = append(todo, i)
			ids = append(ids, items[i].id)
		}
	}
	if len(todo) == 0 || !hasMeta {
		return todo, nil
	}
	exists, err := st.markers(ctx, tenant, session, ids)
	if err != nil {
		return nil, err
	}
	rest := todo[:0]
	for k, i := range todo {
		if exists[k] {
			res.duplicate[i], done[i] = true, true
			res.dups++
			continue
		}
		rest = append(rest, i)
	}
	return rest, nil
}

// publishRound publishes the todo items fenced on meta's last sequence,
// waits for their markers and advances the metadata (rev) past them; it
// returns the metadata after the round and whether the fence (or a
// metadata mismatch) refused part of it, so the caller reconciles and
// tries again.
func (st *store) publishRound(ctx context.Context, tenant, session string, items []item, todo []int, done []bool,
	meta *sessionMeta, rev uint64, ps *publishState, res *appendResult) (*sessionMeta, bool, error) {
	var last uint64
	if meta != nil {
		last = meta.LastSeq
	}
	mw := st.newMarkerWriter(tenant, session)
	// A session without metadata yet may be one deleted within the
	// duplicate window: its first entries get an epoch of their own.
	epoch := newEpoch()
	if meta != nil {
		epoch = meta.Epoch
	}
	recs, fenced, pubErr := st.publishTodo(ctx, tenant, session, items, todo, last, epoch, done, ps, mw)
	res.stored += len(recs)
	if len(recs) > 0 {
		st.m.Stored.Add(int64(len(recs)))
		err := mw.wait(ctx)
		var next *sessionMeta
		if err == nil {
			next, _, err = st.advanceMeta(ctx, tenant, session, meta, rev, recs, time.Now().UTC())
		}
		switch {
		case errors.Is(err, errMetaMismatch):
			fenced = true // someone indexed past us: reconcile
		case err != nil:
			return nil, false, err
		default:
			meta = next
		}
	}
	if pubErr != nil {
		return nil, false, pubErr
	}
	return meta, fenced, nil
}

// setState sets the session's state in its metadata (a state event).
func (st *store) setState(ctx context.Context, tenant, session, state string) (*sessionMeta, error) {
	for attempt := 0; ; attempt++ {
		meta, rev, err := st.reconcile(ctx, tenant, session)
		if err != nil {
			return nil, err
		}
		now := time.Now().UTC()
		next := &sessionMeta{Tenant: tenant, Session: session, CreatedAt: now}
		if meta != nil {
			next = meta.clone()
		}
		next.State = state
		next.UpdatedAt = now
		_, err = st.putMeta(ctx, tenant, session, next, rev)
		if err == nil {
			return next, nil
		}
		if !errors.Is(err, errMetaMismatch) || attempt >= maxFenceAttempts {
			return nil, err
		}
		if err := durable.Sleep(ctx, backoff(attempt, time.Millisecond, 50*time.Millisecond)); err != nil {
			return nil, err
		}
	}
}

// open returns the session's up-to-date metadata; errNoSession when the
// tenant has no such session, or it is in the trash.
func (st *store) open(ctx context.Context, tenant, session string) (*sessionMeta, error) {
	meta, _, err := st.reconcile(ctx, tenant, session)
	if err != nil {
		return nil, err
	}
	if meta == nil || meta.Trash != nil {
		return nil, errNoSession
	}
	return meta, nil
}

// publishState is what one append keeps across its attempts.
type publishState struct {
	incomplete int  // atomic batches refused as incomplete
	runBroken  bool // a run of this request was overtaken
}

// publishTodo publishes items[todo] (in order) after the sequence last,
// fenced; it marks what it stored done, adds it to mw and returns it, and
// says whether the fence refused the rest (reconcile and retry) or the
// publish failed.
func (st *store) publishTodo(ctx context.Context, tenant, session string, items []item, todo []int, last uint64, epoch string,
	done []bool, ps *publishState, mw *markerWriter) (recs []rec, fenced bool, pubErr error) {
	for pending := todo; len(pending) > 0 && !fenced && pubErr == nil; {
		// A run; or an atomic batch where runs cannot be used, or
		// once a run of this request was overtaken (another process
		// writing: a batch cannot be); or one fenced publish.
		n := len(pending)
		runs, batch := st.runsOK(), false
		switch {
		case n >= 2 && runs && !ps.runBroken:
			n = min(n, runMax)
		case n >= 2 && st.atomicOK.Load() && ps.incomplete < 2:
			n, batch = min(n, int(st.batchMax.Load())), true
		case n >= 2 && runs:
			n = min(n, runMax)
		default:
			n = 1
		}
		chunk := pending[:n]
		var seqs []uint64
		var err error
		if batch {
			seqs, err = st.publishBatch(ctx, tenant, session, items, chunk, last, epoch)
		} else {
			seqs, err = st.publishRun(ctx, tenant, session, items, chunk, last, epoch)
		}
		for k, seq := range seqs {
			i := chunk[k]
			it := items[i]
			r := rec{seq: seq, agent: it.agent, id: it.id, e: it.e}
			recs = append(recs, r)
			mw.add(r)
			done[i] = true
			last = seq
		}
		pending = pending[len(seqs):]
		switch {
		case err == nil:
		case batch:
			fenced, pubErr = st.batchRefused(err, n, &ps.incomplete)
		default:
			fenced, pubErr = runRefused(err)
			ps.runBroken = ps.runBroken || errors.Is(err, errRunBroken)
		}
	}
	return recs, fenced, pubErr
}
