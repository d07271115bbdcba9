package manage

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/e0dc0000/scribe/internal/cli/cmdtest"
)

// rm --json --dry-run prints {"dryRun": true, "items": [...]}: one item
// per session with every file that would move (the transcript, the
// session's folder and the subagents' files in it), their sizes summed,
// and moves nothing.
func TestRmDryRunJSON(t *testing.T) {
	s := cmdtest.New(t, NewCmdRm)
	dir := cmdtest.Fixture(t)
	const id = "a3370003-0000-4000-8000-000000000003"
	out, errs, code := s.Run("rm", "--json", "--dry-run", "--config-dir", dir, id[:8])
	if code != 0 {
		t.Fatalf("rm --json --dry-run: exit %d\n%s", code, errs)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("rm --json --dry-run printed %q: %v", out, err)
	}
	if keys := sortedKeys(doc); !reflect.DeepEqual(keys, []string{"dryRun", "items"}) || string(doc["dryRun"]) != "true" {
		t.Fatalf("rm --json --dry-run: keys %v, dryRun %s; want dryRun true and items", keys, doc["dryRun"])
	}
	var items []struct {
		SessionID string   `json:"sessionId"`
		Project   string   `json:"project"`
		Cwd       string   `json:"cwd"`
		Title     string   `json:"title"`
		Reason    string   `json:"reason"`
		Entries   []string `json:"entries"`
		Files     []struct {
			Path string `json:"path"`
			Dir  bool   `json:"dir"`
			Size int64  `json:"size"`
		} `json:"files"`
		Bytes int64 `json:"bytes"`
	}
	if err := json.Unmarshal(doc["items"], &items); err != nil || len(items) != 1 {
		t.Fatalf("items %s: %v, want one", doc["items"], err)
	}
	it := items[0]
	if it.SessionID != id || it.Project != "-home-alice-src-shop" || it.Cwd != "/home/alice/src/shop" ||
		it.Title != "Ask an agent to look around" || it.Reason != "rm" {
		t.Errorf("item %+v", it)
	}
	if want := []string{id, id + ".jsonl"}; !reflect.DeepEqual(it.Entries, want) {
		t.Errorf("entries %v, want %v", it.Entries, want)
	}
	var paths []string
	var sum int64
	for _, f := range it.Files {
		paths = append(paths, f.Path)
		sum += f.Size
		if fi, err := os.Stat(filepath.Join(dir, f.Path)); err != nil || fi.IsDir() != f.Dir || (!f.Dir && fi.Size() != f.Size) {
			t.Errorf("%s (dir %v, %d bytes) is not so on disk any more: %v", f.Path, f.Dir, f.Size, err)
		}
	}
	proj := "projects/-home-alice-src-shop/"
	want := []string{proj + id, proj + id + "/subagents", proj + id + "/subagents/agent-a1b2c3.jsonl",
		proj + id + "/subagents/agent-a1b2c3.meta.json", proj + id + "/subagents/agent-d4e5f6.jsonl", proj + id + ".jsonl"}
	if !reflect.DeepEqual(paths, want) || sum != it.Bytes || sum == 0 {
		t.Errorf("files %v (%d bytes, item says %d), want %v", paths, sum, it.Bytes, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "scribe", "trash")); !os.IsNotExist(err) {
		t.Errorf("a dry run made the trash: %v", err)
	}
}

// rm without an id is a usage error.
func TestRmWantsAnID(t *testing.T) {
	s := cmdtest.New(t, NewCmdRm)
	out, errs, code := s.Run("rm", "--dry-run", "--config-dir", cmdtest.Fixture(t))
	want := "scribe: requires at least 1 arg(s), only received 0\nUsage: scribe rm ID... [flags]\nRun 'scribe rm --help' for more.\n"
	if code != 2 || out != "" || errs != want {
		t.Fatalf("rm: exit %d, stdout %q, stderr:\n%s\nwant exit 2, stderr:\n%s", code, out, errs, want)
	}
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
