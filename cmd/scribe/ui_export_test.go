package main_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The session page of scribe ui offers the session as a download: its
// HTML page (export --format html's bytes), its Markdown (export --format
// md's) and its bundle (which import takes back); anything else is not
// found, and nothing is served before signing in.
func TestUIDownloadsAreTheExports(t *testing.T) {
	dir := t.TempDir()
	_, _, rich := uiFixture(t, dir)
	addr := startUI(t, dir)
	base := strings.SplitN(addr, "/?", 2)[0]
	exportURL := func(format string) string {
		return base + "/sessions/" + rich.ID + "/export?format=" + format + "&store=claude"
	}
	if r, err := http.Get(exportURL("md")); err != nil || r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a download before signing in: %v %v", r.Status, err)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	get := func(u string) (*http.Response, []byte) {
		t.Helper()
		r, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r, b
	}
	if r, _ := get(addr); r.StatusCode != http.StatusOK {
		t.Fatalf("sign in: %s", r.Status)
	}
	_, page := get(base + "/sessions/" + rich.ID)
	for _, f := range []string{"html", "md", "bundle"} {
		if !strings.Contains(string(page), "/sessions/"+rich.ID+"/export?format="+f+"&amp;store=claude") {
			t.Errorf("the page offers no %s download", f)
		}
	}
	env := []string{"HOME=" + t.TempDir()}
	for _, f := range []string{"html", "md"} {
		r, got := get(exportURL(f))
		want := mustScribe(t, runOpts{env: env}, "export", rich.ID, "--format", f, "--config-dir", dir)
		if r.StatusCode != http.StatusOK || !bytes.Equal(got, []byte(want)) {
			t.Errorf("%s download (%s, %d bytes) is not export --format %s's (%d bytes)", f, r.Status, len(got), f, len(want))
		}
		if cd := r.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment;") || !strings.Contains(cd, rich.ID) {
			t.Errorf("%s download: Content-Disposition %q", f, cd)
		}
	}
	r, bundle := get(exportURL("bundle"))
	if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "application/gzip" {
		t.Fatalf("bundle download: %s %s", r.Status, r.Header.Get("Content-Type"))
	}
	path := filepath.Join(t.TempDir(), "s.tar.gz")
	if err := os.WriteFile(path, bundle, 0o600); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	mustScribe(t, runOpts{env: env}, "import", path, "--cwd", "/work/elsewhere", "--config-dir", other)
	if out := mustScribe(t, runOpts{env: env}, "show", rich.ID, "--config-dir", other); !strings.Contains(out, "Edit") {
		t.Errorf("the imported bundle does not show the session:\n%s", out)
	}
	for _, bad := range []string{"json", "pdf", ""} {
		if r, _ := get(exportURL(bad)); r.StatusCode != http.StatusNotFound {
			t.Errorf("format %q: %s", bad, r.Status)
		}
	}
}
