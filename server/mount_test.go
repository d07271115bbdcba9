package server

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// A handler mounted with OwnAuthentication gets every request as it came
// (no token checked, no tenant given), beside one mounted behind the
// tokens, which still refuses a request without one.
func TestMountOwnAuthentication(t *testing.T) {
	s, err := New(testConfig(t), testLogger(t, "serve"))
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	h := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen = append(seen, name+" "+r.URL.Path+" tenant="+Tenant(r.Context())+" token="+BearerToken(r.Context()))
			w.WriteHeader(http.StatusTeapot)
		})
	}
	s.Mount("/guarded", h("guarded"))
	s.Mount("/open/", h("open"), OwnAuthentication())
	for _, c := range []struct {
		path, token string
		code        int
	}{
		{"/open", "", http.StatusTeapot},
		{"/open/login", "", http.StatusTeapot},
		{"/open/x", "wrong", http.StatusTeapot},
		{"/opener", "", http.StatusNotFound},
		{"/guarded/x", "", http.StatusUnauthorized},
		{"/guarded/x", tokACMERO, http.StatusTeapot},
	} {
		req, _ := http.NewRequest(http.MethodGet, c.path, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		rec := &recorder{header: http.Header{}}
		s.ServeHTTP(rec, req)
		if rec.code != c.code {
			t.Errorf("GET %s (token %q): %d, want %d", c.path, c.token, rec.code, c.code)
		}
	}
	want := []string{"open /open tenant= token=", "open /open/login tenant= token=", "open /open/x tenant= token=",
		"guarded /guarded/x tenant=acme token=" + tokACMERO}
	if !slices.Equal(seen, want) {
		t.Errorf("the handlers saw\n%q\nwant\n%q", seen, want)
	}
}

// recorder is the least of an http.ResponseWriter.
type recorder struct {
	header http.Header
	code   int
	body   strings.Builder
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(b)
}

// CheckToken says what a configured token grants, and nothing for a
// wrong one or a TenantReader token.
func TestCheckToken(t *testing.T) {
	s, err := New(testConfig(t), testLogger(t, "serve"))
	if err != nil {
		t.Fatal(err)
	}
	reader, ok := s.TenantReader("acme")
	if !ok || reader == "" {
		t.Fatal("no reader token for acme")
	}
	for _, c := range []struct {
		token string
		want  Principal
		ok    bool
	}{
		{tokACME, Principal{Tenant: "acme", Read: true, Write: true}, true},
		{tokACMERO, Principal{Tenant: "acme", Read: true}, true},
		{tokOther, Principal{Tenant: "other", Read: true, Write: true}, true},
		{"", Principal{}, false},
		{"acme-secret", Principal{}, false},
		{reader, Principal{}, false},
	} {
		got, ok := s.CheckToken(c.token)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("CheckToken(%q) = %+v, %v; want %+v, %v", c.token, got, ok, c.want, c.ok)
		}
	}
	if _, ok := s.TenantReader("nobody"); ok {
		t.Error("a reader token for a tenant no token names")
	}
}

// A TenantReader token reads its tenant's sessions through the routes,
// never another's, and writes nothing.
func TestTenantReader(t *testing.T) {
	s := startServer(t, testConfig(t))
	mine, theirs := newUUID(), newUUID()
	newClient(t, s, tokACME).postEvents(mine, eventsBody(chainEntry(mine, newUUID(), "", "acme's")))
	newClient(t, s, tokOther).postEvents(theirs, eventsBody(chainEntry(theirs, newUUID(), "", "other's")))
	tok, _ := s.TenantReader("acme")
	c := newClient(t, s, tok)
	got := listed(t, c, "")
	if _, ok := got[mine]; !ok || len(got) != 1 {
		t.Errorf("the reader of acme lists %v, want only %s", got, mine)
	}
	if r := c.do(http.MethodGet, "/v1/session_ingress/session/"+theirs, nil); r.code != http.StatusNotFound {
		t.Errorf("the reader of acme reads other's session: %s", r)
	}
	if r := c.put(mine, chainEntry(mine, newUUID(), "", "written"), ""); r.code != http.StatusForbidden {
		t.Errorf("the reader of acme writes: %s", r)
	}
}

// UIHosts: ui_hosts when set, else the listen address and localhost.
func TestUIHosts(t *testing.T) {
	s := startServer(t, testConfig(t))
	addr := s.Addr()
	port := addr[strings.LastIndexByte(addr, ':')+1:]
	if got, want := s.UIHosts(), []string{addr, "localhost:" + port}; !slices.Equal(got, want) {
		t.Errorf("default UIHosts %q, want %q", got, want)
	}
	cfg := testConfig(t)
	cfg.UIHosts = []string{"Scribe.Example.com", "10.0.0.5:8787"}
	s2, err := New(cfg, testLogger(t, "serve"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s2.UIHosts(), []string{"scribe.example.com", "10.0.0.5:8787"}; !slices.Equal(got, want) {
		t.Errorf("configured UIHosts %q, want %q", got, want)
	}
	cfg.UIHosts = []string{"http://x/"}
	if _, err := New(cfg, nil); err == nil || !strings.Contains(err.Error(), "ui_hosts[0]") {
		t.Errorf("a URL in ui_hosts: %v", err)
	}
}
