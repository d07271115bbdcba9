package main_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/e0dc0000/scribe/claudedir"
)

// spacedSession writes a transcript as Python's json.dumps writes JSON
// (", " and ": " between members) into the watched folder and returns
// its path and the archive's copy of it.
func spacedSession(t *testing.T, we *watchEnv, id, cwd string, lines ...string) (src, archived string) {
	t.Helper()
	dir := filepath.Join(we.projects, claudedir.SanitizePath(cwd))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	src = filepath.Join(dir, id+".jsonl")
	if err := os.WriteFile(src, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return src, filepath.Join(we.archive, "projects", claudedir.SanitizePath(cwd), id+".jsonl")
}

func spacedLines(id, cwd string, n int) []string {
	out := []string{fmt.Sprintf(`{"type": "custom-title", "customTitle": "spaced", "sessionId": %q}`, id)}
	parent := "null"
	for i := 0; i < n; i++ {
		typ := "user"
		if i%2 == 1 {
			typ = "assistant"
		}
		uuid := fmt.Sprintf("5ace0000-0000-4000-8000-%012d", i+1)
		out = append(out, fmt.Sprintf(`{"parentUuid": %s, "isSidechain": false, "type": %q, "message": {"role": %q, "content": "line %d"}, "uuid": %q, "timestamp": "2026-01-10T11:00:%02d.000Z", "cwd": %q, "sessionId": %q, "version": "2.1.0"}`,
			parent, typ, typ, i, uuid, i, cwd, id))
		parent = `"` + uuid + `"`
	}
	return out
}

// archivedLines counts the lines of an archive's copy (0 when absent).
func archivedLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte{'\n'})
}

// TestWatchAndHookReadSpacedJSON: a transcript written with spaces in its
// JSON is mirrored by watch --once and by hook alike (they used to look
// for the bytes "type":"user" and held every line forever, saying
// "0 lines read ... 0 errors").
func TestWatchAndHookReadSpacedJSON(t *testing.T) {
	const id, cwd = "5ace0000-1111-4222-8333-444455556666", "/home/alice/src/spaced"
	lines := spacedLines(id, cwd, 4)

	t.Run("watch --once", func(t *testing.T) {
		we := newWatchEnv(t)
		_, archived := spacedSession(t, we, id, cwd, lines...)
		_, stderr, code := runWatchOnce(t, we)
		if code != 0 {
			t.Fatalf("watch --once: exit %d\n%s", code, stderr)
		}
		if n := archivedLines(t, archived); n != len(lines) {
			t.Fatalf("watch --once mirrored %d of %d lines\n%s", n, len(lines), stderr)
		}
		if !strings.Contains(stderr, fmt.Sprintf("%d lines read (%d accepted", len(lines), len(lines))) {
			t.Fatalf("watch --once summary:\n%s", stderr)
		}
	})
	t.Run("hook", func(t *testing.T) {
		we := newWatchEnv(t)
		src, archived := spacedSession(t, we, id, cwd, lines...)
		we.hook(t, map[string]any{"session_id": id, "transcript_path": src, "cwd": cwd, "hook_event_name": "Stop"})
		if n := archivedLines(t, archived); n != len(lines) {
			log, _ := os.ReadFile(filepath.Join(we.archive, "scribe", "watch", "hook.log"))
			t.Fatalf("hook mirrored %d of %d lines\n%s", n, len(lines), log)
		}
	})
}

// TestWatchSaysWhatWaitsForAFirstMessage: a file holding only lines that
// wait for a first user or assistant line is counted and logged, not
// passed over in silence.
func TestWatchSaysWhatWaitsForAFirstMessage(t *testing.T) {
	const id, cwd = "5ace0000-2222-4222-8333-444455556666", "/home/alice/src/waiting"
	we := newWatchEnv(t)
	src, _ := spacedSession(t, we, id, cwd, spacedLines(id, cwd, 0)...)
	_, stderr, code := runWatchOnce(t, we)
	if code != 0 {
		t.Fatalf("watch --once: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "1 files waiting for a first user or assistant line") || !strings.Contains(stderr, src) {
		t.Fatalf("watch --once does not say the file waits:\n%s", stderr)
	}
}

func runWatchOnce(t *testing.T, we *watchEnv, wrap ...string) (string, string, int) {
	t.Helper()
	args := append(append([]string{}, wrap...), we.bin, "watch", "--once", "--config", we.cfg)
	return runScribe(t, runOpts{bin: args[0], base: we.env}, args[1:]...)
}

// withoutReadOverride returns the command prefix under which a file mode
// of 000 stops the binary: nothing for a user, setpriv dropping the
// capabilities that let root read anything for root ("" when root cannot
// drop them here).
func withoutReadOverride(t *testing.T) ([]string, bool) {
	if os.Geteuid() != 0 {
		return nil, true
	}
	sp, err := exec.LookPath("setpriv")
	if err != nil {
		return nil, false
	}
	wrap := []string{sp, "--bounding-set", "-dac_override,-dac_read_search"}
	if err := exec.Command(sp, "--bounding-set", "-dac_override,-dac_read_search", "true").Run(); err != nil {
		return nil, false
	}
	return wrap, true
}

// TestWatchOnceFailsOnWhatItCannotRead: watch --once logs a project
// folder it may not list, a transcript it may not open and a pipe where a
// transcript is, mirrors the rest, and exits 1 (it used to pass over the
// folder and the pipe in silence, and exit 0 for the file).
func TestWatchOnceFailsOnWhatItCannotRead(t *testing.T) {
	const cwd = "/home/alice/src/readable"
	we := newWatchEnv(t)
	okID := "5ace0000-3333-4222-8333-444455556666"
	_, okArchived := spacedSession(t, we, okID, cwd, spacedLines(okID, cwd, 2)...)

	pipeID := "5ace0000-4444-4222-8333-444455556666"
	pipeDir := filepath.Join(we.projects, claudedir.SanitizePath("/home/alice/src/pipe"))
	if err := os.MkdirAll(pipeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(pipeDir, pipeID+".jsonl")
	if err := syscall.Mkfifo(pipe, 0o600); err != nil {
		t.Fatal(err)
	}
	want := []string{pipe}

	wrap, canLock := withoutReadOverride(t)
	if canLock {
		lockedID, fileID := "5ace0000-5555-4222-8333-444455556666", "5ace0000-6666-4222-8333-444455556666"
		src, _ := spacedSession(t, we, lockedID, "/home/alice/src/locked", spacedLines(lockedID, "/home/alice/src/locked", 2)...)
		lockedDir := filepath.Dir(src)
		file, _ := spacedSession(t, we, fileID, "/home/alice/src/lockedfile", spacedLines(fileID, "/home/alice/src/lockedfile", 2)...)
		for _, p := range []string{lockedDir, file} {
			if err := os.Chmod(p, 0); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Chmod(p, 0o700) })
		}
		want = append(want, lockedDir, file)
	} else {
		t.Log("root cannot drop its read override here (no setpriv): only the pipe is tried")
	}

	_, stderr, code := runWatchOnce(t, we, wrap...)
	if code != 1 {
		t.Fatalf("watch --once with unreadable paths: exit %d, want 1\n%s", code, stderr)
	}
	for _, p := range want {
		if !strings.Contains(stderr, p) {
			t.Errorf("watch --once does not name %s:\n%s", p, stderr)
		}
	}
	if !strings.Contains(stderr, fmt.Sprintf("%d unreadable", len(want))) {
		t.Errorf("summary does not count %d unreadable:\n%s", len(want), stderr)
	}
	if n := archivedLines(t, okArchived); n != 3 {
		t.Errorf("the readable session: %d of 3 lines mirrored\n%s", n, stderr)
	}
}

// TestWatchPassesOverALineOverTheCap: with watch { max_line_bytes } set
// small, a longer line is counted and logged, the lines after it are
// mirrored, and watch --once exits 0.
func TestWatchPassesOverALineOverTheCap(t *testing.T) {
	const id, cwd = "5ace0000-7777-4222-8333-444455556666", "/home/alice/src/capped"
	we := newWatchEnv(t)
	cfg, err := os.ReadFile(we.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(we.cfg, append(cfg, "watch {\n  max_line_bytes = 4096\n}\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	lines := spacedLines(id, cwd, 4)
	for i, l := range lines { // compact JSON: the cap alone is tried
		lines[i] = strings.ReplaceAll(strings.ReplaceAll(l, `": `, `":`), `, "`, `,"`)
	}
	big := strings.Replace(lines[2], `"line 1"`, `"`+strings.Repeat("z", 10000)+`"`, 1)
	lines[2] = big
	_, archived := spacedSession(t, we, id, cwd, lines...)
	_, stderr, code := runWatchOnce(t, we)
	if code != 0 {
		t.Fatalf("watch --once: exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(archived)
	if err != nil {
		t.Fatalf("nothing mirrored: %v\n%s", err, stderr)
	}
	if bytes.Contains(b, []byte("zzzz")) || !bytes.Contains(b, []byte(`"line 3"`)) || archivedLines(t, archived) != len(lines)-1 {
		t.Fatalf("archive holds:\n%s\n%s", b, stderr)
	}
	if !strings.Contains(stderr, "1 over the line cap") || !strings.Contains(stderr, "max_line_bytes") {
		t.Fatalf("the line over the cap is not reported:\n%s", stderr)
	}
}

// TestHookSaysATranscriptOutsideItsFolder: a hook event whose transcript is
// outside the configuration's Claude folder (Claude Code run with another
// CLAUDE_CONFIG_DIR, a symlinked folder named by its other path) mirrored
// nothing and logged nothing at the default level. Now hook.log says so,
// naming the path and the folders it watches.
func TestHookSaysATranscriptOutsideItsFolder(t *testing.T) {
	const id, cwd = "5ace0000-5555-4222-8333-444455556666", "/home/alice/src/outside"
	we := newWatchEnv(t)
	src := filepath.Join(t.TempDir(), id+".jsonl")
	if err := os.WriteFile(src, []byte(strings.Join(spacedLines(id, cwd, 2), "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	we.hook(t, map[string]any{"session_id": id, "transcript_path": src, "cwd": cwd, "hook_event_name": "Stop"})
	log, _ := os.ReadFile(filepath.Join(we.archive, "scribe", "watch", "hook.log"))
	if !strings.Contains(string(log), "not under any watched folder") || !strings.Contains(string(log), src) {
		t.Fatalf("hook.log does not say the transcript is outside its folder:\n%s", log)
	}
}
