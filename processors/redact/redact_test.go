package redact

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/processors/redact/redacttest"
)

const sid = "6f1d2c3b-4a59-4e8f-9c7d-0b1a2e3f4d5c"

func testRedactor(t testing.TB, c *Config) *Redactor {
	t.Helper()
	if c == nil {
		c = DefaultConfig()
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	r, err := NewRedactor(c, []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var markerRE = regexp.MustCompile(`\[REDACTED:([A-Za-z0-9_.-]+):([0-9a-f]{8})\]`)

// TestCorpusEverySecretRedacted: every one of the corpus's secrets, in
// every tool output it is embedded in, is replaced by its rule's marker,
// and the transcript keeps its chain and shape.
func TestCorpusEverySecretRedacted(t *testing.T) {
	secrets := redacttest.Secrets(1)
	if k := redacttest.Kinds(secrets); len(k) < 30 {
		t.Fatalf("the corpus has %d kinds, want at least 30", len(k))
	}
	r := testRedactor(t, nil)
	in := redacttest.Transcript(sid, "/home/ada/src/shop", secrets)
	if leaks := redacttest.Leaks(in, secrets); len(leaks) != len(secrets) {
		t.Fatalf("the corpus holds %d of its %d secrets", len(leaks), len(secrets))
	}
	var out bytes.Buffer
	rules := map[string]int{}
	for _, line := range bytes.SplitAfter(in, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		red, fs := r.Redact(bytes.TrimRight(line, "\n"))
		for _, f := range fs {
			rules[f.Rule]++
		}
		checkSameShape(t, bytes.TrimRight(line, "\n"), red)
		out.Write(red)
		out.WriteByte('\n')
	}
	if leaks := redacttest.Leaks(out.Bytes(), secrets); len(leaks) > 0 {
		t.Fatalf("secrets left after redaction: %v", leaks)
	}
	// Redacting the redacted transcript finds nothing: no rule matches a
	// marker or a piece of one.
	fresh := testRedactor(t, nil)
	for _, line := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
		if fs := fresh.Scan(line); len(fs) > 0 {
			t.Fatalf("a second pass found %+v in\n%s", fs, line)
		}
	}
	for _, s := range secrets {
		if rules[s.Rule] == 0 {
			t.Errorf("%s: rule %s never fired", s.Kind, s.Rule)
		}
	}
	for _, m := range markerRE.FindAllSubmatch(out.Bytes(), -1) {
		for _, s := range secrets {
			if strings.Contains(s.Value, string(m[2])) && len(s.Value) < 12 {
				t.Fatalf("a marker holds a piece of a secret: %s", m[0])
			}
		}
	}
}

// checkSameShape: out is valid JSON, with the same keys and non-string
// values as in, the same uuid, parentUuid and sessionId, and a string
// changed only where it now holds a marker.
func checkSameShape(t *testing.T, in, out []byte) {
	t.Helper()
	if !json.Valid(out) {
		t.Fatalf("the redacted line is not JSON:\n%s", out)
	}
	var a, b any
	if err := json.Unmarshal(in, &a); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(out, &b)
	var walk func(path string, x, y any)
	walk = func(path string, x, y any) {
		switch xv := x.(type) {
		case map[string]any:
			yv, ok := y.(map[string]any)
			if !ok || len(xv) != len(yv) {
				t.Fatalf("%s: object changed", path)
			}
			for k := range xv {
				walk(path+"."+k, xv[k], yv[k])
			}
		case []any:
			yv, ok := y.([]any)
			if !ok || len(xv) != len(yv) {
				t.Fatalf("%s: array changed", path)
			}
			for i := range xv {
				walk(path, xv[i], yv[i])
			}
		case string:
			ys, ok := y.(string)
			if !ok {
				t.Fatalf("%s: no longer a string", path)
			}
			if xv != ys && !markerRE.MatchString(ys) {
				t.Fatalf("%s: changed without a marker: %q", path, ys)
			}
		default:
			if x != y {
				t.Fatalf("%s: %v became %v", path, x, y)
			}
		}
	}
	walk("", a, b)
	for _, k := range []string{"uuid", "parentUuid", "sessionId"} {
		if a.(map[string]any)[k] != b.(map[string]any)[k] {
			t.Fatalf("%s changed", k)
		}
	}
}

// TestOnlyTheSecretBytesChange: escapes, unicode escapes, spacing and key
// order elsewhere (and in the same string) stay byte for byte; a secret
// written with escapes inside is replaced whole.
func TestOnlyTheSecretBytesChange(t *testing.T) {
	r := testRedactor(t, nil)
	key := "ghp_" + strings.Repeat("a1B2", 9)
	in := `{"z":1,  "type":"user","message":{"content":"caf\u00e9 \"quoted\"\ttoken ` + key + ` \u2192 done"},"other":"\u003cb\u003e","uuid":"u-1"}`
	out, fs := r.Redact([]byte(in))
	if len(fs) != 1 || fs[0].Rule != "github-pat" {
		t.Fatalf("findings %+v", fs)
	}
	want := strings.Replace(in, key, r.Marker("github-pat", key), 1)
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	// A secret whose bytes are escaped in the line ("\/" is '/').
	aws := "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	escaped := strings.ReplaceAll(aws, "/", `\/`)
	in = `{"type":"user","toolUseResult":{"stdout":"[default]\naws_secret_access_key = ` + escaped + `\n"},"uuid":"u-2"}`
	out, fs = r.Redact([]byte(in))
	if len(fs) != 1 || fs[0].Secret != aws {
		t.Fatalf("findings %+v", fs)
	}
	want = strings.Replace(in, escaped, r.Marker("aws-secret-access-key", aws), 1)
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	// A PEM key spanning \n escapes: one marker for the whole block.
	pem := `-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----`
	in = `{"type":"user","message":{"content":[{"type":"tool_result","content":"` + pem + `\n"}]},"uuid":"u-3"}`
	out, fs = r.Redact([]byte(in))
	if len(fs) != 1 || fs[0].Rule != "private-key" || !json.Valid(out) || bytes.Contains(out, []byte("MIIEvQ")) {
		t.Fatalf("findings %+v\n%s", fs, out)
	}
}

// TestIDsAndKeysNeverRedacted: the chain's fields and object keys are
// never touched, whatever they hold.
func TestIDsAndKeysNeverRedacted(t *testing.T) {
	r := testRedactor(t, nil)
	in := `{"uuid":"AKIAABCDEFGHIJKLMNOP","parentUuid":"AKIAABCDEFGHIJKLMNOQ","sessionId":"s","AKIAABCDEFGHIJKLMNOR":"key"}`
	if out, fs := r.Redact([]byte(in)); len(fs) != 0 || string(out) != in {
		t.Fatalf("redacted ids or keys: %s", out)
	}
}

// TestMarkersAreKeyed: the same secret gives the same marker, another key
// another one, and the marker is not a plain hash of the value.
func TestMarkersAreKeyed(t *testing.T) {
	a := testRedactor(t, nil)
	b, err := NewRedactor(DefaultConfig(), []byte("another key of thirty-two bytes!"))
	if err != nil {
		t.Fatal(err)
	}
	s := "sk_live_" + strings.Repeat("4eC39HqLyjWDarjtT1zdp7dc", 1)
	if a.Marker("stripe-secret-key", s) != a.Marker("stripe-secret-key", s) {
		t.Fatal("the same secret gave two markers")
	}
	if a.Marker("stripe-secret-key", s) == b.Marker("stripe-secret-key", s) {
		t.Fatal("two keys gave the same marker")
	}
	if a.Marker("stripe-secret-key", s) == a.Marker("stripe-secret-key", s+"x") {
		t.Fatal("two secrets gave the same marker")
	}
}

// TestConfigRulesAndAllowlists: a rule of the block fires; an allow
// pattern, a disabled rule, an entropy floor and allow_paths leave
// matches alone.
func TestConfigRulesAndAllowlists(t *testing.T) {
	c := DefaultConfig()
	c.Rules = []Rule{{ID: "acme-token", Regex: `\bacme_[a-z0-9]{16}\b`, Keywords: []string{"acme_"}}}
	c.AllowPatterns = []string{`^AKIAIOSFODNN7EXAMPLE$`}
	c.DisableRules = []string{"jwt"}
	c.AllowPaths = []string{`^/home/ada/src/fixtures(/|$)`}
	r := testRedactor(t, c)
	line := `{"type":"user","message":{"content":"acme_0123456789abcdef AKIAIOSFODNN7EXAMPLE AKIAZZZZZZZZZZZZZZZZ eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"}}`
	_, fs := r.Redact([]byte(line))
	var got []string
	for _, f := range fs {
		got = append(got, f.Rule+"="+f.Secret)
	}
	want := []string{"acme-token=acme_0123456789abcdef", "aws-access-key-id=AKIAZZZZZZZZZZZZZZZZ"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %v, want %v", got, want)
	}
	if !r.Allowed("/home/ada/src/fixtures/x") || r.Allowed("/home/ada/src/shop") {
		t.Fatal("allow_paths")
	}
	c2 := DefaultConfig()
	c2.Entropy = 5.5
	r2 := testRedactor(t, c2)
	if _, fs := r2.Redact([]byte(`{"m":"AKIAZZZZZZZZZZZZZZZZ"}`)); len(fs) != 0 {
		t.Fatalf("the entropy floor did not apply: %+v", fs)
	}
	bad := []*Config{
		{BuiltinRules: true, DisableRules: []string{"nope"}},
		{BuiltinRules: false},
		{BuiltinRules: true, Rules: []Rule{{ID: "x", Regex: "(", Keywords: []string{"xx"}}}},
		{BuiltinRules: true, Rules: []Rule{{ID: "x", Regex: "a"}}},
		{BuiltinRules: true, Rules: []Rule{{ID: "bad id", Regex: "a", Keywords: []string{"aa"}}}},
		{BuiltinRules: true, Key: seal.KeySource{File: "a", Env: "B"}},
	}
	for i, c := range bad {
		if err := c.Validate(); err == nil {
			t.Errorf("config %d: no error", i)
		}
	}
}

func TestProcessorContract(t *testing.T) {
	key := "glpat-" + "Xy12Ab34Cd56Ef78Gh90"
	coretest.RunProcessorContract(t, coretest.ProcessorHarness{
		New: func(t *testing.T) core.Processor { return New(core.MustParseID("redact/t"), testRedactor(t, nil)) },
		Cases: []coretest.ProcessorCase{
			{Name: "clean", Line: `{"type":"user","sessionId":"` + sid + `","uuid":"00000000-0000-4000-8000-000000000001","message":{"role":"user","content":"hello"}}`},
			{Name: "secret", Change: true, Line: `{"parentUuid":"00000000-0000-4000-8000-000000000001","type":"user","sessionId":"` + sid + `","uuid":"00000000-0000-4000-8000-000000000002","message":{"role":"user","content":"my token is ` + key + `"}}`},
		},
	})
}

// TestProcessorCountsAndAudit: counts by rule, and one audit record per
// session naming rules and counts, never a value.
func TestProcessorCountsAndAudit(t *testing.T) {
	p := New(core.MustParseID("redact/default"), testRedactor(t, nil))
	secrets := redacttest.Secrets(2)
	in := redacttest.Transcript(sid, "/home/ada/src/shop", secrets)
	for _, line := range bytes.Split(bytes.TrimSpace(in), []byte("\n")) {
		e := coretest.MustEntry(t, string(line))
		if _, err := p.Process(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	rep := p.Report()
	if rep["entries_redacted"] == 0 || rep["redacted_github-pat"] < 1 || rep["redacted_private-key"] < 3 {
		t.Fatalf("report %v", rep)
	}
	audits, err := p.AuditEntries()
	if err != nil || len(audits) != 1 {
		t.Fatalf("audits %d %v", len(audits), err)
	}
	l, err := core.ParseLifecycle(&audits[0])
	if err != nil {
		t.Fatal(err)
	}
	red, ok := l.Data.(core.Redaction)
	if !ok || l.SessionID != sid || red.By != "redact/default" || red.Rules["github-pat"] != rep["redacted_github-pat"] || red.Entries != rep["entries_redacted"] {
		t.Fatalf("audit %+v", l)
	}
	if leaks := redacttest.Leaks(audits[0].Raw, secrets); len(leaks) > 0 {
		t.Fatalf("the audit record holds %v", leaks)
	}
	if again, _ := p.AuditEntries(); len(again) != 0 {
		t.Fatal("audit records given twice")
	}
}

// TestKeyFileMadeOnce: with no key configured, a random key is made 0600
// in scribe's folder and used again; a configured key wins.
func TestKeyFileMadeOnce(t *testing.T) {
	dir := t.TempDir()
	k1, err := LoadKey(context.Background(), seal.KeySource{}, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "scribe", "redact.key"))
	if err != nil || fi.Mode().Perm() != 0o600 || len(k1) != 32 {
		t.Fatalf("key file %v %v", fi, err)
	}
	k2, _ := LoadKey(context.Background(), seal.KeySource{}, dir, nil)
	if !bytes.Equal(k1, k2) {
		t.Fatal("a second load made another key")
	}
	k3, err := LoadKey(context.Background(), seal.KeySource{Env: "K"}, dir, []string{"K=from-env-key"})
	if err != nil || string(k3) != "from-env-key" {
		t.Fatalf("env key %q %v", k3, err)
	}
	if _, err := LoadKey(context.Background(), seal.KeySource{Env: "MISSING"}, dir, nil); err == nil {
		t.Fatal("a missing key variable is no error")
	}
}

// TestNotJSONAndTruncated: a line that is not JSON or is cut short does
// not panic; what was seen is still scanned.
func TestNotJSONAndTruncated(t *testing.T) {
	r := testRedactor(t, nil)
	for _, in := range []string{``, `"`, `{"a":"ghp_`, `{"a":"\`, `{"a":"\u12`, `[[[[`, `}}]]`, `{"a":"x\\"}`} {
		r.Redact([]byte(in))
	}
	if _, fs := r.Redact([]byte(`{"a":"ghp_abcdefghijklmnopqrstuvwxyz0123456789","b":"`)); len(fs) != 1 {
		t.Fatalf("findings before a cut %v", fs)
	}
}

// TestShutdownSaysWhatWasRedacted: the counts reach the log, and records
// no host took are said to be missing.
func TestShutdownSaysWhatWasRedacted(t *testing.T) {
	var buf bytes.Buffer
	f := Factory()
	c := DefaultConfig()
	c.Key = seal.KeySource{Env: "K"}
	pr, err := f.CreateProcessor(context.Background(), core.Settings{ID: core.MustParseID("redact/default"),
		Logger: hclog.New(&hclog.LoggerOptions{Output: &buf}), Environ: []string{"K=0123456789abcdef"}}, c)
	if err != nil {
		t.Fatal(err)
	}
	line := `{"type":"user","sessionId":"` + sid + `","uuid":"00000000-0000-4000-8000-000000000009","message":{"content":"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}}`
	if _, err := pr.Process(context.Background(), coretest.MustEntry(t, line)); err != nil {
		t.Fatal(err)
	}
	if err := pr.(*Processor).Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "secrets redacted") || !strings.Contains(out, "github-pat=1") ||
		!strings.Contains(out, "not written") || strings.Contains(out, "ghp_") {
		t.Fatalf("log:\n%s", out)
	}
}
