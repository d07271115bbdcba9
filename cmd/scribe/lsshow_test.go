package main_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/e0dc0000/scribe/claudedir"
)

// lsSession writes a transcript of rows (each a JSON object without the
// common fields, which are added: uuid, parentUuid, timestamp, sessionId,
// cwd) into dir's project folder for cwd; timestamps start at start, a
// second apart. extra is merged into every row (forkedFrom).
func lsSession(t *testing.T, dir, id, cwd string, start time.Time, extra map[string]any, rows ...map[string]any) string {
	t.Helper()
	var b strings.Builder
	parent := any(nil)
	for i, r := range rows {
		row := map[string]any{"isSidechain": false, "userType": "external", "entrypoint": "cli", "version": "2.1.332", "gitBranch": "main"}
		for k, v := range extra {
			row[k] = v
		}
		for k, v := range r {
			row[k] = v
		}
		uuid := fmt.Sprintf("%s%04d", id[:32], i)
		row["uuid"], row["parentUuid"] = uuid, parent
		row["timestamp"] = start.Add(time.Duration(i) * time.Second).UTC().Format("2006-01-02T15:04:05.000Z")
		row["cwd"], row["sessionId"] = cwd, id
		parent = uuid
		line, err := json.Marshal(row)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	folder := filepath.Join(dir, "projects", claudedir.SanitizePath(cwd))
	if err := os.MkdirAll(folder, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(folder, id+".jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func userRow(content any) map[string]any {
	return map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": content}}
}

func assistantRow(content ...map[string]any) map[string]any {
	return map[string]any{"type": "assistant", "message": map[string]any{"role": "assistant", "model": "claude-sonnet-4-5",
		"id": "msg_1", "type": "message", "content": content, "stop_reason": "end_turn"}}
}

func toolUse(id, name string, input map[string]any) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
}

func resultBlock(id string, content any) map[string]any {
	return map[string]any{"type": "tool_result", "tool_use_id": id, "content": content}
}

// lsEnv is a clean environment over dir, with an empty home, no
// COLUMNS and no NO_COLOR; more are added after.
func lsEnv(t *testing.T, dir string, more ...string) []string {
	home := t.TempDir()
	return append(append(cleanEnv(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"CLAUDE_CONFIG_DIR="+dir, "TZ=UTC", "COLUMNS=", "NO_COLOR="), more...)
}

// lsFixture lays out three sessions in three projects with long titles:
// old (months-old timestamps, its last turn cut short in a tool call),
// fork (a fork, tagged) and live (archived, a tool call of a second ago).
func lsFixture(t *testing.T) (dir string, ids map[string]string, cwds map[string]string) {
	dir = t.TempDir()
	ids = map[string]string{
		"old":  "a1c0ffee-0000-4000-8000-000000000001",
		"fork": "b2c0ffee-0000-4000-8000-000000000002",
		"live": "b2c1ffee-0000-4000-8000-000000000003",
	}
	cwds = map[string]string{
		"old":  "/home/alice/src/a-rather-long-folder-name/of-a-project/named-alpha",
		"fork": "/srv/work/beta-service-with-a-long-name",
		"live": "/tmp/gamma",
	}
	long := "please refactor the payment reconciliation module so that every currency conversion goes through one place and is tested"
	months := time.Now().AddDate(0, -5, 0)
	lsSession(t, dir, ids["old"], cwds["old"], months, nil,
		userRow(long),
		assistantRow(toolUse("toolu_old", "Bash", map[string]any{"command": "go test ./..."})))
	lsSession(t, dir, ids["fork"], cwds["fork"], time.Now().Add(-48*time.Hour),
		map[string]any{"forkedFrom": map[string]any{"sessionId": ids["old"], "messageUuid": "x"}},
		userRow("write the release notes for version two of the beta service, with every change since the last release"),
		assistantRow(map[string]any{"type": "text", "text": "Done."}))
	lsSession(t, dir, ids["live"], cwds["live"], time.Now().Add(-2*time.Second), nil,
		userRow("run the gamma benchmarks again and compare them with yesterday's numbers in the spreadsheet"),
		assistantRow(toolUse("toolu_live", "Bash", map[string]any{"command": "make bench"})))
	env := lsEnv(t, dir)
	mustScribe(t, runOpts{base: env}, "tag", ids["fork"], "release")
	mustScribe(t, runOpts{base: env}, "archive", ids["live"])
	// The files were last written when their last rows were.
	for name, at := range map[string]time.Time{"old": months, "fork": time.Now().Add(-48 * time.Hour)} {
		p := filepath.Join(dir, "projects", claudedir.SanitizePath(cwds[name]), ids[name]+".jsonl")
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	return dir, ids, cwds
}

// lsRows maps each session (by fixture name) to its row of ls's table.
func lsRows(t *testing.T, out string, ids map[string]string) map[string]string {
	t.Helper()
	rows := map[string]string{}
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n")[1:] {
		for name, id := range ids {
			if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(id, f[0]) {
				rows[name] = l
			}
		}
	}
	return rows
}

// COLUMNS=100 scribe ls --all fits 100 columns, names each row's project,
// marks forks, tags and archived sessions, and shows a months-old session
// whose last turn was cut short as idle and interrupted, not running.
func TestLsFitsTheTerminalAndTellsTheState(t *testing.T) {
	dir, ids, cwds := lsFixture(t)
	for _, cols := range []int{100, 80, 160} {
		out := mustScribe(t, runOpts{base: lsEnv(t, dir, fmt.Sprintf("COLUMNS=%d", cols))}, "ls", "--all")
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) != 4 {
			t.Fatalf("COLUMNS=%d ls --all:\n%s", cols, out)
		}
		for _, l := range lines {
			if n := utf8.RuneCountInString(l); n > cols {
				t.Errorf("COLUMNS=%d: a line of %d characters:\n%s", cols, n, l)
			}
		}
		rows := lsRows(t, out, ids)
		for name, row := range rows {
			if base := filepath.Base(cwds[name]); !strings.Contains(row, base[len(base)-5:]) {
				t.Errorf("COLUMNS=%d: the row of %s does not name its project %s:\n%s", cols, name, cwds[name], out)
			}
		}
		if len(rows) != 3 {
			t.Fatalf("COLUMNS=%d: rows %v in\n%s", cols, rows, out)
		}
		if f := strings.Fields(rows["old"]); strings.Contains(rows["old"], "running") || !strings.Contains(rows["old"], " idle ") ||
			!strings.Contains(rows["old"], "interrupted") {
			t.Errorf("COLUMNS=%d: the months-old interrupted session: %q", cols, f)
		}
		if !strings.Contains(rows["live"], "running") || !strings.Contains(rows["live"], "[archived]") {
			t.Errorf("COLUMNS=%d: the live archived session: %q", cols, rows["live"])
		}
		if !strings.Contains(rows["fork"], "[fork]") || !strings.Contains(rows["fork"], "#release") {
			t.Errorf("COLUMNS=%d: the tagged fork: %q", cols, rows["fork"])
		}
		if strings.Contains(out, "\x1b[") {
			t.Errorf("COLUMNS=%d: escape codes off a terminal:\n%q", cols, out)
		}
	}

	if out := mustScribe(t, runOpts{base: lsEnv(t, dir, "COLUMNS=100")}, "ls", "--all", "--no-index"); !strings.Contains(out, "[fork] #release") {
		t.Errorf("ls --no-index: no fork mark:\n%s", out)
	}
	// info says the same; its --json keeps what the tail says.
	if out := mustScribe(t, runOpts{base: lsEnv(t, dir)}, "info", ids["old"]); !strings.Contains(out, "\nstate          idle\n") {
		t.Errorf("info of the months-old session:\n%s", out)
	}
	// Off a terminal with no COLUMNS nothing is cut: whole ids.
	if out := mustScribe(t, runOpts{base: lsEnv(t, dir)}, "ls", "--all"); !strings.Contains(out, ids["old"]) || !strings.Contains(out, cwds["old"]) {
		t.Errorf("ls --all off a terminal:\n%s", out)
	}

	// Colour: --color=always gives it, NO_COLOR and --color=never take it
	// away.
	if out := mustScribe(t, runOpts{base: lsEnv(t, dir)}, "ls", "--all", "--color=always"); !strings.Contains(out, "\x1b[") {
		t.Errorf("--color=always: no escape codes:\n%q", out)
	}
	for _, c := range []struct {
		env  []string
		args []string
	}{{[]string{"NO_COLOR=1"}, []string{"--color=always"}}, {nil, []string{"--color=never"}}, {nil, nil}} {
		if out := mustScribe(t, runOpts{base: lsEnv(t, dir, c.env...)}, append([]string{"ls", "--all"}, c.args...)...); strings.Contains(out, "\x1b[") {
			t.Errorf("%v %v: escape codes:\n%q", c.env, c.args, out)
		}
	}
	if _, errs, code := runScribe(t, runOpts{base: lsEnv(t, dir)}, "ls", "--color=sometimes"); code != 2 {
		t.Errorf("--color=sometimes: exit %d %s", code, errs)
	}

	// --since and --until, on the json listing too (its shape unchanged).
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--since", "30d"}, []string{"live", "fork"}},
		{[]string{"--until", "30d"}, []string{"old"}},
		{[]string{"--since", "30d", "--until", "1h"}, []string{"fork"}},
		{[]string{"--since", time.Now().AddDate(0, 0, -1).Format("2006-01-02"), "--limit", "1"}, []string{"live"}},
		{[]string{"--until", time.Now().AddDate(0, -1, 0).Format("2006-01-02T15:04")}, []string{"old"}},
	} {
		var got []map[string]any
		out := mustScribe(t, runOpts{base: lsEnv(t, dir)}, append([]string{"ls", "--all", "--json"}, c.args...)...)
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, g := range got {
			for name, id := range ids {
				if g["sessionId"] == id {
					names = append(names, name)
				}
			}
		}
		if fmt.Sprint(names) != fmt.Sprint(c.want) {
			t.Errorf("ls %v: %v, want %v", c.args, names, c.want)
		}
	}
	if _, errs, code := runScribe(t, runOpts{base: lsEnv(t, dir)}, "ls", "--since", "yesterday"); code != 2 || !strings.Contains(errs, "--since") {
		t.Errorf("--since yesterday: exit %d %s", code, errs)
	}
}

// scribe __complete offers session ids with their titles for every
// session argument, and trash ids for trash restore.
func TestCompletionOffersSessionsAndTrash(t *testing.T) {
	dir, ids, _ := lsFixture(t)
	env := lsEnv(t, dir)
	for _, c := range [][]string{{"show"}, {"info"}, {"resume"}, {"fork"}, {"push"}, {"pull"}, {"scan"}, {"redact"},
		{"checkpoint"}, {"checkpoints"}, {"rm"}, {"rename"}, {"tag"}, {"archive"}, {"unarchive"}, {"export"}} {
		out := mustScribe(t, runOpts{base: env}, append(append([]string{"__complete"}, c...), "")...)
		if !strings.Contains(out, ids["old"]+"\tplease refactor the payment") || !strings.Contains(out, ids["live"]+"\trun the gamma") {
			t.Errorf("__complete %v '': %q", c, out)
		}
	}
	// One id only where one is taken; more where several are.
	if out := mustScribe(t, runOpts{base: env}, "__complete", "show", ids["old"], ""); strings.Contains(out, ids["live"]) {
		t.Errorf("__complete show ID '': %q", out)
	}
	if out := mustScribe(t, runOpts{base: env}, "__complete", "rm", ids["old"], ""); !strings.Contains(out, ids["live"]) || strings.Contains(out, ids["old"]) {
		t.Errorf("__complete rm ID '': %q", out)
	}
	if out := mustScribe(t, runOpts{base: env}, "__complete", "show", "b2c0"); !strings.Contains(out, ids["fork"]) || strings.Contains(out, ids["live"]) {
		t.Errorf("__complete show PREFIX: %q", out)
	}

	mustScribe(t, runOpts{base: env}, "rm", "--yes", ids["old"])
	var trash struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(mustScribe(t, runOpts{base: env}, "trash", "ls", "--json")), &trash); err != nil || len(trash.Items) != 1 {
		t.Fatalf("trash ls: %v %v", trash, err)
	}
	out := mustScribe(t, runOpts{base: env}, "__complete", "trash", "restore", "")
	if !strings.Contains(out, trash.Items[0].ID+"\tplease refactor") || !strings.Contains(out, ids["old"]) {
		t.Errorf("__complete trash restore '': %q", out)
	}
}

// show's text prints an Edit as a diff, a Write as its first lines, an
// image as a placeholder with its size and tool results as text; never a
// block's JSON or base64. show --json is unchanged.
func TestShowTextReadsAsText(t *testing.T) {
	dir := t.TempDir()
	id := "0c0ffee0-0000-4000-8000-0000000000a1"
	png := make([]byte, 12600)
	for i := range png {
		png[i] = byte(i * 7)
	}
	data := base64.StdEncoding.EncodeToString(png)
	var write []string
	for i := range 14 {
		write = append(write, fmt.Sprintf("line %d of the new file", i+1))
	}
	lsSession(t, dir, id, "/tmp/delta", time.Now().Add(-time.Hour), nil,
		userRow([]map[string]any{{"type": "text", "text": "what is wrong here?"},
			{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": data}}}),
		assistantRow(toolUse("toolu_e", "Edit", map[string]any{"file_path": "/tmp/delta/auth.go",
			"old_string": "func login() {\n\treturn check(user)\n}", "new_string": "func login() {\n\treturn check(user, password)\n}"})),
		userRow([]map[string]any{resultBlock("toolu_e", []map[string]any{{"type": "text", "text": "The file /tmp/delta/auth.go has been updated."}})}),
		assistantRow(toolUse("toolu_w", "Write", map[string]any{"file_path": "/tmp/delta/notes.md", "content": strings.Join(write, "\n") + "\n"})),
		userRow([]map[string]any{resultBlock("toolu_w", "File created successfully at: /tmp/delta/notes.md")}),
		assistantRow(toolUse("toolu_m", "MultiEdit", map[string]any{"file_path": "/tmp/delta/main.go", "edits": []map[string]any{
			{"old_string": "a := 1", "new_string": "a := 2"}, {"old_string": "b := 1\n", "new_string": "", "replace_all": true}}})),
		userRow([]map[string]any{resultBlock("toolu_m", "Applied 2 edits")}),
		assistantRow(toolUse("toolu_s", "Bash", map[string]any{"command": "screenshot"})),
		userRow([]map[string]any{resultBlock("toolu_s", []map[string]any{{"type": "text", "text": "captured"},
			{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/jpeg", "data": data[:400]}}})}),
		assistantRow(map[string]any{"type": "text", "text": "Fixed."}))
	env := lsEnv(t, dir)
	out := mustScribe(t, runOpts{base: env}, "show", id)
	for _, want := range []string{
		"→ Edit /tmp/delta/auth.go", "- \treturn check(user)", "+ \treturn check(user, password)", "  func login() {",
		"The file /tmp/delta/auth.go has been updated.",
		"→ Write /tmp/delta/notes.md (14 lines", "+ line 1 of the new file", "+ line 10 of the new file", "… 4 more lines",
		"File created successfully", "[image: image/png, 12.3 KiB]", "captured", "[image: image/jpeg, 300 B]",
		"→ Bash\n", "command: screenshot",
		"→ MultiEdit /tmp/delta/main.go (2 edits)\n  @@ edit 1\n  - a := 1\n  + a := 2\n  @@ edit 2 (every occurrence)\n  - b := 1\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show: no %q in\n%s", want, out)
		}
	}
	for _, bad := range []string{data[:40], `"type"`, `"tool_use_id"`, "line 11 of"} {
		if strings.Contains(out, bad) {
			t.Errorf("show: %q in\n%s", bad, out)
		}
	}
	// --json is the SDK's answer, base64 and all.
	if js := mustScribe(t, runOpts{base: env}, "show", "--json", id); !strings.Contains(js, data) {
		t.Errorf("show --json lost the image")
	}
}
