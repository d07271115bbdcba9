package main_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/internal/testenv"
	"github.com/e0dc0000/scribe/processors/redact/redacttest"
)

const (
	secretSession = "5e3b9a10-7c2d-4f8e-a1b6-0d9c8e7f6a5b"
	secretAgent   = "a7f3c9e1"
	secretCWD     = "/home/ada/src/shop"
)

// secretInputs writes the corpus session and its subagent file (the
// unredacted transcripts) and returns their paths.
func secretInputs(t *testing.T, secrets []redacttest.Secret) (main, sub string) {
	t.Helper()
	dir := t.TempDir()
	main = filepath.Join(dir, "session.jsonl")
	sub = filepath.Join(dir, "agent-"+secretAgent+".jsonl")
	if err := os.WriteFile(main, redacttest.Transcript(secretSession, secretCWD, secrets), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sub, redacttest.Subagent(secretSession, secretAgent, secretCWD, secrets[0]), 0o600); err != nil {
		t.Fatal(err)
	}
	return main, sub
}

// layUnredacted puts the corpus session where Claude Code keeps it, under
// a fresh config folder, and returns the folder and the transcript path.
func layUnredacted(t *testing.T, main, sub string) (configDir, path string) {
	t.Helper()
	configDir = filepath.Join(t.TempDir(), "claude")
	proj := filepath.Join(configDir, "projects", "-home-ada-src-shop")
	if err := os.MkdirAll(filepath.Join(proj, secretSession, "subagents"), 0o700); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(proj, secretSession+".jsonl")
	for src, dst := range map[string]string{main: path, sub: filepath.Join(proj, secretSession, "subagents", "agent-"+secretAgent+".jsonl")} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return configDir, path
}

// leaksUnder greps every file under dir for the secrets.
func leaksUnder(t *testing.T, dir string, secrets []redacttest.Secret) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if l := redacttest.Leaks(b, secrets); len(l) > 0 {
			out[p] = l
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type scanOut struct {
	Findings []struct {
		Session, File, Rule, Fingerprint, Secret, Key string
		Line                                          int
	} `json:"findings"`
	ByRule map[string]int64 `json:"by_rule"`
}

func runScan(t *testing.T, args ...string) (scanOut, string, int) {
	t.Helper()
	out, errs, code := cloudRun(t, "", append([]string{"scan", "--json"}, args...)...)
	var s scanOut
	if err := json.Unmarshal([]byte(out), &s); err != nil && code != 2 {
		t.Fatalf("scan --json printed %q (%s): %v", out, errs, err)
	}
	return s, errs, code
}

// checkScanFindsAll: scan with --show finds each secret of the corpus.
func checkScanFindsAll(t *testing.T, s scanOut, secrets []redacttest.Secret) {
	t.Helper()
	squash := regexp.MustCompile(`\s+`)
	found := map[string]bool{}
	for _, f := range s.Findings {
		found[squash.ReplaceAllString(f.Secret, "")] = true
		if f.Session != secretSession || f.Line == 0 || f.Fingerprint == "" {
			t.Fatalf("finding without its place: %+v", f)
		}
	}
	for _, sc := range secrets {
		if !found[squash.ReplaceAllString(sc.Value, "")] {
			t.Errorf("scan missed %s", sc.Kind)
		}
	}
}

// TestRecordWithRedactionNoSecretOnDiskOrServer records the secret corpus
// through the built binary with redaction on, mirroring to a real `scribe
// serve`: no secret is in any file scribe wrote, locally or in the
// server's data folder, nor in what the server serves; scan finds every
// one in the unredacted copy and none in the recorded one.
func TestRecordWithRedactionNoSecretOnDiskOrServer(t *testing.T) {
	secrets := redacttest.Secrets(7)
	if k := redacttest.Kinds(secrets); len(k) < 30 {
		t.Fatalf("%d kinds", len(k))
	}
	main, sub := secretInputs(t, secrets)
	srv := startCloudServer(t)
	cfg, configDir := cloudMachine(t, srv.url(), "jsonl/local", "events/team")
	b, _ := os.ReadFile(cfg)
	hcl := strings.Replace(string(b), "  guards = []\n", "  guards = []\n  processors = [\"redact/default\"]\n", 1)
	if err := os.WriteFile(cfg, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := cloudRun(t, "", "record", "--config", cfg, "--json", main, sub)
	if code != 0 {
		t.Fatalf("record: exit %d\n%s\n%s", code, out, errs)
	}
	transcript := filepath.Join(configDir, "projects", "-home-ada-src-shop", secretSession+".jsonl")
	got, err := os.ReadFile(transcript)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(got, []byte("[REDACTED:")); n < len(secrets) {
		t.Fatalf("%d markers in the transcript, want at least %d", n, len(secrets))
	}
	if l := leaksUnder(t, filepath.Dir(configDir), secrets); len(l) > 0 {
		t.Fatalf("secrets in files scribe wrote: %v", l)
	}
	if l := leaksUnder(t, srv.dataDir, secrets); len(l) > 0 {
		t.Fatalf("secrets in the server's data folder: %v", l)
	}
	served := bytes.Join([][]byte{srv.get("/v1/session_ingress/session/" + secretSession)}, nil)
	if l := redacttest.Leaks(served, secrets); len(l) > 0 || !bytes.Contains(served, []byte("[REDACTED:")) {
		t.Fatalf("the server serves %v (markers: %v)", l, bytes.Contains(served, []byte("[REDACTED:")))
	}
	// The audit record (rules and counts, never a value) is in the
	// session's lifecycle sidecar.
	side, err := os.ReadFile(filepath.Join(configDir, "projects", "-home-ada-src-shop", secretSession, "scribe-lifecycle.jsonl"))
	if err != nil || !bytes.Contains(side, []byte(`"redaction"`)) || !bytes.Contains(side, []byte(`"redact/default"`)) {
		t.Fatalf("no redaction audit record in the sidecar: %v\n%s", err, side)
	}
	if l := redacttest.Leaks(side, secrets); len(l) > 0 {
		t.Fatalf("the audit record holds secrets: %v", l)
	}
	// The subagent's sidechain was redacted too.
	agent, err := os.ReadFile(filepath.Join(configDir, "projects", "-home-ada-src-shop", secretSession, "subagents", "agent-"+secretAgent+".jsonl"))
	if err != nil || !bytes.Contains(agent, []byte("[REDACTED:")) {
		t.Fatalf("subagent file: %v\n%s", err, agent)
	}
	// scan: none in what was recorded, every one in the unredacted copy.
	if s, errs, code := runScan(t, "--config-dir", configDir, "--all"); code != 0 || len(s.Findings) != 0 {
		t.Fatalf("scan of the redacted store: exit %d, %d findings %v %s", code, len(s.Findings), s.ByRule, errs)
	}
	raw, _ := layUnredacted(t, main, sub)
	s, errs, code := runScan(t, "--config-dir", raw, "--all", "--show")
	if code != 1 {
		t.Fatalf("scan of the unredacted copy: exit %d %s", code, errs)
	}
	checkScanFindsAll(t, s, secrets)
}

// TestScanOutputsAndExitStatus: the value only with --show, SARIF that
// names each result's place, and exit 2 for usage errors.
func TestScanOutputsAndExitStatus(t *testing.T) {
	secrets := redacttest.Secrets(8)
	main, sub := secretInputs(t, secrets)
	configDir, path := layUnredacted(t, main, sub)
	s, _, code := runScan(t, "--config-dir", configDir, secretSession[:8])
	if code != 1 || len(s.Findings) < len(secrets) {
		t.Fatalf("exit %d, %d findings", code, len(s.Findings))
	}
	for _, f := range s.Findings {
		if f.Secret != "" {
			t.Fatal("a value was printed without --show")
		}
	}
	out, _, code := cloudRun(t, "", "scan", "--config-dir", configDir, "--all")
	if code != 1 || redacttest.Leaks([]byte(out), secrets) != nil || !strings.Contains(out, path+":") {
		t.Fatalf("text report: exit %d\n%s", code, out)
	}
	out, _, code = cloudRun(t, "", "scan", "--config-dir", configDir, "--all", "--sarif")
	var sarif struct {
		Version string `json:"version"`
		Runs    []struct {
			Results []struct {
				RuleID    string `json:"ruleId"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }    `json:"artifactLocation"`
						Region           struct{ StartLine int } `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &sarif); err != nil || code != 1 || sarif.Version != "2.1.0" || len(sarif.Runs) != 1 {
		t.Fatalf("sarif: exit %d %v\n%.300s", code, err, out)
	}
	if r := sarif.Runs[0].Results; len(r) != len(s.Findings) || r[0].Locations[0].PhysicalLocation.Region.StartLine == 0 ||
		!strings.HasSuffix(r[0].Locations[0].PhysicalLocation.ArtifactLocation.URI, ".jsonl") {
		t.Fatalf("sarif results %+v", r)
	}
	for _, args := range [][]string{{"scan"}, {"scan", "--all", secretSession}, {"scan", "--all", "--json", "--sarif"}, {"scan", "--all", "--rules", "nope"}, {"redact"}} {
		if _, errs, code := cloudRun(t, "", append(args, "--config-dir", configDir)...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errs)
		}
	}
	empty := filepath.Join(t.TempDir(), "claude")
	if _, _, code := cloudRun(t, "", "scan", "--config-dir", empty, "--all"); code != 0 {
		t.Fatalf("an empty folder: exit %d", code)
	}
}

// TestRedactInPlace: --dry-run changes nothing; redact rewrites the
// transcript and the subagent file so that no secret is left, keeps every
// uuid and line, puts the originals in the trash encrypted (a wrong
// passphrase fails, the right one gives the original bytes back), writes
// an audit record in the sidecar, and the SDK reads the same messages,
// markers aside.
func TestRedactInPlace(t *testing.T) {
	secrets := redacttest.Secrets(9)
	main, sub := secretInputs(t, secrets)
	configDir, path := layUnredacted(t, main, sub)
	orig, _ := os.ReadFile(path)
	cfg := filepath.Join(t.TempDir(), "scribe.hcl")
	hcl := `processor "redact" "default" {
  trash = { passphrase = { env = "TRASH_PASS" } }
}
`
	if err := os.WriteFile(cfg, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	var before []json.RawMessage
	p := peerOrNil(t)
	if p != nil {
		before = p.Messages(t, configDir, secretSession, "", false)
	}
	t.Setenv("TRASH_PASS", "correct horse battery staple")
	out, errs, code := cloudRun(t, "", "redact", "--config", cfg, "--config-dir", configDir, "--dry-run", secretSession)
	if code != 0 || !strings.Contains(out, "would redact") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errs)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
		t.Fatal("--dry-run changed the transcript")
	}
	out, errs, code = cloudRun(t, "", "redact", "--config", cfg, "--config-dir", configDir, "--json", secretSession)
	if code != 0 {
		t.Fatalf("redact: exit %d\n%s%s", code, out, errs)
	}
	var rep struct {
		Secrets int64  `json:"secrets"`
		Trash   string `json:"trash"`
		Sealed  bool   `json:"trash_encrypted"`
		Index   string `json:"index"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Secrets < int64(len(secrets)) || !rep.Sealed || rep.Index == "" {
		t.Fatalf("report %+v %v\n%s", rep, err, out)
	}
	now, _ := os.ReadFile(path)
	if l := redacttest.Leaks(now, secrets); len(l) > 0 {
		t.Fatalf("left after redact: %v", l)
	}
	if bytes.Count(now, []byte("\n")) != bytes.Count(orig, []byte("\n")) {
		t.Fatal("the line count changed")
	}
	olines, nlines := bytes.Split(orig, []byte("\n")), bytes.Split(now, []byte("\n"))
	for i := range olines {
		if len(olines[i]) == 0 {
			continue
		}
		a, _ := core.ParseEntry(olines[i])
		b, err := core.ParseEntry(nlines[i])
		if err != nil || a.UUID != b.UUID || a.ParentUUID != b.ParentUUID || a.Type != b.Type {
			t.Fatalf("line %d: %v %s", i+1, err, nlines[i])
		}
	}
	// No plaintext copy anywhere: the backups went to the trash sealed.
	if l := leaksUnder(t, configDir, secrets); len(l) > 0 {
		t.Fatalf("plaintext secrets left under the config folder: %v", l)
	}
	sealed, err := os.ReadFile(filepath.Join(rep.Trash, "projects", "-home-ada-src-shop", secretSession+".jsonl.age"))
	if err != nil {
		t.Fatal(err)
	}
	good, _ := seal.New(t.Context(), seal.Options{Passphrase: seal.KeySource{Env: "P"}}, []string{"P=correct horse battery staple"})
	if back, err := good.OpenBytes(sealed); err != nil || !bytes.Equal(back, orig) {
		t.Fatalf("the trash copy does not open to the original: %v", err)
	}
	bad, _ := seal.New(t.Context(), seal.Options{Passphrase: seal.KeySource{Env: "P"}}, []string{"P=wrong"})
	if _, err := bad.OpenBytes(sealed); err == nil {
		t.Fatal("a wrong passphrase opened the trash copy")
	}
	// The audit record: rules and counts, never a value.
	side, err := os.ReadFile(filepath.Join(filepath.Dir(path), secretSession, "scribe-lifecycle.jsonl"))
	if err != nil || !bytes.Contains(side, []byte(`"event":"redaction"`)) || redacttest.Leaks(side, secrets) != nil {
		t.Fatalf("sidecar: %v\n%s", err, side)
	}
	if s, _, code := runScan(t, "--config-dir", configDir, secretSession); code != 0 || len(s.Findings) != 0 {
		t.Fatalf("scan after redact: exit %d %v", code, s.ByRule)
	}
	// Redacting again changes nothing.
	if out, _, code := cloudRun(t, "", "redact", "--config", cfg, "--config-dir", configDir, secretSession); code != 0 || !strings.Contains(out, "redacted 0 secrets") {
		t.Fatalf("second redact: exit %d\n%s", code, out)
	}
	if p != nil {
		after := p.Messages(t, configDir, secretSession, "", false)
		sameMessagesButMarkers(t, before, after)
	}
}

func peerOrNil(t *testing.T) *peer.Peer {
	if os.Getenv(peer.RequireEnv) == "1" {
		return peer.Find(t)
	}
	if _, err := os.Stat(filepath.Join("..", "..", "internal", "peer", "node_modules")); err != nil {
		t.Log("the Claude Agent SDK is not installed: the SDK part of this test is skipped")
		return nil
	}
	return peer.Find(t)
}

var markerRE = regexp.MustCompile(`\[REDACTED:[A-Za-z0-9_.-]+:[0-9a-f]{8}\]`)

// sameMessagesButMarkers: the same messages in the same order, with the
// same uuids; a string may differ only where it now holds a marker.
func sameMessagesButMarkers(t *testing.T, before, after []json.RawMessage) {
	t.Helper()
	if len(before) != len(after) || len(before) == 0 {
		t.Fatalf("the SDK reads %d messages, before %d", len(after), len(before))
	}
	if strings.Join(peer.UUIDs(before), ",") != strings.Join(peer.UUIDs(after), ",") {
		t.Fatal("the SDK reads other uuids")
	}
	markers := 0
	for i := range before {
		a, b := string(before[i]), string(after[i])
		if a == b {
			continue
		}
		markers++
		if !markerRE.MatchString(b) {
			t.Fatalf("message %d changed without a marker:\n%s", i, b)
		}
	}
	if markers == 0 {
		t.Fatal("the SDK reads no marker")
	}
}

// TestServeRedactsBeforeStoring: with server { redact = "team" }, entries
// a client sends unredacted (ingress PUTs and event batches) are stored
// redacted: no secret in the server's data folder or in what it serves,
// and the client's own copy stays as it was written.
func TestServeRedactsBeforeStoring(t *testing.T) {
	secrets := redacttest.Secrets(11)
	main, sub := secretInputs(t, secrets)
	srv := startCloudServer(t)
	srv.stop()
	b, _ := os.ReadFile(srv.cfg)
	hcl := strings.Replace(string(b), "server {\n", "server {\n  redact = \"team\"\n", 1) + "processor \"redact\" \"team\" {}\n"
	if err := os.WriteFile(srv.cfg, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.start()
	cfg, configDir := cloudMachine(t, srv.url(), "jsonl/local", "events/team", "ingress/team")
	if out, errs, code := cloudRun(t, "", "record", "--config", cfg, main, sub); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errs)
	}
	local, err := os.ReadFile(filepath.Join(configDir, "projects", "-home-ada-src-shop", secretSession+".jsonl"))
	if err != nil || len(redacttest.Leaks(local, secrets)) != len(secrets) {
		t.Fatalf("the local copy is not as written: %v", err)
	}
	if l := leaksUnder(t, srv.dataDir, secrets); len(l) > 0 {
		t.Fatalf("secrets in the server's data folder: %v", l)
	}
	served := srv.get("/v1/session_ingress/session/" + secretSession)
	if l := redacttest.Leaks(served, secrets); len(l) > 0 || !bytes.Contains(served, []byte("[REDACTED:")) {
		t.Fatalf("the server serves %v", l)
	}
	if n := srv.metric("scribe_entries_processed_total"); n == 0 {
		t.Fatal("no processed entries counted")
	}
}

// TestRedactWaitsForTheSessionsWriter: while `scribe record` holds the
// session, redact fails at once naming the holder and changes nothing.
func TestRedactWaitsForTheSessionsWriter(t *testing.T) {
	secrets := redacttest.Secrets(12)
	main, sub := secretInputs(t, secrets)
	configDir, path := layUnredacted(t, main, sub)
	orig, _ := os.ReadFile(path)
	first := exec.Command(testenv.BuildScribe(t), "record", "--config-dir", configDir, "--ack", "--flush-interval", "10ms")
	first.Env = cleanEnv()
	stdin, _ := first.StdinPipe()
	stdout, _ := first.StdoutPipe()
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Process.Kill(); _ = first.Wait() }()
	lines := bytes.SplitAfter(orig, []byte("\n"))
	if _, err := stdin.Write(lines[0]); err != nil { // a duplicate: the writer takes the session's lock
		t.Fatal(err)
	}
	if !bufio.NewScanner(stdout).Scan() {
		t.Fatal("the writer printed no ack")
	}
	out, errs, code := cloudRun(t, "", "redact", "--config-dir", configDir, secretSession)
	if code != 1 || !strings.Contains(out+errs, fmt.Sprintf("pid %d", first.Process.Pid)) {
		t.Fatalf("redact beside a writer: exit %d\n%s%s", code, out, errs)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
		t.Fatal("redact changed a session another process holds")
	}
	stdin.Close()
	if err := first.Wait(); err != nil {
		t.Fatalf("writer: %v", err)
	}
	if out, errs, code := cloudRun(t, "", "redact", "--config-dir", configDir, secretSession); code != 0 {
		t.Fatalf("redact after the writer: exit %d\n%s%s", code, out, errs)
	}
}

// TestScanRulesAndAllowPaths: --rules picks a block; its allow_paths
// leave a project's files alone (listed as skipped); its own rule fires.
func TestScanRulesAndAllowPaths(t *testing.T) {
	secrets := redacttest.Secrets(13)
	main, sub := secretInputs(t, secrets)
	configDir, _ := layUnredacted(t, main, sub)
	cfg := filepath.Join(t.TempDir(), "scribe.hcl")
	hcl := `processor "redact" "lenient" {
  allow_paths = ["/projects/-home-ada-src-shop/"]
}
processor "redact" "acme" {
  builtin_rules = false
  rules = [{ id = "node-env", regex = "NODE_ENV=production", keywords = ["node_env"] }]
}
`
	if err := os.WriteFile(cfg, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := cloudRun(t, "", "scan", "--config", cfg, "--config-dir", configDir, "--all", "--rules", "lenient", "--json")
	var rep struct {
		Skipped  []string `json:"skipped_by_allow_paths"`
		Findings []any    `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || len(rep.Findings) != 0 || len(rep.Skipped) != 2 {
		t.Fatalf("lenient: exit %d %v %+v %s", code, err, rep, errs)
	}
	s, _, code := runScan(t, "--config", cfg, "--config-dir", configDir, "--all", "--rules", "acme")
	if code != 1 || len(s.ByRule) != 1 || s.ByRule["node-env"] == 0 {
		t.Fatalf("acme: exit %d %v", code, s.ByRule)
	}
}

// A redacted sink: the archive gets markers, the local store keeps the
// transcript as Claude Code wrote it.
func TestRedactedSinkRedactsOnlyThatSink(t *testing.T) {
	secrets := redacttest.Secrets(12)
	main, sub := secretInputs(t, secrets)
	configDir := filepath.Join(t.TempDir(), "claude")
	archive := filepath.Join(t.TempDir(), "archive")
	cfg := filepath.Join(t.TempDir(), "scribe.hcl")
	hcl := fmt.Sprintf(`
pipeline {
  sinks  = ["jsonl/local", "redacted/team"]
  guards = []
}
sink "jsonl" "archive" {
  dir = %q
}
sink "redacted" "team" {
  processor = "redact/default"
  sink      = "jsonl/archive"
}
`, archive)
	if err := os.WriteFile(cfg, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, code := cloudRun(t, "", "record", "--config", cfg, "--config-dir", configDir, "--json", main, sub)
	if code != 0 {
		t.Fatalf("record: exit %d\n%s\n%s", code, out, errs)
	}
	if l := leaksUnder(t, archive, secrets); len(l) > 0 {
		t.Fatalf("secrets in the redacted sink's files: %v", l)
	}
	got, err := os.ReadFile(filepath.Join(archive, "projects", "-home-ada-src-shop", secretSession+".jsonl"))
	if err != nil || !bytes.Contains(got, []byte("[REDACTED:")) {
		t.Fatalf("the archive holds no markers: %v", err)
	}
	local, err := os.ReadFile(filepath.Join(configDir, "projects", "-home-ada-src-shop", secretSession+".jsonl"))
	want, _ := os.ReadFile(main)
	if err != nil || !bytes.Equal(local, want) {
		t.Fatalf("the local store is not the transcript as written (%v, %d bytes, want %d)", err, len(local), len(want))
	}
	// The inner sink listed in pipeline.sinks too is a configuration error.
	bad := strings.Replace(hcl, `["jsonl/local", "redacted/team"]`, `["jsonl/local", "redacted/team", "jsonl/archive"]`, 1)
	if err := os.WriteFile(cfg, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := cloudRun(t, "", "record", "--config", cfg, "--config-dir", configDir, main); code != 2 || !strings.Contains(errs, "once unredacted") {
		t.Fatalf("inner sink in pipeline.sinks: exit %d, %s", code, errs)
	}
}

// export --redact: no secret in any format, and the session itself stays
// as it was.
func TestExportRedactedHoldsNoSecret(t *testing.T) {
	secrets := redacttest.Secrets(20)
	main, sub := secretInputs(t, secrets)
	configDir, path := layUnredacted(t, main, sub)
	before, _ := os.ReadFile(path)
	for _, format := range []string{"md", "html", "json", "bundle"} {
		out := filepath.Join(t.TempDir(), "export."+format)
		if o, errs, code := cloudRun(t, "", "export", "--config-dir", configDir, secretSession, "--format", format, "--redact", "-o", out); code != 0 {
			t.Fatalf("export %s: exit %d\n%s\n%s", format, code, o, errs)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if format == "bundle" {
			data = untarAll(t, data)
		}
		if l := redacttest.Leaks(data, secrets); len(l) > 0 {
			t.Fatalf("export --format %s --redact holds secrets: %v", format, l)
		}
		if !bytes.Contains(data, []byte("REDACTED")) {
			t.Fatalf("export --format %s --redact holds no marker", format)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("export --redact changed the session")
	}
	// Without --redact the export does hold them: the check above can fail.
	out := filepath.Join(t.TempDir(), "plain.md")
	if _, errs, code := cloudRun(t, "", "export", "--config-dir", configDir, secretSession, "--format", "md", "-o", out); code != 0 {
		t.Fatal(errs)
	}
	if data, _ := os.ReadFile(out); len(redacttest.Leaks(data, secrets)) == 0 {
		t.Fatal("a plain export shows no secret: the test proves nothing")
	}
}

// untarAll concatenates the files of a gzipped tar.
func untarAll(t *testing.T, data []byte) []byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var all bytes.Buffer
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return all.Bytes()
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			_, _ = io.Copy(&all, tr)
		}
	}
}

// push --redact: the server receives markers, the local files stay as
// they were; without the flag the same push would carry the secrets.
func TestPushRedactedSendsNoSecret(t *testing.T) {
	secrets := redacttest.Secrets(15)
	main, sub := secretInputs(t, secrets)
	srv := startCloudServer(t)
	cfg, configDir := cloudMachine(t, srv.url(), "jsonl/local")
	if out, errs, code := cloudRun(t, "", "record", "--config", cfg, main, sub); code != 0 {
		t.Fatalf("record: exit %d\n%s%s", code, out, errs)
	}
	path := filepath.Join(configDir, "projects", "-home-ada-src-shop", secretSession+".jsonl")
	before, _ := os.ReadFile(path)
	out, errs, code := cloudRun(t, "", "push", "--config", cfg, "--redact", "--json", secretSession)
	if code != 0 {
		t.Fatalf("push --redact: exit %d\n%s%s", code, out, errs)
	}
	var rep struct {
		Redacted int64 `json:"redacted"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Redacted < int64(len(secrets)) {
		t.Fatalf("push report %s: want at least %d secrets redacted", out, len(secrets))
	}
	served := srv.get("/v1/session_ingress/session/" + secretSession)
	if l := redacttest.Leaks(served, secrets); len(l) > 0 || !bytes.Contains(served, []byte("[REDACTED:")) {
		t.Fatalf("the server holds %v (markers: %v)", l, bytes.Contains(served, []byte("[REDACTED:")))
	}
	if l := leaksUnder(t, srv.dataDir, secrets); len(l) > 0 {
		t.Fatalf("secrets in the server's data folder: %v", l)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("push --redact changed the local transcript")
	}
}
