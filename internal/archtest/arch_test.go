// Package archtest holds the test that keeps the architecture what
// ARCHITECTURE.md says it is: who may import whom.
package archtest

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/e0dc0000/scribe/"

// stores are the packages that keep sessions somewhere: a store never
// imports another store (what they share lives in a leaf: sessions,
// sinks/backend, sinks/sinkhelper, transcript).
var stores = []string{"sinks/jsonl", "sinks/postgres", "sinks/s3", "sinks/events", "sinks/ingress", "sinks/memcache", "sinks/summary"}

// imports maps each package of the module (module prefix cut) to the
// module packages it imports, tests left out.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], module)
		m[pkg] = nil
		for _, imp := range f[1:] {
			if rest, ok := strings.CutPrefix(imp, module); ok {
				m[pkg] = append(m[pkg], rest)
			}
		}
	}
	return m
}

func under(pkg, prefix string) bool { return pkg == prefix || strings.HasPrefix(pkg, prefix+"/") }

func isStore(pkg string) (string, bool) {
	for _, s := range stores {
		if under(pkg, s) {
			return s, true
		}
	}
	return "", false
}

// TestImportRules fails when core imports anything but its leaves, when a
// store imports another store, when the session-store contract depends on
// a store, when a front end reaches a backend's package past the store
// factory, or when anything outside the local store imports its
// internals.
func TestImportRules(t *testing.T) {
	m := imports(t)
	if len(m) < 20 {
		t.Fatalf("go list found %d packages", len(m))
	}
	var bad []string
	for pkg, deps := range m {
		for _, d := range deps {
			if why := violation(pkg, d); why != "" {
				bad = append(bad, pkg+" imports "+d+": "+why)
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// violation says which rule pkg importing dep breaks ("" for none).
func violation(pkg, dep string) string {
	switch {
	case under(pkg, "core") && !under(pkg, "core/coretest") && !(dep == "jsonv" || under(dep, "internal") || under(dep, "core")):
		return "core imports only its leaves (jsonv, internal/...)"
	case pkg == "sessions" && dep != "core" && dep != "transcript" && dep != "transcript/fork":
		return "the session-store contract depends on core and transcript (with transcript/fork) only"
	case strings.Contains(dep, "/internal/") && !strings.HasPrefix(dep, "internal/"):
		owner := dep[:strings.Index(dep, "/internal/")]
		if !under(pkg, owner) {
			return "the internals of " + owner + " are its own"
		}
	}
	if s, ok := isStore(pkg); ok {
		if d, ok := isStore(dep); ok && d != s {
			return "a store never imports another store"
		}
	}
	if under(pkg, "ui") && (under(dep, "sinks") || under(dep, "stores") || under(dep, "cmd") || under(dep, "internal/cli") || under(dep, "service")) {
		return "the web viewer reads through the session-store contract (sessions) only"
	}
	if (under(pkg, "cmd") || under(pkg, "internal/cli")) && (under(dep, "sinks/postgres") || under(dep, "sinks/s3")) {
		return "the command line reaches a backend through the store factory (stores, service) only"
	}
	return ""
}

// TestImportRulesCatch: the rules see what they are about (a test that
// cannot fail is no test).
func TestImportRulesCatch(t *testing.T) {
	for _, c := range [][2]string{
		{"core", "sinks/jsonl"}, {"sinks/postgres", "sinks/jsonl"}, {"sessions", "sinks/jsonl"},
		{"cmd/scribe", "sinks/s3"}, {"internal/cli/backends", "sinks/postgres"}, {"watch", "sinks/jsonl/internal/index"}, {"ui", "sinks/jsonl"}, {"ui", "stores"},
	} {
		if violation(c[0], c[1]) == "" {
			t.Errorf("%s importing %s breaks no rule", c[0], c[1])
		}
	}
	for _, c := range [][2]string{{"core", "jsonv"}, {"sinks/postgres", "sinks/backend"}, {"sinks/jsonl", "sinks/jsonl/internal/listing"}, {"sinks/jsonl/internal/index", "sinks/jsonl/internal/listing"}, {"stores", "sinks/jsonl"}, {"sessions", "transcript/fork"}, {"ui", "sessions"}} {
		if why := violation(c[0], c[1]); why != "" {
			t.Errorf("%s importing %s: %s", c[0], c[1], why)
		}
	}
}
