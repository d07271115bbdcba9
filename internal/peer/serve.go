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
	v, _ := pools.LoadOrStore(p.Node+"\x00"+p.Dir, new(pool))
	pl := v.(*pool)
	pl.mu.Lock()
	if pl.cond == nil {
		pl.cond = sync.NewCond(&pl.mu)
	}
	pl.mu.Unlock()
	return pl
}

// acquire takes an idle server, starts one while fewer than one per core
// run, or waits for one to come back.
func (p *Peer) acquire(pl *pool) (*server, error) {
	pl.mu.Lock()
	for len(pl.idle) == 0 && pl.count >= runtime.GOMAXPROCS(0) {
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
	cmd.Env = peerEnv()
	s := &server{cmd: cmd, stderr: &tailBuffer{max: 64 << 10}}
	cmd.Stderr = s.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start node peer.mjs serve: %w", err)
	}
	s.in, s.out = in, bufio.NewReaderSize(out, 1<<20)
	return s, nil
}

// call runs one peer.mjs command line in a server and returns the JSON
// value it answered. A failed command, a dead server or a timeout fails t
// with the command and the server's stderr; a server that timed out or
// died is replaced by the next call.
func (p *Peer) call(t testing.TB, args ...string) json.RawMessage {
	t.Helper()
	pl := p.pool()
	s, err := p.acquire(pl)
	if err != nil {
		t.Fatalf("peer: %v", err)
	}
	req, err := json.Marshal(args)
	if err != nil {
		pl.release(s)
		t.Fatal(err)
	}
	type answer struct {
		line []byte
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		if _, err := s.in.Write(append(req, '\n')); err != nil {
			ch <- answer{err: err}
			return
		}
		line, err := s.out.ReadBytes('\n')
		ch <- answer{line, err}
	}()
	timer := time.NewTimer(p.timeout())
	defer timer.Stop()
	start := time.Now()
	var a answer
	select {
	case a = <-ch:
	case <-timer.C:
		pl.drop(s)
		t.Fatalf("peer: node peer.mjs %s: timed out after %v\nstderr:\n%s", strings.Join(args, " "), p.timeout(), s.stderr)
	}
	if a.err != nil {
		pl.drop(s)
		t.Fatalf("peer: node peer.mjs %s: %v (after %v)\nstderr:\n%s", strings.Join(args, " "), a.err,
			time.Since(start).Round(time.Millisecond), s.stderr)
	}
	pl.release(s)
	var res struct {
		OK    bool            `json:"ok"`
		Out   json.RawMessage `json:"out"`
		Error string          `json:"error"`
	}
	if err := json.Unmarshal(a.line, &res); err != nil {
		t.Fatalf("peer: node peer.mjs %s answered %.2000s: %v", strings.Join(args, " "), a.line, err)
	}
	if !res.OK {
		t.Fatalf("peer: node peer.mjs %s: %s\nstderr:\n%s", strings.Join(args, " "), res.Error, s.stderr)
	}
	return res.Out
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
