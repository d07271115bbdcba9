package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/internal/testenv"
)

// asJSONValue decodes raw JSON into a generic value, so two documents
// compare equal whatever their key order: the one normalization.
func asJSONValue(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !reflect.DeepEqual(asJSONValue(t, g), asJSONValue(t, w)) {
		t.Errorf("%s differs from the SDK:\nscribe: %.3000s\nSDK:    %.3000s", what, g, w)
	}
}

// compareReadCommands checks `scribe ls --json` and `scribe show --json`
// against the SDK's listSessions and getSessionMessages on a config folder.
func compareReadCommands(t *testing.T, p *peer.Peer, dir, project string) {
	t.Helper()
	var got []json.RawMessage
	scribeJSON(t, runOpts{}, &got, "ls", "--config-dir", dir, "--all", "--json")
	want := p.List(t, dir, "")
	var wantRaw []any
	for _, w := range want {
		wantRaw = append(wantRaw, w.Raw)
	}
	sameJSON(t, "ls --all --json", got, wantRaw)
	if project != "" {
		var gotP []json.RawMessage
		scribeJSON(t, runOpts{}, &gotP, "ls", "--config-dir", dir, "--project", project, "--json", "--limit", "3", "--offset", "1")
		var wantP []any
		for _, w := range p.List(t, dir, project, "--limit", "3", "--offset", "1") {
			wantP = append(wantP, w.Raw)
		}
		sameJSON(t, "ls --project --limit 3 --offset 1 --json", gotP, wantP)
	}
	for _, w := range want {
		var msgs []json.RawMessage
		scribeJSON(t, runOpts{}, &msgs, "show", "--config-dir", dir, w.SessionID, "--json")
		sameJSON(t, "show --json "+w.SessionID, msgs, p.Messages(t, dir, w.SessionID, "", false))
		var sys []json.RawMessage
		scribeJSON(t, runOpts{}, &sys, "show", "--config-dir", dir, w.SessionID, "--json", "--system")
		sameJSON(t, "show --json --system "+w.SessionID, sys, p.Messages(t, dir, w.SessionID, "", true))
	}
}

func TestReadCommandsMatchTheSDKOnItsFixtures(t *testing.T) {
	p := peer.Find(t)
	dir := t.TempDir()
	cwd := "/home/alice/src/shop"
	p.GenFixture(t, dir, cwd)
	compareReadCommands(t, p, dir, cwd)
}

func TestReadCommandsMatchTheSDKOnRecordedSessions(t *testing.T) {
	p := peer.Find(t)
	dir := t.TempDir()
	// Record the bundled sample, a synthetic session and a few real ones.
	inputs := []string{filepath.Join(testenv.RepoRoot(t), "cmd", "scribe", "testdata", "sample.jsonl")}
	corpus := testenv.CorpusDir(t)
	for _, rel := range []string{
		"d-kimuson__claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
		"d-kimuson__claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
	} {
		inputs = append(inputs, filepath.Join(corpus, rel))
	}
	for _, in := range inputs {
		if r, _, code := runRecord(t, nil, "", append([]string{"--config-dir", dir}, in)...); code != 0 || r.Accepted == 0 {
			t.Fatalf("record %s: exit %d %+v", in, code, r)
		}
	}
	if r, _, code := runRecord(t, nil, lines(40), "--config-dir", dir); code != 0 || r.Accepted != 40 {
		t.Fatalf("record synthetic: exit %d %+v", code, r)
	}
	compareReadCommands(t, p, dir, testCWD)
}

func TestShowResolvesPrefixes(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "projects", "-x")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"abcd0000-0000-4000-8000-000000000001", "abcd0000-0000-4000-8000-000000000002"} {
		line := `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"hi"},"uuid":"` + id[:8] + `-1111-4000-8000-000000000000","timestamp":"2026-01-10T11:00:02.267Z","cwd":"/x","sessionId":"` + id + `"}` + "\n"
		if err := os.WriteFile(filepath.Join(proj, id+".jsonl"), []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	show := func(id string) (string, int) {
		out, _, code := runScribe(t, runOpts{combined: true}, "show", "--config-dir", dir, id)
		return out, code
	}
	if out, code := show("abcd"); code == 0 || !strings.Contains(out, "matches 2 sessions") || !strings.Contains(out, "000000000002") {
		t.Fatalf("ambiguous prefix: exit %d %s", code, out)
	}
	if out, code := show("abcd0000-0000-4000-8000-000000000002"); code != 0 || !strings.Contains(out, "hi") {
		t.Fatalf("full id: exit %d %s", code, out)
	}
	if out, code := show("ffff"); code == 0 || !strings.Contains(out, `no session id starts with "ffff"`) {
		t.Fatalf("unknown prefix: exit %d %s", code, out)
	}
	if out, code := show("../etc"); code == 0 || !strings.Contains(out, "not a session id") {
		t.Fatalf("path as id: exit %d %s", code, out)
	}
}

// TestReadCommandsMatchTheSDKOnSDK337Fixtures: `scribe ls --json` and
// `scribe show --json [--system] [--subagents]` on the hand-made sessions
// of testdata/sdk-0.3.337 (every row and field SDK 0.3.337 reads anew)
// answer what the SDK answers; a session with only subagent files shows as
// the SDK's empty list (exit 0), an unknown one is still not found.
func TestReadCommandsMatchTheSDKOnSDK337Fixtures(t *testing.T) {
	p := peer.Find(t)
	dir := t.TempDir()
	copyTree(t, filepath.Join(testenv.RepoRoot(t), "testdata", "sdk-0.3.337"), dir)
	compareReadCommands(t, p, dir, "/home/alice/src/shop")

	const withAgents = "a3370003-0000-4000-8000-000000000003"
	var doc struct {
		Messages  []json.RawMessage            `json:"messages"`
		Subagents map[string][]json.RawMessage `json:"subagents"`
	}
	scribeJSON(t, runOpts{}, &doc, "show", "--config-dir", dir, withAgents, "--json", "--subagents")
	agents := p.Subagents(t, dir, withAgents, "")
	if len(doc.Subagents) != len(agents) || len(agents) != 2 {
		t.Errorf("show --subagents: agents %v, SDK %v", doc.Subagents, agents)
	}
	for _, a := range agents {
		sameJSON(t, "show --json --subagents "+withAgents+" agent "+a, doc.Subagents[a], p.SubagentMessages(t, dir, withAgents, a, ""))
	}

	const onlyAgents = "a3370012-0000-4000-8000-000000000012"
	out, errOut, code := runScribe(t, runOpts{}, "show", "--config-dir", dir, onlyAgents, "--json")
	if code != 0 || strings.TrimSpace(out) != "[]" || !strings.Contains(errOut, "no transcript to read") {
		t.Errorf("show --json of a session with only subagent files: exit %d, %q %s; want [] (the SDK's %d messages)",
			code, out, errOut, len(p.Messages(t, dir, onlyAgents, "", false)))
	}
	if _, errOut, code := runScribe(t, runOpts{}, "show", "--config-dir", dir, "a3370099-0000-4000-8000-000000000099", "--json"); code != 1 || !strings.Contains(errOut, "not found") {
		t.Errorf("show of an unknown session: exit %d, %s; want 1 and not found", code, errOut)
	}
}
