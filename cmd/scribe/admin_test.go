package main_test

// Session administration at its edges (issue 24): trash ids typed as
// printed, a live writer's session and rm, bundle bombs, relocate's
// leftovers, the SDK's deletion markers.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// adminLine is one user row of session sid in project /tmp/admin/p.
func adminLine(sid, uuid, text string) string {
	return fmt.Sprintf(`{"type":"user","uuid":%q,"parentUuid":null,"sessionId":%q,"cwd":"/tmp/admin/p","isSidechain":false,"message":{"role":"user","content":%q}}`+"\n", uuid, sid, text)
}

// A session trashed twice has two trash items: each is restored by the
// trash id rm printed (upper-case T and Z and all), and the session id
// alone is refused as naming both.
func TestTrashRestoreByTrashIDOfASessionTrashedTwice(t *testing.T) {
	dir := t.TempDir()
	const sid = "5e55a0b1-0000-4000-8000-0000000000a7"
	proj := filepath.Join(dir, "projects", "-tmp-admin-p")
	main := filepath.Join(proj, sid+".jsonl")
	write := func(v string) {
		t.Helper()
		if err := os.MkdirAll(proj, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(main, []byte(adminLine(sid, "u-"+v, "version "+v)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rm := func() string {
		t.Helper()
		var r struct {
			Items []struct{ ID string } `json:"items"`
		}
		cpOK(t, &r, "", "rm", sid, "--yes", "--json", "--config-dir", dir)
		if len(r.Items) != 1 || !strings.ContainsAny(r.Items[0].ID, "TZ") {
			t.Fatalf("rm printed %+v", r)
		}
		return r.Items[0].ID
	}
	holds := func(v string) {
		t.Helper()
		b, err := os.ReadFile(main)
		if err != nil || !strings.Contains(string(b), "version "+v) {
			t.Fatalf("after restore the transcript holds %q (%v), want version %s", b, err, v)
		}
	}
	write("1")
	first := rm()
	write("2")
	second := rm()
	if _, errs, code := cpScribe(t, "", "trash", "restore", sid, "--config-dir", dir); code != 1 || !strings.Contains(errs, "2 trash items") {
		t.Fatalf("restore by the session id of two items: exit %d, %s", code, errs)
	}
	cpOK(t, nil, "", "trash", "restore", second, "--config-dir", dir)
	holds("2")
	third := rm()
	cpOK(t, nil, "", "trash", "restore", first, "--config-dir", dir)
	holds("1")
	// A prefix of the trash id, as printed, names it too.
	rm()
	cpOK(t, nil, "", "trash", "restore", strings.ToLower(third[:24]), "--config-dir", dir)
	holds("2")
}
