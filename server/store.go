package server

// The store: how entries are kept in JetStream, once, in order.
//
//   stream SCRIBE (file storage, R = replicas, Nats-Msg-Id duplicate window)
//   ├── scribe.<tenant>.<session>.m              the session's own entries
//   └── scribe.<tenant>.<session>.a.<agent>      a subagent's sidechain entries
//        every message: data   = the entry, byte for byte (one JSON line)
//                       header Scribe-Id   = the entry's id key (below)
//                       header Nats-Msg-Id = <tenant>.<session>.<id key>
//
//   KV SCRIBE_SESSIONS (R = replicas, history 1)
//   └── <tenant>.<session> → {last_seq, last_uuid, count, main_last_seq,
//                             last_compact_seq, agents{id:{count,last_seq}},
//                             custom_title, ai_title, tag, state,
//                             created_at, updated_at}
//
//   KV SCRIBE_IDS (R = replicas, history 1)
//   └── <tenant>.<session>.<id key> → "<stream sequence of the entry>"
//
//   id key:  u.<uuid>        an entry with a uuid
//            k.<key>         a uuid-less entry sent with an idempotency key
//                            (Idempotency-Key header, or an event's event_id)
//            h.<sha256/128>  any other uuid-less entry: a hash of its agent
//                            and its bytes
//
// Tenants are [a-z0-9_-], sessions are UUIDs, agents and id keys are
// [A-Za-z0-9_-]: no '.', '*', '>' or space can reach a subject or a key.
//
// Invariants, kept by every writer, in every process sharing the NATS:
//
//  1. A marker (SCRIBE_IDS key) exists only for an entry that is in the
//     stream: markers are created after the publish is acknowledged, or by
//     reading the message back from the stream.
//  2. meta.last_seq = L means every message of the session with a sequence
//     <= L has its marker: meta is advanced (compare-and-set on its KV
//     revision) only after the markers of the messages it covers exist.
//  3. Nothing is appended to a session except by a publish fenced with
//     Nats-Expected-Last-Subject-Sequence = meta.last_seq over the subject
//     filter scribe.<tenant>.<session>.> (the fence).
//
// Writing entries (a PUT of one, or a POST batch):
//
//   read meta (L) ──► markers exist? ──► duplicates: answered, not sent
//        ▲                 │ no
//        │                 ▼
//        │     publish, fenced on L (then on each ack's sequence)
//        │                 │ ok                      │ fence refused, or the
//        │                 ▼                         │ duplicate window saw it
//        │     create the markers, then CAS meta     │
//        └──── reconcile ◄───────────────────────────┘
//
// Because of 2, a marker lookup made after reading meta sees every entry up
// to L; because of 3, the publish lands right after L or not at all. So an
// entry is published only if it was not stored, whatever the duplicate
// window, whichever process or NATS node handles the retry.
//
// Reconcile reads the session's messages after meta.last_seq back from the
// stream (they exist when a writer crashed, lost its connection or was
// overtaken between publish and meta), creates their markers (an existing
// marker is fine) and advances meta. Every step is idempotent, so a crash
// anywhere leaves the session in a state the next write or read repairs:
//
//   crash after publish, before markers: the message is past last_seq; the
//     next fenced publish is refused, reconcile indexes it, and the retry of
//     the same entry then finds its marker: "already stored", not doubled.
//   crash after markers, before meta: the same, the markers already exist.
//   crash after meta: nothing to do; the retry finds the marker.
//
// Reads run reconcile first, then read the stream up to meta's sequences,
// so they see every acknowledged entry and never an entry twice. Ordering
// is the stream's: one session's entries are totally ordered by the fence.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/e0dc0000/scribe/core"
)

// Names in JetStream.
const (
	streamName     = "SCRIBE"
	subjectRoot    = "scribe"
	sessionsBucket = "SCRIBE_SESSIONS"
	idsBucket      = "SCRIBE_IDS"

	hdrID = "Scribe-Id"
)

// opTimeout bounds one round trip to NATS. A request lost in a reconnect
// or waiting for a leader election fails after it (and the client retries)
// instead of holding the HTTP request.
const opTimeout = 5 * time.Second

func opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, opTimeout)
}

// Store errors.
var (
	// errNoSession: the tenant has no such session.
	errNoSession = errors.New("session not found")
	// errBusy: the fence kept refusing (heavy contention on one session).
	errBusy = errors.New("session busy: too many concurrent writers")
	// errMetaMismatch: meta changed under a compare-and-set.
	errMetaMismatch = errors.New("session metadata changed")
)

// conflictError is a PUT whose Last-Uuid is not the server's last uuid.
type conflictError struct{ last string }

func (e *conflictError) Error() string {
	return fmt.Sprintf("Last-Uuid does not match the session's last uuid %q", e.last)
}

// sessionMeta is the KV value of a session.
type sessionMeta struct {
	Tenant  string `json:"tenant"`
	Session string `json:"session"`
	// LastSeq is the stream sequence of the session's last indexed message
	// (main or subagent); see invariant 2.
	LastSeq        uint64                `json:"last_seq"`
	MainLastSeq    uint64                `json:"main_last_seq,omitempty"`
	LastCompactSeq uint64                `json:"last_compact_seq,omitempty"`
	LastUUID       string                `json:"last_uuid,omitempty"`
	Count          int64                 `json:"count"`
	MainCount      int64                 `json:"main_count"`
	Agents         map[string]*agentMeta `json:"agents,omitempty"`
	CustomTitle    string                `json:"custom_title,omitempty"`
	AITitle        string                `json:"ai_title,omitempty"`
	Tag            string                `json:"tag,omitempty"`
	State          string                `json:"state,omitempty"`
	CreatedAt      time.Time             `json:"created_at"`
	UpdatedAt      time.Time             `json:"updated_at"`
}

type agentMeta struct {
	Count   int64  `json:"count"`
	LastSeq uint64 `json:"last_seq"`
}

// Title is the custom title, else the AI title.
func (m *sessionMeta) Title() string {
	if m.CustomTitle != "" {
		return m.CustomTitle
	}
	return m.AITitle
}

func (m *sessionMeta) clone() *sessionMeta {
	c := *m
	if m.Agents != nil {
		c.Agents = make(map[string]*agentMeta, len(m.Agents))
		for k, v := range m.Agents {
			a := *v
			c.Agents[k] = &a
		}
	}
	return &c
}

// item is one entry to store.
type item struct {
	e     core.Entry
	agent string // "" for the main session
	id    string // id key: u.<uuid>, k.<key> or h.<hash>
}

// newItem builds an item; key is an optional idempotency key for a
// uuid-less entry (already validated).
func newItem(e core.Entry, agent, key string) item {
	it := item{e: e, agent: agent}
	switch {
	case e.UUID != "":
		it.id = "u." + e.UUID
	case key != "":
		it.id = "k." + key
	default:
		h := sha256.New()
		h.Write([]byte(agent))
		h.Write([]byte{0})
		h.Write(e.Raw)
		it.id = "h." + hex.EncodeToString(h.Sum(nil)[:16])
	}
	return it
}

// rec is a stored message, as the indexer sees it.
type rec struct {
	seq   uint64
	agent string
	id    string
	e     core.Entry
}

// storeOptions configure a store.
type storeOptions struct {
	Replicas        int
	DuplicateWindow time.Duration
	Logger          hclog.Logger
	Metrics         *metrics
}

// store is the JetStream side of the server.
type store struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	sessions jetstream.KeyValue
	ids      jetstream.KeyValue
	log      hclog.Logger
	m        *metrics

	// locks serialize the writers of one session inside this process, so
	// that they do not fight over the fence; other processes are kept in
	// order by the fence itself.
	locks    [128]sync.Mutex
	lockSeed maphash.Seed
}

// openStore creates (or updates) the stream and the buckets. It retries
// while JetStream is not ready (a cluster electing its leaders) until ctx
// ends.
func openStore(ctx context.Context, nc *nats.Conn, o storeOptions) (*store, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	st := &store{nc: nc, js: js, log: o.Logger, m: o.Metrics, lockSeed: maphash.MakeSeed()}
	scfg := jetstream.StreamConfig{
		Name:        streamName,
		Description: "scribe transcript entries: scribe.<tenant>.<session>.m and .a.<agent>",
		Subjects:    []string{subjectRoot + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    o.Replicas,
		Duplicates:  o.DuplicateWindow,
		MaxMsgs:     -1,
		MaxBytes:    -1,
		Discard:     jetstream.DiscardNew,
		DenyDelete:  true,
		// AllowDirect stays false: reads go to the stream leader, so a
		// read after an acknowledged write always sees it.
	}
	kcfg := func(bucket, desc string) jetstream.KeyValueConfig {
		return jetstream.KeyValueConfig{Bucket: bucket, Description: desc, History: 1,
			Storage: jetstream.FileStorage, Replicas: o.Replicas}
	}
	var lastErr error
	for attempt := 0; ; attempt++ {
		lastErr = func() error {
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			if _, err := js.CreateOrUpdateStream(actx, scfg); err != nil {
				return fmt.Errorf("create stream %s: %w", streamName, err)
			}
			kv, err := js.CreateOrUpdateKeyValue(actx, kcfg(sessionsBucket, "scribe session metadata: <tenant>.<session>"))
			if err != nil {
				return fmt.Errorf("create KV bucket %s: %w", sessionsBucket, err)
			}
			st.sessions = kv
			kv, err = js.CreateOrUpdateKeyValue(actx, kcfg(idsBucket, "scribe entry markers: <tenant>.<session>.<id>"))
			if err != nil {
				return fmt.Errorf("create KV bucket %s: %w", idsBucket, err)
			}
			st.ids = kv
			return nil
		}()
		if lastErr == nil {
			return st, nil
		}
		if attempt == 5 {
			st.log.Warn("JetStream is not ready yet; still trying", "error", lastErr)
		} else {
			st.log.Debug("JetStream not ready", "attempt", attempt, "error", lastErr)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (%v)", lastErr, ctx.Err())
		case <-time.After(backoff(attempt, 100*time.Millisecond, 2*time.Second)):
		}
	}
}

func backoff(attempt int, lo, hi time.Duration) time.Duration {
	d := lo << min(attempt, 16)
	if d > hi || d <= 0 {
		d = hi
	}
	return d/2 + rand.N(d/2+1)
}

func (st *store) lock(key string) *sync.Mutex {
	return &st.locks[maphash.String(st.lockSeed, key)%uint64(len(st.locks))]
}

// Subjects and keys.

func sessionKey(tenant, session string) string { return tenant + "." + session }

func sessionFilter(tenant, session string) string {
	return subjectRoot + "." + tenant + "." + session + ".>"
}

func mainSubject(tenant, session string) string {
	return subjectRoot + "." + tenant + "." + session + ".m"
}

func agentSubject(tenant, session, agent string) string {
	return subjectRoot + "." + tenant + "." + session + ".a." + agent
}

func allAgentsSubject(tenant, session string) string {
	return subjectRoot + "." + tenant + "." + session + ".a.*"
}

func (it item) subject(tenant, session string) string {
	if it.agent == "" {
		return mainSubject(tenant, session)
	}
	return agentSubject(tenant, session, it.agent)
}

// agentOf returns the agent of a message subject of the session ("" for
// the main subject) and whether the subject belongs to the session.
func agentOf(subject, tenant, session string) (string, bool) {
	prefix := subjectRoot + "." + tenant + "." + session + "."
	rest, ok := strings.CutPrefix(subject, prefix)
	if !ok {
		return "", false
	}
	if rest == "m" {
		return "", true
	}
	if a, ok := strings.CutPrefix(rest, "a."); ok && reAgent.MatchString(a) {
		return a, true
	}
	return "", false
}

// Leader reads. The KV buckets allow direct gets, which any replica may
// answer, possibly behind the leader; invariant 2 needs a marker lookup to
// see every marker created before meta was read, so every lookup here goes
// to the stream leader through the STREAM.MSG.GET API.

type msgGetRequest struct {
	Seq        uint64 `json:"seq,omitempty"`
	LastBySubj string `json:"last_by_subj,omitempty"`
	NextBySubj string `json:"next_by_subj,omitempty"`
}

type msgGetResponse struct {
	Error *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error,omitempty"`
	Message *struct {
		Subject string    `json:"subject"`
		Seq     uint64    `json:"seq"`
		Header  []byte    `json:"hdrs,omitempty"`
		Data    []byte    `json:"data,omitempty"`
		Time    time.Time `json:"time"`
	} `json:"message,omitempty"`
}

// rawMsg is a message read from a stream.
type rawMsg struct {
	Subject string
	Seq     uint64
	Header  nats.Header
	Data    []byte
	Time    time.Time
}

// getMsg asks the leader of stream for one message; nil when there is none.
func (st *store) getMsg(ctx context.Context, stream string, req msgGetRequest) (*rawMsg, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	ctx, cancel := opCtx(ctx)
	defer cancel()
	resp, err := st.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, body)
	if err != nil {
		return nil, fmt.Errorf("get message from %s: %w", stream, err)
	}
	var r msgGetResponse
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return nil, fmt.Errorf("get message from %s: bad response: %w", stream, err)
	}
	if r.Error != nil {
		if r.Error.Code == 404 || r.Error.ErrCode == int(jetstream.JSErrCodeMessageNotFound) {
			return nil, nil
		}
		return nil, fmt.Errorf("get message from %s: %s (code %d)", stream, r.Error.Description, r.Error.ErrCode)
	}
	if r.Message == nil {
		return nil, fmt.Errorf("get message from %s: empty response", stream)
	}
	m := &rawMsg{Subject: r.Message.Subject, Seq: r.Message.Seq, Data: r.Message.Data, Time: r.Message.Time}
	if len(r.Message.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(r.Message.Header)
		if err != nil {
			return nil, fmt.Errorf("get message from %s: headers: %w", stream, err)
		}
		m.Header = h
	}
	return m, nil
}

// kvGet reads a key's latest value from the bucket's leader. It returns
// nil, 0 when the key does not exist (or was deleted).
func (st *store) kvGet(ctx context.Context, bucket, key string) ([]byte, uint64, error) {
	m, err := st.getMsg(ctx, "KV_"+bucket, msgGetRequest{LastBySubj: "$KV." + bucket + "." + key})
	if err != nil || m == nil {
		return nil, 0, err
	}
	if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
		return nil, 0, nil
	}
	return m.Data, m.Seq, nil
}

// loadMeta returns the session's metadata and its KV revision; nil, 0 when
// the session has none yet.
func (st *store) loadMeta(ctx context.Context, tenant, session string) (*sessionMeta, uint64, error) {
	b, rev, err := st.kvGet(ctx, sessionsBucket, sessionKey(tenant, session))
	if err != nil || b == nil {
		return nil, 0, err
	}
	var m sessionMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, 0, fmt.Errorf("session %s metadata: %w", sessionKey(tenant, session), err)
	}
	return &m, rev, nil
}

// markers reports, for each id key, whether its marker exists.
func (st *store) markers(ctx context.Context, tenant, session string, ids []string) ([]bool, error) {
	out := make([]bool, len(ids))
	errs := make([]error, len(ids))
	parallel(len(ids), 32, func(i int) {
		b, _, err := st.kvGet(ctx, idsBucket, sessionKey(tenant, session)+"."+ids[i])
		out[i], errs[i] = b != nil, err
	})
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("look up markers: %w", err)
		}
	}
	return out, nil
}

// parallel runs fn(0..n-1) with at most width at a time.
func parallel(n, width int, fn func(i int)) {
	if n == 1 {
		fn(0)
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, width)
	for i := 0; i < n; i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}

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
	var next *sessionMeta
	if meta == nil {
		next = &sessionMeta{Tenant: tenant, Session: session, CreatedAt: now}
	} else {
		next = meta.clone()
	}
	for _, r := range recs {
		next.apply(r)
	}
	next.UpdatedAt = now
	newRev, err := st.putMeta(ctx, tenant, session, next, rev)
	if err != nil {
		return nil, 0, err
	}
	return next, newRev, nil
}

// createMarkers creates the markers of recs; a marker that exists already
// is fine. The creates are pipelined, a chunk at a time.
func (st *store) createMarkers(ctx context.Context, tenant, session string, recs []rec) error {
	prefix := "$KV." + idsBucket + "." + sessionKey(tenant, session) + "."
	ctx, cancel := opCtx(ctx)
	defer cancel()
	const chunk = 512
	for start := 0; start < len(recs); start += chunk {
		part := recs[start:min(start+chunk, len(recs))]
		futures := make([]jetstream.PubAckFuture, 0, len(part))
		var err error
		for _, r := range part {
			m := &nats.Msg{Subject: prefix + r.id, Data: []byte(strconv.FormatUint(r.seq, 10))}
			var f jetstream.PubAckFuture
			f, err = st.js.PublishMsgAsync(m, jetstream.WithExpectLastSequencePerSubject(0))
			if err != nil {
				break
			}
			futures = append(futures, f)
		}
		for _, f := range futures {
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
		if err != nil {
			return fmt.Errorf("create entry markers: %w", err)
		}
	}
	return nil
}

// putMeta writes meta with a compare-and-set on rev (0: create).
func (st *store) putMeta(ctx context.Context, tenant, session string, m *sessionMeta, rev uint64) (uint64, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return 0, err
	}
	key := sessionKey(tenant, session)
	ctx, cancel := opCtx(ctx)
	defer cancel()
	var newRev uint64
	if rev == 0 {
		newRev, err = st.sessions.Create(ctx, key, b)
	} else {
		newRev, err = st.sessions.Update(ctx, key, b, rev)
	}
	switch {
	case err == nil:
		return newRev, nil
	case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch), isWrongLastSeq(err):
		return 0, errMetaMismatch
	}
	return 0, fmt.Errorf("update session metadata: %w", err)
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
	if r.e.Type == core.TypeSystem && r.e.Subtype == "compact_boundary" {
		m.LastCompactSeq = r.seq
	}
	switch r.e.Type {
	case "custom-title", "ai-title", "tag", core.TypeScribeState:
		var f struct {
			CustomTitle *string `json:"customTitle"`
			AITitle     *string `json:"aiTitle"`
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
			if err := sleepCtx(ctx, backoff(round, time.Millisecond, 50*time.Millisecond)); err != nil {
				return nil, 0, err
			}
			continue
		case err != nil:
			return nil, 0, err
		}
		st.m.repaired.Add(int64(len(recs)))
		st.log.Debug("indexed entries found past the session metadata", "session", sessionKey(tenant, session), "entries", len(recs))
		if len(recs) < 256 {
			return next, nrev, nil
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// appendResult says what became of each item.
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
	// Duplicates inside the request.
	seen := make(map[string]bool, len(items))
	for i, it := range items {
		if seen[it.id] {
			res.duplicate[i], done[i] = true, true
			res.dups++
		}
		seen[it.id] = true
	}

	reconciled := false
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
		var todo []int
		var ids []string
		for i := range items {
			if !done[i] {
				todo = append(todo, i)
				ids = append(ids, items[i].id)
			}
		}
		if len(todo) > 0 {
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
			todo = rest
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

		var last uint64
		if meta != nil {
			last = meta.LastSeq
		}
		var recs []rec
		var pubErr error
		fenced := false
		for _, i := range todo {
			it := items[i]
			msg := &nats.Msg{
				Subject: it.subject(tenant, session),
				Data:    it.e.Raw,
				Header:  nats.Header{hdrID: []string{it.id}},
			}
			pctx, cancel := opCtx(ctx)
			ack, err := st.js.PublishMsg(pctx, msg,
				jetstream.WithMsgID(sessionKey(tenant, session)+"."+it.id),
				jetstream.WithExpectLastSequenceForSubject(last, sessionFilter(tenant, session)))
			cancel()
			if err != nil {
				if isContended(err) {
					fenced = true
				} else {
					pubErr = fmt.Errorf("publish entry %s: %w", it.id, err)
				}
				break
			}
			if ack.Duplicate {
				// Stored before, within the duplicate window, and not yet
				// indexed: reconcile indexes it and the next round sees
				// its marker.
				fenced = true
				break
			}
			recs = append(recs, rec{seq: ack.Sequence, agent: it.agent, id: it.id, e: it.e})
			done[i] = true
			res.stored++
			last = ack.Sequence
		}
		if len(recs) > 0 {
			st.m.stored.Add(int64(len(recs)))
			next, _, err := st.index(ctx, tenant, session, meta, rev, recs, time.Now().UTC())
			switch {
			case errors.Is(err, errMetaMismatch):
				fenced = true // someone indexed past us: reconcile
			case err != nil:
				return nil, err
			default:
				meta = next
			}
		}
		if pubErr != nil {
			return nil, pubErr
		}
		if !fenced {
			res.meta = meta
			return res, nil
		}
		st.m.fenceRetries.Add(1)
		if attempt >= maxFenceAttempts {
			return nil, errBusy
		}
		reconciled = true
		if attempt > 0 {
			if err := sleepCtx(ctx, backoff(attempt, time.Millisecond, 100*time.Millisecond)); err != nil {
				return nil, err
			}
		}
	}
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
		if err := sleepCtx(ctx, backoff(attempt, time.Millisecond, 50*time.Millisecond)); err != nil {
			return nil, err
		}
	}
}

// open returns the session's up-to-date metadata; errNoSession when the
// tenant has no such session.
func (st *store) open(ctx context.Context, tenant, session string) (*sessionMeta, error) {
	meta, _, err := st.reconcile(ctx, tenant, session)
	if err != nil {
		return nil, err
	}
	if meta == nil {
		return nil, errNoSession
	}
	return meta, nil
}

// readOpts select what read returns.
type readOpts struct {
	filters  []string
	start    uint64 // first stream sequence to consider
	end      uint64 // last stream sequence to return (meta's)
	limit    int    // at most this many messages
	maxBytes int    // stop after this many bytes of entries (at least one)
}

// read calls fn for the session's messages in stream order, within o. It
// returns the sequence of the last message given to fn (0 if none) and
// whether more messages may follow within o.end.
func (st *store) read(ctx context.Context, o readOpts, fn func(seq uint64, subject string, data []byte) error) (uint64, bool, error) {
	if o.start > o.end || o.limit <= 0 {
		return 0, false, nil
	}
	cfg := jetstream.ConsumerConfig{
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       o.start,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: time.Minute,
		MemoryStorage:     true,
		Replicas:          1,
	}
	if len(o.filters) == 1 {
		cfg.FilterSubject = o.filters[0]
	} else {
		cfg.FilterSubjects = o.filters
	}
	cctx, cancel := opCtx(ctx)
	cons, err := st.js.CreateConsumer(cctx, streamName, cfg)
	cancel()
	if err != nil {
		return 0, false, fmt.Errorf("read session: create consumer: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := st.js.DeleteConsumer(dctx, streamName, cons.CachedInfo().Name); err != nil {
			st.log.Debug("delete read consumer", "error", err)
		}
	}()

	var last uint64
	count, bytes := 0, 0
	for {
		want := min(o.limit-count, 256)
		batch, err := cons.FetchNoWait(want)
		if err != nil {
			return last, false, fmt.Errorf("read session: %w", err)
		}
		got, full, past := 0, false, false
		for msg := range batch.Messages() {
			got++
			if full || past {
				continue // drain the batch
			}
			md, err := msg.Metadata()
			if err != nil {
				return last, false, fmt.Errorf("read session: %w", err)
			}
			seq := md.Sequence.Stream
			if seq > o.end {
				past = true // written after the read began: left for the next read
				continue
			}
			if err := fn(seq, msg.Subject(), msg.Data()); err != nil {
				return last, false, err
			}
			last = seq
			count++
			bytes += len(msg.Data())
			full = count >= o.limit || bytes >= o.maxBytes
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, nats.ErrTimeout) {
			return last, false, fmt.Errorf("read session: %w", err)
		}
		switch {
		case past || last >= o.end:
			return last, false, nil
		case full:
			return last, true, nil
		case got == 0:
			// o.end is the sequence of the filter's last message: a read
			// that stops short of it lost its fetch (a reconnect).
			return last, false, fmt.Errorf("read session: interrupted at sequence %d of %d", last, o.end)
		}
	}
}

// listSessions returns the tenant's sessions (every one; the caller filters).
func (st *store) listSessions(ctx context.Context, tenant string) ([]*sessionMeta, error) {
	w, err := st.sessions.WatchFiltered(ctx, []string{tenant + ".*"}, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer func() { _ = w.Stop() }()
	var out []*sessionMeta
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("list sessions: %w", ctx.Err())
		case e, ok := <-w.Updates():
			if !ok {
				return out, nil
			}
			if e == nil {
				return out, nil // initial values done
			}
			var m sessionMeta
			if err := json.Unmarshal(e.Value(), &m); err != nil {
				st.log.Warn("skip unreadable session metadata", "key", e.Key(), "error", err)
				continue
			}
			out = append(out, &m)
		}
	}
}

// ready checks that JetStream answers.
func (st *store) ready(ctx context.Context) error {
	_, err := st.js.AccountInfo(ctx)
	return err
}
