package main_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"

	"github.com/e0dc0000/scribe/internal/peer"
)

// A bundle exported from one config folder and imported under another cwd
// into a second one is listed and read by the SDK as the original (paths
// aside), subagents included; importing it again is a no-op; a different
// session of the same id is refused unless --fork; a tampered bundle is
// refused whole.
func TestExportImportBundleAcrossConfigFolders(t *testing.T) {
	p := peer.Find(t)
	src, dst := t.TempDir(), t.TempDir()
	ids := p.GenFixture(t, src, "/home/alice/src/shop")
	id, agent := ids["withSummaryAndSubagent"], ids["subagentId"]
	bundle := filepath.Join(t.TempDir(), "s.tgz")
	cpOK(t, nil, "", "export", id[:8], "--format", "bundle", "-o", bundle, "--config-dir", src)

	var res struct {
		SessionID, Project string
		Relocated          bool
		AlreadyPresent     bool
	}
	cpOK(t, &res, "", "import", bundle, "--cwd", "/home/bob/work/shop", "--json", "--config-dir", dst)
	if res.SessionID != id || res.Project != "-home-bob-work-shop" || !res.Relocated {
		t.Fatalf("import: %+v", res)
	}
	orig := p.Info(t, src, id, "")
	got := p.Info(t, dst, id, "/home/bob/work/shop")
	if orig == nil || got == nil {
		t.Fatalf("the SDK finds the session: original %v, imported %v", orig, got)
	}
	if got.Cwd != "/home/bob/work/shop" {
		t.Errorf("imported cwd %q", got.Cwd)
	}
	for _, k := range []string{"cwd", "fileSize", "lastModified"} {
		delete(orig.Raw, k)
		delete(got.Raw, k)
	}
	sameJSON(t, "getSessionInfo", got.Raw, orig.Raw)
	sameJSON(t, "getSessionMessages", p.Messages(t, dst, id, "/home/bob/work/shop", false), p.Messages(t, src, id, "", false))
	sameJSON(t, "getSubagentMessages", p.SubagentMessages(t, dst, id, agent, ""), p.SubagentMessages(t, src, id, agent, ""))

	// Again, with the relocated line appended since: the same session.
	cpOK(t, &res, "", "import", bundle, "--json", "--config-dir", dst)
	if !res.AlreadyPresent {
		t.Fatalf("a second import: %+v", res)
	}
	// The same id, other bytes: refused, then imported as a fork.
	other := t.TempDir()
	copyTree(t, dst, other)
	main := filepath.Join(other, "projects", "-home-bob-work-shop", id+".jsonl")
	raw, _ := os.ReadFile(main)
	if err := os.WriteFile(main, bytes.Replace(raw, []byte("login bug"), []byte("LOGIN BUG"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := cpScribe(t, "", "import", bundle, "--config-dir", other); code != 1 || !strings.Contains(errs, "different session") {
		t.Fatalf("import over a different session: exit %d, %s", code, errs)
	}
	var fk struct{ SessionID, ForkedFrom string }
	cpOK(t, &fk, "", "import", bundle, "--fork", "--json", "--config-dir", other)
	if fk.ForkedFrom != id || fk.SessionID == id {
		t.Fatalf("import --fork: %+v", fk)
	}
	// The SDK's own fork of the original is titled the same.
	sdkFork := p.Info(t, src, p.Fork(t, src, id, "", "", ""), "")
	if info := p.Info(t, other, fk.SessionID, ""); info == nil || sdkFork == nil || info.Summary != sdkFork.Summary || info.FirstPrompt != sdkFork.FirstPrompt {
		t.Fatalf("the SDK lists the imported fork as %+v, its own fork as %+v", info, sdkFork)
	}

	// Tampering: one byte of the transcript changed, the manifest kept.
	tampered := filepath.Join(t.TempDir(), "t.tgz")
	rewriteBundle(t, bundle, tampered, func(name string, data []byte) []byte {
		if strings.HasSuffix(name, id+".jsonl") {
			return bytes.Replace(data, []byte("login"), []byte("logon"), 1)
		}
		return data
	})
	fresh := t.TempDir()
	if _, errs, code := cpScribe(t, "", "import", bundle+".missing", "--config-dir", fresh); code != 1 {
		t.Fatalf("import of a missing file: exit %d, %s", code, errs)
	}
	if _, errs, code := cpScribe(t, "", "import", tampered, "--config-dir", fresh); code != 1 || !strings.Contains(errs, "does not match the manifest") {
		t.Fatalf("import of a tampered bundle: exit %d, %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(fresh, "projects")); !os.IsNotExist(err) {
		t.Fatalf("a refused bundle left files: %v", err)
	}
	// md, html and json exports of the same session.
	md := cpOK(t, nil, "", "export", id, "--format", "md", "--config-dir", src)
	html := cpOK(t, nil, "", "export", id, "--format", "html", "--config-dir", src)
	for _, want := range []string{"Fix the login bug in auth.ts", "Tool call: Bash", "Search the codebase for the login handler"} {
		if !strings.Contains(md, want) {
			t.Errorf("the md export lacks %q", want)
		}
	}
	// The html export is the web viewer's page (package ui): the tool call
	// summarised by its command, the subagent under it, the style inside.
	for _, want := range []string{"Fix the login bug in auth.ts", `<span class="tname">Bash</span> <code class="tsum">npm test</code>`,
		`<section class="agent">`, "Search the codebase for the login handler", "<style>"} {
		if !strings.Contains(html, want) {
			t.Errorf("the html export lacks %q", want)
		}
	}
	var doc struct {
		Info      map[string]any
		Messages  []json.RawMessage
		Subagents map[string][]json.RawMessage
	}
	cpOK(t, &doc, "", "export", id, "--format", "json", "--config-dir", src)
	sameJSON(t, "export json messages", doc.Messages, p.Messages(t, src, id, "", false))
	if doc.Info["sessionId"] != id || len(doc.Subagents[agent]) == 0 {
		t.Errorf("export json: info %v, subagents %v", doc.Info, doc.Subagents)
	}
}

// rewriteBundle copies a bundle, passing each file's bytes through fn.
func rewriteBundle(t *testing.T, from, to string, fn func(name string, data []byte) []byte) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	gz, err := gzip.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		data = fn(h.Name, data)
		h.Size = int64(len(data))
		tw.WriteHeader(h)
		tw.Write(data)
	}
	tw.Close()
	zw.Close()
	if err := os.WriteFile(to, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// An encrypted bundle: nothing readable in the file, a wrong or missing key
// fails loudly and imports nothing, the right key imports the session
// byte for byte; with an age key pair and with a passphrase.
func TestEncryptedBundleNeedsItsKey(t *testing.T) {
	p := peer.Find(t)
	src := t.TempDir()
	ids := p.GenFixture(t, src, "/home/alice/src/shop")
	id := ids["withSummaryAndSubagent"]
	keys := t.TempDir()
	ident, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	idFile := filepath.Join(keys, "id.txt")
	other, _ := age.GenerateX25519Identity()
	otherFile := filepath.Join(keys, "other.txt")
	pw, wrongPW := filepath.Join(keys, "pw"), filepath.Join(keys, "wrong")
	for path, v := range map[string]string{idFile: ident.String(), otherFile: other.String(), pw: "correct horse", wrongPW: "battery staple"} {
		if err := os.WriteFile(path, []byte(v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name      string
		enc, good []string
		bad       []string
	}{
		{"x25519", []string{"--recipient", ident.Recipient().String()}, []string{"--identity-file", idFile}, []string{"--identity-file", otherFile}},
		{"passphrase", []string{"--passphrase-file", pw}, []string{"--passphrase-file", pw}, []string{"--passphrase-file", wrongPW}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bundle := filepath.Join(t.TempDir(), "s.tgz.age")
			cpOK(t, nil, "", append([]string{"export", id, "--format", "bundle", "-o", bundle, "--config-dir", src}, tc.enc...)...)
			data, _ := os.ReadFile(bundle)
			if !bytes.HasPrefix(data, []byte("age-encryption.org/")) || bytes.Contains(data, []byte(id)) {
				t.Fatal("the bundle is not an age file, or shows the session id in clear")
			}
			dst := t.TempDir()
			for _, bad := range [][]string{nil, tc.bad} {
				_, errs, code := cpScribe(t, "", append([]string{"import", bundle, "--config-dir", dst}, bad...)...)
				if code == 0 {
					t.Fatalf("import with %v succeeded", bad)
				}
				if bad == nil && (code != 2 || !strings.Contains(errs, "encrypted")) {
					t.Fatalf("import without a key: exit %d, %s", code, errs)
				}
				if _, err := os.Stat(filepath.Join(dst, "projects")); err == nil {
					t.Fatalf("a failed import (%v) left files behind", bad)
				}
			}
			cpOK(t, nil, "", append([]string{"import", bundle, "--config-dir", dst}, tc.good...)...)
			want, _ := os.ReadFile(filepath.Join(src, "projects", "-home-alice-src-shop", id+".jsonl"))
			got, err := os.ReadFile(filepath.Join(dst, "projects", "-home-alice-src-shop", id+".jsonl"))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("imported transcript differs from the original (%v)", err)
			}
		})
	}
}

// rm with a key seals the trash item; restore needs the key, checks what
// it decrypts, and brings the files back byte for byte.
func TestSealedTrashNeedsItsKey(t *testing.T) {
	p := peer.Find(t)
	dir := t.TempDir()
	ids := p.GenFixture(t, dir, "/home/alice/src/shop")
	id := ids["withSummaryAndSubagent"]
	path := filepath.Join(dir, "projects", "-home-alice-src-shop", id+".jsonl")
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	keys := t.TempDir()
	pw, wrong := filepath.Join(keys, "pw"), filepath.Join(keys, "wrong")
	_ = os.WriteFile(pw, []byte("correct horse\n"), 0o600)
	_ = os.WriteFile(wrong, []byte("battery staple\n"), 0o600)
	cpOK(t, nil, "", "rm", id, "--yes", "--passphrase-file", pw, "--config-dir", dir)
	// Nothing readable is left in the trash.
	err = filepath.WalkDir(filepath.Join(dir, "scribe", "trash"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(p) == "manifest.json" {
			return err
		}
		b, _ := os.ReadFile(p)
		if !bytes.HasPrefix(b, []byte("age-encryption.org/")) {
			t.Errorf("%s is not sealed", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{nil, {"--passphrase-file", wrong}} {
		if _, _, code := cpScribe(t, "", append([]string{"trash", "restore", id, "--config-dir", dir}, bad...)...); code == 0 {
			t.Fatalf("restore with %v succeeded", bad)
		}
		if _, err := os.Stat(path); err == nil {
			t.Fatalf("a failed restore (%v) put the transcript back", bad)
		}
	}
	cpOK(t, nil, "", "trash", "restore", id, "--passphrase-file", pw, "--config-dir", dir)
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("restored transcript differs (%v)", err)
	}
}
