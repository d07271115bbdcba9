package server

// The store's side of the Agent SDK's SessionStore (sessionstore.go has the
// routes): project keys bound to sessions, keys read, deleted and listed,
// and the summaries the SDK folds.
//
// A SessionStore key {projectKey, sessionId, subpath?} is the session's
// own messages: the main transcript is scribe.<tenant>.<session>.m, the
// subpath subagents/agent-<id> is scribe.<tenant>.<session>.a.<id>. So a
// session an SDK app stores is the same session for the History API,
// `scribe ls --remote` and `scribe pull`; <session> is the name the key's
// session is kept under (its UUID, or storekey.Name of the pair: see
// sessionstore.go, resolveKey and bindKey). The project key lives in the
// session's metadata (project_key, with store_session_id when the id is not
// the name), set by the first append and never changed; a key of another
// project does not exist for a request.
//
// Deleting is a few purges whatever the session's size: the main key
// purges the session's subjects, its markers (one subject filter), its
// metadata and its summary; a subpath purges the subagent's subject and
// its markers (a.<agent>.* id keys), then lowers the metadata. (Entries
// of that subagent written through another route have u./k./h. markers,
// which a subpath delete leaves: sent again through that route, they would
// be taken as stored. A main-key delete removes every marker.) The
// purges come first and the metadata last, so a delete cut short by a
// crash leaves metadata ahead of the stream: appends to that session are
// then refused (503, the fence) until the delete is sent again, which
// finishes it. Nothing is ever half-visible as entries.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/server/storekey"
	"github.com/nats-io/nats.go/jetstream"
)

// errProjectMismatch: a session bound to another project key.
var errProjectMismatch = errors.New("the session belongs to another project key")

// errSummaryStale: a summary written with a revision that is not the
// stored one.
var errSummaryStale = errors.New("the summary changed since it was read")

// resolveKey is k with the name its session is kept under, for a request
// that does not write entries: a UUID session id names its own session
// while that one is bound to k's project key, else the pair's name (which
// may hold nothing).
func (st *store) resolveKey(ctx context.Context, tenant string, k storeKey) (storeKey, error) {
	if k.Pair == "" {
		return k, nil
	}
	meta, _, err := st.loadMeta(ctx, tenant, k.Session)
	if err != nil {
		return k, err
	}
	if meta == nil || meta.ProjectKey != k.Project {
		k.Session = k.Pair
	}
	return k, nil
}

// bindKey is k with the name its entries go under, the session bound to
// k's project key (bindProject). A UUID session id takes its own name
// unless another project key has it, or the pair's session exists
// already (written while another project key had the UUID, which it may
// have deleted since: the pair's entries stay one session).
func (st *store) bindKey(ctx context.Context, tenant string, k storeKey) (storeKey, error) {
	if k.Pair == "" {
		return k, st.bindProject(ctx, tenant, k.Session, k.Project, k.ID)
	}
	meta, _, err := st.loadMeta(ctx, tenant, k.Session)
	if err != nil || (meta != nil && meta.ProjectKey == k.Project) {
		return k, err // bound already: every append but the first
	}
	// The choice is made under the pair's lock: two appends of the key
	// (one reading the UUID taken, the other reading it free after a
	// delete by its project key) would bind both names otherwise, and
	// reads take the UUID's. Between processes of a cluster it stays
	// open; a client sends a key's appends one after the other.
	mu := st.lock(sessionKey(tenant, k.Pair))
	mu.Lock()
	defer mu.Unlock()
	pair, _, err := st.loadMeta(ctx, tenant, k.Pair)
	if err != nil {
		return k, err
	}
	if meta, _, err = st.loadMeta(ctx, tenant, k.Session); err != nil {
		return k, err
	}
	if pair != nil || (meta != nil && meta.ProjectKey != "" && meta.ProjectKey != k.Project) {
		k.Session = k.Pair
	}
	err = st.bindProject(ctx, tenant, k.Session, k.Project, k.ID)
	if errors.Is(err, errProjectMismatch) && k.Session != k.Pair {
		// Another project key bound the UUID since it was read.
		k.Session = k.Pair
		err = st.bindProject(ctx, tenant, k.Session, k.Project, k.ID)
	}
	return k, err
}

// subpathName is the marker key (in the ids bucket, so that the purges of
// a delete take it with the agent's markers) that keeps the subpath of an
// agent named after its hash.
func subpathName(tenant, session, agent string) string {
	return sessionKey(tenant, session) + ".a." + agent + ".subpath"
}

// nameSubpath keeps k's subpath, before its first entries are stored.
func (st *store) nameSubpath(ctx context.Context, tenant string, k storeKey) error {
	if k.Subpath == "" {
		return nil
	}
	ctx, cancel := opCtx(ctx)
	defer cancel()
	if _, err := st.ids.Put(ctx, subpathName(tenant, k.Session, k.Agent), []byte(k.Subpath)); err != nil {
		return fmt.Errorf("name subpath: %w", err)
	}
	return nil
}

// bindProject binds the session to project (and the session id id the
// client names it by) at its first append, or checks the binding:
// errProjectMismatch when it is bound to another project. A session
// written before through another route is bound now.
func (st *store) bindProject(ctx context.Context, tenant, session, project, id string) error {
	// Bound already (every append but the first): one read.
	if meta, _, err := st.loadMeta(ctx, tenant, session); err != nil || (meta != nil && meta.ProjectKey == project) {
		return err
	}
	for attempt := 0; ; attempt++ {
		meta, rev, err := st.reconcile(ctx, tenant, session)
		if err != nil {
			return err
		}
		switch {
		case meta != nil && meta.ProjectKey == project:
			return nil
		case meta != nil && meta.ProjectKey != "":
			return fmt.Errorf("%w %q", errProjectMismatch, truncate(meta.ProjectKey, 100))
		}
		now := time.Now().UTC()
		next := &sessionMeta{Tenant: tenant, Session: session, CreatedAt: now, UpdatedAt: now, Epoch: newEpoch()}
		if meta != nil {
			next = meta.clone()
		}
		next.ProjectKey = project
		if id != session {
			next.StoreSessionID = id
		}
		_, err = st.putMeta(ctx, tenant, session, next, rev)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errMetaMismatch) || attempt >= maxFenceAttempts {
			return err
		}
		if err := durable.Sleep(ctx, backoff(attempt, time.Millisecond, 50*time.Millisecond)); err != nil {
			return err
		}
	}
}

// keyMeta returns the session's up-to-date metadata and revision when it
// holds k (nil otherwise: no session, another project, an empty key).
func (st *store) keyMeta(ctx context.Context, tenant string, k storeKey) (*sessionMeta, uint64, error) {
	meta, rev, err := st.reconcile(ctx, tenant, k.Session)
	if err != nil || meta == nil || meta.ProjectKey != k.Project || meta.Trash != nil {
		return nil, 0, err
	}
	if k.Agent == "" && meta.MainCount == 0 {
		return nil, 0, nil
	}
	if a := meta.Agents[k.Agent]; k.Agent != "" && (a == nil || a.Count == 0) {
		return nil, 0, nil
	}
	return meta, rev, nil
}

// keyRead is what a read of k covers: nil when the store does not hold k.
func (st *store) keyRead(ctx context.Context, tenant string, k storeKey) (*readOpts, error) {
	meta, _, err := st.keyMeta(ctx, tenant, k)
	if err != nil || meta == nil {
		return nil, err
	}
	o := &readOpts{filters: []string{mainSubject(tenant, k.Session)}, start: 1, end: meta.MainLastSeq,
		limit: maxInt, maxBytes: maxInt}
	if k.Agent != "" {
		o.filters, o.end = []string{agentSubject(tenant, k.Session, k.Agent)}, meta.Agents[k.Agent].LastSeq
	}
	return o, nil
}

const maxInt = int(^uint(0) >> 1)

// subkeys lists the subpaths the session holds, sorted.
func (st *store) subkeys(ctx context.Context, tenant string, k storeKey) ([]string, error) {
	meta, _, err := st.reconcile(ctx, tenant, k.Session)
	if err != nil || meta == nil || meta.ProjectKey != k.Project || meta.Trash != nil {
		return []string{}, err
	}
	out := []string{}
	for a, m := range meta.Agents {
		switch {
		case m.Count == 0:
		case strings.HasPrefix(a, storekey.NestedAgent):
			name, _, err := st.kvGet(ctx, idsBucket, subpathName(tenant, k.Session, a))
			if err != nil {
				return nil, err
			}
			if name != nil {
				out = append(out, string(name))
			}
		default:
			out = append(out, storekey.SubagentPrefix+a)
		}
	}
	sort.Strings(out)
	return out, nil
}

// projectSession is a session of a project, for listSessions.
type projectSession struct {
	SessionID string `json:"sessionId"`
	MTime     int64  `json:"mtime"`
}

// projectSessions lists the project's sessions that have a main
// transcript, with the time it last grew in epoch milliseconds.
func (st *store) projectSessions(ctx context.Context, tenant, project string) ([]projectSession, error) {
	metas, err := st.listSessions(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out := []projectSession{}
	for _, m := range metas {
		if m.Tenant != tenant || m.ProjectKey != project || m.MainCount == 0 || m.Trash != nil {
			continue
		}
		out = append(out, projectSession{SessionID: m.storeID(), MTime: mainMTime(m)})
	}
	return out, nil
}

// mainMTime is the main transcript's last write in epoch milliseconds
// (the session's last write for metadata older than MainUpdatedAt).
func mainMTime(m *sessionMeta) int64 {
	if !m.MainUpdatedAt.IsZero() {
		return m.MainUpdatedAt.UnixMilli()
	}
	return m.UpdatedAt.UnixMilli()
}

// deleteKey deletes k: the main key with everything of the session, a
// subpath alone. A key the store does not hold is not an error. It
// returns the number of entries removed.
func (st *store) deleteKey(ctx context.Context, tenant string, k storeKey) (uint64, error) {
	mu := st.lock(sessionKey(tenant, k.Session))
	mu.Lock()
	defer mu.Unlock()
	meta, rev, err := st.reconcile(ctx, tenant, k.Session)
	if err != nil || meta == nil || meta.ProjectKey != k.Project || meta.Trash != nil {
		return 0, err // a session in the trash is deleted by emptying it
	}
	prefix := sessionKey(tenant, k.Session)
	if k.Agent == "" {
		return st.purgeSession(ctx, tenant, k.Session)
	}
	if meta.Agents[k.Agent] == nil {
		return 0, nil
	}
	n, err := st.purge(ctx, streamName, agentSubject(tenant, k.Session, k.Agent))
	if err == nil {
		_, err = st.purge(ctx, "KV_"+idsBucket, "$KV."+idsBucket+"."+prefix+".a."+k.Agent+".>")
	}
	for attempt := 0; err == nil; attempt++ {
		err = st.dropAgent(ctx, tenant, k.Session, k.Agent, meta, rev)
		if !errors.Is(err, errMetaMismatch) || attempt >= maxFenceAttempts {
			break
		}
		if meta, rev, err = st.loadMeta(ctx, tenant, k.Session); err == nil && meta == nil {
			return n, nil
		}
	}
	return n, err
}

// purgeSession deletes everything of the session: its subjects, its
// markers, its summary, its metadata last (see the top of this file). The
// caller holds the session's lock.
func (st *store) purgeSession(ctx context.Context, tenant, session string) (uint64, error) {
	prefix := sessionKey(tenant, session)
	n, err := st.purge(ctx, streamName, sessionFilter(tenant, session))
	if err == nil {
		_, err = st.purge(ctx, "KV_"+idsBucket, "$KV."+idsBucket+"."+prefix+".>")
	}
	if err == nil {
		err = st.purgeKey(ctx, st.summaries, prefix)
	}
	if err == nil {
		err = st.purgeKey(ctx, st.sessions, prefix)
	}
	return n, err
}

// dropAgent takes a purged subagent out of the session's metadata: its
// counts, and the session's last sequence (the fence of the next append)
// back to the last message left.
func (st *store) dropAgent(ctx context.Context, tenant, session, agent string, meta *sessionMeta, rev uint64) error {
	next := meta.clone()
	if a := next.Agents[agent]; a != nil {
		next.Count -= a.Count
		delete(next.Agents, agent)
	}
	next.LastSeq = next.MainLastSeq
	for _, a := range next.Agents {
		next.LastSeq = max(next.LastSeq, a.LastSeq)
	}
	next.UpdatedAt = time.Now().UTC()
	next.Epoch = newEpoch()
	_, err := st.putMeta(ctx, tenant, session, next, rev)
	return err
}

// newEpoch draws a session epoch (see msgIDPrefix).
func newEpoch() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// purge removes the messages of stream on subject filter (one request) and
// returns how many there were.
func (st *store) purge(ctx context.Context, stream, filter string) (uint64, error) {
	body, err := json.Marshal(map[string]string{"filter": filter})
	if err != nil {
		return 0, err
	}
	ctx, cancel := opCtx(ctx)
	defer cancel()
	resp, err := st.nc.RequestWithContext(ctx, "$JS.API.STREAM.PURGE."+stream, body)
	if err != nil {
		return 0, fmt.Errorf("purge %s from %s: %w", filter, stream, err)
	}
	var r struct {
		Success bool   `json:"success"`
		Purged  uint64 `json:"purged"`
		Error   *struct {
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return 0, fmt.Errorf("purge %s from %s: bad response: %w", filter, stream, err)
	}
	if r.Error != nil || !r.Success {
		desc := "not done"
		if r.Error != nil {
			desc = fmt.Sprintf("%s (code %d)", r.Error.Description, r.Error.ErrCode)
		}
		return 0, fmt.Errorf("purge %s from %s: %s", filter, stream, desc)
	}
	return r.Purged, nil
}

// purgeKey removes a key's value and history from a bucket.
func (st *store) purgeKey(ctx context.Context, kv jetstream.KeyValue, key string) error {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	if err := kv.Purge(ctx, key); err != nil {
		return fmt.Errorf("purge %s: %w", key, err)
	}
	return nil
}

// summary is the stored value of a SessionStore summary.
type summary struct {
	Project string          `json:"project_key"`
	Session string          `json:"session_id"`
	MTime   int64           `json:"mtime"`
	Data    json.RawMessage `json:"data"`
	// Folds are the ids of the last folds written (maxFolds), so that a
	// client whose answer was lost can tell whether its write landed.
	Folds []string `json:"folds,omitempty"`
}

const maxFolds = 16

// getSummary returns the session's summary and its revision (nil, 0 when
// there is none, or it is another project's).
func (st *store) getSummary(ctx context.Context, tenant string, k storeKey) (*summary, uint64, error) {
	b, rev, err := st.kvGet(ctx, summariesBucket, sessionKey(tenant, k.Session))
	if err != nil || b == nil {
		return nil, 0, err
	}
	var s summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, 0, fmt.Errorf("summary of %s: %w", sessionKey(tenant, k.Session), err)
	}
	if s.Project != k.Project {
		return nil, 0, nil
	}
	if meta, _, err := st.loadMeta(ctx, tenant, k.Session); err != nil || (meta != nil && meta.Trash != nil) {
		return nil, 0, err // a session in the trash has no summary
	}
	return &s, rev, nil
}

// putSummary writes the session's summary with a compare-and-set on rev
// (0: none yet): errSummaryStale when it moved. Its mtime is the server's
// clock, never before the main transcript's last write, so the SDK does
// not take it for stale next to listSessions.
func (st *store) putSummary(ctx context.Context, tenant string, k storeKey, data json.RawMessage, foldID string, rev uint64) (*summary, uint64, error) {
	meta, _, err := st.reconcile(ctx, tenant, k.Session)
	switch {
	case err != nil:
		return nil, 0, err
	case meta == nil || meta.Trash != nil:
		return nil, 0, errNoSession
	case meta.ProjectKey != k.Project:
		return nil, 0, fmt.Errorf("%w %q", errProjectMismatch, truncate(meta.ProjectKey, 100))
	}
	s := &summary{Project: k.Project, Session: k.ID, Data: data,
		MTime: max(time.Now().UnixMilli(), mainMTime(meta))}
	if rev != 0 {
		prev, prevRev, err := st.getSummary(ctx, tenant, k)
		if err != nil {
			return nil, 0, err
		}
		if prev == nil || prevRev != rev {
			return nil, 0, errSummaryStale
		}
		s.Folds = prev.Folds
	}
	if foldID != "" {
		s.Folds = append(s.Folds, foldID)
		s.Folds = s.Folds[max(0, len(s.Folds)-maxFolds):]
	}
	newRev, err := casPut(ctx, st.summaries, sessionKey(tenant, k.Session), s, rev)
	switch {
	case err == nil:
		return s, newRev, nil
	case errors.Is(err, errRevision):
		return nil, 0, errSummaryStale
	}
	return nil, 0, fmt.Errorf("write summary: %w", err)
}

// projectSummaries lists the project's summaries.
func (st *store) projectSummaries(ctx context.Context, tenant, project string) ([]*summary, error) {
	trashed, err := st.trashItems(ctx, tenant)
	if err != nil {
		return nil, err
	}
	hidden := map[string]bool{}
	for _, m := range trashed {
		hidden[sessionKey(tenant, m.Session)] = true
	}
	w, err := st.summaries.WatchFiltered(ctx, []string{tenant + ".*"}, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("list summaries: %w", err)
	}
	defer func() { _ = w.Stop() }()
	out := []*summary{}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("list summaries: %w", ctx.Err())
		case e, ok := <-w.Updates():
			if !ok || e == nil {
				return out, nil
			}
			var s summary
			if err := json.Unmarshal(e.Value(), &s); err != nil {
				st.log.Warn("skip unreadable summary", "key", e.Key(), "error", err)
				continue
			}
			if s.Project == project && !hidden[e.Key()] {
				out = append(out, &s)
			}
		}
	}
}
