package main_test

// Session administration at its edges (issue 24): trash ids typed as
// printed, a live writer's session and rm, bundle bombs, relocate's
// leftovers, the SDK's deletion markers.

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/internal/testenv"
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

// rm of a session that a running record still writes, under a small
// descriptor limit: the store gives up idle sessions' locks (makeRoom), so
// rm can take one and move its files to the trash. The writer must not then
// write the session's tail into a new file (the session split between the
// trash and the project folder, its parents in the trash, trash restore
// refusing): either rm refuses, or record refuses that session's later
// lines, counted, exit 1. In every case no session is in two places, and
// the trash item restores whole.
func TestRmOfASessionALiveRecordWritesNeverSplitsIt(t *testing.T) {
	bin := testenv.BuildScribe(t)
	dir := t.TempDir()
	const sessions = 24
	sid := func(i int) string { return fmt.Sprintf("%08d-0000-4000-8000-0000000000b5", i) }
	victim := sid(0)
	n := 0
	round := func(phase int) (string, map[string][]string) {
		var b strings.Builder
		per := map[string][]string{}
		for i := range sessions {
			n++
			l := adminLine(sid(i), fmt.Sprintf("u-%d-%d", phase, n), "x")
			b.WriteString(l)
			per[sid(i)] = append(per[sid(i)], strings.TrimSuffix(l, "\n"))
			if i == 0 { // the victim's subagent too: its <id>/ folder moves with it
				n++
				a := fmt.Sprintf(`{"type":"user","uuid":"a-%d-%d","parentUuid":null,"sessionId":%q,"cwd":"/tmp/admin/p","isSidechain":true,"agentId":"agx","message":{"role":"user","content":"sub"}}`, phase, n, sid(i))
				b.WriteString(a + "\n")
				per[sid(i)] = append(per[sid(i)], a)
			}
		}
		return b.String(), per
	}
	cmd := exec.Command("bash", "-c", `ulimit -n 64; exec "$0" "$@"`, bin, "record", "--ack", "--json",
		"--flush-interval", "20ms", "--config-dir", dir)
	cmd.Env = append(cleanEnv(), "GOMAXPROCS=2")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	acks := make(chan int64, 1024)
	var report strings.Builder
	go func() {
		defer close(acks)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var a struct {
				Acked *int64 `json:"acked_lines"`
			}
			if strings.HasPrefix(sc.Text(), `{"acked_lines"`) && json.Unmarshal(sc.Bytes(), &a) == nil && a.Acked != nil {
				acks <- *a.Acked
				continue
			}
			report.WriteString(sc.Text() + "\n")
		}
	}()
	written := map[string][]string{}
	lines := 0
	send := func(phase int) {
		text, per := round(phase)
		if _, err := io.WriteString(stdin, text); err != nil {
			t.Fatalf("write to record: %v\n%s", err, stderr.String())
		}
		lines += strings.Count(text, "\n")
		for k, v := range per {
			written[k] = append(written[k], v...)
		}
	}
	for range 5 {
		send(1)
	}
	for a := range acks { // everything sent is durable, and the victim idle
		if a >= int64(lines) {
			break
		}
	}
	before := append([]string(nil), written[victim]...)
	rmOut, rmErr, rmCode := cpScribe(t, "", "rm", victim, "--yes", "--config-dir", dir)
	t.Logf("rm: exit %d %s", rmCode, rmErr)
	for range 5 {
		send(2)
	}
	stdin.Close()
	for range acks {
	}
	err = cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Lost int64 `json:"lost"`
	}
	if jerr := json.Unmarshal([]byte(report.String()), &rep); jerr != nil {
		t.Fatalf("record's report %q: %v\n%s", report.String(), jerr, stderr.String())
	}

	// Where every line is: the project folder, the trash.
	onDisk := func(root string) map[string][]string {
		got := map[string][]string{}
		_ = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			if err == nil && !fi.IsDir() && strings.HasSuffix(p, ".jsonl") {
				b, _ := os.ReadFile(p)
				for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
					if l != "" {
						got[l] = append(got[l], p)
					}
				}
			}
			return nil
		})
		return got
	}
	projects := onDisk(filepath.Join(dir, "projects"))
	for s, ls := range written {
		if s == victim {
			continue
		}
		for _, l := range ls {
			if len(projects[l]) != 1 {
				t.Fatalf("a line of %s is on disk %d times: %s", s, len(projects[l]), l)
			}
		}
	}
	if rmCode != 0 {
		// rm refused: it must say why, and the victim stays whole.
		if !strings.Contains(rmErr, "another process") {
			t.Fatalf("rm refused without saying why: exit %d\n%s%s", rmCode, rmOut, rmErr)
		}
		for _, l := range written[victim] {
			if len(projects[l]) != 1 {
				t.Fatalf("rm refused, yet a line of the victim is on disk %d times: %s", len(projects[l]), l)
			}
		}
		return
	}
	// rm took the session: record refused its later lines, counted, exit 1,
	// and wrote none of them anywhere.
	refused := len(written[victim]) - len(before)
	if code != 1 || rep.Lost != int64(refused) || !strings.Contains(stderr.String(), "moved away") {
		t.Fatalf("rm moved the session out from under record: record exit %d, lost %d (want exit 1, %d lost, said)\n%s", code, rep.Lost, refused, stderr.String())
	}
	for _, l := range written[victim] {
		if ps := projects[l]; len(ps) > 0 {
			t.Fatalf("the victim's session was split: after rm a line landed in %v: %s", ps, l)
		}
	}
	trash := onDisk(filepath.Join(dir, "scribe", "trash"))
	for _, l := range before {
		if len(trash[l]) != 1 {
			t.Fatalf("the trash holds a line of the victim %d times: %s", len(trash[l]), l)
		}
	}
	cpOK(t, nil, "", "trash", "restore", victim, "--config-dir", dir)
	projects = onDisk(filepath.Join(dir, "projects"))
	for _, l := range before {
		if len(projects[l]) != 1 {
			t.Fatalf("after trash restore a line of the victim is on disk %d times: %s", len(projects[l]), l)
		}
	}
}

// tarEntry is one file of a handmade bundle.
type tarEntry struct {
	name string
	data []byte
	size int64 // of zeros, when data is nil
}

// writeBundle writes a gzipped tar of the entries, in order.
func writeBundle(t *testing.T, path string, entries []tarEntry) {
	t.Helper()
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(out, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	zeros := make([]byte, 1<<20)
	for _, e := range entries {
		size := int64(len(e.data))
		if e.data == nil {
			size = e.size
		}
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: 0o600, Size: size, Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if e.data != nil {
			_, err = tw.Write(e.data)
		}
		for left := size; e.data == nil && left > 0 && err == nil; left -= int64(len(zeros)) {
			_, err = tw.Write(zeros[:min(left, int64(len(zeros)))])
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// bundleManifest is a manifest declaring one transcript of the given
// bytes.
func bundleManifest(sid string, data []byte) []byte {
	sum := sha256.Sum256(data)
	m, _ := json.Marshal(map[string]any{"format": "scribe-session-bundle", "version": 1, "sessionId": sid,
		"cwd": "/tmp/admin/p", "project": "-tmp-admin-p", "exportedAt": "2026-01-01T00:00:00Z",
		"files": []map[string]any{{"path": sid + ".jsonl", "size": len(data), "sha256": hex.EncodeToString(sum[:])}}})
	return m
}

// A bundle bomb: 200 MiB of zeros (a few hundred KiB compressed) where
// the manifest declares 1 KiB. import and import --dry-run refuse it
// without writing past the declared size (under ulimit -f 10 MiB a write
// of more kills the process), whether the manifest comes first or last;
// no staging folder and no session is left. A bundle of an older export
// (manifest last) that matches still imports.
func TestImportOfABundleBombWritesNothingPastTheManifest(t *testing.T) {
	const sid = "b0b0b0b0-0000-4000-8000-0000000000c8"
	declared := []byte(strings.Repeat(adminLine(sid, "u-1", "hello")[:100]+"\n", 10)) // ~1 KiB
	man := tarEntry{name: "manifest.json", data: bundleManifest(sid, declared)}
	bomb := tarEntry{name: "session/" + sid + ".jsonl", size: 200 << 20}
	tmp := t.TempDir()
	first, last := filepath.Join(tmp, "first.tgz"), filepath.Join(tmp, "last.tgz")
	writeBundle(t, first, []tarEntry{man, bomb})
	writeBundle(t, last, []tarEntry{bomb, man})
	for _, b := range []string{first, last} {
		for _, dry := range []bool{false, true} {
			dir := t.TempDir()
			args := []string{"import", b, "--config-dir", dir}
			if dry {
				args = append(args, "--dry-run")
			}
			_, errs, code := runScribe(t, runOpts{shell: "ulimit -f 10240"}, args...)
			if code != 1 || !strings.Contains(errs, "bad bundle") {
				t.Fatalf("%s (dry run %v): exit %d (-1: killed for writing past the limit), want 1 and a bad bundle\n%s", filepath.Base(b), dry, code, errs)
			}
			var left []string
			_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
				if err == nil && !fi.IsDir() {
					left = append(left, p)
				}
				return nil
			})
			for _, p := range left {
				if strings.Contains(p, "import-") || strings.Contains(p, "projects") {
					t.Fatalf("%s (dry run %v): left %s", filepath.Base(b), dry, p)
				}
			}
		}
	}
	// The same manifest with the bytes it declares, manifest last (as
	// bundles were written before), imports; so does it manifest first.
	good := tarEntry{name: "session/" + sid + ".jsonl", data: declared}
	for i, order := range [][]tarEntry{{good, man}, {man, good}} {
		b := filepath.Join(tmp, fmt.Sprintf("good%d.tgz", i))
		writeBundle(t, b, order)
		dir := t.TempDir()
		if _, errs, code := runScribe(t, runOpts{shell: "ulimit -f 10240"}, "import", b, "--config-dir", dir); code != 0 {
			t.Fatalf("good bundle %d: exit %d\n%s", i, code, errs)
		}
		got, err := os.ReadFile(filepath.Join(dir, "projects", "-tmp-admin-p", sid+".jsonl"))
		if err != nil || !bytes.Equal(got, declared) {
			t.Fatalf("good bundle %d: imported %q (%v)", i, got, err)
		}
	}
}

// An import killed mid-way (reading a bundle from a pipe that stalls,
// then kill -9) leaves its staging folder: du counts it, gc --dry-run
// lists it, and the next import removes it and says so.
func TestStagingOfAKilledImportIsCountedAndRemoved(t *testing.T) {
	bin := testenv.BuildScribe(t)
	const sid = "deadbeef-0000-4000-8000-0000000000d9"
	var tr strings.Builder
	rnd := make([]byte, 32)
	for i := 0; tr.Len() < 4<<20; i++ {
		_, _ = crand.Read(rnd)
		tr.WriteString(adminLine(sid, fmt.Sprintf("u-%d", i), hex.EncodeToString(rnd)))
	}
	data := []byte(tr.String())
	tmp := t.TempDir()
	b := filepath.Join(tmp, "b.tgz")
	writeBundle(t, b, []tarEntry{{name: "manifest.json", data: bundleManifest(sid, data)}, {name: "session/" + sid + ".jsonl", data: data}})
	raw, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(tmp, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no fifo:", err)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, "import", fifo, "--config-dir", dir)
	cmd.Env = cleanEnv()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(raw[:len(raw)/2]); err != nil {
		t.Fatal(err)
	}
	// The import stages half the transcript, then waits for the rest.
	staged := func() string {
		m, _ := filepath.Glob(filepath.Join(dir, "scribe", "import-*", sid+".jsonl"))
		if len(m) == 1 {
			if fi, err := os.Stat(m[0]); err == nil && fi.Size() > 0 {
				return filepath.Dir(m[0])
			}
		}
		return ""
	}
	stage := ""
	for range 3000 {
		if stage = staged(); stage != "" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if stage == "" {
		t.Fatal("the import staged nothing from half a bundle")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	w.Close()
	if _, err := os.Stat(stage); err != nil {
		t.Fatalf("the killed import's staging folder is gone already: %v", err)
	}
	var du struct {
		StaleStaging        int64 `json:"staleStaging"`
		StaleStagingFolders int   `json:"staleStagingFolders"`
	}
	cpOK(t, &du, "", "du", "--json", "--config-dir", dir)
	if du.StaleStagingFolders != 1 || du.StaleStaging == 0 {
		t.Fatalf("du does not count the dead import's staging: %+v", du)
	}
	var gc struct {
		StaleStagings []struct{ Path string } `json:"staleStagings"`
	}
	cpOK(t, &gc, "", "gc", "--older-than", "30d", "--dry-run", "--json", "--config-dir", dir)
	if len(gc.StaleStagings) != 1 || gc.StaleStagings[0].Path != stage {
		t.Fatalf("gc --dry-run does not list the dead import's staging: %+v", gc)
	}
	if _, err := os.Stat(stage); err != nil {
		t.Fatalf("gc --dry-run removed %s", stage)
	}
	out := cpOK(t, nil, "", "import", b, "--config-dir", dir)
	if !strings.Contains(out, "removed 1 staging folder") {
		t.Fatalf("import did not say it removed the dead import's staging: %s", out)
	}
	if _, err := os.Stat(stage); !os.IsNotExist(err) {
		t.Fatalf("the dead import's staging %s is still there: %v", stage, err)
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, "scribe", "import-*")); len(ents) != 0 {
		t.Fatalf("staging left after a good import: %v", ents)
	}
}

// markerNames lists the deletion markers under a config folder with their
// modes, and the folder's mode.
func markerNames(t *testing.T, configDir string) (map[string]os.FileMode, os.FileMode) {
	t.Helper()
	dir := filepath.Join(configDir, "state", "deleted-transcripts")
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return map[string]os.FileMode{}, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]os.FileMode{}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != 0 {
			t.Errorf("marker %s holds %d bytes", e.Name(), fi.Size())
		}
		out[e.Name()] = fi.Mode()
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	return out, fi.Mode()
}

// rm writes the deletion markers the SDK's deleteSession writes (0.3.337:
// state/deleted-transcripts/, sha256 of "<folder>/<id>.jsonl" and of
// "<id>.jsonl", lowercased): the SDK deletes a session in one copy of a
// fixture, scribe rm the same session in another, and the markers are the
// same names with the same modes. trash restore removes them; the SDK's
// repeat deleteSession on a session whose marker exists resolves and
// removes a leftover <id>/ folder.
func TestRmWritesTheSDKsDeletionMarkers(t *testing.T) {
	p := peer.Find(t)
	sdkDir, ourDir := t.TempDir(), t.TempDir()
	ids := p.GenFixture(t, sdkDir, "/home/alice/src/fixture")
	copyTree(t, sdkDir, ourDir)
	for _, k := range []string{"withSummaryAndSubagent", "branched"} {
		id := ids[k]
		p.Mutate(t, sdkDir, "delete", id, nil)
		cpOK(t, nil, "", "rm", id, "--yes", "--config-dir", ourDir)
	}
	theirs, theirDir := markerNames(t, sdkDir)
	ours, ourDirMode := markerNames(t, ourDir)
	if len(theirs) != 4 {
		t.Fatalf("the SDK wrote %d markers for two sessions, want 4: %v", len(theirs), theirs)
	}
	if fmt.Sprint(ours) != fmt.Sprint(theirs) || ourDirMode != theirDir {
		t.Fatalf("scribe rm wrote the markers %v (folder %v), the SDK's deleteSession %v (folder %v)", ours, ourDirMode, theirs, theirDir)
	}

	// Restore one: its two markers go, the other session's stay.
	id := ids["withSummaryAndSubagent"]
	out := cpOK(t, nil, "", "trash", "restore", id, "--config-dir", ourDir)
	if !strings.Contains(out, "removed 2 deletion marker(s)") {
		t.Fatalf("trash restore did not say it removed the markers: %s", out)
	}
	left, _ := markerNames(t, ourDir)
	if len(left) != 2 {
		t.Fatalf("after restoring one of two sessions %d markers are left, want 2: %v", len(left), left)
	}
	for m := range left {
		if _, ok := theirs[m]; !ok {
			t.Fatalf("trash restore left a marker the SDK never wrote: %s", m)
		}
	}
	// The restored session is a session again for the SDK.
	found := false
	for _, s := range p.List(t, ourDir, "") {
		found = found || s.SessionID == id
	}
	if !found {
		t.Fatalf("the SDK does not list the restored session %s", id)
	}

	// The SDK's repeat deleteSession: the transcript gone, its marker
	// there, a leftover <id>/ folder: it removes the folder and resolves.
	gone := ids["branched"]
	leftover := filepath.Join(ourDir, "projects", "-home-alice-src-fixture", gone, "subagents")
	if err := os.MkdirAll(leftover, 0o700); err != nil {
		t.Fatal(err)
	}
	p.Mutate(t, ourDir, "delete", gone, nil)
	if _, err := os.Stat(filepath.Dir(leftover)); !os.IsNotExist(err) {
		t.Fatalf("the SDK's repeat deleteSession left %s: %v", filepath.Dir(leftover), err)
	}
}

// relocate removes a project folder its moves left empty, and only that:
// a folder that still holds something of its own (a file that is no
// session's) stays, with it.
func TestRelocateRemovesTheProjectFoldersItEmptied(t *testing.T) {
	dir := t.TempDir()
	work := t.TempDir()
	oldPath, newPath := filepath.Join(work, "old"), filepath.Join(work, "new")
	put := func(cwd, sid string) string {
		t.Helper()
		folder := filepath.Join(dir, "projects", claudedir.SanitizePath(cwd))
		if err := os.MkdirAll(folder, 0o700); err != nil {
			t.Fatal(err)
		}
		line := strings.Replace(adminLine(sid, "u-"+sid[:8], "hi"), `"cwd":"/tmp/admin/p"`, `"cwd":`+strconv.Quote(cwd), 1)
		if err := os.WriteFile(filepath.Join(folder, sid+".jsonl"), []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
		return folder
	}
	emptied := put(oldPath, "0e0e0e0e-0000-4000-8000-000000000001")
	kept := put(filepath.Join(oldPath, "sub"), "0e0e0e0e-0000-4000-8000-000000000002")
	own := filepath.Join(kept, "notes.md")
	if err := os.WriteFile(own, []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := put(filepath.Join(work, "other"), "0e0e0e0e-0000-4000-8000-000000000003")
	out := cpOK(t, nil, "", "relocate", oldPath, newPath, "--yes", "--config-dir", dir)
	if _, err := os.Stat(emptied); !os.IsNotExist(err) {
		t.Fatalf("relocate left the emptied project folder %s (%v)\n%s", emptied, err, out)
	}
	if !strings.Contains(out, "removed the emptied project folder "+filepath.Base(emptied)) {
		t.Fatalf("relocate did not say it removed %s:\n%s", filepath.Base(emptied), out)
	}
	if b, err := os.ReadFile(own); err != nil || string(b) != "mine\n" {
		t.Fatalf("relocate touched a folder's own file: %q, %v", b, err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("relocate removed a folder it did not move from: %v", err)
	}
	for _, cwd := range []string{newPath, filepath.Join(newPath, "sub")} {
		if _, err := os.Stat(filepath.Join(dir, "projects", claudedir.SanitizePath(cwd))); err != nil {
			t.Fatalf("no project folder for %s: %v", cwd, err)
		}
	}
}

// record into a pipeline whose only sink is an archive of its own says
// it recorded into that archive, not into Claude Code's folder.
func TestRecordNamesTheSinksItWroteInto(t *testing.T) {
	claude, archive := t.TempDir(), t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf("pipeline {\n  sinks  = [\"jsonl/archive\"]\n  guards = []\n}\nsink \"jsonl\" \"archive\" {\n  dir = %q\n}\n", archive))
	const sid = "a7c41e00-0000-4000-8000-0000000000e1"
	out := cpOK(t, nil, adminLine(sid, "u-1", "hi"), "record", "--config", cfg, "--config-dir", claude)
	first, _, _ := strings.Cut(out, "\n")
	if !strings.Contains(first, "jsonl/archive in "+archive) || strings.Contains(first, claude) {
		t.Fatalf("record's report says %q; want the archive %s named, not Claude's folder %s", first, archive, claude)
	}
	var rep struct {
		Into []string `json:"into"`
	}
	cpOK(t, &rep, adminLine(sid, "u-2", "again"), "record", "--json", "--config", cfg, "--config-dir", claude)
	if len(rep.Into) != 1 || rep.Into[0] != "jsonl/archive in "+archive {
		t.Fatalf("record --json into: %q", rep.Into)
	}
	if _, err := os.Stat(filepath.Join(archive, "projects", "-tmp-admin-p", sid+".jsonl")); err != nil {
		t.Fatal(err)
	}
}

// A session rm moved to the trash, its later lines recorded by another
// process (the hook or watch of a Claude Code still running it, a record):
// the tail went into a new file in the project folder, its parents in the
// trash, exit 0, and trash restore then refused ("session already exists").
// rm's deletion markers now make the store refuse that session's lines
// (exit 1, said), until trash restore removes them.
func TestRecordAfterRmNeverSplitsTheSession(t *testing.T) {
	dir := t.TempDir()
	const sid = "5e55a0b1-0000-4000-8000-0000000000c3"
	main := filepath.Join(dir, "projects", "-tmp-admin-p", sid+".jsonl")
	cpOK(t, nil, adminLine(sid, "u-1", "first"), "record", "--config-dir", dir)
	cpOK(t, nil, "", "rm", sid, "--yes", "--config-dir", dir)
	tail := strings.Replace(adminLine(sid, "u-2", "second"), `"parentUuid":null`, `"parentUuid":"u-1"`, 1)
	out, errs, code := cpScribe(t, tail, "record", "--config-dir", dir)
	if code != 1 || !strings.Contains(out+errs, "was deleted") {
		t.Errorf("record of a deleted session's later line: exit %d, want 1 saying it was deleted\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if _, err := os.Stat(main); err == nil {
		t.Fatalf("the session's tail went into a new file beside its trash item: %s", main)
	}
	cpOK(t, nil, "", "trash", "restore", sid, "--config-dir", dir)
	cpOK(t, nil, tail, "record", "--config-dir", dir)
	if b, _ := os.ReadFile(main); !strings.Contains(string(b), "first") || !strings.Contains(string(b), "second") {
		t.Errorf("after trash restore and record the transcript holds %q", b)
	}
}

// record --ack under a descriptor limit so small that sessions cannot be
// opened (their dedup not seeded: "too many open files"): those lines were
// counted as rejected and acknowledged with the rest ({"acked_lines":N}
// for every line, none of them written), although they were neither made
// durable nor refused on purpose. Now acknowledgements stop before the
// first such line; every line acknowledged is in its transcript.
func TestRecordAcksNoLineItCouldNotOpen(t *testing.T) {
	dir := t.TempDir()
	var in strings.Builder
	uuids := []string{}
	for i := range 60 {
		u := fmt.Sprintf("u-ack-%d", i)
		uuids = append(uuids, u)
		in.WriteString(adminLine(fmt.Sprintf("%08d-0000-4000-8000-0000000000e1", i), u, "x"))
	}
	stdout, stderr, _ := runScribe(t, runOpts{shell: "ulimit -n 8", stdin: in.String()}, "record", "--ack", "--shutdown-timeout", "2s", "--config-dir", dir)
	if !strings.Contains(stdout+stderr, "too many open files") {
		t.Skipf("the limit did not bite: %s", stdout)
	}
	var acked int
	for _, l := range strings.Split(stdout, "\n") {
		var a struct {
			Acked *int `json:"acked_lines"`
		}
		if json.Unmarshal([]byte(l), &a) == nil && a.Acked != nil {
			acked = *a.Acked
		}
	}
	var stored strings.Builder
	files, _ := filepath.Glob(filepath.Join(dir, "projects", "*", "*.jsonl"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		stored.Write(b)
	}
	for _, u := range uuids[:min(acked, len(uuids))] {
		if !strings.Contains(stored.String(), `"`+u+`"`) {
			t.Fatalf("line of %s acknowledged (acked_lines %d) but in no transcript\nstdout: %.2000s", u, acked, stdout)
		}
	}
}

// A session rm moved to the trash, then imported back from a bundle: its
// deletion markers stayed, so a Claude Code resuming it would not save it
// (the SDK's rule). import now removes them, as trash restore does, and
// says so.
func TestImportAfterRmRemovesTheDeletionMarkers(t *testing.T) {
	dir := t.TempDir()
	const sid = "5e55a0b1-0000-4000-8000-0000000000c4"
	cpOK(t, nil, adminLine(sid, "u-1", "first"), "record", "--config-dir", dir)
	bundle := filepath.Join(t.TempDir(), "b.tgz")
	cpOK(t, nil, "", "export", sid, "--format", "bundle", "-o", bundle, "--config-dir", dir)
	cpOK(t, nil, "", "rm", sid, "--yes", "--config-dir", dir)
	markers := filepath.Join(dir, "state", "deleted-transcripts")
	if m, _ := os.ReadDir(markers); len(m) == 0 {
		t.Fatal("rm wrote no deletion markers")
	}
	out := cpOK(t, nil, "", "import", bundle, "--config-dir", dir)
	if m, _ := os.ReadDir(markers); len(m) != 0 {
		t.Errorf("after import, %d deletion markers are left (Claude Code would not save the session)\n%s", len(m), out)
	}
	if !strings.Contains(out, "deletion marker") {
		t.Errorf("import did not say it removed the markers: %s", out)
	}
}
