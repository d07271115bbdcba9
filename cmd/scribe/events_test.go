package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
)

const otherSession = "3a4b5c6d-7e8f-4a0b-9c1d-2e3f4a5b6c7d"

// runEvents runs `scribe record --events` and returns stdout (the stream),
// stderr and the exit code.
func runEvents(t *testing.T, env []string, stdin string, args ...string) ([]byte, string, int) {
	t.Helper()
	out, stderr, code := runScribe(t, runOpts{env: env, stdin: stdin}, append([]string{"record", "--events"}, args...)...)
	return []byte(out), stderr, code
}

// stderrReport finds the --json report among what stderr holds (log lines
// may precede it).
func stderrReport(t *testing.T, stderr string) report {
	t.Helper()
	i := strings.LastIndex("\n"+stderr, "\n{\n")
	if i < 0 {
		t.Fatalf("no JSON report on stderr: %s", stderr)
	}
	var r report
	if err := json.NewDecoder(strings.NewReader(stderr[i:])).Decode(&r); err != nil {
		t.Fatalf("report on stderr: %v\n%s", err, stderr)
	}
	return r
}

// streamEvents decodes the stream: every line one JSON object.
func streamEvents(t *testing.T, out []byte) []map[string]any {
	t.Helper()
	if len(out) > 0 && out[len(out)-1] != '\n' {
		t.Fatalf("the stream does not end with a newline: %q", out)
	}
	var evs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		if err := dec.Decode(&m); err != nil || dec.More() || m == nil {
			t.Fatalf("stdout line %d is not one JSON object (%v): %s", n, err, sc.Bytes())
		}
		evs = append(evs, m)
	}
	return evs
}

func kind(ev map[string]any) string {
	k, _ := ev["type"].(string)
	if st, ok := ev["subtype"].(string); ok {
		k += "/" + st
	}
	return k
}

func otherLine(i int) string {
	return strings.ReplaceAll(strings.ReplaceAll(entryLine(i), testSession, otherSession), "4f7e0000-", "4f7e1111-")
}

func TestRecordEventsStream(t *testing.T) {
	dir := t.TempDir()
	title := `{"type":"custom-title","customTitle":"Events","sessionId":"` + testSession + `"}`
	state := `{"type":"scribe-state","state":"idle","from":"running","reason":"turn over","sessionId":"` + testSession +
		`","uuid":"0d9e8f7a-0000-5000-8000-000000000001","timestamp":"2026-01-10T11:00:05.000Z"}`
	in := title + "\n" + lines(6) +
		entryLine(2) + "\n" + entryLine(3) + "\n" + // duplicates
		state + "\n" + state + "\n" + // the second one is a duplicate too
		otherLine(0) + "\n" + otherLine(1) + "\n" +
		entryLine(6) + "\n"
	out, stderr, code := runEvents(t, nil, in, "--json", "--config-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := stderrReport(t, stderr)
	if r.Accepted != 1+7+1+2 || r.Duplicates != 3 {
		t.Fatalf("report %+v", r)
	}
	evs := streamEvents(t, out)

	// The first line announces the session.
	first := evs[0]
	if kind(first) != "system/init" || first["session_id"] != testSession || first["cwd"] != testCWD || first["apiKeySource"] != "none" {
		t.Fatalf("first event: %v", first)
	}
	// Then one event per accepted entry; each session announced once,
	// before its first event.
	announced := map[string]bool{}
	var entries int
	var uuids []string
	for i, ev := range evs {
		sid, _ := ev["session_id"].(string)
		if kind(ev) == "system/init" {
			if announced[sid] {
				t.Fatalf("event %d announces %s again", i, sid)
			}
			announced[sid] = true
			continue
		}
		if !announced[sid] {
			t.Fatalf("event %d (%s) of session %q before its init", i, kind(ev), sid)
		}
		entries++
		if u, _ := ev["uuid"].(string); u != "" {
			uuids = append(uuids, u)
		}
	}
	if int64(entries) != r.Accepted || len(announced) != 2 {
		t.Fatalf("%d entry events for %d accepted; sessions announced %v", entries, r.Accepted, announced)
	}
	seen := map[string]int{}
	for _, u := range uuids {
		seen[u]++
	}
	for i := range 7 {
		if seen[uuidFor(i)] != 1 {
			t.Errorf("entry %d has %d events", i, seen[uuidFor(i)])
		}
	}
	want := []string{"system/init", "scribe_entry", "user", "assistant", "user", "assistant", "user", "assistant",
		"system/session_state_changed", "system/init", "user", "assistant", "user"}
	var got []string
	for _, ev := range evs {
		got = append(got, kind(ev))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("events %v\nwant   %v", got, want)
	}
	if ev := evs[2]; ev["parent_tool_use_id"] != nil || ev["message"] == nil {
		t.Errorf("user event %v", ev)
	}
	if ev := evs[8]; ev["state"] != "idle" || ev["uuid"] != "0d9e8f7a-0000-5000-8000-000000000001" {
		t.Errorf("state event %v", ev)
	}

	// The transcript has the conversation, not the state change.
	data, err := os.ReadFile(sessionFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("scribe-state")) {
		t.Fatal("the transcript holds a scribe-state entry")
	}
	if c := r.Sinks[0].Counters; c["events_skipped"] != 1 {
		t.Fatalf("jsonl counters %v", c)
	}

	// The same conversation again: every entry is a duplicate, nothing is
	// streamed.
	again := strings.ReplaceAll(in, state+"\n", "")
	out, stderr, code = runEvents(t, nil, again, "--json", "--config-dir", dir)
	if r := stderrReport(t, stderr); code != 0 || r.Accepted != 0 || r.Duplicates != 12 || len(out) != 0 {
		t.Fatalf("second run: exit %d, report %+v, stream %q", code, r, out)
	}
	// A state change is not in the transcript, so dedup seeded from it
	// does not know it: replayed in another run, it is accepted (and
	// streamed) again. The server stores it once by its uuid.
	out, stderr, code = runEvents(t, nil, in, "--json", "--config-dir", dir)
	r = stderrReport(t, stderr)
	evs = streamEvents(t, out)
	if code != 0 || r.Accepted != 1 || len(evs) != 2 || kind(evs[1]) != "system/session_state_changed" {
		t.Fatalf("third run: exit %d, report %+v, stream %s", code, r, out)
	}
}

func TestRecordEventsRefusedEntriesAreNotStreamed(t *testing.T) {
	out, stderr, code := runEvents(t, []string{"NODE_ENV=test"}, lines(4), "--json", "--config-dir", t.TempDir())
	r := stderrReport(t, stderr)
	if code != 0 || r.Accepted != 0 || r.Refused["env/default"] != 4 || len(out) != 0 {
		t.Fatalf("exit %d, report %+v, stream %q", code, r, out)
	}
	// Without --json the report still goes to stderr, stdout stays the
	// stream.
	out, stderr, code = runEvents(t, nil, lines(3), "--config-dir", t.TempDir())
	if code != 0 || !strings.Contains(stderr, "recorded 3 entries") {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if evs := streamEvents(t, out); len(evs) != 4 || kind(evs[0]) != "system/init" {
		t.Fatalf("stream %s", out)
	}
}

func TestRecordEventsWithAcks(t *testing.T) {
	const n = 3000
	out, stderr, code := runEvents(t, nil, lines(n), "--ack", "--flush-interval", "1ms", "--config-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	evs := streamEvents(t, out)
	var acks, entries int
	var last int64
	for i, ev := range evs {
		switch kind(ev) {
		case "scribe_ack":
			acks++
			a, ok := ev["acked_lines"].(float64)
			if !ok || int64(a) < last {
				t.Fatalf("ack %d: %v after %d", i, ev, last)
			}
			last = int64(a)
			// Every line acknowledged has its event before the ack.
			if int64(entries) < last {
				t.Fatalf("ack of %d lines after %d entry events", last, entries)
			}
		case "system/init":
			if i != 0 {
				t.Fatalf("init at %d", i)
			}
		default:
			entries++
		}
	}
	if acks == 0 || last != n || entries != n {
		t.Fatalf("%d acks, last %d, %d entry events; want the last ack at %d", acks, last, entries, n)
	}
	t.Logf("%d events, %d acks", len(evs), acks)
}

func TestRecordEventsHelpNamesTheFlag(t *testing.T) {
	out, _, code := runScribe(t, runOpts{combined: true}, "record", "--help")
	if code != 0 || !strings.Contains(out, "--events") || !strings.Contains(out, fmt.Sprintf("%q", "system")) {
		t.Fatalf("record --help: exit %d\n%s", code, out)
	}
}
