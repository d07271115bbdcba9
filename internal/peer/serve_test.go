package peer

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakePeer is a Peer whose "node peer.mjs serve" is the shell script
// given: the pool's behaviour when a server misbehaves, without node.
func fakePeer(t *testing.T, script string, timeout time.Duration) *Peer {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "peer.mjs"), []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Peer{Node: "/bin/sh", Dir: dir, Timeout: timeout}
}

// echoServer answers each request with its own arguments; "stray" first
// prints a line that is not an answer, "once" ends the server after it.
const echoServer = `while IFS= read -r line; do
  case "$line" in *stray*) echo "(node) a warning on stdout";; esac
  echo "{\"ok\":true,\"out\":$line}"
  case "$line" in *once*) exit 0;; esac
done
`

// failRecorder records a Fatalf and stops the call with a panic.
type failRecorder struct {
	testing.TB
	msg string
}

func (r *failRecorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	panic(r)
}
func (r *failRecorder) Fatal(args ...any) { r.msg = fmt.Sprint(args...); panic(r) }
func (r *failRecorder) Helper()           {}

func failureOf(t testing.TB, f func(testing.TB)) string {
	r := &failRecorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		f(r)
	}()
	return r.msg
}

// A line that is not an answer fails its call, and the next call gets its
// own answer, not the one the failed call left unread.
func TestServerNeverHandsOnAnAnswer(t *testing.T) {
	p := fakePeer(t, echoServer, time.Minute)
	if msg := failureOf(t, func(tb testing.TB) { p.call(tb, "stray", "A") }); msg == "" {
		t.Fatal("a call answered by a stray line succeeded")
	}
	for _, want := range []string{"list", "messages"} {
		if got := p.call(t, want, "B"); string(got) != `["`+want+`","B"]` {
			t.Fatalf("call [%s B] answered %s", want, got)
		}
	}
}

// A server that ended while idle is replaced: the request it never
// received goes to a new one.
func TestServerDeadWhileIdleIsReplaced(t *testing.T) {
	p := fakePeer(t, echoServer, time.Minute)
	if got := p.call(t, "once"); string(got) != `["once"]` {
		t.Fatalf("first call answered %s", got)
	}
	// Wait until every idle server has exited (a zombie: its pipes closed).
	pl := p.pool()
	deadline := time.Now().Add(time.Minute)
	for {
		pl.mu.Lock()
		all := true
		for _, s := range pl.idle {
			st, _ := os.ReadFile("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/stat")
			if i := bytes.LastIndexByte(st, ')'); i < 0 || i+2 >= len(st) || st[i+2] != 'Z' {
				all = false
			}
		}
		pl.mu.Unlock()
		if all {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server did not end")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := p.call(t, "list", "after"); string(got) != `["list","after"]` {
		t.Fatalf("call after the server ended answered %s", got)
	}
}

// A server that does not answer in time fails its call even when a child
// of it keeps its stderr open (Wait gives up after WaitDelay), and the
// next call is served by another.
func TestServerTimeoutEndsTheCall(t *testing.T) {
	t.Parallel()
	p := fakePeer(t, `while IFS= read -r line; do
  case "$line" in *slow*) (sleep 300) & sleep 300;; esac
  echo "{\"ok\":true,\"out\":$line}"
done
`, 500*time.Millisecond)
	done := make(chan string, 1)
	go func() { done <- failureOf(t, func(tb testing.TB) { p.call(tb, "slow") }) }()
	select {
	case msg := <-done:
		if msg == "" {
			t.Fatal("a call that timed out succeeded")
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("a timed-out call did not return: drop waits on the server's child")
	}
	if got := p.call(t, "list"); string(got) != `["list"]` {
		t.Fatalf("call after a timeout answered %s", got)
	}
}

// TestPeerServerKeepsFoldersApart: the long-lived peer.mjs servers answer
// every call from the config folder it names, one after the other and
// side by side, and a failed command fails only its own call.
func TestPeerServerKeepsFoldersApart(t *testing.T) {
	p := Find(t)
	full, empty := t.TempDir(), t.TempDir()
	p.GenFixture(t, full, "/home/alice/src/shop")
	for range 3 {
		if n := len(p.List(t, full, "")); n != 5 {
			t.Fatalf("listSessions of the fixture: %d sessions, want 5", n)
		}
		if n := len(p.List(t, empty, "")); n != 0 {
			t.Fatalf("listSessions of an empty folder after the fixture's: %d sessions, want 0", n)
		}
	}
	t.Run("side by side", func(t *testing.T) {
		for i := range 4 {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				dir, want := full, 5
				if i%2 == 1 {
					dir, want = empty, 0
				}
				if n := len(p.List(t, dir, "")); n != want {
					t.Errorf("listSessions: %d sessions, want %d", n, want)
				}
			})
		}
	})
	// A command the SDK throws on fails its test (seen here through failureOf), and the next call is answered.
	msg := failureOf(t, func(tb testing.TB) {
		p.Fork(tb, full, "00000000-0000-4000-8000-000000000000", "", "", "")
	})
	if !strings.Contains(msg, "peer: node peer.mjs fork") {
		t.Fatalf("a fork of a missing session: %q, want a failure naming the command", msg)
	}
	if n := len(p.List(t, full, "")); n != 5 {
		t.Fatalf("listSessions after a failed call: %d sessions, want 5", n)
	}
}
