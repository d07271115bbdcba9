package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/e0dc0000/scribe/server/wire"
)

// cluster is a JetStream cluster of nats-servers on loopback.
type cluster struct {
	t     testing.TB
	opts  []*natsserver.Options
	nodes []*natsserver.Server
}

// startCluster runs a JetStream cluster of n nats-servers on loopback.
// Each node's cluster listener takes a free port of its own (port -1, so no
// port is picked, freed and raced for by other tests), routes to the nodes
// started before it (the first to nowhere), and learns of the others by gossip; once all are up,
// each node's options name its port and every other node's, so a node
// restarted after kill comes back where it was.
func startCluster(t testing.TB, n int) *cluster {
	t.Helper()
	c := &cluster{t: t, opts: make([]*natsserver.Options, n), nodes: make([]*natsserver.Server, n)}
	t.Cleanup(func() {
		for _, ns := range c.nodes {
			if ns == nil {
				continue
			}
			ns.Shutdown()
			ns.WaitForShutdown()
		}
	})
	// JetStream clustering wants a route configured from the start; the
	// first node gets one to port 1, where nothing listens, until the
	// others route to it.
	nowhere := &url.URL{Scheme: "nats-route", Host: "127.0.0.1:1"}
	var routes []*url.URL
	for i := range c.nodes {
		seed := routes
		if i == 0 {
			seed = []*url.URL{nowhere}
		}
		c.opts[i] = &natsserver.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       -1,
			JetStream:  true,
			StoreDir:   t.TempDir(),
			NoSigs:     true,
			NoLog:      true,
			Cluster:    natsserver.ClusterOpts{Name: "scribe-test", Host: "127.0.0.1", Port: -1},
			Routes:     append([]*url.URL(nil), seed...),
		}
		c.start(i)
		ns := c.nodes[i]
		if !ns.ReadyForConnections(20 * time.Second) {
			t.Fatalf("%s did not start", ns.Name())
		}
		addr := ns.ClusterAddr()
		if addr == nil {
			t.Fatalf("%s has no cluster listener", ns.Name())
		}
		c.opts[i].Cluster.Port = addr.Port
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", addr.Port)})
	}
	for i := range c.opts {
		c.opts[i].Routes = nil
		for j, r := range routes {
			if j != i {
				c.opts[i].Routes = append(c.opts[i].Routes, r)
			}
		}
	}
	return c
}

// start starts node i (again, on its store, after kill).
func (c *cluster) start(i int) {
	ns, err := natsserver.NewServer(c.opts[i].Clone())
	if err != nil {
		c.t.Fatal(err)
	}
	ns.Start()
	c.nodes[i] = ns
}

// kill stops node i.
func (c *cluster) kill(i int) {
	c.nodes[i].Shutdown()
	c.nodes[i].WaitForShutdown()
}

// chaos is something done to the cluster once a share of the pushes is done.
type chaos struct {
	at   float64
	what string
	do   func(c *cluster)
}

// pushClient follows the real client's protocol, retrying what it must.
type pushClient struct {
	*client
	deadline time.Time
}

// putEntry PUTs one entry until it is stored: 201, or 409 naming the
// entry itself; a 409 naming another uuid is adopted; other failures are
// retried with backoff. It returns the new last uuid.
func (p *pushClient) putEntry(session string, e []byte, last string) (string, error) {
	id := uuidOf(p.t, e)
	for attempt := 0; ; attempt++ {
		if time.Now().After(p.deadline) {
			return last, fmt.Errorf("entry %s: gave up", id)
		}
		r, err := p.try(http.MethodPut, "/v1/session_ingress/session/"+session, e, "Last-Uuid", last)
		switch {
		case err != nil:
		case r.code == http.StatusCreated:
			return id, nil
		case r.code == http.StatusConflict && r.hdr.Get("x-last-uuid") == id:
			return id, nil
		case r.code == http.StatusConflict && r.hdr.Get("x-last-uuid") != "":
			last = r.hdr.Get("x-last-uuid")
			continue
		case r.code >= 500:
		default:
			return last, fmt.Errorf("entry %s: %s", id, r)
		}
		time.Sleep(backoff(attempt, 50*time.Millisecond, time.Second))
	}
}

// postBatch POSTs a batch until the server answers 200.
func (p *pushClient) postBatch(session string, entries [][]byte) error {
	body := eventsBody(entries...)
	for attempt := 0; ; attempt++ {
		if time.Now().After(p.deadline) {
			return errors.New("batch: gave up")
		}
		r, err := p.try(http.MethodPost, "/v1/code/sessions/"+session+"/events", body)
		switch {
		case err != nil:
		case r.code == http.StatusOK:
			return nil
		case r.code >= 500:
		default:
			return fmt.Errorf("batch: %s", r)
		}
		time.Sleep(backoff(attempt, 50*time.Millisecond, time.Second))
	}
}

// clusterPush runs two scribe servers on a 3-node JetStream cluster (R3),
// pushes perSession entries into three sessions through both, some of the
// same entries through both at once, does what steps say to the cluster
// along the way, and checks that History holds every entry once, in order,
// through either server.
func clusterPush(t *testing.T, perSession int, budget time.Duration, steps ...chaos) {
	cl := startCluster(t, 3)
	twoWriters(t, cl, cl.nodes[1].ClientURL(), cl.nodes[2].ClientURL(), 3, perSession, budget, steps...)
}

// twoWriters is clusterPush with scribe servers on NATS urlA and urlB
// (steps act on cl).
func twoWriters(t *testing.T, cl *cluster, urlA, urlB string, replicas, perSession int, budget time.Duration, steps ...chaos) {
	cfg := func(url string) Config {
		return Config{Listen: "127.0.0.1:0", NatsURL: url, Replicas: replicas, DuplicateWindow: "1s", Tokens: testTokens()}
	}
	a := startServer(t, cfg(urlA))
	b := startServer(t, cfg(urlB))
	deadline := time.Now().Add(budget)
	pa := &pushClient{client: newClient(t, a, tokACME), deadline: deadline}
	pb := &pushClient{client: newClient(t, b, tokACME), deadline: deadline}

	sessions := []string{newUUID(), newUUID(), newUUID()}
	want := twoWritersChains(sessions, perSession)

	var done atomic.Int64
	total := int64(perSession * 4) // session 0 is pushed twice
	killed := runChaos(t, cl, steps, &done, total, deadline)
	errs := pushTwoWays(pa, pb, sessions, want, &done)
	<-killed
	for _, err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	for _, p := range []*pushClient{pa, pb} {
		for i, sess := range sessions {
			checkItems(t, readHistory(t, p, sess, i, deadline), want[i])
		}
	}
	if n := streamMsgs(t, b); n != uint64(3*perSession) {
		t.Errorf("stream holds %d messages, want %d", n, 3*perSession)
	}
	t.Logf("fence retries: a %d, b %d; repaired: a %d, b %d", a.m.FenceRetries.Load(), b.m.FenceRetries.Load(),
		a.m.Repaired.Load(), b.m.Repaired.Load())
}

// twoWritersChains makes perSession chained entries for each session.
func twoWritersChains(sessions []string, perSession int) [][][]byte {
	want := make([][][]byte, len(sessions))
	for i, sess := range sessions {
		parent := ""
		for k := 0; k < perSession; k++ {
			id := newUUID()
			want[i] = append(want[i], chainEntry(sess, id, parent, fmt.Sprintf("session %d entry %d", i, k)))
			parent = id
		}
	}
	return want
}

// runChaos does each step to cl once its share of total pushes is done (or
// the deadline passed), and closes the returned channel after the last.
func runChaos(t *testing.T, cl *cluster, steps []chaos, done *atomic.Int64, total int64, deadline time.Time) <-chan struct{} {
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		for _, st := range steps {
			for done.Load() < int64(st.at*float64(total)) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			t.Logf("%s after %d of %d pushes", st.what, done.Load(), total)
			st.do(cl)
		}
	}()
	return killed
}

// pushTwoWays pushes the three sessions' entries at once, counting each in
// done, and returns the pushers' errors once all are finished: session 0
// by PUTs through pa and the same entries in batches through pb, session 1
// by PUTs alternating between pa and pb, session 2 in batches through pa.
func pushTwoWays(pa, pb *pushClient, sessions []string, want [][][]byte, done *atomic.Int64) []error {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	// Session 0: PUTs through a, and the same entries in batches through b.
	wg.Add(1)
	go func() {
		defer wg.Done()
		last := ""
		for _, e := range want[0] {
			var err error
			if last, err = pa.putEntry(sessions[0], e, last); err != nil {
				errs <- fmt.Errorf("session 0 via a: %w", err)
				return
			}
			done.Add(1)
		}
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k := 0; k < len(want[0]); k += 10 {
			batch := want[0][k:min(k+10, len(want[0]))]
			if err := pb.postBatch(sessions[0], batch); err != nil {
				errs <- fmt.Errorf("session 0 via b: %w", err)
				return
			}
			done.Add(int64(len(batch)))
		}
	}()
	// Session 1: PUTs through a, alternating with b.
	wg.Add(1)
	go func() {
		defer wg.Done()
		last := ""
		for k, e := range want[1] {
			p := pa
			if k%2 == 1 {
				p = pb
			}
			var err error
			if last, err = p.putEntry(sessions[1], e, last); err != nil {
				errs <- fmt.Errorf("session 1: %w", err)
				return
			}
			done.Add(1)
		}
	}()
	// Session 2: batches through a.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k := 0; k < len(want[2]); k += 25 {
			batch := want[2][k:min(k+25, len(want[2]))]
			if err := pa.postBatch(sessions[2], batch); err != nil {
				errs <- fmt.Errorf("session 2: %w", err)
				return
			}
			done.Add(int64(len(batch)))
		}
	}()
	wg.Wait()
	close(errs)
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// readHistory reads session i's history through p, retrying until the
// deadline, since reads may also meet a leader election.
func readHistory(t *testing.T, p *pushClient, sess string, i int, deadline time.Time) []wire.HistoryEvent {
	for attempt := 0; ; attempt++ {
		page, r := p.teleportTry(sess)
		if r == nil {
			return page
		}
		if time.Now().After(deadline) {
			t.Fatalf("history of session %d: %v", i, r)
		}
		time.Sleep(backoff(attempt, 50*time.Millisecond, time.Second))
	}
}

// teleportTry reads all of a session's history, or returns an error.
func (p *pushClient) teleportTry(session string) ([]wire.HistoryEvent, error) {
	var all []wire.HistoryEvent
	cursor := ""
	for {
		q := "?limit=1000"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		r, err := p.try(http.MethodGet, "/v1/code/sessions/"+session+"/teleport-events"+q, nil)
		if err != nil {
			return nil, err
		}
		if r.code != http.StatusOK {
			return nil, errors.New(r.String())
		}
		var page wire.HistoryPage
		if err := json.Unmarshal(r.body, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Data...)
		if page.NextCursor == nil {
			return all, nil
		}
		cursor = *page.NextCursor
	}
}

// TestStandaloneTwoWriters is clusterPush on one standalone nats-server,
// where a request is published as a run, which the other writer may
// overtake.
func TestStandaloneTwoWriters(t *testing.T) {
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(20 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	twoWriters(t, nil, ns.ClientURL(), ns.ClientURL(), 1, 300, 60*time.Second)
}

// TestCluster is the small version, part of every run; TestClusterSoak
// (build tag soak) pushes more.
func TestCluster(t *testing.T) {
	clusterPush(t, 120, 90*time.Second,
		chaos{at: 1.0 / 3, what: "kill n2 (the first server's node)", do: func(c *cluster) { c.kill(1) }})
}
