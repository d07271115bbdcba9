package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/internal/testenv"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// ---------------------------------------------------------------------------
// A flaky network

// flakyProxy forwards loopback connections to target. Every dropEvery-th
// connection carries its request to the server and then is cut before the
// answer reaches the client (the server did the work; the client must
// retry without doubling it). The others are delayed up to maxDelay per
// chunk. Every connection is closed after its first answer (which says
// Connection: close), so each request needs a new one.
type flakyProxy struct {
	ln        net.Listener
	target    string
	dropEvery int64
	maxDelay  time.Duration

	conns, drops atomic.Int64
	wg           sync.WaitGroup
}

func startFlakyProxy(t *testing.T, target string, dropEvery int64, maxDelay time.Duration) *flakyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &flakyProxy{ln: ln, target: target, dropEvery: dropEvery, maxDelay: maxDelay}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := p.conns.Add(1)
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.handle(c, n%p.dropEvery == 0)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		done := make(chan struct{})
		go func() { p.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(40 * time.Second):
			t.Error("proxy connections still open 40s after the test")
		}
	})
	return p
}

func (p *flakyProxy) url() string { return "http://" + p.ln.Addr().String() }

func (p *flakyProxy) delay() {
	if p.maxDelay > 0 {
		time.Sleep(rand.N(p.maxDelay))
	}
}

func (p *flakyProxy) handle(c net.Conn, drop bool) {
	defer c.Close()
	s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	defer s.Close()
	deadline := time.Now().Add(30 * time.Second)
	_ = c.SetDeadline(deadline)
	_ = s.SetDeadline(deadline)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if !drop {
					p.delay()
				}
				if _, werr := s.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 256<<10)
	n, _ := s.Read(buf)
	if drop {
		p.drops.Add(1)
		return
	}
	if n > 0 {
		p.delay()
		_, _ = c.Write(closeAfter(buf[:n]))
	}
}

// closeAfter adds "Connection: close" to the head of an HTTP/1.1 answer, so
// that the client does not send its next request on a connection the proxy
// is about to close.
func closeAfter(b []byte) []byte {
	if !bytes.HasPrefix(b, []byte("HTTP/1.")) {
		return b
	}
	i := bytes.Index(b, []byte("\r\n"))
	if i < 0 {
		return b
	}
	out := append([]byte{}, b[:i+2]...)
	out = append(out, "Connection: close\r\n"...)
	return append(out, b[i+2:]...)
}

// recordHeld runs `scribe record --json` on input, keeping its stdin open
// (as a long-lived host would) until done reports true, polled every 50 ms
// for at most 90 s; then it closes stdin, so record makes its final flush
// and exits. A network sink that met a failure stops waiting in Flush and
// keeps its entries in its spool, still retrying in the background: the
// held stdin gives it the time to deliver them.
func recordHeld(t *testing.T, cfg, input string, done func() bool, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cloudCmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.BuildScribe(t), append([]string{"record", "--config", cfg, "--json"}, args...)...)
	cmd.Env = cleanEnv()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	var out cloudBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	_, werr := io.WriteString(stdin, input)
	deadline := time.Now().Add(90 * time.Second)
	for werr == nil && !done() {
		if time.Now().After(deadline) {
			werr = errors.New("the server did not get everything within 90s")
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stdin.Close()
	err = cmd.Wait()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v", cloudCmdTimeout)
	}
	return out.String(), errors.Join(werr, err)
}

// fileLines returns the lines of files, concatenated.
func fileLines(t *testing.T, files ...string) string {
	t.Helper()
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		if len(data) > 0 && data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func TestCloudIngressThroughFlakyProxy(t *testing.T) {
	srv := startCloudServer(t)
	proxy := startFlakyProxy(t, srv.addr, 4, 8*time.Millisecond)
	cfg, _ := cloudMachine(t, proxy.url(), "jsonl/local", "ingress/team")
	var exps []cloudExpect
	for _, sid := range []string{cloudUnits[0], cloudUnits[2]} {
		u := cloudUnit(t, sid)
		files := []string{u.main.abs}
		for _, a := range u.agents {
			files = append(files, a.abs)
		}
		e := expectFiles(t, layOriginal(t, t.TempDir(), u), u.sid, true)
		exps = append(exps, e)
		start := time.Now()
		out, err := recordHeld(t, cfg, fileLines(t, files...), func() bool { return srv.counts()[u.sid] >= int64(e.entries) },
			"--session", u.sid)
		if err != nil {
			t.Fatalf("record %s through the proxy: %v\n%s", u.sid, err, out)
		}
		t.Logf("recorded %s (%d entries) through the proxy in %v", u.sid, e.entries, time.Since(start).Round(time.Millisecond))
	}
	dups := srv.metric("scribe_entries_duplicate_total")
	t.Logf("proxy: %d connections, %d answers lost; the server refused %d entries sent again", proxy.conns.Load(), proxy.drops.Load(), dups)
	if proxy.drops.Load() == 0 || dups <= 0 {
		t.Errorf("the proxy lost no answer, or no entry was sent again: the test did not test anything")
	}
	counts := srv.counts()
	for _, e := range exps {
		checkOnServer(t, srv, e, counts)
	}
}

// ---------------------------------------------------------------------------
// Two writers of one session

func cloudChainLine(sid, id, parent, text string) string {
	p := "null"
	if parent != "" {
		p = strconv.Quote(parent)
	}
	return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,"type":"user","message":{"role":"user","content":%q},"uuid":%q,"timestamp":"2026-01-10T11:00:02.267Z","cwd":"/home/alice/src/storm","sessionId":%q}`,
		p, text, id, sid)
}

func TestCloudIngress409Storm(t *testing.T) {
	srv := startCloudServer(t)
	const sid = "5f0e0000-1111-4222-8333-444455556666"
	id := func(w string, i int) string { return fmt.Sprintf("5f0e%04x-0000-4000-8000-%012d", len(w), i) }
	var shared []string
	parent := ""
	for i := 0; i < 120; i++ {
		u := id("s", i)
		shared = append(shared, cloudChainLine(sid, u, parent, fmt.Sprintf("shared %d", i)))
		parent = u
	}
	inputs := map[string][]string{}
	for _, w := range []string{"aa", "bbb"} {
		lines := slices.Clone(shared)
		p := parent
		for i := 0; i < 60; i++ {
			u := id(w, i)
			lines = append(lines, cloudChainLine(sid, u, p, fmt.Sprintf("writer %s %d", w, i)))
			p = u
		}
		inputs[w] = lines
	}
	var wg sync.WaitGroup
	results := map[string]string{}
	var mu sync.Mutex
	for w, lines := range inputs {
		cfg, _ := cloudMachine(t, srv.url(), "jsonl/local", "ingress/team")
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each holds its stdin open until the server has both
			// writers' rows, so neither leaves rows in its spool.
			out, err := recordHeld(t, cfg, strings.Join(lines, "\n")+"\n", func() bool { return srv.counts()[sid] >= 240 })
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				results[w] = fmt.Sprintf("%v\n%s", err, out)
			}
		}()
	}
	wg.Wait()
	for w, r := range results {
		t.Fatalf("writer %s: %s", w, r)
	}
	got := srv.history(sid, "subagents=false")
	t.Logf("409 conflicts answered: %d; duplicates refused: %d", srv.metric("scribe_conflicts_total"), srv.metric("scribe_entries_duplicate_total"))
	if len(got) != 120+2*60 {
		t.Fatalf("History holds %d rows, want %d", len(got), 120+2*60)
	}
	pos := map[string]int{}
	for i, l := range got {
		if _, dup := pos[l]; dup {
			t.Fatalf("History holds row %d twice: %s", i, truncate(l, 120))
		}
		pos[l] = i
	}
	sameLines(t, "the shared rows", got[:120], shared)
	for w, lines := range inputs {
		last := -1
		for _, l := range lines {
			i, ok := pos[l]
			if !ok {
				t.Fatalf("writer %s: a row is missing: %s", w, truncate(l, 120))
			}
			if i < last {
				t.Fatalf("writer %s: row %d comes before an earlier row of the same writer", w, i)
			}
			last = i
		}
	}
	if n := srv.counts()[sid]; n != 240 {
		t.Errorf("/v1/sessions counts %d entries, want 240", n)
	}
}

// ---------------------------------------------------------------------------
// resume

func TestCloudResumeFallsBackToTheServer(t *testing.T) {
	srv := startCloudServer(t)
	cfg, dir := cloudMachine(t, srv.url(), "jsonl/local", "events/team")
	u := cloudUnit(t, cloudUnits[2])
	recordUnit(t, cloudRecorder(cfg), dir, u)
	type resumeJSON struct {
		ServedBy string `json:"served_by"`
		Misses   []struct {
			Loader, Error string
		} `json:"misses"`
		Conversation []json.RawMessage `json:"conversation"`
	}
	resumeOnce := func() resumeJSON {
		out, errOut, code := cloudRun(t, "", "resume", u.sid, "--config", cfg, "--json", "--dry-run")
		var r resumeJSON
		if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
			t.Fatalf("resume: exit %d, %v\n%s\n%s", code, err, out, errOut)
		}
		return r
	}
	local := resumeOnce()
	if local.ServedBy != "jsonl/local" || len(local.Conversation) == 0 {
		t.Fatalf("resume with the local file: served by %s, %d rows", local.ServedBy, len(local.Conversation))
	}
	proj, err := jsonl.Layout{ConfigDir: dir}.FindSession(u.sid, "")
	if err != nil || proj == "" {
		t.Fatalf("find %s: %q %v", u.sid, proj, err)
	}
	if err := os.Remove(claudedir.MainFile(proj, u.sid)); err != nil {
		t.Fatal(err)
	}
	cloud := resumeOnce()
	if cloud.ServedBy != "cloud/team" {
		t.Fatalf("resume without the local file: served by %q, want cloud/team", cloud.ServedBy)
	}
	if len(cloud.Misses) != 1 || cloud.Misses[0].Loader != "jsonl/local" || !strings.Contains(cloud.Misses[0].Error, "not found") {
		t.Errorf("resume without the local file: misses %+v, want jsonl/local saying the session was not found", cloud.Misses)
	}
	if len(cloud.Conversation) != len(local.Conversation) {
		t.Fatalf("the server's conversation has %d rows, the local one had %d", len(cloud.Conversation), len(local.Conversation))
	}
	for i := range local.Conversation {
		if !bytes.Equal(local.Conversation[i], cloud.Conversation[i]) {
			t.Errorf("conversation row %d differs:\n  local %s\n  cloud %s", i, truncate(string(local.Conversation[i]), 160), truncate(string(cloud.Conversation[i]), 160))
		}
	}
	// Human output says it too.
	out, _, code := cloudRun(t, "", "resume", u.sid, "--config", cfg, "--dry-run")
	if code != 0 || !strings.Contains(out, "served by cloud/team") || !strings.Contains(out, "jsonl/local missed") {
		t.Errorf("resume output (exit %d) does not say who served and who missed:\n%.1500s", code, out)
	}
}
