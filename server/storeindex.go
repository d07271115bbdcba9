package server

// Indexing: markers, session metadata, reconcile (see store.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
)

// errCodeDuplicateInProcess is JetStream's "duplicate message id is in
// process": the same entry is being published by another writer right now.
const errCodeDuplicateInProcess = 10158

// isContended reports a publish refused because another writer of the
// session got there first: the fence, or the same entry in flight.
func isContended(err error) bool {
	var apiErr *jetstream.APIError
	return isWrongLastSeq(err) || (errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeDuplicateInProcess)
}

func isWrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// index makes recs (messages of the session, in sequence order, all after
// meta.LastSeq) part of the session: it creates their markers, then
// advances meta with a compare-and-set on rev (0: meta does not exist).
// errMetaMismatch means another writer moved meta first.
func (st *store) index(ctx context.Context, tenant, session string, meta *sessionMeta, rev uint64, recs []rec, now time.Time) (*sessionMeta, uint64, error) {
	if err := st.createMarkers(ctx, tenant, session, recs); err != nil {
		return nil, 0, err
	}
	return st.advanceMeta(ctx, tenant, session, meta, rev, recs, now)
}

// advanceMeta is the second step of index, once the markers of recs
// exist.
func (st *store) advanceMeta(ctx context.Context, tenant, session string, meta *sessionMeta, rev uint64, recs []rec, now time.Time) (*sessionMeta, uint64, error) {
	var next *sessionMeta
	if meta == nil {
		next = &sessionMeta{Tenant: tenant, Session: session, CreatedAt: now, Epoch: newEpoch()}
	} else {
		next = meta.clone()
	}
	for _, r := range recs {
		next.apply(r)
		if r.agent == "" {
			next.MainUpdatedAt = now
		}
	}
	next.UpdatedAt = now
	newRev, err := st.putMeta(ctx, tenant, session, next, rev)
	if err != nil {
		return nil, 0, err
	}
	return next, newRev, nil
}

// createMarkers creates the markers of recs; a marker that exists already
// is fine.
func (st *store) createMarkers(ctx context.Context, tenant, session string, recs []rec) error {
	w := st.newMarkerWriter(tenant, session)
	for _, r := range recs {
		w.add(r)
	}
	return w.wait(ctx)
}

// markerWriter creates markers. Where runs can be used (see runsOK) it
// sends them as one run on the markers' stream when wait is called: each
// a create (Nats-Expected-Last-Subject-Sequence 0 on its key) chained to
// the one before (Nats-Expected-Last-Msg-Id), the last one answered meaning
// all are created; when the run breaks (a marker existed, another writer
// came between) it creates them one by one. Elsewhere each create is sent
// by add, without waiting, and wait waits for them all.
type markerWriter struct {
	st      *store
	prefix  string
	run     bool
	recs    []rec
	futures []jetstream.PubAckFuture
	err     error
}

func (st *store) newMarkerWriter(tenant, session string) *markerWriter {
	return &markerWriter{st: st, prefix: "$KV." + idsBucket + "." + sessionKey(tenant, session) + ".", run: st.runsOK()}
}

// add creates r's marker (now, or at wait).
func (w *markerWriter) add(r rec) {
	if w.run {
		w.recs = append(w.recs, r)
		return
	}
	w.st.idsSendMu.Lock()
	w.send(r)
	w.st.idsSendMu.Unlock()
}

// send sends the create of r's marker; wait waits for its answer.
// idsSendMu is held.
func (w *markerWriter) send(r rec) {
	if w.err != nil {
		return
	}
	m := &nats.Msg{Subject: w.prefix + r.id, Data: strconv.AppendUint(nil, r.seq, 10),
		Header: nats.Header{hdrExpLastSubj: []string{"0"}}}
	f, err := w.st.js.PublishMsgAsync(m)
	if err != nil {
		w.err = err
		return
	}
	w.futures = append(w.futures, f)
}

// wait waits until every marker added exists (created now or before).
func (w *markerWriter) wait(ctx context.Context) error {
	if w.run && len(w.recs) > 1 && w.sendRun(ctx) {
		w.recs = w.recs[:0]
		return nil
	}
	if w.run {
		// One by one (what the run left out exists, or is created now).
		w.st.idsSendMu.Lock()
		for _, r := range w.recs {
			w.send(r)
		}
		w.st.idsSendMu.Unlock()
		w.recs = w.recs[:0]
	}
	ctx, cancel := opCtx(ctx)
	defer cancel()
	err := w.err
	for _, f := range w.futures {
		select {
		case <-f.Ok():
		case ferr := <-f.Err():
			if !isWrongLastSeq(ferr) && err == nil { // wrong last sequence: the marker exists
				err = ferr
			}
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
		}
	}
	w.futures, w.err = w.futures[:0], nil
	if err != nil {
		return fmt.Errorf("create entry markers: %w", err)
	}
	return nil
}

// sendRun creates the markers of w.recs as one run and reports whether
// they all were.
func (w *markerWriter) sendRun(ctx context.Context) bool {
	runID := strings.TrimPrefix(nats.NewInbox(), "_INBOX.")
	n := len(w.recs)
	var final jetstream.PubAckFuture
	var err error
	w.st.idsSendMu.Lock()
	for k, r := range w.recs {
		m := &nats.Msg{Subject: w.prefix + r.id, Data: strconv.AppendUint(nil, r.seq, 10), Header: nats.Header{
			hdrExpLastSubj: []string{"0"},
			hdrMsgID:       []string{runID + "." + strconv.Itoa(k)},
		}}
		if k > 0 {
			m.Header[hdrExpLastID] = []string{runID + "." + strconv.Itoa(k-1)}
		}
		if k == n-1 {
			final, err = w.st.js.PublishMsgAsync(m)
		} else {
			err = w.st.nc.PublishMsg(m)
		}
		if err != nil {
			break
		}
	}
	w.st.idsSendMu.Unlock()
	if final == nil {
		return false
	}
	ctx, cancel := opCtx(ctx)
	defer cancel()
	_, err = waitAck(ctx, final)
	return err == nil
}

// putMeta writes meta with a compare-and-set on rev (0: create).
func (st *store) putMeta(ctx context.Context, tenant, session string, m *sessionMeta, rev uint64) (uint64, error) {
	newRev, err := casPut(ctx, st.sessions, sessionKey(tenant, session), m, rev)
	switch {
	case err == nil:
		return newRev, nil
	case errors.Is(err, errRevision):
		return 0, errMetaMismatch
	}
	return 0, fmt.Errorf("update session metadata: %w", err)
}

// errRevision: a compare-and-set found another revision.
var errRevision = errors.New("revision changed")

// casPut writes v as JSON to key with a compare-and-set on rev (0:
// create); errRevision when the key moved.
func casPut(ctx context.Context, kv jetstream.KeyValue, key string, v any, rev uint64) (uint64, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	ctx, cancel := opCtx(ctx)
	defer cancel()
	var newRev uint64
	if rev == 0 {
		newRev, err = kv.Create(ctx, key, b)
	} else {
		newRev, err = kv.Update(ctx, key, b, rev)
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) || isWrongLastSeq(err) {
		return 0, errRevision
	}
	return newRev, err
}

// apply adds one indexed message to the metadata.
func (m *sessionMeta) apply(r rec) {
	if r.seq <= m.LastSeq {
		return
	}
	m.LastSeq = r.seq
	m.Count++
	if r.e.UUID != "" {
		m.LastUUID = r.e.UUID
	}
	if r.agent != "" {
		if m.Agents == nil {
			m.Agents = map[string]*agentMeta{}
		}
		a := m.Agents[r.agent]
		if a == nil {
			a = &agentMeta{}
			m.Agents[r.agent] = a
		}
		a.Count++
		a.LastSeq = r.seq
		return
	}
	m.MainCount++
	m.MainLastSeq = r.seq
	if r.e.IsCompactBoundary() {
		m.LastCompactSeq = r.seq
	}
	switch r.e.Type {
	case "custom-title", "ai-title", "last-prompt", "summary", "tag", core.TypeScribeState:
		var f struct {
			CustomTitle *string `json:"customTitle"`
			AITitle     *string `json:"aiTitle"`
			LastPrompt  *string `json:"lastPrompt"`
			Summary     *string `json:"summary"`
			Tag         *string `json:"tag"`
			State       string  `json:"state"`
		}
		if json.Unmarshal(r.e.Raw, &f) != nil {
			return
		}
		switch {
		case r.e.Type == "custom-title" && f.CustomTitle != nil:
			m.CustomTitle = *f.CustomTitle
		case r.e.Type == "ai-title" && f.AITitle != nil:
			m.AITitle = *f.AITitle
		case r.e.Type == "last-prompt" && f.LastPrompt != nil:
			m.LastPrompt = *f.LastPrompt
		case r.e.Type == "summary" && f.Summary != nil:
			m.Summary = *f.Summary
		case r.e.Type == "tag" && f.Tag != nil:
			m.Tag = *f.Tag
		case r.e.Type == core.TypeScribeState && core.State(f.State).Valid():
			m.State = f.State
		}
	}
}

// recFromMsg turns a stream message of the session into a rec.
func recFromMsg(m *rawMsg, tenant, session string) (rec, error) {
	agent, ok := agentOf(m.Subject, tenant, session)
	if !ok {
		return rec{}, fmt.Errorf("message %d: subject %q is not of session %s", m.Seq, m.Subject, sessionKey(tenant, session))
	}
	e, err := core.ParseEntryOwned(m.Data)
	if err != nil {
		return rec{}, fmt.Errorf("message %d: %w", m.Seq, err)
	}
	id := m.Header.Get(hdrID)
	if id == "" {
		id = newItem(e, agent, "").id
	}
	return rec{seq: m.Seq, agent: agent, id: id, e: e}, nil
}

// reconcile indexes the session's messages that are past meta.LastSeq and
// returns the up-to-date meta and revision (nil, 0 for a session with no
// entries).
func (st *store) reconcile(ctx context.Context, tenant, session string) (*sessionMeta, uint64, error) {
	filter := sessionFilter(tenant, session)
	for round := 0; ; round++ {
		meta, rev, err := st.loadMeta(ctx, tenant, session)
		if err != nil {
			return nil, 0, err
		}
		var from uint64 = 1
		if meta != nil {
			from = meta.LastSeq + 1
		}
		var recs []rec
		for len(recs) < 256 {
			m, err := st.getMsg(ctx, streamName, msgGetRequest{Seq: from, NextBySubj: filter})
			if err != nil {
				return nil, 0, err
			}
			if m == nil {
				break
			}
			r, err := recFromMsg(m, tenant, session)
			if err != nil {
				return nil, 0, err
			}
			recs = append(recs, r)
			from = m.Seq + 1
		}
		if len(recs) == 0 {
			return meta, rev, nil
		}
		next, nrev, err := st.index(ctx, tenant, session, meta, rev, recs, time.Now().UTC())
		switch {
		case errors.Is(err, errMetaMismatch):
			if err := durable.Sleep(ctx, backoff(round, time.Millisecond, 50*time.Millisecond)); err != nil {
				return nil, 0, err
			}
			continue
		case err != nil:
			return nil, 0, err
		}
		st.m.Repaired.Add(int64(len(recs)))
		st.log.Debug("indexed entries found past the session metadata", "session", sessionKey(tenant, session), "entries", len(recs))
		if len(recs) < 256 {
			return next, nrev, nil
		}
	}
}

// appendResult says what became of each item.
