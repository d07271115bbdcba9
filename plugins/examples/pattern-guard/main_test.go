package main

import (
	"context"
	"errors"
	"testing"

	"github.com/e0dc0000/scribe/core"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		pattern, cwd string
		refused      bool
	}{
		{"/home/*/clients/acme", "/home/bob/clients/acme", true},
		{"/home/*/clients/acme", "/home/bob/clients/acme/api/v2", true},
		{"/home/*/clients/acme", "/home/bob/clients/acme-2", false},
		{"/home/*/clients/acme", "/home/clients/acme", false},
		{"/srv/**/secret-*", "/srv/secret-x", true},
		{"/srv/**/secret-*", "/srv/a/b/c/secret-x/deeper", true},
		{"/srv/**/secret-*", "/srv/a/public", false},
		{"/**", "/anything/at/all", true},
		{"clients/*", "/home/bob/clients/acme", false},
		{"/tmp/[ab]?", "/tmp/ax", true},
		{"/tmp/[ab]?", "/tmp/cx", false},
		{"/home/bob/", "/home/bob/../alice", false},
	}
	for _, c := range cases {
		g := &Guard{}
		if err := g.Configure(context.Background(), []byte(`{"patterns":["`+c.pattern+`"]}`)); err != nil {
			t.Fatal(err)
		}
		e := core.Entry{CWD: c.cwd}
		err := g.Check(context.Background(), &e)
		if (err != nil) != c.refused {
			t.Errorf("pattern %q, cwd %q: %v, want refused=%v", c.pattern, c.cwd, err, c.refused)
		}
		if err != nil && !errors.Is(err, core.ErrPersistenceDisabled) {
			t.Errorf("refusal does not wrap ErrPersistenceDisabled: %v", err)
		}
	}
}

func TestRefuseWithoutCWD(t *testing.T) {
	g := &Guard{}
	if err := g.Configure(context.Background(), []byte(`{"refuse_without_cwd":true}`)); err != nil {
		t.Fatal(err)
	}
	if err := g.Check(context.Background(), &core.Entry{}); !errors.Is(err, core.ErrPersistenceDisabled) {
		t.Fatalf("entry without cwd: %v", err)
	}
}

func TestBadPattern(t *testing.T) {
	for _, c := range []string{`{"patterns":["/a/[b"]}`, `{"patterns":[""]}`, `{"pattern":["/a"]}`} {
		if err := (&Guard{}).Configure(context.Background(), []byte(c)); err == nil {
			t.Errorf("%s: accepted", c)
		}
	}
}
