package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/e0dc0000/scribe/internal/testui"
)

// exportAllSummary is export --all --json's output.
type exportAllSummary struct {
	Dir, Index, Store string
	Sessions          int
	Pages             []struct{ ID, File, Title string }
	Failed            []struct{ ID, Error string }
}

// indexLinks are the index page's links: href → the link's text.
func indexLinks(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`<li class="row"><a href="([^"]+)">([^<]*)</a>`).FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = m[2]
	}
	return out
}

// TestExportAll: export --all -o DIR writes every session of a Claude
// folder as the very page export --format html writes, and index.html
// linking each by its relative address under the SDK's title, with its
// project; a hostile title is escaped and runs nothing when the folder is
// opened in Chromium; a folder that is not empty is refused unless
// --force; the same works --from the team server.
func TestExportAll(t *testing.T) {
	dir := t.TempDir()
	const idA, idB, idH = "e1e10000-0000-4000-8000-000000000001", "e1e10000-0000-4000-8000-000000000002", "e1e10000-0000-4000-8000-000000000003"
	a := testui.NewSession(t, dir, "/home/alice/shop", idA)
	a.User(t, "Fix the checkout total")
	a.Assistant(t, testui.Text("The total now counts the discount."))
	b := testui.NewSession(t, dir, "/home/bob/api", idB)
	b.User(t, "Write the API docs")
	b.Meta(t, map[string]any{"type": "custom-title", "customTitle": "API docs, reviewed"})
	testui.HostileSession(t, dir, "/home/eve/x", idH)

	out := filepath.Join(t.TempDir(), "site")
	var res exportAllSummary
	scribeJSON(t, runOpts{}, &res, "export", "--all", "-o", out, "--json", "--config-dir", dir)
	if res.Sessions != 3 || len(res.Pages) != 3 || len(res.Failed) != 0 || res.Index != filepath.Join(out, "index.html") {
		t.Fatalf("summary %+v", res)
	}
	for _, id := range []string{idA, idB, idH} {
		got, err := os.ReadFile(filepath.Join(out, id+".html"))
		if err != nil {
			t.Fatal(err)
		}
		if want := mustScribe(t, runOpts{}, "export", id, "--format", "html", "--config-dir", dir); string(got) != want {
			t.Errorf("the page of %s is not export --format html's", id)
		}
	}
	links := indexLinks(t, res.Index)
	if links[idA+".html"] != "Fix the checkout total" || links[idB+".html"] != "API docs, reviewed" || len(links) != 3 {
		t.Errorf("the index links %q", links)
	}
	index, _ := os.ReadFile(res.Index)
	if strings.Contains(string(index), "<script") || !strings.Contains(string(index), "title &lt;script&gt;") || !strings.Contains(string(index), ">shop ·") {
		t.Errorf("the index page:\n%s", index)
	}

	// Opened from the disk: the links lead to the pages, nothing runs.
	ctx := testui.Browser(t)
	testui.Do(t, ctx, chromedp.Navigate("file://"+res.Index), chromedp.WaitVisible(chromedp.CSS("ol.sessions")))
	clickAndLoad(t, ctx, `ol.sessions a[href="`+idB+`.html"]`)
	if txt := testui.Eval[string](t, ctx, `location.pathname.split("/").pop() + " " + document.body.textContent`); !strings.HasPrefix(txt, idB+".html") || !strings.Contains(txt, "Write the API docs") {
		t.Errorf("the link leads to %.300q", txt)
	}
	testui.Do(t, ctx, chromedp.Navigate("file://"+filepath.Join(out, idH+".html")), chromedp.WaitReady(chromedp.CSS("main")))
	if testui.Eval[bool](t, ctx, `window.pwned === 1`) {
		t.Error("the hostile session's page ran a script")
	}

	// A folder that holds anything is refused, unless --force.
	if _, errs, code := runScribe(t, runOpts{}, "export", "--all", "-o", out, "--config-dir", dir); code != 2 || !strings.Contains(errs, "not empty") {
		t.Errorf("into a full folder: exit %d, %s", code, errs)
	}
	if got := mustScribe(t, runOpts{}, "export", "--all", "-o", out, "--force", "--config-dir", dir); !strings.HasPrefix(got, "exported 3 sessions") {
		t.Errorf("with --force: %q", got)
	}
	if _, errs, code := runScribe(t, runOpts{}, "export", "--all", "--config-dir", dir); code != 2 || !strings.Contains(errs, "-o DIR") {
		t.Errorf("without -o: exit %d, %s", code, errs)
	}

	// --from the team server: the tenant's sessions.
	s := startTenantsServer(t)
	const sidA, sidB = "e2e20000-0000-4000-8000-000000000001", "e2e20000-0000-4000-8000-000000000002"
	postAs(t, s, tenantTokA, sidA, []string{serveRow(sidA, "e2e20000-0000-4000-8000-0000000000a1", "/home/alice/shop", "alpha on the server")})
	postAs(t, s, tenantTokB, sidB, []string{serveRow(sidB, "e2e20000-0000-4000-8000-0000000000b1", "/home/bob/api", "beta on the server")})
	cfg := filepath.Join(t.TempDir(), "scribe.hcl")
	hcl := fmt.Sprintf("config_dir = %q\nloader \"cloud\" \"team\" {\n  base_url = %q\n  token    = %q\n}\n", t.TempDir(), s.url(), tenantTokA)
	if err := os.WriteFile(cfg, []byte(hcl), 0o600); err != nil {
		t.Fatal(err)
	}
	remote := filepath.Join(t.TempDir(), "team")
	var rres exportAllSummary
	scribeJSON(t, runOpts{}, &rres, "export", "--all", "-o", remote, "--json", "--from", "cloud/team", "--config", cfg)
	var ids []string
	for _, p := range rres.Pages {
		ids = append(ids, p.ID)
	}
	sort.Strings(ids)
	if strings.Join(ids, " ") != sidA || rres.Store != "cloud/team" {
		t.Fatalf("from the server: %+v", rres)
	}
	page, err := os.ReadFile(filepath.Join(remote, sidA+".html"))
	if err != nil || !strings.Contains(string(page), "alpha on the server") {
		t.Errorf("the server's session's page: %v", err)
	}
	if links := indexLinks(t, rres.Index); links[sidA+".html"] != "alpha on the server" {
		t.Errorf("the server's index links %q", links)
	}
}
