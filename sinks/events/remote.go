package events

// What interactive commands (`scribe push`, `pull`, `ls --remote` and the
// id resolver) need of the client besides the v2 routes: telling a server
// that is not there from one that fails, and the session listing.
//
//	GET {base_url}/v1/sessions?limit=1000&id_prefix=…   Client.Sessions
//	    → {"data":[{"id":…,"title":…,"tag":…,"state":…,"created_at":…,
//	               "last_activity":…,"entries":…,"main_entries":…,"subagents":…}],
//	       "has_more":false}

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"

	"github.com/e0dc0000/scribe/server/wire"
	"github.com/e0dc0000/scribe/sinks/sinkhelper"
)

// ErrUnreachable is wrapped by the error of a request that could not reach
// the server at all (see Client.Unreachable).
var ErrUnreachable = errors.New("server unreachable")

// UnreachableError is a server that could not be reached, after Attempts
// attempts.
type UnreachableError struct {
	Addr     string
	Attempts int
	Err      error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the server at %s (%s; %d attempts): is scribe serve running there, and is base_url right?",
		e.Addr, reason(e.Err), e.Attempts)
}

// Unwrap returns ErrUnreachable and the last attempt's error.
func (e *UnreachableError) Unwrap() []error { return []error{ErrUnreachable, e.Err} }

// isUnreachable reports whether err is a failure to connect at all, as
// opposed to a server that answered badly or too slowly.
func isUnreachable(err error) bool {
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.As(err, &dns):
		return true
	case errors.As(err, &op):
		return op.Op == "dial"
	}
	return false
}

// reason is the short cause of a connection failure: "connection refused".
func reason(err error) string {
	var errno syscall.Errno
	var dns *net.DNSError
	switch {
	case errors.As(err, &errno):
		return errno.Error()
	case errors.As(err, &dns):
		return "host " + dns.Name + " not found"
	}
	return err.Error()
}

// SessionInfo is one session of GET /v1/sessions (wire.SessionInfo).
type SessionInfo = wire.SessionInfo

// MaxSessions is the most sessions one GET /v1/sessions returns.
const MaxSessions = 1000

// Sessions lists the tenant's sessions on the server whose id starts with
// prefix ("" for all), most recently active first: at most MaxSessions,
// and whether there are more.
func (c *Client) Sessions(ctx context.Context, prefix string) ([]SessionInfo, bool, error) {
	v := url.Values{}
	v.Set("limit", strconv.Itoa(MaxSessions))
	if prefix != "" {
		v.Set("id_prefix", prefix)
	}
	body, err := c.do(ctx, http.MethodGet, c.BaseURL+"/v1/sessions?"+v.Encode(), nil)
	if err != nil {
		if errors.Is(err, sinkhelper.ErrUnauthorized) {
			return nil, false, fmt.Errorf("%s refused the token (check token or token_file): %w", c.BaseURL, err)
		}
		return nil, false, fmt.Errorf("list the sessions on %s: %w", c.BaseURL, err)
	}
	var p wire.SessionList
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, false, fmt.Errorf("list the sessions on %s: the answer is not JSON: %w", c.BaseURL, err)
	}
	if p.Data == nil {
		p.Data = []SessionInfo{}
	}
	return p.Data, p.HasMore, nil
}
