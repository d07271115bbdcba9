package server

// The fast paths of a write (see the design at the top of store.go): runs
// and atomic batches, and marker lookups in bulk.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Headers of JetStream's atomic batch publish (nats-server 2.12 and later)
// and of the fence.
const (
	hdrBatchID     = "Nats-Batch-Id"
	hdrBatchSeq    = "Nats-Batch-Sequence"
	hdrBatchCommit = "Nats-Batch-Commit"
	hdrMsgID       = "Nats-Msg-Id"
	hdrExpLastSubj = "Nats-Expected-Last-Subject-Sequence"
	hdrExpSubj     = "Nats-Expected-Last-Subject-Sequence-Subject"
	hdrExpLastID   = "Nats-Expected-Last-Msg-Id"
)

// errCodeWrongLastMsgID: Nats-Expected-Last-Msg-Id did not match.
const errCodeWrongLastMsgID = 10070

// JetStream error codes of atomic batches.
const (
	errCodeBatchDisabled     = 10174 // the stream does not allow atomic publish
	errCodeBatchIncomplete   = 10176 // a message of the batch went missing, or it timed out
	errCodeBatchUnsupported  = 10177 // a header the batch may not use
	errCodeBatchTooLarge     = 10199 // more messages than the server's max_batch_size
	errCodeBatchDuplicate    = 10201 // a Nats-Msg-Id of the batch is in the duplicate window
	errCodeBatchTooManyInfly = 10210 // too many batches in flight on the stream or server
)

const (
	// runMax bounds the messages of one run.
	runMax = 2000
	// defaultBatchMax is the server's default max_batch_size: the most
	// messages of one atomic batch. A server configured lower refuses a
	// larger batch, and the store halves its size until it fits.
	defaultBatchMax = 1000
	// bulkLookupMin: fewer ids than this are looked up one by one (one
	// round trip each, in parallel) rather than in bulk (two).
	bulkLookupMin = 8
	// bulkLookupChunk bounds the subjects of one multi-get: the server
	// answers at most 1024 of them.
	bulkLookupChunk = 500
)

// minAtomicVersion is the first nats-server version with atomic batches.
var minAtomicVersion = [3]int{2, 12, 0}

// versionAtLeast reports whether the semantic version v ("2.12.1",
// "v2.12.0-beta") is at least min.
func versionAtLeast(v string, min [3]int) bool {
	v = strings.TrimPrefix(v, "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	parts := strings.SplitN(v, ".", 3)
	if len(parts) != 3 {
		return false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return false
		}
		if n != min[i] {
			return n > min[i]
		}
	}
	return true
}

// errRunBroken: a message of a run found another message before it (the
// run was overtaken by a writer in another process); it and the rest of
// the run were not stored.
var errRunBroken = errors.New("run of messages overtaken")

// errDuplicate: the stream's duplicate window took the message for one
// stored before (not yet indexed).
var errDuplicate = errors.New("duplicate message")

// publishRun appends chunk (indexes into items) to the session as a run:
// its messages sent back to back, without waiting, the first fenced on
// last over the session's filter, each next one with
// Nats-Expected-Last-Msg-Id naming the one before it, under an id unique
// to this run. A message is stored only if the stream's last message is
// then the one before it in the run: so what is stored is a prefix of the
// run, contiguous in the stream right after a fenced first message; no
// other writer's message comes between (the stream refuses the next
// message of the run, and so every later one, after a foreign one).
//
// Hence only the first and the last message ask for an answer: the last
// one stored means the whole run is, at the sequences before the last
// one's; when it was refused, runPrefix finds how much was. It returns the
// sequences of the messages known to be stored (what it cannot tell, on
// errors or timeouts, is past meta, for reconcile) and, when not all are,
// why.
//
// Within this process runs must not interleave on the connection: sends
// to the entries' stream go through st.pub and hold st.sendMu.
func (st *store) publishRun(ctx context.Context, tenant, session string, items []item, chunk []int, last uint64, epoch string) ([]uint64, error) {
	n := len(chunk)
	runID := strings.TrimPrefix(nats.NewInbox(), "_INBOX.")
	var first, final jetstream.PubAckFuture
	var err error
	st.sendMu.Lock()
	for k, i := range chunk {
		it := items[i]
		m := &nats.Msg{
			Subject: it.subject(tenant, session),
			Data:    it.e.Raw,
			Header:  nats.Header{hdrID: []string{it.id}},
		}
		if n == 1 {
			// A run of one keeps the entry's own Nats-Msg-Id: the
			// duplicate window then also catches a retry early.
			m.Header[hdrMsgID] = []string{msgIDPrefix(tenant, session, epoch) + it.id}
		} else {
			m.Header[hdrMsgID] = []string{runID + "." + strconv.Itoa(k)}
		}
		if k == 0 {
			m.Header[hdrExpLastSubj] = []string{strconv.FormatUint(last, 10)}
			m.Header[hdrExpSubj] = []string{sessionFilter(tenant, session)}
		} else {
			m.Header[hdrExpLastID] = []string{runID + "." + strconv.Itoa(k-1)}
		}
		switch k {
		case 0:
			first, err = st.pubJS.PublishMsgAsync(m)
		case n - 1:
			final, err = st.pubJS.PublishMsgAsync(m)
		default:
			err = st.pub.PublishMsg(m)
		}
		if err != nil {
			break
		}
		if st.runSent != nil {
			st.runSent(k)
		}
	}
	st.sendMu.Unlock()
	if first == nil {
		return nil, fmt.Errorf("publish: %w", err)
	}

	ctx, cancel := opCtx(ctx)
	defer cancel()
	ack, ferr := waitAck(ctx, first)
	if ferr != nil {
		return nil, ferr
	}
	if ack.Duplicate {
		return nil, errDuplicate
	}
	if n == 1 {
		return []uint64{ack.Sequence}, nil
	}
	if final == nil { // not all sent: the rest failed or never went
		return []uint64{ack.Sequence}, fmt.Errorf("publish: %w", err)
	}
	lastAck, ferr := waitAck(ctx, final)
	switch {
	case ferr != nil && apiErrCode(ferr) == errCodeWrongLastMsgID:
		k := st.runPrefix(ctx, runID, ack.Sequence, n)
		seqs := make([]uint64, k)
		for j := range seqs {
			seqs[j] = ack.Sequence + uint64(j)
		}
		return seqs, errRunBroken
	case ferr != nil:
		return []uint64{ack.Sequence}, ferr
	case lastAck.Sequence-ack.Sequence != uint64(n-1):
		// Cannot be (the run is contiguous); let reconcile read it back.
		return []uint64{ack.Sequence}, fmt.Errorf("publish: a run of %d from %d ended at %d", n, ack.Sequence, lastAck.Sequence)
	}
	seqs := make([]uint64, n)
	for k := range seqs {
		seqs[k] = ack.Sequence + uint64(k)
	}
	return seqs, nil
}

// runPrefix finds how many messages of a broken run of n were stored, the
// first at sequence first: they are at first, first+1, ... (a run is
// stored as a contiguous prefix), each with its Nats-Msg-Id, and the last
// one was not, so a binary search over the sequences finds the end in a
// few reads. On an error it answers 1 (the first one is known stored; the
// rest is past meta, for reconcile).
func (st *store) runPrefix(ctx context.Context, runID string, first uint64, n int) int {
	lo, hi := 1, n-1 // message lo-1 is stored, message hi is not
	for lo < hi {
		k := (lo + hi) / 2
		m, err := st.getMsg(ctx, streamName, msgGetRequest{Seq: first + uint64(k)})
		if err != nil {
			return 1
		}
		if m != nil && m.Header.Get(hdrMsgID) == runID+"."+strconv.Itoa(k) {
			lo = k + 1
		} else {
			hi = k
		}
	}
	return lo
}

// waitAck waits for a publish's acknowledgement.
func waitAck(ctx context.Context, f jetstream.PubAckFuture) (*jetstream.PubAck, error) {
	select {
	case ack := <-f.Ok():
		return ack, nil
	case err := <-f.Err():
		return nil, err
	case <-ctx.Done():
		// Not answered: stored or not, reconcile finds out.
		return nil, fmt.Errorf("publish: %w", ctx.Err())
	}
}

// runsOK reports whether runs of more than one message may be published:
// only to a stream of a standalone JetStream server. In a JetStream cluster
// the server checks Nats-Expected-Last-Msg-Id when it applies a message,
// after the messages behind it are proposed, and nats-server 2.15.2 stalls
// the stream when that check fails (a test showed no more acks, for any
// publisher, and no leader); there, a request is an atomic batch instead.
// A server with a cluster name may be clustered whatever the stream said
// when the store opened (a reconnect to another server, say).
func (st *store) runsOK() bool {
	return st.standalone.Load() && st.pub.ConnectedClusterName() == "" && st.nc.ConnectedClusterName() == ""
}

// runRefused sorts out a run that was not stored whole: fenced when it
// is to be tried again after a reconcile, else the error to give up with.
func runRefused(err error) (fenced bool, _ error) {
	if isContended(err) || errors.Is(err, errRunBroken) || errors.Is(err, errDuplicate) {
		return true, nil
	}
	return false, fmt.Errorf("publish entries: %w", err)
}

// batchAck is the answer to a message of an atomic batch: nothing for a
// message staged before the commit, a PubAck (with the batch's id and
// size) for the commit, or an error.
type batchAck struct {
	Error    *jetstream.APIError `json:"error,omitempty"`
	Stream   string              `json:"stream"`
	Sequence uint64              `json:"seq"`
	Batch    string              `json:"batch,omitempty"`
	Count    int                 `json:"count,omitempty"`
}

// errNotBatched: the server answered a batch message as a plain publish.
var errNotBatched = errors.New("the server does not do atomic batch publishes")

// publishBatch appends chunk (indexes into items, n >= 2) to the session
// as one atomic batch whose first message is fenced on last. It returns
// the stream sequence of each message. A batch is stored whole or not at
// all: the server checks the fence and every Nats-Msg-Id when the commit
// arrives, before it stores anything, and its messages get consecutive
// sequences (no other message comes between them).
//
// Only the first message and the commit ask for an answer: the first
// one's tells why a batch was refused when it was refused at once (too
// many in flight, say); the other messages are staged without a word, and
// one that goes missing makes the commit fail as incomplete.
func (st *store) publishBatch(ctx context.Context, tenant, session string, items []item, chunk []int, last uint64, epoch string) ([]uint64, error) {
	n := len(chunk)
	inbox := nats.NewInbox()
	batchID := strings.TrimPrefix(inbox, "_INBOX.") // unique (a NUID), 22 characters
	sub, err := st.pub.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("atomic batch: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()

	prefix := msgIDPrefix(tenant, session, epoch)
	msgs := make([]*nats.Msg, n)
	for k, i := range chunk {
		it := items[i]
		h := nats.Header{
			hdrID:       []string{it.id},
			hdrMsgID:    []string{prefix + it.id},
			hdrBatchID:  []string{batchID},
			hdrBatchSeq: []string{strconv.Itoa(k + 1)},
		}
		m := &nats.Msg{Subject: it.subject(tenant, session), Data: it.e.Raw, Header: h}
		if k == 0 {
			h[hdrExpLastSubj] = []string{strconv.FormatUint(last, 10)}
			h[hdrExpSubj] = []string{sessionFilter(tenant, session)}
			m.Reply = inbox
		}
		if k == n-1 {
			h[hdrBatchCommit] = []string{"1"}
			m.Reply = inbox
		}
		msgs[k] = m
	}
	// The commit stores the whole batch at once: it must not come between
	// the messages of a run of this process (see publishRun).
	st.sendMu.Lock()
	for _, m := range msgs {
		if err = st.pub.PublishMsg(m); err != nil {
			break
		}
	}
	st.sendMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("atomic batch: %w", err)
	}

	ctx, cancel := opCtx(ctx)
	defer cancel()
	// The first answer is the first message's, the second the commit's.
	for answer := 0; answer < 2; answer++ {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return nil, fmt.Errorf("atomic batch of %d: %w", n, err)
		}
		if len(m.Data) == 0 {
			if s := m.Header.Get("Status"); s != "" {
				if s == "503" {
					return nil, fmt.Errorf("atomic batch: %w", nats.ErrNoResponders)
				}
				return nil, fmt.Errorf("atomic batch: status %s %s", s, m.Header.Get("Description"))
			}
			if answer == 0 {
				continue // the first message is staged
			}
			return nil, errors.New("atomic batch: empty answer to the commit")
		}
		var a batchAck
		if err := json.Unmarshal(m.Data, &a); err != nil {
			return nil, fmt.Errorf("atomic batch: bad answer %q: %w", truncate(string(m.Data), 200), err)
		}
		if a.Error != nil {
			return nil, a.Error
		}
		if a.Batch != batchID {
			// A plain PubAck: the server stored the message on its own.
			return nil, errNotBatched
		}
		if a.Count != n || a.Sequence < uint64(n) || a.Sequence-uint64(n) < last {
			return nil, fmt.Errorf("atomic batch: unexpected answer to a batch of %d after %d: %s", n, last, truncate(string(m.Data), 200))
		}
		seqs := make([]uint64, n)
		for k := range seqs {
			seqs[k] = a.Sequence - uint64(n-1-k)
		}
		return seqs, nil
	}
	return nil, errors.New("atomic batch: no answer to the commit")
}

// batchRefused sorts out an atomic batch of n that was not stored:
// fenced when it is to be tried again after a reconcile (the fence or the
// duplicate window refused it, or it can be retried as it is), else the
// error to give up with. incomplete counts the batches that went missing.
func (st *store) batchRefused(err error, n int, incomplete *int) (fenced bool, _ error) {
	switch code := apiErrCode(err); {
	case isContended(err), code == errCodeBatchDuplicate:
		return true, nil
	case code == errCodeBatchTooManyInfly:
		return true, nil
	case code == errCodeBatchIncomplete:
		*incomplete++
		return true, nil
	case code == errCodeBatchTooLarge && n > 2:
		for cur := st.batchMax.Load(); cur > int64(n/2) && !st.batchMax.CompareAndSwap(cur, int64(n/2)); cur = st.batchMax.Load() {
		}
		st.log.Info("the NATS server refused an atomic batch as too large; sending smaller ones", "size", n, "now", st.batchMax.Load())
		return true, nil
	case code == errCodeBatchDisabled, code == errCodeBatchUnsupported, code == errCodeBatchTooLarge, errors.Is(err, errNotBatched):
		if st.atomicOK.CompareAndSwap(true, false) {
			st.log.Warn("atomic batch publishes refused; publishing runs only", "error", err)
		}
		// errNotBatched: the server stored the messages one at a time;
		// reconcile indexes what it stored.
		return true, nil
	}
	return false, fmt.Errorf("publish %d entries: %w", n, err)
}

func apiErrCode(err error) int {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return int(apiErr.ErrorCode)
	}
	return 0
}

// markersBulk looks up the markers of ids with a few requests instead of
// one per id: a multi-get of the markers' last messages, which any replica
// of the bucket may answer (a direct get). To be sure that the answer is
// not behind the bucket's leader, it first asks the leader for the
// bucket's last sequence (the floor: every marker created before this
// call has a sequence up to it), and accepts an answer only from a
// replica that had stored up to the floor. ok is false when it could not
// answer (an old server, no direct gets, a replica that stayed behind):
// the caller looks the markers up one by one.
func (st *store) markersBulk(ctx context.Context, tenant, session string, ids []string) (out []bool, ok bool, err error) {
	stream := "KV_" + idsBucket
	lastMsg, err := st.getMsg(ctx, stream, msgGetRequest{LastBySubj: ">"})
	if err != nil {
		return nil, false, err
	}
	if lastMsg == nil {
		// No last message: the bucket is empty (no marker at all), or its
		// last message was deleted by hand. The leader's count tells.
		ictx, cancel := opCtx(ctx)
		defer cancel()
		s, err := st.js.Stream(ictx, stream)
		if err != nil {
			return nil, false, err
		}
		if s.CachedInfo().State.Msgs == 0 {
			return make([]bool, len(ids)), true, nil
		}
		return nil, false, nil
	}
	floor, sentinel := lastMsg.Seq, lastMsg.Subject
	prefix := "$KV." + idsBucket + "." + sessionKey(tenant, session) + "."
	out = make([]bool, len(ids))
	nchunks := (len(ids) + bulkLookupChunk - 1) / bulkLookupChunk
	oks := make([]bool, nchunks)
	errs := make([]error, nchunks)
	parallel(nchunks, 4, func(c int) {
		start := c * bulkLookupChunk
		part := ids[start:min(start+bulkLookupChunk, len(ids))]
		subjects := make([]string, 0, len(part)+1)
		for _, id := range part {
			subjects = append(subjects, prefix+id)
		}
		// The sentinel (the floor's own subject) makes every fresh answer
		// hold at least one message, hence the end-of-batch mark that
		// says how far the replica had stored.
		subjects = append(subjects, sentinel)
		for try := 0; try < 3; try++ {
			found, upTo, ok, err := st.directMultiLast(ctx, stream, subjects)
			if err != nil || !ok {
				errs[c] = err
				return
			}
			if upTo >= floor {
				for k, id := range part {
					out[start+k] = found[prefix+id]
				}
				oks[c] = true
				return
			}
			st.log.Debug("marker multi-get answered by a replica behind the leader", "stored", upTo, "floor", floor)
		}
	})
	for c := range oks {
		if errs[c] != nil {
			return nil, false, errs[c]
		}
		if !oks[c] {
			return nil, false, nil
		}
	}
	return out, true, nil
}

// directGet reads one message from stream with a direct get (any replica
// may answer: on a standalone server, the stream itself, from the store
// that acknowledged every write before). ok is false when it got no usable
// answer (no direct gets, an answer from another stream, a mirror).
func (st *store) directGet(ctx context.Context, stream string, req msgGetRequest) (m *rawMsg, ok bool, err error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, false, err
	}
	ctx, cancel := opCtx(ctx)
	defer cancel()
	resp, err := st.nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET."+stream, body)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("get message from %s: %w", stream, err)
	}
	switch resp.Header.Get("Status") {
	case "":
	case "404":
		return nil, true, nil
	default:
		return nil, false, nil
	}
	seq, perr := strconv.ParseUint(resp.Header.Get(jetstream.SequenceHeader), 10, 64)
	if resp.Header.Get(jetstream.StreamHeader) != stream || perr != nil {
		return nil, false, nil
	}
	return &rawMsg{Subject: resp.Header.Get(jetstream.SubjectHeader), Seq: seq, Header: resp.Header, Data: resp.Data}, true, nil
}

// directMultiLast asks stream (any replica, it must allow direct gets) for
// the last message of each of subjects. found holds the subjects that
// have one (a KV delete or purge mark is no marker), upTo how far the
// answering replica had stored. ok is false when the server cannot answer
// such a request.
func (st *store) directMultiLast(ctx context.Context, stream string, subjects []string) (found map[string]bool, upTo uint64, ok bool, err error) {
	body, err := json.Marshal(struct {
		MultiLast []string `json:"multi_last"`
	}{subjects})
	if err != nil {
		return nil, 0, false, err
	}
	inbox := nats.NewInbox()
	sub, err := st.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, 0, false, fmt.Errorf("look up markers: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := st.nc.PublishRequest("$JS.API.DIRECT.GET."+stream, inbox, body); err != nil {
		return nil, 0, false, fmt.Errorf("look up markers: %w", err)
	}
	ctx, cancel := opCtx(ctx)
	defer cancel()
	found = make(map[string]bool, len(subjects))
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return nil, 0, false, fmt.Errorf("look up markers: %w", err)
		}
		switch status := m.Header.Get("Status"); status {
		case "":
			if m.Header.Get(jetstream.StreamHeader) != stream {
				return nil, 0, false, nil // another stream's (a mirror's) answer
			}
			if op := m.Header.Get("KV-Operation"); op != "DEL" && op != "PURGE" {
				found[m.Header.Get(jetstream.SubjectHeader)] = true
			}
		case "204": // end of the answer
			upTo, err := strconv.ParseUint(m.Header.Get("Nats-UpTo-Sequence"), 10, 64)
			if err != nil {
				return nil, 0, false, nil
			}
			return found, upTo, true, nil
		case "404":
			// No message at all, not even the sentinel: a replica behind.
			return found, 0, true, nil
		case "408":
			// A server that does not know multi-gets takes it for an
			// empty request: never ask it again.
			if st.bulkOK.CompareAndSwap(true, false) {
				st.log.Info("the NATS server does not answer multi-gets; looking up entry markers one by one",
					"status", status+" "+m.Header.Get("Description"))
			}
			return nil, 0, false, nil
		default: // 503: no replica answers direct gets (yet)
			st.log.Debug("marker multi-get refused", "status", status+" "+m.Header.Get("Description"))
			return nil, 0, false, nil
		}
	}
}

// msgIDPrefix starts the Nats-Msg-Id of an entry of the session:
// <tenant>.<session>.[<epoch>.]. The epoch (the session's metadata) changes
// when entries are deleted, so that entries sent again after a delete are
// not taken by the duplicate window for the ones deleted.
func msgIDPrefix(tenant, session, epoch string) string {
	if epoch == "" {
		return sessionKey(tenant, session) + "."
	}
	return sessionKey(tenant, session) + "." + epoch + "."
}
