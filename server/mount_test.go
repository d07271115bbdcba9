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

// ui_hosts holds host names or host:port, as a browser sends them.
func TestUIHostsValidated(t *testing.T) {
	cfg := testConfig(t)
	cfg.UIHosts = []string{"Scribe.Example.com", "10.0.0.5:8787"}
	if _, err := New(cfg, nil); err != nil {
		t.Errorf("ui_hosts of names: %v", err)
	}
	cfg.UIHosts = []string{"http://x/"}
	if _, err := New(cfg, nil); err == nil || !strings.Contains(err.Error(), "ui_hosts[0]") {
		t.Errorf("a URL in ui_hosts: %v", err)
	}
}
