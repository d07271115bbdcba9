package core

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func smNew(t *testing.T, initial State) *StateMachine {
	t.Helper()
	m, err := NewStateMachine("s-1", initial)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTransitions(t *testing.T) {
	allowed := map[[2]State]bool{
		{StateIdle, StateRunning}:           true,
		{StateRunning, StateIdle}:           true,
		{StateRunning, StateRequiresAction}: true,
		{StateRequiresAction, StateRunning}: true,
		{StateRequiresAction, StateIdle}:    true,
	}
	states := []State{StateIdle, StateRunning, StateRequiresAction}
	n := 0
	for _, from := range states {
		for _, to := range states {
			n++
			t.Run(string(from)+"→"+string(to), func(t *testing.T) {
				m := smNew(t, from)
				c, err := m.Transition(to, "because")
				if allowed[[2]State{from, to}] {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					if c.From != from || c.To != to || c.Reason != "because" || c.SessionID != "s-1" || c.At.IsZero() {
						t.Errorf("change = %+v", c)
					}
					if m.State() != to {
						t.Errorf("state = %s", m.State())
					}
					return
				}
				if !errors.Is(err, ErrInvalidTransition) {
					t.Fatalf("err = %v, want ErrInvalidTransition", err)
				}
				if !strings.Contains(err.Error(), string(from)) || !strings.Contains(err.Error(), string(to)) {
					t.Errorf("error %q does not name both states", err)
				}
				if m.State() != from {
					t.Errorf("refused transition changed the state to %s", m.State())
				}
			})
		}
	}
	if n != 9 {
		t.Fatalf("%d pairs", n)
	}
	m := smNew(t, StateIdle)
	if _, err := m.Transition("paused", ""); !errors.Is(err, ErrInvalidTransition) {
		t.Errorf("unknown state: %v", err)
	}
}

func TestNewStateMachine(t *testing.T) {
	for _, tc := range []struct {
		name, session string
		state         State
		ok            bool
	}{
		{"idle", "s", StateIdle, true},
		{"running", "s", StateRunning, true},
		{"requires action", "s", StateRequiresAction, true},
		{"unknown state", "s", "busy", false},
		{"no session", "", StateIdle, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewStateMachine(tc.session, tc.state)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
			if tc.ok && m.State() != tc.state {
				t.Errorf("state = %s", m.State())
			}
		})
	}
}

func TestListeners(t *testing.T) {
	m := smNew(t, StateIdle)
	var got []string
	rec := func(name string) func(StateChange) {
		return func(c StateChange) { got = append(got, name+":"+string(c.To)) }
	}
	m.OnChange(rec("a"))
	removeB := m.OnChange(rec("b"))
	m.OnChange(rec("c"))
	if _, err := m.Transition(StateRunning, ""); err != nil {
		t.Fatal(err)
	}
	removeB()
	removeB() // twice is fine
	if _, err := m.Transition(StateRequiresAction, ""); err != nil {
		t.Fatal(err)
	}
	want := "a:running,b:running,c:running,a:requires_action,c:requires_action"
	if s := strings.Join(got, ","); s != want {
		t.Errorf("calls = %s, want %s", s, want)
	}
}

// TestListenerMayTransition: a listener can read the state and make the
// next transition; changes are still delivered in order.
func TestListenerMayTransition(t *testing.T) {
	m := smNew(t, StateIdle)
	var got []string
	m.OnChange(func(c StateChange) {
		got = append(got, "1:"+string(c.From)+">"+string(c.To))
		if c.To == StateRequiresAction && m.State() == StateRequiresAction {
			if _, err := m.Transition(StateRunning, "auto-approved"); err != nil {
				t.Error(err)
			}
		}
	})
	m.OnChange(func(c StateChange) { got = append(got, "2:"+string(c.From)+">"+string(c.To)) })
	for _, to := range []State{StateRunning, StateRequiresAction} {
		if _, err := m.Transition(to, ""); err != nil {
			t.Fatal(err)
		}
	}
	want := "1:idle>running,2:idle>running,1:running>requires_action,2:running>requires_action," +
		"1:requires_action>running,2:requires_action>running"
	if s := strings.Join(got, ","); s != want {
		t.Errorf("calls =\n%s\nwant\n%s", s, want)
	}
	if m.State() != StateRunning {
		t.Errorf("state = %s", m.State())
	}
}

func TestListenerPanicDoesNotWedge(t *testing.T) {
	m := smNew(t, StateIdle)
	remove := m.OnChange(func(StateChange) { panic("boom") })
	func() {
		defer func() { _ = recover() }()
		_, _ = m.Transition(StateRunning, "")
	}()
	remove()
	called := false
	m.OnChange(func(StateChange) { called = true })
	if _, err := m.Transition(StateIdle, ""); err != nil {
		t.Fatal(err)
	}
	if !called {
		t.Error("listeners stopped after a panic")
	}
}

func TestSubscribe(t *testing.T) {
	m := smNew(t, StateIdle)
	ch, cancel := m.Subscribe(4)
	if _, err := m.Transition(StateRunning, "prompt"); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-ch:
		if c.From != StateIdle || c.To != StateRunning || c.Reason != "prompt" {
			t.Errorf("change = %+v", c)
		}
	case <-time.After(time.Second):
		t.Fatal("no change on the channel")
	}
	cancel()
	cancel()
	if _, ok := <-ch; ok {
		t.Error("channel open after cancel")
	}
	if _, err := m.Transition(StateIdle, ""); err != nil {
		t.Fatal(err)
	}
	if m.Dropped() != 0 {
		t.Errorf("dropped = %d", m.Dropped())
	}
}

func TestSubscribeFullChannelDrops(t *testing.T) {
	for _, tc := range []struct {
		name        string
		buffer      int
		transitions int
		kept        int
	}{
		{"buffer 1", 1, 4, 1},
		{"buffer 3", 3, 4, 3},
		{"unbuffered", 0, 2, 0},
		{"negative", -5, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := smNew(t, StateIdle)
			ch, cancel := m.Subscribe(tc.buffer)
			defer cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				to := []State{StateRunning, StateIdle}
				for i := range tc.transitions {
					if _, err := m.Transition(to[i%2], ""); err != nil {
						t.Error(err)
					}
				}
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Transition blocked on a full channel")
			}
			if got := m.Dropped(); got != int64(tc.transitions-tc.kept) {
				t.Errorf("dropped = %d, want %d", got, tc.transitions-tc.kept)
			}
			if len(ch) != tc.kept {
				t.Errorf("queued = %d, want %d", len(ch), tc.kept)
			}
			if tc.kept > 0 {
				if c := <-ch; c.To != StateRunning {
					t.Errorf("first kept change = %+v", c)
				}
			}
		})
	}
}

// TestStateConcurrent runs transitions, listeners and subscriptions from
// many goroutines; run with -race.
func TestStateConcurrent(t *testing.T) {
	m := smNew(t, StateIdle)
	var mu sync.Mutex
	var seen []StateChange
	m.OnChange(func(c StateChange) { mu.Lock(); seen = append(seen, c); mu.Unlock() })
	ch, cancel := m.Subscribe(1)
	defer cancel()
	var wg sync.WaitGroup
	var okCount sync.Map
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				to := []State{StateRunning, StateIdle, StateRequiresAction}[(g+i)%3]
				if _, err := m.Transition(to, ""); err == nil {
					v, _ := okCount.LoadOrStore(g, new(int))
					*v.(*int)++
				}
				if i%50 == 0 {
					_, c := m.Subscribe(1)
					c()
				}
			}
		}()
	}
	go func() {
		for range ch {
		}
	}()
	wg.Wait()
	total := 0
	okCount.Range(func(_, v any) bool { total += *v.(*int); return true })
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != total {
		t.Fatalf("listener saw %d changes, %d transitions succeeded", len(seen), total)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i].From != seen[i-1].To {
			t.Fatalf("change %d out of order: %+v after %+v", i, seen[i], seen[i-1])
		}
	}
	if len(seen) > 0 && seen[len(seen)-1].To != m.State() {
		t.Errorf("last change %s, state %s", seen[len(seen)-1].To, m.State())
	}
}

func TestStateChangeEntry(t *testing.T) {
	c := StateChange{SessionID: "s-1", From: StateRunning, To: StateRequiresAction,
		At: time.Date(2026, 1, 10, 11, 0, 2, 267e6, time.UTC), Reason: "permission for Bash"}
	e, err := c.Entry()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"scribe-state","state":"requires_action","from":"running","reason":"permission for Bash","sessionId":"s-1","uuid":"` +
		e.UUID + `","timestamp":"2026-01-10T11:00:02.267Z"}`
	if string(e.Raw) != want {
		t.Errorf("Raw = %s\nwant  %s", e.Raw, want)
	}
	if e.Type != TypeScribeState || e.SessionID != "s-1" || e.Timestamp != "2026-01-10T11:00:02.267Z" || len(e.UUID) != 36 {
		t.Errorf("entry = %+v", e)
	}
	if e.IsChain() || e.Ref().Key() != "s-1" {
		t.Errorf("a state entry is session metadata: chain %v ref %q", e.IsChain(), e.Ref().Key())
	}
	again, _ := c.Entry()
	if again.UUID != e.UUID {
		t.Error("Entry is not stable")
	}
	c2 := c
	c2.At = c.At.Add(time.Millisecond)
	if e2, _ := c2.Entry(); e2.UUID == e.UUID {
		t.Error("two changes share a uuid")
	}
	var v map[string]any
	if err := json.Unmarshal(e.Raw, &v); err != nil || v["state"] != "requires_action" {
		t.Errorf("decoded %v %v", v, err)
	}
	if _, err := (StateChange{To: StateIdle}).Entry(); err == nil {
		t.Error("entry without a session id")
	}
}
