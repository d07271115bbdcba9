package peer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/internal/testenv"
)

// TestDirEnvJudgesAgainstAnotherInstall: SCRIBE_PEER_DIR names a folder
// whose node_modules holds another version of the SDK (as
// scripts/compat-latest installs it): find takes it whatever its version,
// and node gets its sdk.mjs in PEER_SDK; unset, node gets no PEER_SDK (the
// scripts load the pin next to them).
func TestDirEnvJudgesAgainstAnotherInstall(t *testing.T) {
	if _, err := os.Stat(filepath.Join(testenv.RepoRoot(t), "internal", "peer", "peer.mjs")); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	sdk := filepath.Join(other, "node_modules", "@anthropic-ai", "claude-agent-sdk")
	if err := os.MkdirAll(sdk, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"package.json": `{"name":"@anthropic-ai/claude-agent-sdk","version":"9.9.999"}`, "sdk.mjs": "export {};\n"} {
		if err := os.WriteFile(filepath.Join(sdk, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(DirEnv, other)
	t.Setenv("PEER_SDK", "/somewhere/else/sdk.mjs") // never passed on as is
	p, err := find(testenv.RepoRoot(t))
	if err != nil {
		t.Fatalf("find with %s: %v", DirEnv, err)
	}
	if p.Version != "9.9.999" || !p.Other || p.SDKDir != sdk {
		t.Fatalf("find with %s = %+v", DirEnv, p)
	}
	want := "PEER_SDK=" + filepath.Join(sdk, "sdk.mjs")
	if env := p.env(); !slices.Contains(env, want) || slices.Contains(env, "PEER_SDK=/somewhere/else/sdk.mjs") {
		t.Fatalf("node's environment lacks %s or keeps the caller's PEER_SDK", want)
	}
	// The pin: no PEER_SDK for node.
	pinned := &Peer{SDKDir: sdk}
	for _, kv := range pinned.env() {
		if strings.HasPrefix(kv, "PEER_SDK=") {
			t.Fatalf("the pin's environment has %s", kv)
		}
	}
}
