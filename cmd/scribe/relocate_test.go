package main_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/internal/peer"
)

// After a project folder moves, relocate moves its sessions to the new
// folder's project with every cwd rewritten: the SDK lists them for the new
// path (none for the old), reads the same conversations, the old path is
// gone from every file, and the originals are in the trash as a backup.
func TestRelocateMovesSessionsWithTheirCwds(t *testing.T) {
	p := peer.Find(t)
	dir := t.TempDir()
	work := t.TempDir()
	oldPath, newPath := filepath.Join(work, "shop"), filepath.Join(work, "moved", "shop")
	if err := os.MkdirAll(oldPath, 0o700); err != nil {
		t.Fatal(err)
	}
	ids := p.GenFixture(t, dir, oldPath)
	id, agent := ids["withSummaryAndSubagent"], ids["subagentId"]
	before := p.List(t, dir, oldPath)
	msgs := p.Messages(t, dir, id, oldPath, false)
	sub := p.SubagentMessages(t, dir, id, agent, oldPath)
	if len(before) != 5 {
		t.Fatalf("the SDK lists %d fixture sessions", len(before))
	}
	os.MkdirAll(filepath.Dir(newPath), 0o700)
	if err := os.Rename(oldPath, newPath); err != nil {
		t.Fatal(err)
	}
	oldFolder := filepath.Join(dir, "projects", claudedir.SanitizePath(oldPath))
	snap := treeOf(t, oldFolder)

	var res struct {
		DryRun   bool `json:"dryRun"`
		Sessions []struct {
			SessionID, To string
			Lines         int
		} `json:"sessions"`
	}
	cpOK(t, &res, "", "relocate", oldPath, newPath, "--dry-run", "--json", "--config-dir", dir)
	if !res.DryRun || len(res.Sessions) != 6 {
		t.Fatalf("relocate --dry-run: %+v", res)
	}
	if got := treeOf(t, oldFolder); !reflect.DeepEqual(got, snap) {
		t.Fatalf("relocate --dry-run changed the old folder")
	}
	cpOK(t, &res, "", "relocate", oldPath, newPath, "--json", "--config-dir", dir)
	if res.DryRun || len(res.Sessions) != 6 || res.Sessions[0].Lines == 0 {
		t.Fatalf("relocate: %+v", res)
	}
	after := p.List(t, dir, newPath)
	if len(after) != len(before) {
		t.Fatalf("the SDK lists %d sessions for the new path, %d before", len(after), len(before))
	}
	for _, s := range after {
		if s.Cwd != newPath {
			t.Errorf("%s: cwd %q, want %q", s.SessionID, s.Cwd, newPath)
		}
	}
	if old := p.List(t, dir, oldPath); len(old) != 0 {
		t.Errorf("the SDK still lists %d sessions for the old path", len(old))
	}
	sameJSON(t, "getSessionMessages after relocate", p.Messages(t, dir, id, newPath, false), msgs)
	sameJSON(t, "getSubagentMessages after relocate", p.SubagentMessages(t, dir, id, agent, newPath), sub)
	newFolder := filepath.Join(dir, "projects", res.Sessions[0].To)
	for rel, st := range treeOf(t, newFolder) {
		if strings.Contains(st.Data, `"cwd":"`+oldPath) {
			t.Errorf("%s still names the old cwd", rel)
		}
	}
	var trash struct {
		Items []struct{ Reason string } `json:"items"`
	}
	cpOK(t, &trash, "", "trash", "ls", "--json", "--config-dir", dir)
	if len(trash.Items) != 6 || trash.Items[0].Reason != "relocate" {
		t.Fatalf("trash after relocate: %+v", trash)
	}
	// scribe's own listing agrees with the SDK's for the new path.
	var ours []map[string]any
	scribeJSON(t, runOpts{}, &ours, "ls", "--project", newPath, "--json", "--config-dir", dir)
	if len(ours) != len(after) {
		t.Fatalf("scribe ls --project NEW lists %d, the SDK %d", len(ours), len(after))
	}
}
