package serve

import (
	"slices"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/server"
	"github.com/e0dc0000/scribe/ui"
)

// The viewer signs in the configuration's tokens with their scopes and no
// other, a reader token neither; each tenant has one reader token, read
// only, added to the server's tokens.
func TestUITokens(t *testing.T) {
	const rw, ro, other = "acme-rw-token", "acme-ro-token", "other-token"
	sc := server.DefaultConfig()
	sc.Tokens = []server.Token{
		{SHA256: strings.ToUpper(server.HashToken(rw)), Tenant: "acme", Scopes: []string{"read", "write"}},
		{SHA256: server.HashToken(ro), Tenant: "acme", Scopes: []string{"read"}},
		{SHA256: server.HashToken(other), Tenant: "other", Scopes: []string{"read", "write"}},
	}
	u := newUITokens(sc)
	reader, ok := u.reader("acme")
	if !ok || reader == "" {
		t.Fatal("no reader token for acme")
	}
	if _, ok := u.reader("nobody"); ok {
		t.Error("a reader token for a tenant no token names")
	}
	for _, c := range []struct {
		token string
		want  ui.Principal
		ok    bool
	}{
		{rw, ui.Principal{Tenant: "acme", Read: true, Write: true}, true},
		{ro, ui.Principal{Tenant: "acme", Read: true}, true},
		{other, ui.Principal{Tenant: "other", Read: true, Write: true}, true},
		{"", ui.Principal{}, false},
		{"acme-secret", ui.Principal{}, false},
		{reader, ui.Principal{}, false},
	} {
		if got, ok := u.check(c.token); ok != c.ok || (ok && got != c.want) {
			t.Errorf("check(%q) = %+v, %v; want %+v, %v", c.token, got, ok, c.want, c.ok)
		}
	}
	added := sc.Tokens[3:]
	if len(added) != 2 {
		t.Fatalf("%d reader tokens added, want one a tenant: %+v", len(added), added)
	}
	for _, tk := range added {
		if !slices.Equal(tk.Scopes, []string{server.ScopeRead}) {
			t.Errorf("the reader of %s has scopes %q", tk.Tenant, tk.Scopes)
		}
	}
	if err := sc.Validate(); err != nil {
		t.Errorf("the configuration with the readers: %v", err)
	}
}

// uiHosts: ui_hosts when set (lower case), else the listen address and
// localhost with its port.
func TestUIHosts(t *testing.T) {
	sc := server.DefaultConfig()
	sc.UIHosts = []string{"Scribe.Example.com", "10.0.0.5:8787"}
	if got, want := uiHosts(sc, nil)(), []string{"scribe.example.com", "10.0.0.5:8787"}; !slices.Equal(got, want) {
		t.Errorf("configured hosts %q, want %q", got, want)
	}
}
