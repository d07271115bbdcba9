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
//   (Nats-Msg-Id: <tenant>.<session>.<epoch>.<id key> for a session whose
//   metadata has an epoch, drawn anew when entries of it are deleted, and
//   for the first entries of a session, which has no metadata yet)
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
//   KV SCRIBE_SUMMARIES (R = replicas, history 1)
//   └── <tenant>.<session> → {project_key, mtime, data, folds}: an Agent SDK
//                             SessionStore's summary (sessionstore.go)
//
//   id key:  u.<uuid>        an entry with a uuid
//            k.<key>         a uuid-less entry sent with an idempotency key
//                            (Idempotency-Key header, or an event's event_id)
//            h.<sha256/128>  any other uuid-less entry: a hash of its agent
//                            and its bytes
//            a.<agent>.u-<uuid>, a.<agent>.k-<batch>-<n>
//                            a subagent's entry appended through the
//                            SessionStore routes: its own key space, so a
//                            subkey is deduplicated apart from the main
//                            transcript and deleted with one purge
//
// Tenants are [a-z0-9_-], sessions are UUIDs, agents are [A-Za-z0-9_-] and
// id keys are such tokens joined by '.': no '*', '>' or space can reach a
// subject or a key, and a '.' only where the layout puts one.
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
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/ident"
)

// Names in JetStream.
const (
	streamName      = "SCRIBE"
	subjectRoot     = "scribe"
	sessionsBucket  = "SCRIBE_SESSIONS"
	idsBucket       = "SCRIBE_IDS"
	summariesBucket = "SCRIBE_SUMMARIES"

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
	// MainUpdatedAt is when the main transcript last grew (an Agent SDK
	// SessionStore's listSessions mtime).
	MainUpdatedAt time.Time `json:"main_updated_at,omitzero"`
	// ProjectKey is the SessionStore project key the session was bound to
	// by its first append through /v1/session_store ("" for a session
	// written otherwise).
	ProjectKey string `json:"project_key,omitempty"`
	// StoreSessionID is the SessionStore session id the session was bound
	// to when it is not the session's own name (an id that is not a UUID,
	// or a UUID another project key has: see server/sessionstore.go).
	StoreSessionID string `json:"store_session_id,omitempty"`
	// Epoch is part of the Nats-Msg-Id of the session's entries (see
	// msgIDPrefix); a new session and a delete of a subkey draw a new one.
	Epoch string `json:"epoch,omitempty"`
	// Trash marks a session in the trash (storetrash.go).
	Trash *trashMark `json:"trash,omitempty"`
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

// storeID is the session id a SessionStore client names the session by.
func (m *sessionMeta) storeID() string {
	if m.StoreSessionID != "" {
		return m.StoreSessionID
	}
	return m.Session
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
	// summaries holds the SessionStore summaries (sessionstore.go).
	summaries jetstream.KeyValue
	log       hclog.Logger
	m         *metrics

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
			kv, err = js.CreateOrUpdateKeyValue(actx, kcfg(summariesBucket, "scribe SessionStore summaries: <tenant>.<session>"))
			if err != nil {
				return fmt.Errorf("create KV bucket %s: %w", summariesBucket, err)
			}
			st.summaries = kv
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
	if a, ok := strings.CutPrefix(rest, "a."); ok && ident.Token(a, 64) {
		return a, true
	}
	return "", false
}
