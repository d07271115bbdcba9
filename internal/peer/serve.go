package peer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// A server is a `node peer.mjs serve` process: it loads the SDK once and
// then answers one command per line. Loading the SDK is most of a node
// run (about 230 of 350 ms), and a test binary makes hundreds of calls.
// The SDK reads CLAUDE_CONFIG_DIR at every call, which peer.mjs sets per
// command, so one process serves every config folder.
type server struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *tailBuffer
}

// pool holds the servers of one node binary and peer folder: at most one
// per core, started when first needed and kept until the test binary
// exits (their standard input closes then, and they end).
type pool struct {
	mu    sync.Mutex
	cond  *sync.Cond
	idle  []*server
	count int
}

var pools sync.Map // node + "\x00" + dir -> *pool

func (p *Peer) pool() *pool {
	key := p.Node + "\x00" + p.Dir
	if v, ok := pools.Load(key); ok {
		return v.(*pool)
	}
	pl := &pool{}
	pl.cond = sync.NewCond(&pl.mu)
	v, _ := pools.LoadOrStore(key, pl)
	return v.(*pool)
}

// acquire takes an idle server, starts one while fewer than one per core
// run, or waits for one to come back.
func (p *Peer) acquire(pl *pool) (*server, error) {
	pl.mu.Lock()
	for len(pl.idle) == 0 && pl.count >= maxServers() {
		pl.cond.Wait()
	}
	if n := len(pl.idle); n > 0 {
		s := pl.idle[n-1]
		pl.idle = pl.idle[:n-1]
		pl.mu.Unlock()
		return s, nil
	}
	pl.count++
	pl.mu.Unlock()
	s, err := p.startServer()
	if err != nil {
		pl.drop(nil)
	}
	return s, err
}

// maxServers is one server per core, at most 4: each holds about 70 MB,
// and go test runs several test binaries side by side.
func maxServers() int { return min(runtime.GOMAXPROCS(0), 4) }

func (pl *pool) release(s *server) {
	pl.mu.Lock()
	pl.idle = append(pl.idle, s)
	pl.mu.Unlock()
	pl.cond.Signal()
}

// drop ends s (if any) and frees its place.
func (pl *pool) drop(s *server) {
	if s != nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
	pl.mu.Lock()
	pl.count--
	pl.mu.Unlock()
	pl.cond.Signal()
}

func (p *Peer) startServer() (*server, error) {
	cmd := exec.Command(p.Node, filepath.Join(p.Dir, "peer.mjs"), "serve")
	cmd.Dir = p.Dir
	cmd.Env = p.env()
	s := &server{cmd: cmd, stderr: &tailBuffer{max: 64 << 10}}
	cmd.Stderr = s.stderr
	// Kill ends node; a child of it still holding stderr must not keep
	// Wait (in drop) from returning.
	cmd.WaitDelay = 5 * time.Second
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		_ = in.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start node peer.mjs serve: %w", err)
	}
	s.in, s.out = in, bufio.NewReaderSize(out, 1<<20)
	return s, nil
}

// call runs one peer.mjs command line in a server and returns the JSON
// value it answered. A failed command, a dead server, an answer that is
// not one, or a timeout fails t with the command and the server's stderr;
// a server in doubt is ended, never put back, and the next call starts
// another. A request the server never received (it had died while idle)
// is sent once more to a new one.
func (p *Peer) call(t testing.TB, args ...string) json.RawMessage {
	t.Helper()
	req, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
		return nil
	}
	pl := p.pool()
	for attempt := 0; ; attempt++ {
		out, undelivered, err := p.ask(pl, append(req, '\n'))
		if err == nil {
			return out
		}
		if undelivered && attempt == 0 {
			continue
		}
		t.Fatalf("peer: node peer.mjs %s: %v", strings.Join(args, " "), err)
		return nil
	}
}

// ask sends one request line to a server of pl and reads its answer. The
// server goes back to the pool only after a whole, well-formed answer.
func (p *Peer) ask(pl *pool, req []byte) (_ json.RawMessage, undelivered bool, _ error) {
	s, err := p.acquire(pl)
	if err != nil {
		return nil, false, err
	}
	type answer struct {
		line        []byte
		undelivered bool
		err         error
	}
	ch := make(chan answer, 1)
	go func() {
		if _, err := s.in.Write(req); err != nil {
			ch <- answer{undelivered: true, err: err}
			return
		}
		line, err := s.out.ReadBytes('\n')
		ch <- answer{line: line, err: err}
	}()
	timer := time.NewTimer(p.timeout())
	defer timer.Stop()
	start := time.Now()
	var a answer
	select {
	case a = <-ch:
	case <-timer.C:
		pl.drop(s)
		return nil, false, fmt.Errorf("timed out after %v\nstderr:\n%s", p.timeout(), s.stderr)
	}
	if a.err != nil {
		pl.drop(s)
		return nil, a.undelivered, fmt.Errorf("%v (after %v)\nstderr:\n%s", a.err, time.Since(start).Round(time.Millisecond), s.stderr)
	}
	var res struct {
		OK    bool            `json:"ok"`
		Out   json.RawMessage `json:"out"`
		Error string          `json:"error"`
	}
	if err := json.Unmarshal(a.line, &res); err != nil {
		// Not an answer: whatever follows may be this request's, so the
		// server cannot serve another.
		pl.drop(s)
		return nil, false, fmt.Errorf("answered %.2000s: %v\nstderr:\n%s", a.line, err, s.stderr)
	}
	pl.release(s)
	if !res.OK {
		return nil, false, fmt.Errorf("%s\nstderr:\n%s", res.Error, s.stderr)
	}
	return res.Out, false, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b = append(b.b, p...)
	if over := len(b.b) - b.max; over > 0 {
		b.b = append(b.b[:0], b.b[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.b)
}
