package main_test

// The server's trash from the command line (stores.Remote as a Trasher):
//
//   - TestServeTrashCommands: rm --from the server moves a session to its
//     trash (gone from ls --remote), trash ls --from lists it, in text and
//     --json, across a kill -9 of scribe serve; trash restore --from puts
//     it back with the same History, byte for byte; trash empty --from
//     --dry-run lists, then empties for good, counted in /metrics.

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestServeTrashCommands(t *testing.T) {
	srv := startCloudServer(t)
	cfg, dir := cloudMachine(t, srv.url(), "jsonl/local")
	sid := "7a5e0000-aaaa-4000-8000-000000000001"
	remoteSession(t, dir, sid, `{"type":"custom-title","customTitle":"Trash me","sessionId":"`+sid+`"}`)
	if rep, code, out := cloudPush(t, cfg, "--all"); code != 0 || rep.Sessions != 1 {
		t.Fatalf("push: exit %d\n%s", code, out)
	}
	before := strings.Join(srv.history(sid, "subagents=true"), "\n")
	run := func(args ...string) string {
		t.Helper()
		out, errOut, code := cloudRun(t, "", append(args, "--from", "cloud/team", "--config", cfg)...)
		if code != 0 {
			t.Fatalf("scribe %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}
	if out := run("rm", sid[:8], "--yes"); !strings.Contains(out, "moved to the trash "+sid) || !strings.Contains(out, `"Trash me"`) {
		t.Fatalf("rm --from the server: %s", out)
	}
	if out := run("ls", "--remote"); strings.Contains(out, sid) {
		t.Fatalf("ls --remote lists a session in the trash:\n%s", out)
	}
	var ls struct {
		Items []struct {
			ID, SessionID, Title string
			Complete             bool
		}
	}
	if err := json.Unmarshal([]byte(run("trash", "ls", "--json")), &ls); err != nil || len(ls.Items) != 1 ||
		ls.Items[0].SessionID != sid || ls.Items[0].Title != "Trash me" || !ls.Items[0].Complete {
		t.Fatalf("trash ls --json: %+v, %v", ls, err)
	}

	// The trash is in JetStream: kill -9 and start again.
	srv.kill9()
	srv.start()
	if out := run("trash", "ls"); !strings.Contains(out, ls.Items[0].ID) || !strings.Contains(out, `"Trash me"`) {
		t.Fatalf("trash ls after kill -9:\n%s", out)
	}
	if out := run("trash", "restore", sid[:8]); !strings.Contains(out, "restored "+sid) {
		t.Fatalf("trash restore: %s", out)
	}
	if after := strings.Join(srv.history(sid, "subagents=true"), "\n"); after != before {
		t.Fatalf("the restored session's History differs:\n%s\nbefore:\n%s", after, before)
	}
	if out := run("ls", "--remote"); !strings.Contains(out, sid) {
		t.Fatalf("ls --remote after restore:\n%s", out)
	}
	if out := run("trash", "ls"); !strings.Contains(out, "the trash is empty") {
		t.Fatalf("trash ls after restore: %s", out)
	}

	run("rm", sid, "--yes")
	var plan struct {
		DryRun  bool
		Deleted []struct{ SessionID string }
	}
	if err := json.Unmarshal([]byte(run("trash", "empty", "--dry-run", "--json")), &plan); err != nil || !plan.DryRun ||
		len(plan.Deleted) != 1 || plan.Deleted[0].SessionID != sid {
		t.Fatalf("trash empty --dry-run --json: %+v, %v", plan, err)
	}
	if out := run("trash", "empty", "--older-than", "1d", "--yes"); !strings.Contains(out, "deleted 0 trash item(s)") {
		t.Fatalf("trash empty --older-than 1d: %s", out)
	}
	if out := run("trash", "empty", "--yes"); !strings.Contains(out, "deleted 1 trash item(s)") {
		t.Fatalf("trash empty: %s", out)
	}
	if out := run("trash", "ls"); !strings.Contains(out, "the trash is empty") {
		t.Fatalf("trash ls after empty: %s", out)
	}
	if n := srv.metric("scribe_trash_purged_total"); n != 1 {
		t.Fatalf("scribe_trash_purged_total = %d, want 1", n)
	}
}
