package sinkhelper

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/e0dc0000/scribe/core"
)

// Permanent is core.Permanent for the errors of a network sink: the Sender
// stops retrying, the entries of the batch that were not delivered are
// dropped, counted and logged at error level, and the next Flush returns the
// error. It is core's mark (core.IsPermanent sees it, and the Sender sees
// core.Permanent's), with the "permanent: " its messages have always
// started with. A nil err stays nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return core.Permanent(fmt.Errorf("permanent: %w", err))
}

// throttleError carries the delay a server asked for (Retry-After).
type throttleError struct {
	err   error
	delay time.Duration
}

func (e *throttleError) Error() string {
	return fmt.Sprintf("%v (retry after %s)", e.err, e.delay)
}
func (e *throttleError) Unwrap() error { return e.err }

// RetryAfter wraps a retryable err with the delay the server asked for: the
// next attempt waits at least that long (capped at maxRetryAfter). A nil
// err stays nil.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &throttleError{err: err, delay: d}
}

// maxRetryAfter caps a server's Retry-After, so that a wrong header cannot
// park a sink for a day.
const maxRetryAfter = 5 * time.Minute

func retryAfter(err error) time.Duration {
	var t *throttleError
	if errors.As(err, &t) {
		return min(max(t.delay, 0), maxRetryAfter)
	}
	return 0
}

// RetryConfig says how a batch is retried.
type RetryConfig struct {
	// MaxAttempts is how many attempts make a round. When a round fails the
	// batch stays at the head of the spool and the Sender counts the server
	// as away: it keeps trying, every BackoffMax, without losing anything.
	MaxAttempts int
	// BackoffMin is the wait after the first failed attempt; each further
	// failure doubles it, up to BackoffMax.
	BackoffMin, BackoffMax time.Duration
	// Jitter spreads each wait by ±Jitter of itself (0 to 1), so that many
	// clients coming back after an outage do not knock together.
	Jitter float64
	// AttemptTimeout bounds one attempt (one call of the push function);
	// 0 leaves it to the push function, which then bounds each request.
	AttemptTimeout time.Duration
}

// DefaultRetry is Claude Code's policy for session ingress: 10 attempts,
// backoff from 500 ms to 8 s, 30 s for each attempt.
func DefaultRetry() RetryConfig {
	return RetryConfig{
		MaxAttempts:    10,
		BackoffMin:     500 * time.Millisecond,
		BackoffMax:     8 * time.Second,
		Jitter:         0.2,
		AttemptTimeout: 30 * time.Second,
	}
}

func (c RetryConfig) validate() error {
	switch {
	case c.MaxAttempts < 1:
		return fmt.Errorf("max_attempts %d: want at least 1", c.MaxAttempts)
	case c.BackoffMin <= 0:
		return fmt.Errorf("backoff_min %s: want a positive duration", c.BackoffMin)
	case c.BackoffMax < c.BackoffMin:
		return fmt.Errorf("backoff_max %s: want at least backoff_min (%s)", c.BackoffMax, c.BackoffMin)
	case c.Jitter < 0 || c.Jitter > 1:
		return fmt.Errorf("jitter %g: want a number from 0 to 1", c.Jitter)
	case c.AttemptTimeout < 0:
		return fmt.Errorf("timeout %s: want a positive duration", c.AttemptTimeout)
	}
	return nil
}

// backoff is the wait before attempt n+1 after n failed attempts (n >= 1),
// before jitter.
func (c RetryConfig) backoff(n int) time.Duration {
	d := c.BackoffMin
	for i := 1; i < n && d < c.BackoffMax; i++ {
		d *= 2
	}
	return min(d, c.BackoffMax)
}

// wait is the jittered wait after n failed attempts, at least what the
// server asked for.
func (c RetryConfig) wait(n int, err error) time.Duration {
	d := c.backoff(n)
	if c.Jitter > 0 {
		d += time.Duration((rand.Float64()*2 - 1) * c.Jitter * float64(d))
	}
	return max(d, retryAfter(err), time.Millisecond)
}
