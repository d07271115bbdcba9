package plugins

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/e0dc0000/scribe/core"
)

// supervisor keeps the process of a loader or a guard: started when the
// component is created, started again on the first call after it crashed
// or hung, with a backoff between failed starts. Calls are concurrent; a
// start is made by one of them while the others wait.
type supervisor struct {
	l *launcher
	// configure hands a new process its configuration.
	configure func(ctx context.Context, in *instance) error

	mu       sync.Mutex
	in       *instance
	state    string
	lastErr  string
	nextTry  time.Time
	backoff  time.Duration
	closed   bool
	everUp   bool
	restarts atomic.Int64

	startFailures, crashes, timeouts, calls, callErrors atomic.Int64
}

func newSupervisor(l *launcher, configure func(context.Context, *instance) error) *supervisor {
	return &supervisor{l: l, configure: configure, state: StateStopped, backoff: restartMin}
}

// get returns a running process, starting one when needed and allowed.
func (sv *supervisor) get(ctx context.Context) (*instance, error) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.closed {
		return nil, ErrClosed
	}
	if sv.in != nil {
		if !sv.in.exited() {
			return sv.in, nil
		}
		sv.crashes.Add(1)
		sv.lastErr = "the process exited"
		sv.l.log.Warn("plugin process exited; restarting it", "pid", sv.in.pid())
		sv.in.kill()
		sv.in = nil
		sv.state = StateRestarting
	}
	if wait := time.Until(sv.nextTry); wait > 0 {
		return nil, fmt.Errorf("%w: next start in %s (last error: %s)", ErrUnavailable, wait.Round(time.Millisecond), sv.lastErr)
	}
	if sv.everUp {
		sv.state = StateRestarting
	} else {
		sv.state = StateStarting
	}
	in, err := sv.l.launch(ctx)
	if err == nil {
		if err = sv.configure(ctx, in); err != nil {
			in.kill()
		}
	}
	if err != nil {
		sv.startFailures.Add(1)
		sv.lastErr = err.Error()
		sv.state = StateFailed
		sv.nextTry = time.Now().Add(sv.backoff)
		sv.backoff = min(sv.backoff*2, restartMax)
		return nil, err
	}
	if sv.everUp {
		sv.restarts.Add(1)
		sv.l.log.Info("plugin restarted", "pid", in.pid())
	}
	sv.everUp = true
	sv.in = in
	sv.state = StateRunning
	sv.backoff = restartMin
	sv.nextTry = time.Time{}
	return in, nil
}

// done records the outcome of a call; a crash or a hang kills the process
// so that the next call starts a new one.
func (sv *supervisor) done(in *instance, err error) {
	sv.calls.Add(1)
	if err == nil {
		return
	}
	sv.callErrors.Add(1)
	sv.mu.Lock()
	defer sv.mu.Unlock()
	sv.lastErr = err.Error()
	if !transportFault(err) || sv.in != in {
		return
	}
	if errors.Is(err, ErrTimeout) {
		sv.timeouts.Add(1)
	} else {
		sv.crashes.Add(1)
	}
	sv.l.log.Warn("plugin fault; it will be restarted on the next call", "pid", in.pid(), "error", err)
	in.kill()
	sv.in = nil
	sv.state = StateRestarting
}

// close stops the process.
func (sv *supervisor) close() {
	sv.mu.Lock()
	in := sv.in
	sv.in = nil
	sv.closed = true
	sv.state = StateStopped
	sv.mu.Unlock()
	if in != nil {
		in.stop(stopGrace)
	}
}

// describe fills in what st says of the running process (nothing when in
// is nil: no process runs).
func (in *instance) describe(st *Status) {
	if in == nil {
		return
	}
	st.PID = in.pid()
	st.Reattached = in.reattached
	st.PluginType = in.desc.GetType()
	st.PluginVersion = in.desc.GetVersion()
}

func (sv *supervisor) status(id core.ID, kind core.Kind) Status {
	sv.mu.Lock()
	st := Status{ID: id.String(), Kind: string(kind), State: sv.state, LastError: sv.lastErr}
	sv.in.describe(&st)
	sv.mu.Unlock()
	st.Restarts = sv.restarts.Load()
	st.Counters = sv.report()
	return st
}

func (sv *supervisor) report() map[string]int64 {
	sv.mu.Lock()
	running := int64(0)
	if sv.state == StateRunning {
		running = 1
	}
	sv.mu.Unlock()
	return map[string]int64{
		"running":        running,
		"restarts":       sv.restarts.Load(),
		"start_failures": sv.startFailures.Load(),
		"crashes":        sv.crashes.Load(),
		"timeouts":       sv.timeouts.Load(),
		"calls":          sv.calls.Load(),
		"call_errors":    sv.callErrors.Load(),
	}
}
