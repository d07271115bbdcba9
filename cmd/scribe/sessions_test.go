package main_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/internal/peer"
)

// fileState is what a test compares of a file: its bytes, mode and mtime.
type fileState struct {
	Data    string
	Mode    fs.FileMode
	ModTime time.Time
}

// treeOf reads every file and folder under root.
func treeOf(t *testing.T, root string) map[string]fileState {
	t.Helper()
	out := map[string]fileState{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		st := fileState{Mode: fi.Mode()}
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			st.Data, st.ModTime = string(b), fi.ModTime()
		}
		out[filepath.ToSlash(rel)] = st
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

// copyTree copies a config folder, modes and mtimes included.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	for rel, st := range treeOf(t, src) {
		p := filepath.Join(dst, filepath.FromSlash(rel))
		if st.Mode.IsDir() {
			if err := os.MkdirAll(p, st.Mode.Perm()); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(st.Data), st.Mode.Perm()); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, st.ModTime, st.ModTime); err != nil {
			t.Fatal(err)
		}
	}
}

// sameProjects compares two config folders' projects/ trees by content and
// mode. archived.json files are compared as documents whose "at" is a time
// and whose "by" names the writer (sdk or scribe); the rest byte for byte.
func sameProjects(t *testing.T, what, sdkDir, ourDir string) {
	t.Helper()
	a, b := treeOf(t, filepath.Join(sdkDir, "projects")), treeOf(t, filepath.Join(ourDir, "projects"))
	for rel := range a {
		if _, ok := b[rel]; !ok {
			t.Errorf("%s: the SDK's folder has %s, scribe's has not", what, rel)
		}
	}
	for rel, ours := range b {
		theirs, ok := a[rel]
		if !ok {
			t.Errorf("%s: scribe's folder has %s, the SDK's has not", what, rel)
			continue
		}
		if ours.Mode != theirs.Mode {
			t.Errorf("%s: %s mode %v, the SDK's %v", what, rel, ours.Mode, theirs.Mode)
		}
		if strings.HasSuffix(rel, "/archived.json") {
			var x, y map[string]any
			if json.Unmarshal([]byte(theirs.Data), &x) != nil || json.Unmarshal([]byte(ours.Data), &y) != nil {
				t.Fatalf("%s: %s: not JSON: %q / %q", what, rel, theirs.Data, ours.Data)
			}
			if _, err := time.Parse(time.RFC3339Nano, y["at"].(string)); err != nil || y["by"] != "scribe" || x["by"] != "sdk" {
				t.Errorf("%s: %s: scribe wrote %q, the SDK %q", what, rel, ours.Data, theirs.Data)
			}
			delete(x, "at")
			delete(y, "at")
			delete(x, "by")
			delete(y, "by")
			if !reflect.DeepEqual(x, y) {
				t.Errorf("%s: %s: scribe wrote %q, the SDK %q", what, rel, ours.Data, theirs.Data)
			}
			continue
		}
		if ours.Data != theirs.Data {
			t.Errorf("%s: %s differs:\nscribe: %q\nSDK:    %q", what, rel, ours.Data, theirs.Data)
		}
	}
}

// sameListing compares the SDK's listSessions of the two folders, each
// session's file mtime aside (the two were written at different times).
func sameListing(t *testing.T, p *peer.Peer, what, sdkDir, ourDir string) {
	t.Helper()
	sameLists(t, what, p.List(t, sdkDir, ""), p.List(t, ourDir, ""))
}

// sameLists wants the SDK's listing of scribe's folder (b) to be its
// listing of its own (a), but for lastModified.
func sameLists(t *testing.T, what string, a, b []peer.SessionInfo) {
	t.Helper()
	strip := func(in []peer.SessionInfo) []map[string]any {
		out := make([]map[string]any, 0, len(in))
		for _, s := range in {
			delete(s.Raw, "lastModified")
			out = append(out, s.Raw)
		}
		return out
	}
	bySID := func(in []peer.SessionInfo) map[string]any {
		m := map[string]any{}
		for i, s := range strip(in) {
			m[in[i].SessionID] = s
		}
		return m
	}
	sameJSON(t, what+": listSessions", bySID(b), bySID(a))
}

// scribe's rename, tag, tag --clear, archive, unarchive and rm leave files
// that the SDK lists and reads exactly as after its own renameSession,
// tagSession, archiveSession, unarchiveSession and deleteSession: each is
// run by the SDK on one copy of the fixture and by scribe on another.
func TestSessionMutatorsMatchTheSDK(t *testing.T) {
	p := peer.Find(t)
	sdkDir, ourDir := t.TempDir(), t.TempDir()
	ids := p.GenFixture(t, sdkDir, "/home/alice/src/shop")
	copyTree(t, sdkDir, ourDir)
	id := ids["withSummaryAndSubagent"]
	tagged := ids["withCustomTitleTag"]
	str := func(s string) *string { return &s }
	steps := []struct {
		op, sid string
		value   *string
		args    []string
	}{
		{"rename", id, str("  Fix \"login\" — ünïcode ✓\u2028 <b>&  "), []string{"rename", id[:8], "  Fix \"login\" — ünïcode ✓\u2028 <b>&  "}},
		{"rename", tagged, str("Second title"), []string{"rename", tagged, "Second title"}},
		{"tag", id, str(" release-1 "), []string{"tag", id, " release-1 "}},
		{"tag", tagged, nil, []string{"tag", tagged, "--clear"}},
		{"archive", id, nil, []string{"archive", id}},
		{"archive", tagged, nil, []string{"archive", tagged}},
		{"unarchive", tagged, nil, []string{"unarchive", tagged}},
		{"delete", ids["branched"], nil, []string{"rm", ids["branched"], "--yes"}},
	}
	for _, s := range steps {
		p.Mutate(t, sdkDir, s.op, s.sid, s.value)
		cpOK(t, nil, "", append(s.args, "--config-dir", ourDir)...)
		sameProjects(t, s.op, sdkDir, ourDir)
		sameListing(t, p, s.op, sdkDir, ourDir)
	}
	var archived, unarchived bool
	for _, s := range p.List(t, ourDir, "") {
		switch s.SessionID {
		case id:
			archived = s.Archived && s.CustomTitle == `Fix "login" — ünïcode ✓`+"\u2028"+` <b>&` && s.Tag == "release-1"
		case tagged:
			unarchived = !s.Archived && s.Tag == "" && s.CustomTitle == "Second title"
		}
	}
	if !archived || !unarchived {
		t.Fatalf("the SDK lists scribe's changes as %+v", p.List(t, ourDir, ""))
	}
	sameJSON(t, "getSessionMessages", p.Messages(t, ourDir, id, "", false), p.Messages(t, sdkDir, id, "", false))
	// Where the SDK refuses, scribe refuses too, as a usage error.
	for _, args := range [][]string{{"rename", id, "   "}, {"tag", id, "  "}, {"tag", id}, {"tag", id, "x", "--clear"}} {
		if _, errs, code := cpScribe(t, "", append(args, "--config-dir", ourDir)...); code != 2 {
			t.Errorf("scribe %v: exit %d, want 2\n%s", args, code, errs)
		}
	}
}

// rm moves a session with its subagents, tool results and sidecars to the
// trash and out of the listing and the index; trash restore brings back
// byte-identical files with their modes and mtimes and refuses to
// overwrite; trash empty deletes.
func TestRmTrashRestoreEndToEnd(t *testing.T) {
	p := peer.Find(t)
	dir := t.TempDir()
	ids := p.GenFixture(t, dir, "/home/alice/src/shop")
	id := ids["withSummaryAndSubagent"]
	proj := filepath.Join(dir, "projects", "-home-alice-src-shop")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(proj, id, "tool-results"), 0o700))
	must(os.WriteFile(filepath.Join(proj, id, "tool-results", "toolu_1.txt"), []byte("big output\n"), 0o600))
	must(os.WriteFile(filepath.Join(proj, id+".ccr-tip.json"), []byte(`{"tip":1}`), 0o600))
	before := treeOf(t, proj)
	cpOK(t, nil, "", "ls", "--config-dir", dir, "--all") // builds the index

	var dry struct {
		DryRun bool `json:"dryRun"`
		Items  []struct {
			Files []struct{ Path string } `json:"files"`
		} `json:"items"`
	}
	cpOK(t, &dry, "", "rm", id[:8], "--dry-run", "--json", "--config-dir", dir)
	if !dry.DryRun || len(dry.Items) != 1 || !reflect.DeepEqual(treeOf(t, proj), before) {
		t.Fatalf("rm --dry-run printed %+v or changed the folder", dry)
	}
	cpOK(t, nil, "", "rm", id, "--json", "--config-dir", dir)
	for rel := range treeOf(t, proj) {
		if strings.HasPrefix(rel, id) {
			t.Errorf("%s is still in the project folder after rm", rel)
		}
	}
	for _, s := range p.List(t, dir, "") {
		if s.SessionID == id {
			t.Fatalf("the SDK still lists %s after rm", id)
		}
	}
	idx, err := os.ReadFile(filepath.Join(dir, "scribe", "index", "sessions.idx"))
	must(err)
	if strings.Contains(string(idx), id) {
		t.Errorf("the sessions index still names %s after rm", id)
	}
	var ls struct {
		Items []struct {
			ID, SessionID string
			Files         []struct{ Path, SHA256 string }
			Complete      bool
		} `json:"items"`
	}
	cpOK(t, &ls, "", "trash", "ls", "--json", "--config-dir", dir)
	if len(ls.Items) != 1 || ls.Items[0].SessionID != id || !ls.Items[0].Complete || len(ls.Items[0].Files) != 8 {
		t.Fatalf("trash ls: %+v", ls)
	}

	// A new file in the way: restore refuses and changes nothing.
	must(os.WriteFile(filepath.Join(proj, id+".ccr-tip.json"), []byte("other"), 0o600))
	if _, errs, code := cpScribe(t, "", "trash", "restore", id[:8], "--config-dir", dir); code != 1 || !strings.Contains(errs, "already exists") {
		t.Fatalf("restore over an existing file: exit %d, %s", code, errs)
	}
	must(os.Remove(filepath.Join(proj, id+".ccr-tip.json")))
	cpOK(t, nil, "", "trash", "restore", id[:8], "--config-dir", dir)
	if after := treeOf(t, proj); !reflect.DeepEqual(after, before) {
		t.Fatalf("restore did not bring back the same files:\nbefore %v\nafter  %v", treeKeys(before), treeKeys(after))
	}
	cpOK(t, nil, "", "ls", "--config-dir", dir, "--all")

	// A trash item whose bytes changed is refused.
	cpOK(t, nil, "", "rm", id, "--config-dir", dir)
	cpOK(t, &ls, "", "trash", "ls", "--json", "--config-dir", dir)
	tampered := filepath.Join(dir, "scribe", "trash", ls.Items[0].ID, "data", "-home-alice-src-shop", id+".jsonl")
	f, err := os.OpenFile(tampered, os.O_APPEND|os.O_WRONLY, 0)
	must(err)
	_, err = f.WriteString("{}\n")
	must(err)
	f.Close()
	if _, errs, code := cpScribe(t, "", "trash", "restore", id, "--config-dir", dir); code != 1 || !strings.Contains(errs, "does not match its manifest") {
		t.Fatalf("restore of a tampered item: exit %d, %s", code, errs)
	}
	var emptied struct {
		Deleted []any `json:"deleted"`
		DryRun  bool  `json:"dryRun"`
	}
	cpOK(t, &emptied, "", "trash", "empty", "--older-than", "1d", "--json", "--config-dir", dir)
	if len(emptied.Deleted) != 0 {
		t.Fatalf("trash empty --older-than 1d deleted a fresh item: %+v", emptied)
	}
	cpOK(t, &emptied, "", "trash", "empty", "--dry-run", "--json", "--config-dir", dir)
	if len(emptied.Deleted) != 1 || !emptied.DryRun {
		t.Fatalf("trash empty --dry-run: %+v", emptied)
	}
	cpOK(t, &emptied, "", "trash", "empty", "--yes", "--json", "--config-dir", dir)
	if ents, _ := os.ReadDir(filepath.Join(dir, "scribe", "trash")); len(emptied.Deleted) != 1 || len(ents) != 0 {
		t.Fatalf("trash empty left %d items: %+v", len(ents), emptied)
	}
}

func treeKeys(m map[string]fileState) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// gc through the binary: no criterion is a usage error, --dry-run moves
// nothing, a session with an old mtime but a recent last entry stays, one
// quiet for long goes to the trash; du and doctor see the same folder.
func TestGCDuDoctorEndToEnd(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "projects", "-work-e2e")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	session := func(id string, last, mtime time.Time) string {
		p := filepath.Join(proj, id+".jsonl")
		line := `{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"hello"},"uuid":"` + id[:8] + `-0000-4000-8000-000000000001","timestamp":"` +
			last.Format(time.RFC3339Nano) + `","cwd":"/work/e2e","sessionId":"` + id + `"}` + "\n"
		if err := os.WriteFile(p, []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	touched := "aaaaaaaa-0000-4000-8000-000000000001"
	quiet := "bbbbbbbb-0000-4000-8000-000000000002"
	session(touched, now.Add(-3*time.Hour), now.Add(-100*24*time.Hour))
	quietPath := session(quiet, now.Add(-100*24*time.Hour), now)

	if _, errs, code := cpScribe(t, "", "gc", "--config-dir", dir); code != 2 {
		t.Fatalf("gc without a criterion: exit %d, %s", code, errs)
	}
	type gcRep struct {
		DryRun   bool `json:"dryRun"`
		Sessions []struct {
			SessionID, Action, TrashID string
		} `json:"sessions"`
		Collected int `json:"collected"`
	}
	var rep gcRep
	cpOK(t, &rep, "", "gc", "--older-than", "30d", "--dry-run", "--json", "--config-dir", dir)
	if !rep.DryRun || rep.Collected != 1 {
		t.Fatalf("gc --dry-run: %+v", rep)
	}
	if _, err := os.Stat(quietPath); err != nil {
		t.Fatalf("gc --dry-run moved %s: %v", quiet, err)
	}
	var doctor struct {
		WouldDelete []struct{ SessionID string } `json:"wouldDelete"`
	}
	cpOK(t, &doctor, "", "doctor", "--json", "--config-dir", dir)
	if len(doctor.WouldDelete) != 1 || doctor.WouldDelete[0].SessionID != touched {
		t.Fatalf("doctor forecasts %+v, want only %s (its mtime is old)", doctor, touched)
	}
	cpOK(t, &rep, "", "gc", "--older-than", "30d", "--json", "--config-dir", dir)
	for _, s := range rep.Sessions {
		want := map[string]string{touched: "keep", quiet: "collect"}[s.SessionID]
		if s.Action != want || (want == "collect") != (s.TrashID != "") {
			t.Errorf("gc: %s %s (trash %q), want %s", s.SessionID, s.Action, s.TrashID, want)
		}
	}
	if _, err := os.Stat(quietPath); !os.IsNotExist(err) {
		t.Fatalf("gc left %s in place: %v", quiet, err)
	}
	var du struct {
		Total      int64 `json:"total"`
		Trash      int64 `json:"trash"`
		TrashItems int   `json:"trashItems"`
		Sessions   []struct{ SessionID string }
	}
	cpOK(t, &du, "", "du", "--by", "session", "--json", "--config-dir", dir)
	fi, _ := os.Stat(filepath.Join(proj, touched+".jsonl"))
	if du.TrashItems != 1 || du.Trash == 0 || len(du.Sessions) != 1 || du.Total != fi.Size() {
		t.Fatalf("du: %+v", du)
	}
	if out := cpOK(t, nil, "", "du", "--config-dir", dir); !strings.Contains(out, "-work-e2e") || !strings.Contains(out, "trash") {
		t.Fatalf("du table:\n%s", out)
	}
}

// The session commands' usage errors exit 2, as every command's do: an
// unknown flag, a wrong number of arguments, a bad flag value.
func TestSessionCommandsUsageErrorsExit2(t *testing.T) {
	dir := t.TempDir()
	id := "0c0ffee0-0000-4000-8000-000000000001"
	for _, c := range [][]string{{"rm", id}, {"trash", "ls"}, {"trash", "restore", "x"}, {"trash", "empty"}, {"rename", id, "t"},
		{"tag", id, "t"}, {"archive", id}, {"unarchive", id}, {"gc", "--older-than", "1d"}, {"du"}, {"doctor"},
		{"export", id}, {"import", "b"}, {"relocate", "/a", "/b"}, {"search", "q"}} {
		if _, errs, code := cpScribe(t, "", append(c, "--no-such-flag", "--config-dir", dir)...); code != 2 || !strings.Contains(errs, "unknown flag") {
			t.Errorf("scribe %v --no-such-flag: exit %d, %s", c, code, errs)
		}
	}
	for _, c := range [][]string{{"rm"}, {"rename", id}, {"tag"}, {"archive"}, {"archive", id, id}, {"trash", "restore"},
		{"trash", "no-such"}, {"export"}, {"import"}, {"relocate", "/a"}, {"search"}, {"du", "x"},
		{"gc"}, {"gc", "--older-than", "soon"}, {"gc", "--max-size", "lots"}, {"trash", "empty", "--older-than", "-1d"},
		{"du", "--by", "day"}, {"export", id, "--format", "pdf"}, {"search", "q", "--role", "robot"}, {"search", "q", "--since", "later"},
		{"rename", "not/an/id", "t"}} {
		if _, errs, code := cpScribe(t, "", append(c, "--config-dir", dir)...); code != 2 {
			t.Errorf("scribe %v: exit %d, want 2; %s", c, code, errs)
		}
	}
}

// Shell completion offers session ids (with their titles) to the session
// commands.
func TestSessionIDsComplete(t *testing.T) {
	p := peer.Find(t)
	dir := t.TempDir()
	ids := p.GenFixture(t, dir, "/home/alice/src/shop")
	id := ids["withCustomTitleTag"]
	for _, c := range []string{"rm", "rename", "tag", "archive", "export"} {
		out, errs, code := cpScribe(t, "", "__complete", c, "--config-dir", dir, id[:4])
		if code != 0 || !strings.Contains(out, id+"\tREADME work") {
			t.Errorf("completing %s %s: exit %d, %q %s", c, id[:4], code, out, errs)
		}
	}
}
