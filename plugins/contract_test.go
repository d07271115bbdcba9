package plugins

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
)

// The webhook example, through a real plugin process, holds to the sink
// contract; Read asks the test's endpoint what it stored.
func TestWebhookSinkContract(t *testing.T) {
	bins := examples(t)
	var mu sync.Mutex
	hooks := map[core.Sink]*hook{}
	coretest.RunSinkContract(t, coretest.SinkHarness{
		New: func(t *testing.T) core.Sink {
			h := newHook(t)
			set, _ := settings(t, "audit")
			s, err := NewSink(set, pluginConfig(t, bins.webhook, webhookConfig(h, nil)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Shutdown(background()) })
			mu.Lock()
			hooks[s] = h
			mu.Unlock()
			return s
		},
		Read: func(t *testing.T, s core.Sink, ref core.SessionRef) []string {
			mu.Lock()
			h := hooks[s]
			mu.Unlock()
			var out []string
			for _, l := range h.got() {
				e := coretest.MustEntry(t, l)
				if e.SessionID == ref.SessionID && (ref.AgentID == "" || e.AgentID == ref.AgentID) {
					out = append(out, l)
				}
			}
			return out
		},
		Sessions: true,
	})
}

// A sink whose writes are durable only after its Flush holds to the
// contract too: the host's Flush and Shutdown reach the plugin's.
func TestFileSinkContract(t *testing.T) {
	bins := examples(t)
	var mu sync.Mutex
	paths := map[core.Sink]string{}
	coretest.RunSinkContract(t, coretest.SinkHarness{
		New: func(t *testing.T) core.Sink {
			p := filepath.Join(t.TempDir(), "out.jsonl")
			set, _ := settings(t, "file")
			s, err := NewSink(set, pluginConfig(t, bins.file, map[string]any{"path": p}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Shutdown(background()) })
			mu.Lock()
			paths[s] = p
			mu.Unlock()
			return s
		},
		Read: func(t *testing.T, s core.Sink, ref core.SessionRef) []string {
			mu.Lock()
			p := paths[s]
			mu.Unlock()
			return fileLines(t, p)
		},
	})
}

// The bundle example, through a real plugin process, holds to the loader
// contract.
func TestBundleLoaderContract(t *testing.T) {
	bins := examples(t)
	coretest.RunLoaderContract(t, coretest.LoaderHarness{
		Sidechains: true,
		New: func(t *testing.T, sessions []coretest.Session) core.Loader {
			dir := t.TempDir()
			for i, s := range sessions {
				// Some flat, some in a project folder, as exports come.
				base := dir
				if i%2 == 1 {
					base = filepath.Join(dir, "-home-alice-src-shop")
				}
				p := filepath.Join(base, s.Ref.SessionID+".jsonl")
				if s.Ref.AgentID != "" {
					p = filepath.Join(base, s.Ref.SessionID, "subagents", "agent-"+s.Ref.AgentID+".jsonl")
				}
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(strings.Join(s.Lines, "\n")+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			set, _ := settings(t, "bundles")
			l, err := NewLoader(background(), set, pluginConfig(t, bins.bundle, map[string]any{"dir": dir}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Shutdown(background()) })
			return l
		},
	})
}

// The pattern example, through a real plugin process, holds to the guard
// contract.
func TestPatternGuardContract(t *testing.T) {
	bins := examples(t)
	const s = session1
	u := func(i int) string { return "4f7e0000-0000-4000-8000-00000000000" + string(rune('0'+i)) }
	coretest.RunGuardContract(t, coretest.GuardHarness{
		New: func(t *testing.T) core.Guard {
			set, _ := settings(t, "clients")
			g, err := NewGuard(background(), set, pluginConfig(t, bins.pattern, map[string]any{
				"patterns": []string{"/home/*/clients/acme", "/srv/**/secret-*"},
			}))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = g.Shutdown(background()) })
			return g
		},
		Cases: []coretest.GuardCase{
			{Name: "other project", Line: coretest.LineIn("user", s, u(1), "", "/home/alice/src/shop"), Allow: true},
			{Name: "matching project", Line: coretest.LineIn("user", s, u(2), "", "/home/bob/clients/acme"), Allow: false},
			{Name: "below a matching project", Line: coretest.LineIn("assistant", s, u(3), u(2), "/home/bob/clients/acme/api"), Allow: false},
			{Name: "double star", Line: coretest.LineIn("user", s, u(4), "", "/srv/a/b/secret-plans"), Allow: false},
			{Name: "double star miss", Line: coretest.LineIn("user", s, u(5), "", "/srv/a/b/public"), Allow: true},
			{Name: "no cwd", Line: coretest.LineIn("user", s, u(6), "", ""), Allow: true},
			{Name: "cwd from the host", Line: coretest.LineIn("user", s, u(7), "", ""), CWD: "/home/carol/clients/acme", Allow: false},
		},
	})
}
