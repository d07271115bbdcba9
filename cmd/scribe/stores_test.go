package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/internal/testenv"
)

// TestSessionCommandsOnEveryStore: ls, show, rename, tag, rm and the trash
// work with --from a PostgreSQL store and an S3 store through the same
// commands as on local files, judged by what the next ls --from shows;
// archive, which the SDK refuses a SessionStore too, says so; and none of
// them writes anything into TMPDIR.
func TestSessionCommandsOnEveryStore(t *testing.T) {
	cfg, env := backends(t, `"jsonl/local", "postgres/team", "s3/archive"`)
	dir, tmp, data := t.TempDir(), t.TempDir(), t.TempDir()
	env = append(env, "TMPDIR="+tmp, "XDG_DATA_HOME="+data)
	sample := filepath.Join(testenv.RepoRoot(t), "cmd", "scribe", "testdata", "sample.jsonl")
	mustScribe(t, runOpts{env: env}, "record", "--config", cfg, "--config-dir", dir, sample)
	base := []string{"--config", cfg, "--config-dir", dir}
	type listed struct {
		SessionID, Summary, CustomTitle, Tag string
	}
	for _, store := range []string{"postgres/team", "s3/archive"} {
		t.Run(store, func(t *testing.T) {
			from := append(append([]string{}, base...), "--from", store)
			run := func(args ...string) string { return mustScribe(t, runOpts{env: env}, append(args, from...)...) }
			ls := func() []listed {
				var v []listed
				if err := json.Unmarshal([]byte(run("ls", "--all", "--json")), &v); err != nil {
					t.Fatal(err)
				}
				return v
			}
			before := run("show", sampleSession, "--json")
			// usage counts a store's sessions as it counts local files.
			localUsage := mustScribe(t, runOpts{env: env}, append([]string{"usage", "daily", "--json"}, base...)...)
			if got := run("usage", "daily", "--json"); got != localUsage || !strings.Contains(got, "totalTokens") {
				t.Errorf("usage daily --json --from %s:\n%s\nlocal:\n%s", store, got, localUsage)
			}
			// A bundle of what the store holds imports elsewhere as the
			// same conversation.
			bundle, other := filepath.Join(t.TempDir(), "b.tar.gz"), t.TempDir()
			run("export", sampleSession, "--format", "bundle", "-o", bundle)
			mustScribe(t, runOpts{env: env}, "import", bundle, "--cwd", "/work/elsewhere", "--config-dir", other)
			if got := mustScribe(t, runOpts{env: env}, "show", sampleSession, "--json", "--config-dir", other); got != before {
				t.Errorf("the bundle exported --from %s shows, imported:\n%s\nwant:\n%s", store, got, before)
			}

			run("rename", sampleSession[:8], "a title set remotely")
			run("tag", sampleSession[:8], "remote")
			if got := ls(); len(got) != 1 || got[0].CustomTitle != "a title set remotely" || got[0].Tag != "remote" {
				t.Fatalf("after rename and tag, ls --from %s says %+v", store, got)
			}
			if out := run("ls", "--all"); !strings.Contains(out, "#remote") || !strings.Contains(out, "a title set remotely") {
				t.Errorf("the table does not show the title and the tag:\n%s", out)
			}
			if _, errs, code := runScribe(t, runOpts{env: env}, append([]string{"archive", sampleSession}, from...)...); code != 1 || !strings.Contains(errs, "cannot archive") {
				t.Errorf("archive --from %s: exit %d, %s", store, code, errs)
			}

			rm := run("rm", sampleSession, "--yes")
			if !strings.Contains(rm, "moved to the trash") {
				t.Fatalf("rm says %s", rm)
			}
			if got := ls(); len(got) != 0 {
				t.Fatalf("after rm, ls --from %s still lists %+v", store, got)
			}
			trash := run("trash", "ls")
			if !strings.Contains(trash, sampleSession[:8]) {
				t.Fatalf("trash ls --from %s: %s", store, trash)
			}
			run("trash", "restore", sampleSession[:8])
			if got := ls(); len(got) != 1 || got[0].CustomTitle != "a title set remotely" {
				t.Fatalf("after trash restore, ls --from %s says %+v", store, got)
			}
			after := run("show", sampleSession, "--json")
			if after != before {
				t.Errorf("the restored session reads differently:\n%s\n---\n%s", after, before)
			}
			if out := run("trash", "ls"); !strings.Contains(out, "the trash is empty") {
				t.Errorf("after restore the trash holds: %s", out)
			}
		})
	}
	if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
		t.Errorf("the commands left %d entries in TMPDIR", len(ents))
	}
}
