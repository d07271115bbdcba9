package core

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// State is what a session is doing.
type State string

// The session states.
const (
	// StateIdle: no turn in flight; the session waits for a prompt.
	StateIdle State = "idle"
	// StateRunning: a turn is in flight (the model or a tool is working).
	StateRunning State = "running"
	// StateRequiresAction: the turn waits for the user, for a permission or
	// an answer.
	StateRequiresAction State = "requires_action"
)

// Valid reports whether s is one of the three states.
func (s State) Valid() bool {
	return s == StateIdle || s == StateRunning || s == StateRequiresAction
}

// ErrInvalidTransition is returned (wrapped, with both states) for a
// transition the state machine does not allow.
var ErrInvalidTransition = errors.New("invalid state transition")

// stateTransitions lists every transition; anything else, including a
// transition to the current state, is refused.
var stateTransitions = map[[2]State]bool{
	{StateIdle, StateRunning}:           true,
	{StateRunning, StateIdle}:           true,
	{StateRunning, StateRequiresAction}: true,
	{StateRequiresAction, StateRunning}: true,
	{StateRequiresAction, StateIdle}:    true,
}

// StateChange is one transition of a session.
type StateChange struct {
	SessionID string
	From, To  State
	At        time.Time
	Reason    string
}

// TypeScribeState is the entry type of a state change carried through the
// pipeline. It is not a chain row: Claude Code's readers ignore it.
const TypeScribeState = "scribe-state"

// Entry returns the change as an entry the pipeline can carry:
//
//	{"type":"scribe-state","state":"running","from":"idle","reason":"…",
//	 "sessionId":"…","uuid":"…","timestamp":"2026-01-10T11:00:02.267Z"}
//
// The uuid is derived from the change (session, states, time, reason), so
// calling Entry twice gives the same entry and dedup drops the second.
func (c StateChange) Entry() (Entry, error) {
	if c.SessionID == "" {
		return Entry{}, errors.New("state change entry: no session id")
	}
	id := nameUUID(TypeScribeState + "\x00" + c.SessionID + "\x00" + string(c.From) + "\x00" + string(c.To) +
		"\x00" + strconv.FormatInt(c.At.UnixNano(), 10) + "\x00" + c.Reason)
	var o jsonObject
	o.str("type", TypeScribeState)
	o.str("state", string(c.To))
	o.str("from", string(c.From))
	o.str("reason", c.Reason)
	o.str("sessionId", c.SessionID)
	o.str("uuid", id)
	o.str("timestamp", c.At.UTC().Format(timestampLayout))
	e, err := ParseEntryOwned(o.bytes())
	if err != nil {
		return Entry{}, fmt.Errorf("state change entry: %w", err)
	}
	return e, nil
}

// StateMachine holds one session's state and tells listeners about every
// change. It is safe for concurrent use.
//
// Listeners (OnChange) are called in registration order, for one change
// after another in the order the transitions happened, never while the
// machine's lock is held: a listener may read State or call Transition.
// A transition made from inside a listener, or while another goroutine is
// delivering, is delivered by the goroutine already delivering, after the
// change in hand; so Transition can return before its listeners ran.
//
// Subscribers (Subscribe) get each change on a buffered channel at the
// moment of the transition. A full channel loses the change, counted in
// Dropped; Transition never waits for a reader.
type StateMachine struct {
	sessionID string
	now       func() time.Time

	mu         sync.Mutex
	state      State
	listeners  []*stateListener
	subs       []*stateSub
	pending    []StateChange
	delivering bool

	dropped atomic.Int64
}

type stateListener struct {
	fn      func(StateChange)
	removed atomic.Bool
}

type stateSub struct {
	ch     chan StateChange
	closed bool
}

// NewStateMachine returns a machine for the session in the given state.
func NewStateMachine(sessionID string, initial State) (*StateMachine, error) {
	if sessionID == "" {
		return nil, errors.New("state machine: no session id")
	}
	if !initial.Valid() {
		return nil, fmt.Errorf("state machine: unknown state %q", initial)
	}
	return &StateMachine{sessionID: sessionID, state: initial, now: time.Now}, nil
}

// State returns the current state.
func (m *StateMachine) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

// Dropped returns how many changes were lost on full subscriber channels.
func (m *StateMachine) Dropped() int64 { return m.dropped.Load() }

// Transition moves the machine to the state to. Allowed: idle→running,
// running→idle, running→requires_action, requires_action→running and
// requires_action→idle. Anything else, a transition to the current state
// included, returns an error wrapping ErrInvalidTransition and changes
// nothing.
func (m *StateMachine) Transition(to State, reason string) (StateChange, error) {
	m.mu.Lock()
	from := m.state
	if !stateTransitions[[2]State{from, to}] {
		m.mu.Unlock()
		return StateChange{}, fmt.Errorf("%w: %s → %s (session %s)", ErrInvalidTransition, from, to, m.sessionID)
	}
	m.state = to
	c := StateChange{SessionID: m.sessionID, From: from, To: to, At: m.now(), Reason: reason}
	for _, s := range m.subs {
		select {
		case s.ch <- c:
		default:
			m.dropped.Add(1)
		}
	}
	m.pending = append(m.pending, c)
	if m.delivering {
		m.mu.Unlock()
		return c, nil
	}
	m.delivering = true
	m.deliver() // unlocks
	return c, nil
}

// deliver calls the listeners for every pending change. It is entered with
// the lock held and the delivering flag set, and returns with the lock
// released and the flag cleared, even when a listener panics.
func (m *StateMachine) deliver() {
	locked := true
	defer func() {
		if !locked {
			m.mu.Lock()
		}
		m.delivering = false
		m.pending = nil // a listener panicked: the rest is lost with it
		m.mu.Unlock()
	}()
	for len(m.pending) > 0 {
		batch := m.pending
		m.pending = nil
		ls := m.listeners
		m.mu.Unlock()
		locked = false
		for _, c := range batch {
			for _, l := range ls {
				if !l.removed.Load() {
					l.fn(c)
				}
			}
		}
		m.mu.Lock()
		locked = true
	}
}

// OnChange registers fn to be called after every transition. The returned
// function removes it; a change being delivered while it is removed may
// still reach it. Remove is safe to call twice.
func (m *StateMachine) OnChange(fn func(StateChange)) (remove func()) {
	l := &stateListener{fn: fn}
	m.mu.Lock()
	// Copy on write: a delivery in progress keeps the slice it took.
	m.listeners = append(m.listeners[:len(m.listeners):len(m.listeners)], l)
	m.mu.Unlock()
	return func() {
		l.removed.Store(true)
		m.mu.Lock()
		defer m.mu.Unlock()
		for i, x := range m.listeners {
			if x == l {
				next := make([]*stateListener, 0, len(m.listeners)-1)
				next = append(next, m.listeners[:i]...)
				m.listeners = append(next, m.listeners[i+1:]...)
				return
			}
		}
	}
}

// Subscribe returns a channel that receives every later change, with room
// for buffer changes (a negative buffer counts as 0, which only reaches a
// reader already waiting). The returned function unsubscribes and closes
// the channel; it is safe to call twice.
func (m *StateMachine) Subscribe(buffer int) (<-chan StateChange, func()) {
	s := &stateSub{ch: make(chan StateChange, max(buffer, 0))}
	m.mu.Lock()
	m.subs = append(m.subs, s)
	m.mu.Unlock()
	return s.ch, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if s.closed {
			return
		}
		s.closed = true
		for i, x := range m.subs {
			if x == s {
				m.subs = append(m.subs[:i:i], m.subs[i+1:]...)
				break
			}
		}
		close(s.ch)
	}
}
