package server

// Reads: leader gets of messages and keys, marker lookups, the session's
// messages in stream order, the listing.
import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

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
