package plugins

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
)

// A sink plugin killed with SIGKILL in the middle of a stream: the other
// sink of the pipeline gets everything without waiting for it, and once
// the plugin is back it delivers every entry exactly once, in order. Run
// with a sink whose writes are durable at once (webhook) and one durable
// only after Flush (file), whose unflushed batches are sent again.
func TestSinkPluginKilledMidStream(t *testing.T) {
	bins := examples(t)
	old := restartMin
	restartMin = 2 * time.Second // keep it down long enough to be seen down
	t.Cleanup(func() { restartMin = old })
	for _, mk := range []func(*testing.T, exampleBins) target{webhookTarget, fileTarget} {
		tg := mk(t, bins)
		t.Run(tg.name, func(t *testing.T) { killMidStream(t, tg) })
	}
}

func killMidStream(t *testing.T, tg target) {
	set, _ := settings(t, "audit")
	ps, err := NewSink(set, pluginConfig(t, tg.bin, tg.config))
	if err != nil {
		t.Fatal(err)
	}
	rec := &coretest.RecordingSink{}
	p, err := core.NewPipeline(core.PipelineOptions{Sinks: []core.NamedSink{
		{ID: set.ID, Sink: ps},
		{ID: core.MustParseID("recording/other"), Sink: rec},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	const total, first, killAt = 3000, 1000, 1300
	es, lines := entries(t, session1, 0, total)
	for _, e := range es[:first] {
		if _, err := p.Submit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(tg.lines()); n != first {
		t.Fatalf("before the kill the plugin holds %d entries, want %d", n, first)
	}
	pid := ps.Status().PID
	if pid == 0 {
		t.Fatal("no plugin pid")
	}
	for i, e := range es[first:] {
		if first+i == killAt {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := p.Submit(ctx, e); err != nil {
			t.Fatalf("Submit %d: %v", first+i, err)
		}
	}
	eventually(t, 10*time.Second, "the other sink got every entry", func() bool { return len(rec.All()) == total })
	if got := rec.All(); strings.Join(got, "\n") != strings.Join(lines, "\n") {
		t.Fatal("the other sink got other entries")
	}
	// It got them while the plugin was still down: the plugin is behind.
	if n := len(tg.lines()); n >= total {
		t.Fatalf("the plugin already had all %d entries: the kill did not hold it back", n)
	}
	st := ps.Status()
	t.Logf("other sink complete; plugin %s, delivered %d/%d, queued %d", st.State, len(tg.lines()), total, st.Queued)

	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := p.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	tg.check(t, lines)
	st = ps.Status()
	if st.Restarts < 1 || st.Counters["crashes"] < 1 {
		t.Fatalf("status after the kill: %+v", st)
	}
	if st.Queued != 0 {
		t.Fatalf("%d entries still queued after shutdown", st.Queued)
	}
	t.Logf("restarts %d, batches sent again %d, plugin flushes %d", st.Restarts, st.Counters["batches_redelivered"], st.Counters["plugin_flushes"])
}

// Batches a plugin acknowledged but had not made durable when it died are
// sent again, with the same ids, to the next process; the file sink
// recognises none of them (they were lost with the process) and writes
// them once.
func TestUnflushedBatchesAreSentAgain(t *testing.T) {
	bins := examples(t)
	flushWhenIdle = false
	t.Cleanup(func() { flushWhenIdle = true })
	tg := fileTarget(t, bins)
	set, _ := settings(t, "file")
	s, err := NewSink(set, pluginConfig(t, tg.bin, tg.config))
	if err != nil {
		t.Fatal(err)
	}
	ctx := background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(ctx)
	es, lines := entries(t, session1, 0, 30)
	if err := s.Write(ctx, es[:10]); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, es[10:20]); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the plugin acknowledged the second batch", func() bool {
		return s.Status().Counters["batches_delivered"] == 2
	})
	if n := len(tg.lines()); n != 10 {
		t.Fatalf("the file holds %d lines before the plugin's flush, want 10", n)
	}
	if err := syscall.Kill(s.Status().PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, es[20:]); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the plugin is back", func() bool {
		st := s.Status()
		return st.Restarts == 1 && st.State == StateRunning
	})
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	tg.check(t, lines)
	if st := s.Status(); st.Counters["batches_redelivered"] != 1 {
		t.Fatalf("batches sent again: %d, want 1 (%+v)", st.Counters["batches_redelivered"], st)
	}
}

// A plugin that hangs (stopped with SIGSTOP) is killed when a call takes
// longer than call_timeout, and restarted; Flush does not wait for it
// past call_timeout: it makes the entries durable in the spool instead.
func TestSinkPluginHangIsRestarted(t *testing.T) {
	bins := examples(t)
	h := newHook(t)
	set, _ := settings(t, "audit")
	cfg := pluginConfig(t, bins.webhook, webhookConfig(h, nil))
	cfg.CallTimeout = "1s"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := NewSink(set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(ctx)
	es, lines := entries(t, session1, 0, 40)
	if err := s.Write(ctx, es[:20]); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	pid := s.Status().PID
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The signal is taken when the process next runs: on a loaded machine
	// it may still answer a call before that. Go on once it is stopped.
	eventually(t, 20*time.Second, "the plugin process stopped", func() bool { return processStopped(pid) })
	start := time.Now()
	if err := s.Write(ctx, es[20:]); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush while the plugin hangs: %v", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Fatalf("Flush waited %s for a hung plugin", d)
	}
	eventually(t, 20*time.Second, "the restarted plugin delivered everything", func() bool { return h.count() == len(lines) })
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	h.check(t, lines)
	st := s.Status()
	if st.Counters["timeouts"] < 1 || st.Restarts < 1 {
		t.Fatalf("status: %+v", st)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the hung process %d is still there: %v", pid, err)
	}
}

// A plugin whose writes keep failing is retried with backoff, then
// restarted; nothing is lost or repeated.
func TestSinkPluginKeepsFailing(t *testing.T) {
	bins := examples(t)
	h := newHook(t)
	set, _ := settings(t, "audit")
	s, err := NewSink(set, pluginConfig(t, bins.webhook, webhookConfig(h, map[string]any{"retries": 0})))
	if err != nil {
		t.Fatal(err)
	}
	ctx := background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(ctx)
	h.failNext(maxFailures + 2)
	es, lines := entries(t, session1, 0, 10)
	if err := s.Write(ctx, es); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "delivered after the failures", func() bool { return h.count() == len(lines) })
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	h.check(t, lines)
	st := s.Status()
	if st.Counters["plugin_errors"] < int64(maxFailures) || st.Restarts < 1 {
		t.Fatalf("status: %+v", st)
	}
	if !strings.Contains(st.LastError, "503") {
		t.Fatalf("last error %q does not say what failed", st.LastError)
	}
}

// Entries a plugin could not take survive the host: they wait in the spool
// (past queue_size, they go there at once) and the next host delivers them
// with the same batch ids.
func TestSinkSpoolSurvivesHostRestart(t *testing.T) {
	bins := examples(t)
	h := newHook(t)
	set, _ := settings(t, "audit")
	cfg := pluginConfig(t, bins.webhook, webhookConfig(h, map[string]any{"retries": 0}))
	cfg.QueueSize = 16
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx := background()
	lines := spoolWhileDown(t, set, cfg, h, 200, func(st Status) {
		if st.Spooled == 0 || st.Queued != 200 {
			t.Fatalf("with queue_size 16 and the endpoint down: %+v", st)
		}
	})
	if h.count() != 0 {
		t.Fatal("the endpoint stored entries while failing")
	}
	dir := SpoolDir(set.Host.ConfigDir, set.ID)
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("spool folder: %v %v", fi, err)
	}

	h.failNext(0)
	s2, err := NewSink(set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if st := s2.Status(); st.Queued == 0 {
		t.Fatalf("the second host found nothing in the spool: %+v", st)
	}
	more, moreLines := entries(t, session1, 200, 5)
	if err := s2.Write(ctx, more); err != nil {
		t.Fatal(err)
	}
	if err := s2.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	h.check(t, append(lines, moreLines...))
	segs, _ := filepath.Glob(filepath.Join(dir, "seg-*.log"))
	if len(segs) != 0 {
		t.Fatalf("spool segments left after everything was delivered: %v", segs)
	}
}

// A binary with the wrong sha256, one that never answers the handshake and
// one that writes garbage to stdout are each refused with a clear error;
// nothing is left running and the host goes on to start a good plugin.
func TestRefusedBinaries(t *testing.T) {
	bins := examples(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	cases := []struct {
		name    string
		bin     string
		sha     string
		timeout string
		want    error
		msg     string
	}{
		{name: "sha256 mismatch", bin: bins.webhook, sha: strings.Repeat("ab", 32), want: ErrChecksum, msg: "refusing to run it"},
		{name: "no handshake", bin: script(t, "echo $$ > "+pidFile+"\nsleep 30\n"), timeout: "1s", want: ErrHandshake, msg: "did not answer the handshake within 1s"},
		{name: "garbage on stdout", bin: script(t, "echo $$ > "+pidFile+"\necho 'hello, I am not a plugin'\nexec sleep 30\n"), want: ErrHandshake, msg: `wrote "hello, I am not a plugin" to stdout`},
		{name: "not a plugin of this kind", bin: bins.pattern, want: ErrWrongKind, msg: "does not serve a sink"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_ = os.Remove(pidFile)
			set, _ := settings(t, "audit")
			cfg := DefaultConfig()
			cfg.Command = c.bin
			cfg.SHA256 = c.sha
			if cfg.SHA256 == "" {
				cfg.SHA256 = sum(t, c.bin)
			}
			if c.timeout != "" {
				cfg.StartTimeout = c.timeout
			}
			cfg.Config = []byte(`{"url":"http://127.0.0.1:1/"}`)
			s, err := NewSink(set, cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Start(background())
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("Start: %v\nwant %v containing %q", err, c.want, c.msg)
			}
			t.Logf("refused: %v", err)
			if st := s.Status(); st.State != StateFailed || st.LastError == "" {
				t.Fatalf("status: %+v", st)
			}
			if err := s.Shutdown(background()); err != nil {
				t.Fatal(err)
			}
			if b, err := os.ReadFile(pidFile); err == nil {
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				eventually(t, 5*time.Second, "the refused process is gone", func() bool {
					return syscall.Kill(pid, 0) == syscall.ESRCH
				})
			}
		})
	}
	t.Run("guard with a wrong sha256", func(t *testing.T) {
		set, _ := settings(t, "g")
		cfg := pluginConfig(t, bins.pattern, nil)
		cfg.SHA256 = strings.Repeat("00", 32)
		if _, err := NewGuard(background(), set, cfg); !errors.Is(err, ErrChecksum) {
			t.Fatalf("NewGuard: %v", err)
		}
	})
	t.Run("the host goes on", func(t *testing.T) {
		h := newHook(t)
		set, _ := settings(t, "audit")
		s, err := NewSink(set, pluginConfig(t, bins.webhook, webhookConfig(h, nil)))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(background()); err != nil {
			t.Fatal(err)
		}
		es, lines := entries(t, session1, 0, 3)
		if err := s.Write(background(), es); err != nil {
			t.Fatal(err)
		}
		if err := s.Shutdown(background()); err != nil {
			t.Fatal(err)
		}
		h.check(t, lines)
	})
}

// The plugin sees PATH, HOME, TMPDIR and the variables env_allow names,
// and nothing else of the host's environment.
func TestPluginEnvironmentIsAllowListed(t *testing.T) {
	t.Setenv("SCRIBE_TEST_PROCESS_SECRET", "leak")
	out := filepath.Join(t.TempDir(), "env")
	bin := script(t, "env > "+out+"\nexec sleep 30\n")
	set, _ := settings(t, "audit", "AUDIT_TOKEN=t0k3n", "OTHER_SECRET=nope")
	cfg := DefaultConfig()
	cfg.Command = bin
	cfg.SHA256 = sum(t, bin)
	cfg.StartTimeout = "1s"
	cfg.EnvAllow = []string{"AUDIT_TOKEN"}
	s, err := NewSink(set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(background()); !errors.Is(err, ErrHandshake) {
		t.Fatalf("Start: %v", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	env := envMap(strings.Split(strings.TrimSpace(string(b)), "\n"))
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "AUDIT_TOKEN", MagicCookieKey} {
		if env[k] == "" {
			t.Errorf("%s missing from the plugin's environment", k)
		}
	}
	for _, k := range []string{"OTHER_SECRET", "SCRIBE_TEST_PROCESS_SECRET"} {
		if _, ok := env[k]; ok {
			t.Errorf("%s reached the plugin", k)
		}
	}
	if env["PLUGIN_CLIENT_CERT"] == "" {
		t.Error("no client certificate: AutoMTLS is off")
	}
}

// A plugin started by hand in debug mode (as in a debugger) is attached to
// through SCRIBE_PLUGIN_REATTACH_<NAME> in the environment the host gives.
func TestReattach(t *testing.T) {
	bins := examples(t)
	h := newHook(t)
	reattach, cmd := debugPlugin(t, bins.webhook)
	set, _ := settings(t, "audit-eu", ReattachEnv("audit-eu")+"="+reattach)
	if !strings.HasPrefix(ReattachEnv("audit-eu"), "SCRIBE_PLUGIN_REATTACH_AUDIT_EU") {
		t.Fatal(ReattachEnv("audit-eu"))
	}
	cfg := pluginConfig(t, bins.webhook, webhookConfig(h, nil))
	s, err := NewSink(set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := background()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	st := s.Status()
	if !st.Reattached || st.PID != cmd.Process.Pid {
		t.Fatalf("status: %+v (debug process %d)", st, cmd.Process.Pid)
	}
	es, lines := entries(t, session1, 0, 5)
	if err := s.Write(ctx, es); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	h.check(t, lines)
	// The host leaves a process it attached to running.
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the debugged plugin is gone: %v", err)
	}

	// The same through the `reattach` setting.
	h2 := newHook(t)
	set2, _ := settings(t, "audit")
	cfg2 := pluginConfig(t, bins.webhook, webhookConfig(h2, nil))
	cfg2.Reattach = reattach
	if err := cfg2.Validate(); err != nil {
		t.Fatal(err)
	}
	s2, err := NewSink(set2, cfg2)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s2.Write(ctx, es); err != nil {
		t.Fatal(err)
	}
	if err := s2.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	h2.check(t, lines)
}

// The plugin's log lines come out of the host's logger named after the
// component.
func TestPluginLogsUnderComponentName(t *testing.T) {
	bins := examples(t)
	h := newHook(t)
	set, logs := settings(t, "audit")
	s, err := NewSink(set, pluginConfig(t, bins.webhook, webhookConfig(h, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the plugin's log line re-emitted", func() bool {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "scribe.plugin/audit:") && strings.Contains(l, "webhook sink started") {
				return true
			}
		}
		return false
	})
}

// A guard plugin that crashed is started again on a later Check; while it
// cannot be reached, Check refuses (fails closed).
func TestGuardPluginRestartsAfterCrash(t *testing.T) {
	bins := examples(t)
	set, _ := settings(t, "clients")
	g, err := NewGuard(background(), set, pluginConfig(t, bins.pattern, map[string]any{"patterns": []string{"/home/*/clients/*"}}))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Shutdown(background())
	e := coretest.MustEntry(t, coretest.LineIn("user", session1, "4f7e0000-0000-4000-8000-000000000001", "", "/home/alice/clients/acme"))
	if err := g.Check(background(), &e); !errors.Is(err, core.ErrPersistenceDisabled) {
		t.Fatalf("Check: %v", err)
	}
	pid := g.Status().PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the guard answers again", func() bool {
		err := g.Check(background(), &e)
		if err != nil && !errors.Is(err, core.ErrPersistenceDisabled) {
			return false // down: refused all the same, but not by the plugin
		}
		return errors.Is(err, core.ErrPersistenceDisabled) && !strings.Contains(err.Error(), "unavailable")
	})
	st := g.Status()
	if st.Restarts != 1 || st.PID == pid || st.State != StateRunning {
		t.Fatalf("status: %+v", st)
	}
}

// Describe tells what each example is without configuring it.
func TestDescribe(t *testing.T) {
	bins := examples(t)
	for _, c := range []struct{ bin, kind, typ, option string }{
		{bins.webhook, "sink", "webhook", "retry_max"},
		{bins.bundle, "loader", "bundle", "dir"},
		{bins.pattern, "guard", "pattern", "patterns"},
	} {
		d, err := Describe(background(), c.bin, DescribeOptions{Environ: os.Environ()})
		if err != nil {
			t.Fatal(err)
		}
		if d.Kind != c.kind || d.Type != c.typ || d.Version == "" || d.SHA256 != sum(t, c.bin) || d.ProtocolVersion != ProtocolVersion {
			t.Fatalf("%s: %+v", c.bin, d)
		}
		if !strings.Contains(string(d.ConfigSchema), `"`+c.option+`"`) {
			t.Fatalf("%s: schema %s lacks %q", c.bin, d.ConfigSchema, c.option)
		}
	}
	_, err := Describe(background(), script(t, "echo nope\nexec sleep 30\n"), DescribeOptions{StartTimeout: 2 * time.Second})
	if !errors.Is(err, ErrHandshake) {
		t.Fatalf("Describe of a non-plugin: %v", err)
	}
}

// With spool_encryption, what waits in the spool is sealed: no entry is
// readable in the spool files, the next host with the key delivers every
// entry, and a host with another key refuses to start rather than read
// the batches as plain.
func TestSinkSpoolEncrypted(t *testing.T) {
	bins := examples(t)
	h := newHook(t)
	set, _ := settings(t, "audit")
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("correct horse\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := pluginConfig(t, bins.webhook, webhookConfig(h, map[string]any{"retries": 0}))
	cfg.QueueSize = 16
	cfg.SpoolEncryption.Passphrase.File = pw
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx := background()
	lines := spoolWhileDown(t, set, cfg, h, 100, nil)
	dir := SpoolDir(set.Host.ConfigDir, set.ID)
	segs, _ := filepath.Glob(filepath.Join(dir, "seg-*.log"))
	if len(segs) == 0 {
		t.Fatal("nothing was spooled: the test proves nothing")
	}
	for _, p := range segs {
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte(session1)) {
			t.Fatalf("%s holds entries in clear", p)
		}
	}
	wrong := filepath.Join(t.TempDir(), "wrong")
	_ = os.WriteFile(wrong, []byte("battery staple\n"), 0o600)
	bad := *cfg
	bad.SpoolEncryption.Passphrase.File = wrong
	s3, err := NewSink(set, &bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := s3.Start(ctx); err == nil {
		_ = s3.Shutdown(ctx)
		t.Fatal("a host with another key started on a sealed spool")
	}
	h.failNext(0)
	s2, err := NewSink(set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s2.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	h.check(t, lines)
}

// spoolWhileDown runs a sink of cfg with its endpoint failing, writes n
// entries in batches of 7, flushes (so they go to the spool), checks its
// status with check (when not nil) before the flush, and shuts it down.
func spoolWhileDown(t *testing.T, set core.Settings, cfg *Config, h *hook, n int, check func(Status)) []string {
	t.Helper()
	ctx := background()
	s, err := NewSink(set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	h.failNext(1 << 30)
	es, lines := entries(t, session1, 0, n)
	for i := 0; i < len(es); i += 7 {
		if err := s.Write(ctx, es[i:min(i+7, len(es))]); err != nil {
			t.Fatal(err)
		}
	}
	if check != nil {
		check(s.Status())
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if err := s.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	return lines
}

// processStopped reports whether the process is stopped by a signal
// (state T in /proc/PID/stat).
func processStopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'T'
}
