package server

// The store: how entries are kept in JetStream, once, in order.
//
//   stream SCRIBE (file storage, R = replicas, Nats-Msg-Id duplicate window)
//   ├── scribe.<tenant>.<session>.m              the session's own entries
//   └── scribe.<tenant>.<session>.a.<agent>      a subagent's sidechain entries
//        every message: data   = the entry, byte for byte (one JSON line)
//                       header Scribe-Id   = the entry's id key (below)
//                       header Nats-Msg-Id = <tenant>.<session>.<id key>, or
//                              <run id>.<n> for a message of a run (below)
//
//   KV SCRIBE_SESSIONS (R = replicas, history 1)
//   └── <tenant>.<session> → {last_seq, last_uuid, count, main_last_seq,
//                             last_compact_seq, agents{id:{count,last_seq}},
//                             custom_title, ai_title, last_prompt,
//                             summary, tag, state,
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
//  3. An append to a session starts with a message fenced with
//     Nats-Expected-Last-Subject-Sequence = meta.last_seq over the subject
//     filter scribe.<tenant>.<session>.> (the fence), and what the writer
//     appends after it comes right after it, with nothing of another writer
//     between, or is not stored at all. Three ways (publishing, below): a
//     run, an atomic batch, or one message at a time, each fenced on the
//     acknowledged sequence of the one before.
//
// Writing entries (a PUT of one, or a POST batch):
//
//   read meta (L) ──► markers exist? ──► duplicates: answered, not sent
//        ▲            (no lookup without meta)
//        │                 │ no
//        │                 ▼
//        │     publish, fenced on L: a run, an atomic batch, or one by one
//        │                 │ all stored               │ fence refused, run
//        │                 ▼                          │ overtaken, or the
//        │     create the markers, then CAS meta      │ duplicate window saw it
//        │                                            │ (the part known stored
//        └──── reconcile ◄────────────────────────────┘ is indexed first)
//
// Because of 2, a marker lookup made after reading meta sees every entry up
// to L; because of 3, the entries land right after L, in order, or not at
// all. So an entry is published only if it was not stored, whatever the
// duplicate window, whichever process or NATS node handles the retry. A
// session without meta needs no lookup: a marker exists only for a message
// in the stream (1), and the fence on 0 refuses the publish if the session
// has any.
//
// Publishing (publishRun, publishBatch in batch.go):
//
//   run          the entries sent back to back without waiting: the first
//                fenced on L, each next one with Nats-Expected-Last-Msg-Id
//                naming the one before (Nats-Msg-Id unique to the run). The
//                stream stores a message only if its last message is then
//                the one before it in the run, so a run is stored as a
//                prefix, contiguous in the stream; a message of another
//                writer in between stops it there (the run is overtaken).
//                Only the first and the last message are answered: the last
//                one stored means all are, at consecutive sequences. The
//                messages of a run must follow one another on the
//                connection, so sends to the stream go through one
//                connection (of their own) and hold a lock in the process. Runs are for a standalone server only (runsOK):
//                in a JetStream cluster the check is made when a message is
//                applied, and nats-server 2.15.2 stalls the stream when it
//                fails there.
//   atomic batch JetStream's atomic batch publish (nats-server 2.12+;
//                allow_atomic on the stream): fenced on its first message,
//                checked at the commit, stored whole or not at all, at
//                consecutive sequences. In a cluster, and for what is left
//                of a request after one of its runs was overtaken (another
//                process writing: a batch cannot be). On a standalone server
//                the server stages each batch in files of its own (with
//                fsyncs): a few milliseconds more a batch than a run.
//   one by one   a single entry (a PUT), or no batches: one fenced publish
//                at a time, fenced on the sequence of the one before.
//
// The markers of what was stored are created, then meta is advanced. On a
// standalone server the markers too are sent as one run on SCRIBE_IDS,
// each a create (expected last subject sequence 0 on its key) chained to
// the one before, the last one answered meaning all exist; a run that
// breaks (a marker existed, another writer in between) is followed by
// creates one by one, which accept an existing marker.
//
// Marker lookups: one leader read per id for a few ids; for more, one
// multi-get of the keys' last messages (a direct get: any replica may
// answer) made after reading from the leader the bucket's last sequence
// (the floor): an answer counts only from a replica that had stored up to
// the floor, so it sees every marker that existed when meta was read. On a
// standalone server meta is read with a direct get too (the server answers
// from the store that acknowledged every write, without its API queue).
//
// Reconcile reads the session's messages after meta.last_seq back from the
// stream (they exist when a writer crashed, lost its connection or was
// overtaken between publish and meta), creates their markers (an existing
// marker is fine) and advances meta. Every step is idempotent, so a crash
// anywhere leaves the session in a state the next write or read repairs:
//
//   crash after publish, before markers: the messages (all of a batch, a
//     prefix of a run) are past last_seq; the next fenced publish is
//     refused, reconcile indexes them, and the retry of the same entries
//     then finds their markers: "already stored", not doubled.
//   crash after markers, before meta: the same, the markers already exist.
//   crash after meta: nothing to do; the retry finds the markers.
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
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
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
	LastPrompt     string                `json:"last_prompt,omitempty"`
	Summary        string                `json:"summary,omitempty"`
	Tag            string                `json:"tag,omitempty"`
	State          string                `json:"state,omitempty"`
	CreatedAt      time.Time             `json:"created_at"`
	UpdatedAt      time.Time             `json:"updated_at"`
}

type agentMeta struct {
	Count   int64  `json:"count"`
	LastSeq uint64 `json:"last_seq"`
}

// Title is what the SDK's listSessions shows as a session's summary, from
// what the server stores: the latest custom title, else the latest AI
// title, else the latest last-prompt, else the latest summary line.
func (m *sessionMeta) Title() string {
	for _, t := range []string{m.CustomTitle, m.AITitle, m.LastPrompt, m.Summary} {
		if t != "" {
			return t
		}
	}
	return ""
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
	nc *nats.Conn
	js jetstream.JetStream
	// pub and pubJS carry the publishes to the entries' stream, apart
	// from the rest: a run is then not delayed by the markers, meta and
	// reads of other requests, nor they by the entries' bytes.
	pub      *nats.Conn
	pubJS    jetstream.JetStream
	sessions jetstream.KeyValue
	ids      jetstream.KeyValue
	log      hclog.Logger
	m        *metrics

	// locks serialize the writers of one session inside this process, so
	// that they do not fight over the fence; other processes are kept in
	// order by the fence itself.
	locks    [1024]sync.Mutex
	lockSeed maphash.Seed

	// sendMu is held while sending messages to the entries' stream (on
	// pub), so that the messages of a run (publishRun) follow one another
	// on the connection, hence in the stream.
	sendMu sync.Mutex
	// idsSendMu is sendMu for the markers' stream.
	idsSendMu sync.Mutex

	// standalone: the stream is not replicated by a JetStream cluster
	// (no Raft group), which runs need (see runsOK).
	standalone atomic.Bool

	// atomicOK: the stream takes atomic batch publishes (the server is
	// 2.12 or later and kept allow_atomic in the stream's config).
	atomicOK atomic.Bool
	// batchMax is the most messages of one atomic batch.
	batchMax atomic.Int64
	// bulkOK: the markers' bucket answers multi-gets.
	bulkOK atomic.Bool

	// runSent, when set (tests), is called after each message of a run is
	// sent, with sendMu held.
	runSent func(k int)
}

// openStore creates (or updates) the stream and the buckets. It retries
// while JetStream is not ready (a cluster electing its leaders) until ctx
// ends. Entries are published on pub, everything else goes through nc
// (they may be the same connection).
func openStore(ctx context.Context, nc, pub *nats.Conn, o storeOptions) (*store, error) {
	// Marker creates are asynchronous publishes: allow a few POSTs of the
	// largest size in flight.
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4*maxBatchEvents))
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	pubJS, err := jetstream.New(pub)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	st := &store{nc: nc, js: js, pub: pub, pubJS: pubJS, log: o.Logger, m: o.Metrics, lockSeed: maphash.MakeSeed()}
	st.batchMax.Store(defaultBatchMax)
	st.bulkOK.Store(true)
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
		// Atomic batches (nats-server 2.12 and later) for a request whose
		// run another process overtook.
		AllowAtomicPublish: versionAtLeast(nc.ConnectedServerVersion(), minAtomicVersion),
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
			stream, err := js.CreateOrUpdateStream(actx, scfg)
			if err != nil {
				return fmt.Errorf("create stream %s: %w", streamName, err)
			}
			// Batches only when the server says it does them: an older
			// server drops the setting and would store a batch's messages
			// one by one, unfenced after the first.
			version := nc.ConnectedServerVersion()
			atomicOK := stream.CachedInfo().Config.AllowAtomicPublish && versionAtLeast(version, minAtomicVersion)
			st.atomicOK.Store(atomicOK)
			ci := stream.CachedInfo().Cluster
			st.standalone.Store(ci == nil || ci.RaftGroup == "")
			if !atomicOK {
				st.log.Debug("the NATS server does not do atomic batch publishes", "server_version", version)
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
	return st.kvGetFrom(ctx, bucket, key, false)
}

// kvGetFrom is kvGet; with direct, on a standalone server, it reads with a
// direct get, which the server answers from the same store without going
// through its API queue (see directGet).
func (st *store) kvGetFrom(ctx context.Context, bucket, key string, direct bool) ([]byte, uint64, error) {
	req := msgGetRequest{LastBySubj: "$KV." + bucket + "." + key}
	var m *rawMsg
	ok := false
	var err error
	if direct && st.runsOK() {
		m, ok, err = st.directGet(ctx, "KV_"+bucket, req)
	}
	if !ok && err == nil {
		m, err = st.getMsg(ctx, "KV_"+bucket, req)
	}
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
//
// On a standalone server it reads with a direct get. Meta read behind
// (which that cannot be, short of a mirror of the bucket answering direct
// gets) would only cost a refused publish and a reconcile: what keeps the
// entries once is the fence and the markers, and markers are always read
// from the leader, or checked to be fresh.
func (st *store) loadMeta(ctx context.Context, tenant, session string) (*sessionMeta, uint64, error) {
	b, rev, err := st.kvGetFrom(ctx, sessionsBucket, sessionKey(tenant, session), true)
	if err != nil || b == nil {
		return nil, 0, err
	}
	var m sessionMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, 0, fmt.Errorf("session %s metadata: %w", sessionKey(tenant, session), err)
	}
	return &m, rev, nil
}

// markers reports, for each id key, whether its marker exists. It sees
// every marker created before it was called: in bulk (markersBulk) for
// many ids, else (or when that cannot answer) one leader read per id.
func (st *store) markers(ctx context.Context, tenant, session string, ids []string) ([]bool, error) {
	if len(ids) >= bulkLookupMin && st.bulkOK.Load() {
		out, ok, err := st.markersBulk(ctx, tenant, session, ids)
		if err != nil {
			return nil, fmt.Errorf("look up markers: %w", err)
		}
		if ok {
			return out, nil
		}
	}
	return st.markersEach(ctx, tenant, session, ids)
}

// markersEach looks the markers up one by one, each from the bucket's
// leader, 32 at a time.
func (st *store) markersEach(ctx context.Context, tenant, session string, ids []string) ([]bool, error) {
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
	return st.advanceMeta(ctx, tenant, session, meta, rev, recs, now)
}

// advanceMeta is the second step of index, once the markers of recs
// exist.
func (st *store) advanceMeta(ctx context.Context, tenant, session string, meta *sessionMeta, rev uint64, recs []rec, now time.Time) (*sessionMeta, uint64, error) {
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
		st.m.repaired.Add(int64(len(recs)))
		st.log.Debug("indexed entries found past the session metadata", "session", sessionKey(tenant, session), "entries", len(recs))
		if len(recs) < 256 {
			return next, nrev, nil
		}
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
	incomplete, runBroken := 0, false
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
		// Without meta the lookup is skipped: a marker exists only for a
		// message in the stream, and the publish is fenced on 0 (none).
		if len(todo) > 0 && meta != nil {
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
		mw := st.newMarkerWriter(tenant, session)
		for pending := todo; len(pending) > 0 && !fenced && pubErr == nil; {
			// A run; or an atomic batch where runs cannot be used, or
			// once a run of this request was overtaken (another process
			// writing: a batch cannot be); or one fenced publish.
			n := len(pending)
			runs, batch := st.runsOK(), false
			switch {
			case n >= 2 && runs && !runBroken:
				n = min(n, runMax)
			case n >= 2 && st.atomicOK.Load() && incomplete < 2:
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
				seqs, err = st.publishBatch(ctx, tenant, session, items, chunk, last)
			} else {
				seqs, err = st.publishRun(ctx, tenant, session, items, chunk, last)
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
			res.stored += len(seqs)
			pending = pending[len(seqs):]
			switch {
			case err == nil:
			case batch:
				fenced, pubErr = st.batchRefused(err, n, &incomplete)
			default:
				fenced, pubErr = runRefused(err)
				runBroken = runBroken || errors.Is(err, errRunBroken)
			}
		}
		if len(recs) > 0 {
			st.m.stored.Add(int64(len(recs)))
			err := mw.wait(ctx)
			var next *sessionMeta
			if err == nil {
				next, _, err = st.advanceMeta(ctx, tenant, session, meta, rev, recs, time.Now().UTC())
			}
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
			if err := durable.Sleep(ctx, backoff(attempt, time.Millisecond, 100*time.Millisecond)); err != nil {
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
		if err := durable.Sleep(ctx, backoff(attempt, time.Millisecond, 50*time.Millisecond)); err != nil {
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
