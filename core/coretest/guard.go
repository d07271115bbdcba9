package coretest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/e0dc0000/scribe/core"
)

// LineIn is Line with another cwd ("" drops the cwd field).
func LineIn(typ, session, uuid, parent, cwd string) string {
	l := Line(typ, session, uuid, parent)
	if cwd == "" {
		return strings.Replace(l, `,"cwd":"/home/alice/src/shop"`, "", 1)
	}
	return strings.Replace(l, `"cwd":"/home/alice/src/shop"`, `"cwd":`+quote(cwd), 1)
}

func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// GuardCase is an entry and the decision expected of a guard.
type GuardCase struct {
	Name string
	Line string
	// CWD, when set, is filled in by the host (the line may lack it).
	CWD   string
	Allow bool
}

// GuardHarness lets RunGuardContract drive one guard implementation.
type GuardHarness struct {
	// New returns the guard under test, configured for Cases.
	New func(t *testing.T) core.Guard
	// Cases must hold at least one allowed and one refused entry.
	Cases []GuardCase
}

// RunGuardContract holds a guard to the contract every guard shares: nil
// allows; a refusal wraps core.ErrPersistenceDisabled and says why; Check
// does not change the entry; checks may run concurrently.
func RunGuardContract(t *testing.T, h GuardHarness) {
	ctx := context.Background()
	var allow, refuse bool
	for _, c := range h.Cases {
		allow = allow || c.Allow
		refuse = refuse || !c.Allow
	}
	if !allow || !refuse {
		t.Fatal("GuardHarness.Cases needs an allowed and a refused case")
	}
	g := h.New(t)
	entry := func(t *testing.T, c GuardCase) core.Entry {
		e := MustEntry(t, c.Line)
		if c.CWD != "" {
			e.CWD = c.CWD
		}
		return e
	}
	check := func(c GuardCase, e *core.Entry) error {
		err := g.Check(ctx, e)
		switch {
		case c.Allow && err != nil:
			return errors.New(c.Name + ": refused an entry it should allow: " + err.Error())
		case !c.Allow && err == nil:
			return errors.New(c.Name + ": allowed an entry it should refuse")
		case !c.Allow && !errors.Is(err, core.ErrPersistenceDisabled):
			return errors.New(c.Name + ": refusal does not wrap ErrPersistenceDisabled: " + err.Error())
		case !c.Allow && strings.TrimSpace(strings.TrimPrefix(err.Error(), core.ErrPersistenceDisabled.Error()+":")) == "":
			return errors.New(c.Name + ": refusal gives no reason")
		}
		return nil
	}

	t.Run("decisions", func(t *testing.T) {
		for _, c := range h.Cases {
			t.Run(c.Name, func(t *testing.T) {
				e := entry(t, c)
				before := e
				raw := bytes.Clone(e.Raw)
				if err := check(c, &e); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(e.Raw, raw) || e.CWD != before.CWD || e.SessionID != before.SessionID || e.UUID != before.UUID {
					t.Fatal("Check changed the entry")
				}
			})
		}
	})

	t.Run("concurrent checks", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, len(h.Cases)*8)
		for range 8 {
			for _, c := range h.Cases {
				e := entry(t, c)
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := check(c, &e); err != nil {
						errs <- err
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}
