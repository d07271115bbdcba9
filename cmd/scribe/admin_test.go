package main_test

// Session administration at its edges (issue 24): trash ids typed as
// printed, a live writer's session and rm, bundle bombs, relocate's
// leftovers, the SDK's deletion markers.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
