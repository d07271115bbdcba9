package plugins

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
)

// The example plugins, built once per test process.
var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

type exampleBins struct {
	webhook, bundle, pattern string
	// file is testdata/file-sink: a sink durable only after Flush.
	file string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// examples builds the three example plugins with `go build` (once).
func examples(t testing.TB) exampleBins {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "scribe-plugin-examples-")
		if buildErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", buildDir+string(filepath.Separator),
			"./examples/webhook-sink", "./examples/bundle-loader", "./examples/pattern-guard", "./testdata/file-sink")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build the examples: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return exampleBins{
		webhook: filepath.Join(buildDir, "webhook-sink"),
		bundle:  filepath.Join(buildDir, "bundle-loader"),
		pattern: filepath.Join(buildDir, "pattern-guard"),
		file:    filepath.Join(buildDir, "file-sink"),
	}
}

func sum(t testing.TB, path string) string {
	t.Helper()
	s, err := FileSHA256(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// syncBuffer is a log destination tests can read while plugins write.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testLogger logs to a buffer, and to stderr with SCRIBE_TEST_LOG=1.
func testLogger(t testing.TB, name string) (hclog.Logger, *syncBuffer) {
	buf := &syncBuffer{}
	var out io.Writer = buf
	if os.Getenv("SCRIBE_TEST_LOG") == "1" {
		out = io.MultiWriter(buf, os.Stderr)
	}
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Debug, Output: out}), buf
}

// settings are what a host gives a component named plugin/<name>.
func settings(t testing.TB, name string, environ ...string) (core.Settings, *syncBuffer) {
	id := core.ID{Type: Type, Name: name}
	log, buf := testLogger(t, "scribe."+id.String())
	env := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + os.TempDir()}, environ...)
	return core.Settings{ID: id, Logger: log, Environ: env, Host: core.HostInfo{ConfigDir: t.TempDir(), WorkDir: t.TempDir()}}, buf
}

func pluginConfig(t testing.TB, bin string, config any) *Config {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Command = bin
	cfg.SHA256 = sum(t, bin)
	cfg.StartTimeout = "20s"
	cfg.CallTimeout = "10s"
	if config != nil {
		b, err := json.Marshal(config)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Config = b
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// hook is the endpoint of the webhook sink: an httptest server on
// 127.0.0.1 that keeps what it stored, recognising a batch sent again by
// its Idempotency-Key, as a real idempotent receiver does.
type hook struct {
	srv *httptest.Server

	mu        sync.Mutex
	stored    map[string][]string // key -> entries of the batch
	lines     []string            // every stored entry, in arrival order
	batchIDs  []uint64            // of stored batches, in arrival order
	posts     int
	resent    int // batches that came again, with the same entries
	conflicts []string
	fail      int // answer 503 to that many posts
	hold      chan struct{}
}

type hookBody struct {
	Sink    string            `json:"sink"`
	Stream  string            `json:"stream"`
	BatchID uint64            `json:"batch_id"`
	Entries []json.RawMessage `json:"entries"`
}

func newHook(t testing.TB) *hook {
	h := &hook{stored: map[string][]string{}}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	hold := h.hold
	h.posts++
	if h.fail > 0 {
		h.fail--
		h.mu.Unlock()
		http.Error(w, "try later", http.StatusServiceUnavailable)
		return
	}
	h.mu.Unlock()
	if hold != nil {
		<-hold
	}
	var b hookBody
	if err := json.Unmarshal(body, &b); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if key != fmt.Sprintf("%s-%d", b.Stream, b.BatchID) {
		http.Error(w, "bad idempotency key "+key, http.StatusBadRequest)
		return
	}
	lines := make([]string, len(b.Entries))
	for i, e := range b.Entries {
		lines[i] = string(e)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if prev, ok := h.stored[key]; ok {
		h.resent++
		if strings.Join(prev, "\n") != strings.Join(lines, "\n") {
			h.conflicts = append(h.conflicts, key)
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	h.stored[key] = lines
	h.lines = append(h.lines, lines...)
	h.batchIDs = append(h.batchIDs, b.BatchID)
	w.WriteHeader(http.StatusNoContent)
}

func (h *hook) url() string { return h.srv.URL + "/scribe" }

func (h *hook) got() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.lines...)
}

func (h *hook) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.lines)
}

func (h *hook) failNext(n int) {
	h.mu.Lock()
	h.fail = n
	h.mu.Unlock()
}

// check fails the test unless the hook holds exactly want, in order, with
// batch ids increasing and no batch sent again with other entries.
func (h *hook) check(t *testing.T, want []string) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.conflicts) > 0 {
		t.Fatalf("batches sent again with other entries: %v", h.conflicts)
	}
	for i := 1; i < len(h.batchIDs); i++ {
		if h.batchIDs[i] <= h.batchIDs[i-1] {
			t.Fatalf("batch %d stored after batch %d", h.batchIDs[i], h.batchIDs[i-1])
		}
	}
	seen := map[string]bool{}
	for _, l := range h.lines {
		if seen[l] {
			t.Fatalf("entry stored twice: %.120s", l)
		}
		seen[l] = true
	}
	if len(h.lines) != len(want) {
		t.Fatalf("the endpoint stored %d entries, want %d", len(h.lines), len(want))
	}
	for i := range want {
		if h.lines[i] != want[i] {
			t.Fatalf("entry %d is\n%.200s\nwant\n%.200s", i, h.lines[i], want[i])
		}
	}
}

func webhookConfig(h *hook, extra map[string]any) map[string]any {
	c := map[string]any{"url": h.url(), "retry_min": "10ms", "retry_max": "100ms", "retries": 2}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

// entries builds n chain entries of one session, from index from.
func entries(t testing.TB, session string, from, n int) ([]core.Entry, []string) {
	var es []core.Entry
	var lines []string
	for i := from; i < from+n; i++ {
		typ := core.TypeUser
		if i%2 == 1 {
			typ = core.TypeAssistant
		}
		parent := ""
		if i > 0 {
			parent = fmt.Sprintf("4f7e0000-0000-4000-8000-%012d", i-1)
		}
		l := coretest.Line(typ, session, fmt.Sprintf("4f7e0000-0000-4000-8000-%012d", i), parent)
		es = append(es, coretest.MustEntry(t, l))
		lines = append(lines, l)
	}
	return es, lines
}

const session1 = "0565a3a4-0000-4000-8000-0000000000aa"

// eventually polls cond until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// script writes an executable shell script.
func script(t testing.TB, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "plugin.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// debugPlugin starts bin in debug mode, as a developer would in a
// debugger, and returns the reattach JSON it prints.
func debugPlugin(t *testing.T, bin string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "SCRIBE_PLUGIN_DEBUG=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case l, ok := <-line:
		if !ok {
			t.Fatal("the plugin printed no reattach configuration")
		}
		return l, cmd
	case <-time.After(20 * time.Second):
		t.Fatal("no reattach configuration within 20s")
	}
	return "", nil
}

func background() context.Context { return context.Background() }

// fileLines reads what file-sink wrote, without its batch markers.
func fileLines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" && !strings.HasPrefix(l, "#batch ") {
			out = append(out, l)
		}
	}
	return out
}

// target is where a sink plugin under test delivers, and how to read it.
type target struct {
	name   string
	bin    string
	config map[string]any
	lines  func() []string
	check  func(t *testing.T, want []string)
}

func webhookTarget(t *testing.T, bins exampleBins) target {
	h := newHook(t)
	return target{name: "webhook", bin: bins.webhook, config: webhookConfig(h, nil), lines: h.got, check: h.check}
}

func fileTarget(t *testing.T, bins exampleBins) target {
	p := filepath.Join(t.TempDir(), "out.jsonl")
	return target{name: "file", bin: bins.file, config: map[string]any{"path": p},
		lines: func() []string { return fileLines(t, p) },
		check: func(t *testing.T, want []string) {
			t.Helper()
			got := fileLines(t, p)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						t.Logf("first difference at line %d: got %.120s want %.120s", i, got[i], want[i])
						break
					}
				}
				t.Fatalf("the file holds %d lines, want %d in order, once each", len(got), len(want))
			}
		}}
}
