package main_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/internal/peer"
)

// sealedEnv is the same input recorded into a plain and a sealed archive,
// each the sink "jsonl/archive" of its own configuration.
type sealedEnv struct {
	src, plain, sealed      string // the Claude folder recorded, and the archives
	plainCfg, sealedCfg     string
	identity, views, claude string
	ids                     map[string]string
	env                     []string
}

func archiveHCL(dir, encryption string) string {
	return fmt.Sprintf(`sink "jsonl" "archive" {
  dir = %q
  encryption = %s
}
pipeline {
  sinks = ["jsonl/archive"]
}
resume {
  loaders = ["jsonl/archive"]
}
`, dir, encryption)
}

func newSealedEnv(t *testing.T, p *peer.Peer) *sealedEnv {
	t.Helper()
	root := t.TempDir()
	se := &sealedEnv{src: filepath.Join(root, "src"), plain: filepath.Join(root, "plain"), sealed: filepath.Join(root, "sealed"),
		claude: filepath.Join(root, "claude"), identity: filepath.Join(root, "archive.key")}
	se.ids = p.GenFixture(t, se.src, "/home/alice/src/shop")
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(se.identity, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	se.plainCfg, se.sealedCfg = filepath.Join(root, "plain.hcl"), filepath.Join(root, "sealed.hcl")
	writeFile(t, se.plainCfg, archiveHCL(se.plain, "{}"))
	writeFile(t, se.sealedCfg, archiveHCL(se.sealed, fmt.Sprintf("{ identity = { file = %q } }", se.identity)))
	// The temporary folders of the test's own, to see that nothing
	// decrypted is ever written there (a sealed archive is read in memory).
	se.views = t.TempDir()
	se.env = append(os.Environ(), "CLAUDE_CONFIG_DIR="+se.claude, "SCRIBE_LOG_LEVEL=warn",
		"SCRIBE_SEALED_VIEW_DIR="+se.views, "XDG_RUNTIME_DIR="+se.views, "TMPDIR="+se.views)

	var files []string
	_ = filepath.WalkDir(filepath.Join(se.src, "projects"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jsonl") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) < 2 {
		t.Fatalf("fixture files: %v", files)
	}
	for _, cfg := range []string{se.plainCfg, se.sealedCfg} {
		se.ok(t, append([]string{"record", "--config", cfg}, files...)...)
	}
	// The same mtimes, so that listings compare whole.
	when := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	for _, dir := range []string{se.plain, se.sealed} {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				return os.Chtimes(p, when, when)
			}
			return err
		})
	}
	return se
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (se *sealedEnv) run(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	return runScribe(t, runOpts{base: se.env, env: env}, args...)
}

func (se *sealedEnv) ok(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := se.run(t, nil, args...)
	if code != 0 {
		t.Fatalf("scribe %v: exit %d\n%s", args, code, errs)
	}
	return out
}

// noViewsLeft fails when a command wrote anything into the temporary
// folders (TMPDIR, XDG_RUNTIME_DIR): a sealed archive is read in memory.
func (se *sealedEnv) noViewsLeft(t *testing.T, after string) {
	t.Helper()
	ents, _ := os.ReadDir(se.views)
	if len(ents) > 0 {
		t.Errorf("after %s: %d entries left in the temporary folder %s", after, len(ents), se.views)
	}
}

// TestSealedArchiveReadsAsPlain: the same input recorded into a sealed and
// a plain archive; ls, show, info, export and resume print the same bytes
// for both (the archive's folder aside), no decrypted view outlives its
// command, and the archive holds no plain transcript.
func TestSealedArchiveReadsAsPlain(t *testing.T) {
	p := peer.Find(t)
	se := newSealedEnv(t, p)
	id, agent := se.ids["withSummaryAndSubagent"], se.ids["subagentId"]
	cmds := [][]string{
		{"ls", "--all"}, {"ls", "--all", "--json"}, {"ls", "--project", "/home/alice/src/shop", "--json"},
		{"show", id}, {"show", id[:8], "--json", "--subagents"}, {"show", id, "--system", "--format", "md"},
		{"show", se.ids["withCompactBoundary"]}, {"show", se.ids["branched"], "--json"},
		{"info", id}, {"info", se.ids["interruptedTurn"], "--json"},
		{"export", id, "--format", "md"}, {"export", id, "--format", "json"}, {"export", se.ids["withCustomTitleTag"], "--format", "html"},
		{"resume", id, "--dry-run", "--json"}, {"resume", se.ids["interruptedTurn"], "--dry-run"},
	}
	// The folder aside, and the age of an interrupted turn, which the two
	// runs may measure on either side of a second.
	age := regexp.MustCompile(`interrupted (\d+h)?(\d+m)?[\d.]+s ago`)
	norm := func(s, dir string) string {
		return age.ReplaceAllString(strings.ReplaceAll(s, dir, "ARCHIVE"), "interrupted AGE ago")
	}
	for _, c := range cmds {
		args := append(append([]string{}, c...), "--from", "jsonl/archive")
		po, pe, pc := se.run(t, nil, append(args, "--config", se.plainCfg)...)
		so, sErr, sc := se.run(t, nil, append(args, "--config", se.sealedCfg)...)
		if pc != 0 || sc != 0 {
			t.Fatalf("%v: exit %d (plain) and %d (sealed)\n%s\n%s", c, pc, sc, pe, sErr)
		}
		if norm(po, se.plain) != norm(so, se.sealed) {
			t.Errorf("%v prints differently:\nplain:\n%.3000s\nsealed:\n%.3000s", c, po, so)
		}
		if norm(pe, se.plain) != norm(sErr, se.sealed) {
			t.Errorf("%v stderr differs:\nplain:\n%s\nsealed:\n%s", c, pe, sErr)
		}
		if strings.Contains(so, se.views) || strings.Contains(sErr, se.views) {
			t.Errorf("%v names the decrypted view", c)
		}
		se.noViewsLeft(t, strings.Join(c, " "))
	}

	// Nothing in the archive is a plain transcript.
	_ = filepath.WalkDir(se.sealed, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		if strings.HasSuffix(p, ".jsonl") || bytes.Contains(b, []byte(`"sessionId"`)) {
			t.Errorf("%s is plain text in the sealed archive", p)
		}
		return nil
	})

	// The SDK reads the exported bundle of the sealed session, imported
	// elsewhere, exactly as it reads the source.
	bundle := filepath.Join(t.TempDir(), "s.tgz")
	se.ok(t, "export", id, "--format", "bundle", "-o", bundle, "--from", "jsonl/archive", "--config", se.sealedCfg)
	dst := t.TempDir()
	se.ok(t, "import", bundle, "--config-dir", dst)
	sameJSON(t, "getSessionMessages", p.Messages(t, dst, id, "", false), p.Messages(t, se.src, id, "", false))
	// record mirrors transcripts, not a subagent's .meta.json (watch copies
	// those): its messages are compared with the plain archive's.
	sameJSON(t, "getSubagentMessages", p.SubagentMessages(t, dst, id, agent, ""), p.SubagentMessages(t, se.plain, id, agent, ""))

	// A fork of a sealed session is written into the archive, sealed.
	out := se.ok(t, "fork", id, "--json", "--from", "jsonl/archive", "--config", se.sealedCfg)
	if !strings.Contains(out, `"path": "jsonl/archive"`) {
		t.Errorf("fork into the sealed archive printed %s", out)
	}
	var forks []string
	_ = filepath.WalkDir(se.sealed, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			forks = append(forks, p)
		}
		return err
	})
	if len(forks) > 0 {
		t.Errorf("the fork left plain transcripts: %v", forks)
	}
	if ls := se.ok(t, "ls", "--all", "--from", "jsonl/archive", "--config", se.sealedCfg); !strings.Contains(ls, "(fork)") {
		t.Errorf("the fork is not listed:\n%s", ls)
	}
	se.noViewsLeft(t, "fork")
}

// TestSealedArchiveRefusals: wrong or missing key, a plain configuration
// over a sealed archive, no memory-backed place for a view, a command that
// does not read sealed archives: each fails loudly, naming the archive.
func TestSealedArchiveRefusals(t *testing.T) {
	p := peer.Find(t)
	se := newSealedEnv(t, p)
	id := se.ids["withSummaryAndSubagent"]
	dir := t.TempDir()
	other, _ := age.GenerateX25519Identity()
	wrongKey := filepath.Join(dir, "wrong.key")
	writeFile(t, wrongKey, other.String()+"\n")
	wrongCfg, missingCfg, plainOver := filepath.Join(dir, "wrong.hcl"), filepath.Join(dir, "missing.hcl"), filepath.Join(dir, "plainover.hcl")
	writeFile(t, wrongCfg, archiveHCL(se.sealed, fmt.Sprintf("{ identity = { file = %q } }", wrongKey)))
	writeFile(t, missingCfg, archiveHCL(se.sealed, fmt.Sprintf("{ identity = { file = %q } }", filepath.Join(dir, "gone.key"))))
	writeFile(t, plainOver, archiveHCL(se.sealed, "{}"))
	claudeSealed := filepath.Join(dir, "claude-sealed.hcl")
	writeFile(t, claudeSealed, strings.Replace(archiveHCL("", fmt.Sprintf("{ identity = { file = %q } }", se.identity)), `dir = ""`, `dir = ""`, 1))

	cases := []struct {
		name string
		env  []string
		args []string
		code int
		want string
	}{
		{"wrong key", nil, []string{"show", id, "--from", "jsonl/archive", "--config", wrongCfg}, 1, se.sealed},
		{"missing key file", nil, []string{"ls", "--all", "--from", "jsonl/archive", "--config", missingCfg}, 1, se.sealed},
		{"wrong key, resume", nil, []string{"resume", id, "--dry-run", "--from", "jsonl/archive", "--config", wrongCfg}, 1, se.sealed},
		{"plain config over a sealed archive", nil, []string{"ls", "--all", "--from", "jsonl/archive", "--config", plainOver}, 2, "sealed"},
		{"record plain into a sealed archive", nil, []string{"record", "--config", plainOver}, 2, "sealed"},
		{"Claude's folder sealed", nil, []string{"record", "--config", claudeSealed}, 2, "never sealed"},
		{"search", []string{"CLAUDE_CONFIG_DIR=" + se.sealed}, []string{"search", "login"}, 1, "sealed archive"},
		{"du", []string{"CLAUDE_CONFIG_DIR=" + se.sealed}, []string{"du"}, 1, "sealed archive"},
		{"rm", []string{"CLAUDE_CONFIG_DIR=" + se.sealed}, []string{"rm", id}, 1, "sealed archive"},
		{"gc", []string{"CLAUDE_CONFIG_DIR=" + se.sealed}, []string{"gc"}, 1, "sealed archive"},
		{"rename", []string{"CLAUDE_CONFIG_DIR=" + se.sealed}, []string{"rename", id, "x"}, 1, "sealed archive"},
		{"tag", []string{"CLAUDE_CONFIG_DIR=" + se.sealed}, []string{"tag", id, "x"}, 1, "sealed archive"},
		{"relocate", []string{"CLAUDE_CONFIG_DIR=" + se.sealed}, []string{"relocate", "/home/alice/src/shop", "/tmp/x"}, 1, "sealed archive"},
		{"ls of the folder itself", []string{"CLAUDE_CONFIG_DIR=" + se.sealed}, []string{"ls", "--all"}, 1, "sealed archive"},
	}
	before := snapshot(t, se.sealed)
	for _, c := range cases {
		out, errs, code := se.run(t, c.env, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, want %d with %q\nstdout: %.500s\nstderr: %s", c.name, code, c.code, c.want, out, errs)
		}
		if strings.Contains(out, "Fix the login bug") {
			t.Errorf("%s printed plain text of the sealed archive", c.name)
		}
	}
	if after := snapshot(t, se.sealed); after != before {
		t.Errorf("the refused commands changed the sealed archive:\nbefore %s\nafter  %s", before, after)
	}
	se.noViewsLeft(t, "the refusals")
}

// snapshot names every file of dir with its size.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			fi, _ := d.Info()
			rel, _ := filepath.Rel(dir, p)
			fmt.Fprintf(&b, "%s:%d ", rel, fi.Size())
		}
		return err
	})
	return b.String()
}

// TestSealedTornAndTampered: a torn last frame (what a kill mid-write
// leaves) is cut by the next record and shown in its report; one byte
// changed in the last complete frame makes record and show fail, naming
// the file, and nothing is cut.
func TestSealedTornAndTampered(t *testing.T) {
	p := peer.Find(t)
	se := newSealedEnv(t, p)
	id := se.ids["withSummaryAndSubagent"]
	var main string
	_ = filepath.WalkDir(se.sealed, func(p string, d fs.DirEntry, err error) error {
		if err == nil && filepath.Base(p) == id+".jsonl.sealed" {
			main = p
		}
		return err
	})
	if main == "" {
		t.Fatal("no sealed main transcript")
	}
	whole, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	// The extent record as it was before the write a kill cuts short (it
	// is written once the frame is synced).
	record, err := os.ReadFile(main + claudedir.ExtentSuffix)
	if err != nil {
		t.Fatal(err)
	}
	next := `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"one more"},"uuid":"0e0e0e0e-0000-4000-8000-000000000001","timestamp":"2026-01-10T12:00:00.000Z","cwd":"/home/alice/src/shop","sessionId":"` + id + `"}` + "\n"
	// The frame that record would add, torn: whole frames, then part of one.
	if _, errs, code := runScribe(t, runOpts{base: se.env, stdin: next}, "record", "--config", se.sealedCfg); code != 0 {
		t.Fatalf("record: exit %d\n%s", code, errs)
	}
	grown, _ := os.ReadFile(main)
	torn := grown[:len(whole)+(len(grown)-len(whole))/2]
	if err := os.WriteFile(main, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(main+claudedir.ExtentSuffix, record, 0o600); err != nil {
		t.Fatal(err)
	}
	if out := se.ok(t, "show", id, "--json", "--from", "jsonl/archive", "--config", se.sealedCfg); strings.Contains(out, "one more") {
		t.Error("show printed the torn frame's line")
	}
	out, errs, code := runScribe(t, runOpts{base: se.env, stdin: next}, "record", "--config", se.sealedCfg)
	if code != 0 || !strings.Contains(out+errs, "1 torn frames cut") {
		t.Fatalf("record after a torn frame: exit %d, want 0 and \"1 torn frames cut\" in its report\n%s%s", code, out, errs)
	}
	if out := se.ok(t, "show", id, "--json", "--from", "jsonl/archive", "--config", se.sealedCfg); !strings.Contains(out, "one more") {
		t.Error("the line of the torn frame was not written again")
	}

	// One byte of the last complete frame changed.
	b, _ := os.ReadFile(main)
	b[len(b)-20] ^= 0x10
	if err := os.WriteFile(main, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"record", "--config", se.sealedCfg},
		{"show", id, "--from", "jsonl/archive", "--config", se.sealedCfg},
		{"ls", "--all", "--from", "jsonl/archive", "--config", se.sealedCfg},
	} {
		_, errs, code := runScribe(t, runOpts{base: se.env, stdin: next}, args...)
		if code == 0 || !strings.Contains(errs, main) || !strings.Contains(errs, "damaged") {
			t.Errorf("%v on a changed frame: exit %d, want a failure naming %s\n%s", args, code, main, errs)
		}
	}
	if after, _ := os.ReadFile(main); !bytes.Equal(after, b) {
		t.Errorf("the damaged file changed (%d bytes, was %d): a complete frame was cut", len(after), len(b))
	}
	se.noViewsLeft(t, "the damaged archive")
}
