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
	CWD string
	// Settings are what the host creates the guard with, for a guard that
	// decides from them (the environment, the command line, the
	// configuration) rather than from the entry; used with NewFor.
	Settings core.Settings
	Allow    bool
}

// GuardHarness lets RunGuardContract drive one guard implementation.
type GuardHarness struct {
	// New returns the guard under test, configured for Cases.
	New func(t *testing.T) core.Guard
	// NewFor, instead of New, returns a guard created with a case's
	// Settings (one guard per distinct case).
	NewFor func(t *testing.T, set core.Settings) core.Guard
	// Cases must hold at least one allowed and one refused entry, each
	// with its own Name.
	Cases []GuardCase
}

// RunGuardContract holds a guard to the contract every guard shares: nil
// allows; a refusal wraps core.ErrPersistenceDisabled and says why; Check
// does not change the entry; checks may run concurrently; and under a
// cancelled context a guard never allows what it refuses (it fails
// closed).
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
	guards := make([]core.Guard, len(h.Cases))
	for i, c := range h.Cases {
		switch {
		case h.NewFor != nil:
			guards[i] = h.NewFor(t, c.Settings)
		case i == 0:
			guards[i] = h.New(t)
		default:
			guards[i] = guards[0]
		}
	}
	guardOf := map[string]core.Guard{}
	for i, c := range h.Cases {
		if _, dup := guardOf[c.Name]; dup {
			t.Fatalf("GuardHarness.Cases: two cases named %q", c.Name)
		}
		guardOf[c.Name] = guards[i]
	}
	entry := func(t *testing.T, c GuardCase) core.Entry {
		e := MustEntry(t, c.Line)
		if c.CWD != "" {
			e.CWD = c.CWD
		}
		return e
	}
	check := func(c GuardCase, e *core.Entry) error {
		err := guardOf[c.Name].Check(ctx, e)
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

	t.Run("cancelled context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		for _, c := range h.Cases {
			if c.Allow {
				continue
			}
			e := entry(t, c)
			if err := guardOf[c.Name].Check(cctx, &e); err == nil {
				t.Errorf("%s: allowed under a cancelled context an entry it refuses", c.Name)
			}
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
