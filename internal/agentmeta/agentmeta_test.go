package agentmeta

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/backend"
)

// A meta file becomes the SDK's agent_metadata entry and back, byte for
// byte (compacted); writing the same bytes again changes nothing.
func TestEntryAndWriteRoundTrip(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "agent-a1.meta.json")
	if err := os.WriteFile(src, []byte("{\n  \"toolUseId\": \"toolu_1\",\n  \"parentAgentId\": null\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ref := core.SessionRef{SessionID: "7b3c2a10-5d4e-4f6a-9b8c-1d2e3f4a5b6c", AgentID: "a1"}
	e, ok, err := Entry(src, ref)
	if err != nil || !ok {
		t.Fatalf("Entry: %v, %v", ok, err)
	}
	if want := backend.AgentMetaPrefix + `,"toolUseId":"toolu_1","parentAgentId":null}`; string(e.Raw) != want {
		t.Fatalf("entry %s, want %s", e.Raw, want)
	}
	if e.Type != backend.TypeAgentMetadata || e.SessionID != ref.SessionID || e.AgentID != "a1" {
		t.Fatalf("entry fields: %+v", e)
	}
	dst := filepath.Join(dir, "copy.meta.json")
	for i, want := range []bool{true, false} {
		wrote, err := Write(dst, e)
		if err != nil || wrote != want {
			t.Fatalf("write %d: wrote %v, %v; want %v", i, wrote, err, want)
		}
	}
	b, _ := os.ReadFile(dst)
	if string(b) != `{"toolUseId":"toolu_1","parentAgentId":null}` {
		t.Fatalf("meta file %s", b)
	}
	if fi, _ := os.Stat(dst); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
}

// No meta file is no entry; a file that is not a JSON object is an error.
func TestEntryMissingOrBad(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := Entry(filepath.Join(dir, "none.meta.json"), core.SessionRef{}); ok || err != nil {
		t.Fatalf("missing file: %v, %v", ok, err)
	}
	bad := filepath.Join(dir, "bad.meta.json")
	os.WriteFile(bad, []byte("[1]"), 0o600)
	if _, _, err := Entry(bad, core.SessionRef{}); err == nil {
		t.Fatal("an array was taken for a meta file")
	}
}
