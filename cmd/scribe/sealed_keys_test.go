package main_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
)

// TestSealedSlowKeyCommandIsBounded: a key command that never answers (a
// pinentry with no terminal) hung hook (its own 20 s deadline, and then
// some) and record (whatever --shutdown-timeout said). Now the key read
// ends with the caller's deadline (hook --timeout, record
// --shutdown-timeout) and is an error saying so: record exits 1, hook
// logs it and exits 0 as it always does.
func TestSealedSlowKeyCommandIsBounded(t *testing.T) {
	dir := t.TempDir()
	archive, cfg := filepath.Join(dir, "archive"), filepath.Join(dir, "slow.hcl")
	writeFile(t, cfg, archiveHCL(archive, `{ identity = { command = ["sleep", "60"] } }`))
	env := append(os.Environ(), "HOME="+filepath.Join(dir, "home"), "CLAUDE_CONFIG_DIR="+filepath.Join(dir, "claude"), "SCRIBE_LOG_LEVEL=warn")
	const id = "9972daab-2c86-459f-9d78-3fe1be4e3280"
	const hang = 20 * time.Second

	_, errs, code := runScribe(t, runOpts{base: env, stdin: oneMore(id, "0e0e0e0e-0000-4000-8000-000000000001"), timeout: hang}, "record", "--shutdown-timeout", "2s", "--config", cfg)
	if code != 1 || !strings.Contains(errs, "gave no key in time") || !strings.Contains(errs, archive) {
		t.Errorf("record with a key command that never answers: exit %d, want 1 saying the key came not in time, naming %s\n%s", code, archive, errs)
	}

	ev := fmt.Sprintf(`{"session_id":%q,"hook_event_name":"Stop","transcript_path":%q,"cwd":"/tmp"}`, id, filepath.Join(dir, "claude", "projects", "-tmp", id+".jsonl"))
	_, errs, code = runScribe(t, runOpts{base: env, stdin: ev, timeout: hang}, "hook", "--timeout", "2s", "--config", cfg)
	if code != 0 {
		t.Errorf("hook: exit %d, want 0 (it never fails the user's turn)\n%s", code, errs)
	}
	logs, _ := os.ReadFile(filepath.Join(archive, "scribe", "watch", "hook.log"))
	if !strings.Contains(string(logs), "gave no key in time") {
		t.Errorf("hook.log does not say the key command gave no key in time:\n%s", logs)
	}
}

// TestSealedLooseKeyFileWarns: an identity or passphrase file that group
// or others may read was taken silently; now scribe warns (as ssh does),
// naming the file and its mode, and goes on.
func TestSealedLooseKeyFileWarns(t *testing.T) {
	dir := t.TempDir()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	identity, pass := filepath.Join(dir, "id.key"), filepath.Join(dir, "pass.txt")
	writeFile(t, identity, id.String()+"\n")
	writeFile(t, pass, "correct horse battery staple\n")
	env := append(os.Environ(), "HOME="+filepath.Join(dir, "home"), "CLAUDE_CONFIG_DIR="+filepath.Join(dir, "claude"), "SCRIBE_LOG_LEVEL=warn")
	const sess = "9972daab-2c86-459f-9d78-3fe1be4e3280"
	for _, c := range []struct {
		file, encryption string
		mode             os.FileMode
	}{
		{identity, fmt.Sprintf("{ identity = { file = %q } }", identity), 0o644},
		{pass, fmt.Sprintf("{ passphrase = { file = %q } }", pass), 0o640},
	} {
		if err := os.Chmod(c.file, c.mode); err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(dir, filepath.Base(c.file)+".hcl")
		writeFile(t, cfg, archiveHCL(filepath.Join(dir, "archive-"+filepath.Base(c.file)), c.encryption))
		_, errs, code := runScribe(t, runOpts{base: env, stdin: oneMore(sess, "0e0e0e0e-0000-4000-8000-000000000001")}, "record", "--config", cfg)
		mode := fmt.Sprintf("%#o", c.mode)
		if code != 0 || !strings.Contains(errs, "[WARN]") || !strings.Contains(errs, c.file) || !strings.Contains(errs, mode) {
			t.Errorf("key file %s at %s: exit %d, want 0 and a WARN line naming the file and %s\n%s", c.file, mode, code, mode, errs)
		}
		if err := os.Chmod(c.file, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, errs, _ := runScribe(t, runOpts{base: env}, "record", "--config", cfg); strings.Contains(errs, c.file) {
			t.Errorf("a private key file (0600) is warned about:\n%s", errs)
		}
	}
}

// TestSealedHookInboxOutsideArchive: a hook event waiting for watch sat as
// plain JSON inside the sealed archive (<archive>/scribe/watch/inbox). Now
// it waits outside it, in the user's state folder.
func TestSealedHookInboxOutsideArchive(t *testing.T) {
	dir := t.TempDir()
	archive, cfg, state := filepath.Join(dir, "archive"), filepath.Join(dir, "sealed.hcl"), filepath.Join(dir, "state")
	// A key command that fails: the event stays in the inbox.
	writeFile(t, cfg, archiveHCL(archive, `{ identity = { command = ["false"] } }`))
	env := append(os.Environ(), "HOME="+filepath.Join(dir, "home"), "CLAUDE_CONFIG_DIR="+filepath.Join(dir, "claude"), "XDG_STATE_HOME="+state)
	const marker = "Claude needs your permission to read secrets.txt"
	ev := fmt.Sprintf(`{"session_id":"9972daab-2c86-459f-9d78-3fe1be4e3280","hook_event_name":"Notification","notification_type":"permission_prompt","message":%q,"transcript_path":"/tmp/x.jsonl","cwd":"/tmp"}`, marker)
	if _, errs, code := runScribe(t, runOpts{base: env, stdin: ev}, "hook", "--config", cfg); code != 0 {
		t.Fatalf("hook: exit %d\n%s", code, errs)
	}
	holding := func(root string) []string {
		var found []string
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(marker)) {
					found = append(found, p)
				}
			}
			return nil
		})
		return found
	}
	if in := holding(archive); len(in) > 0 {
		t.Errorf("the waiting hook event is plain text inside the sealed archive: %v", in)
	}
	if out := holding(filepath.Join(state, "scribe", "inbox")); len(out) != 1 {
		t.Errorf("the waiting hook event is not in the inbox outside the archive (%s): %v", filepath.Join(state, "scribe", "inbox"), out)
	}
}
