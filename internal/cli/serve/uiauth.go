package serve

import (
	"crypto/rand"
	"encoding/base64"
	"net"
	"strings"

	"github.com/e0dc0000/scribe/server"
	"github.com/e0dc0000/scribe/ui"
)

// uiTokens are who signs in to the viewer on serve and what its share
// links read with: the configuration's tokens by hash, and a read-only
// token per tenant made at start, kept in memory only, which the server
// accepts as any other (newUITokens adds it to the configuration's) but
// the sign-in form never does.
type uiTokens struct {
	granted map[string]ui.Principal
	readers map[string]string
}

// newUITokens reads sc's tokens and adds a reader token for each tenant
// to sc.Tokens: call it before server.New.
func newUITokens(sc *server.Config) *uiTokens {
	u := &uiTokens{granted: map[string]ui.Principal{}, readers: map[string]string{}}
	for _, t := range sc.Tokens {
		p := ui.Principal{Tenant: t.Tenant}
		for _, s := range t.Scopes {
			p.Read = p.Read || s == server.ScopeRead
			p.Write = p.Write || s == server.ScopeWrite
		}
		u.granted[strings.ToLower(t.SHA256)] = p
	}
	for _, p := range u.granted {
		if _, done := u.readers[p.Tenant]; done {
			continue
		}
		b := make([]byte, 32)
		_, _ = rand.Read(b) // never fails (crypto/rand)
		tok := "scribe_internal_" + base64.RawURLEncoding.EncodeToString(b)
		u.readers[p.Tenant] = tok
		sc.Tokens = append(sc.Tokens, server.Token{SHA256: server.HashToken(tok), Tenant: p.Tenant, Scopes: []string{server.ScopeRead}})
	}
	return u
}

// check says what a token of the configuration grants; false for any
// other, a reader token too.
func (u *uiTokens) check(tok string) (ui.Principal, bool) {
	if tok == "" {
		return ui.Principal{}, false
	}
	p, ok := u.granted[server.HashToken(tok)]
	return p, ok
}

// reader is the read-only token of tenant's sessions; false for a tenant
// no configured token names.
func (u *uiTokens) reader(tenant string) (string, bool) {
	tok, ok := u.readers[tenant]
	return tok, ok
}

// uiHosts are the Host headers the viewer answers to: server { ui_hosts }
// when set, else the address the server listens on and localhost with its
// port (nil before it listens).
func uiHosts(sc *server.Config, srv *server.Server) func() []string {
	return func() []string {
		if len(sc.UIHosts) > 0 {
			hosts := make([]string, len(sc.UIHosts))
			for i, h := range sc.UIHosts {
				hosts[i] = strings.ToLower(h)
			}
			return hosts
		}
		addr := srv.Addr()
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil
		}
		hosts := []string{strings.ToLower(addr), net.JoinHostPort("localhost", port)}
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			hosts = append(hosts, net.JoinHostPort("127.0.0.1", port))
		}
		return hosts
	}
}
