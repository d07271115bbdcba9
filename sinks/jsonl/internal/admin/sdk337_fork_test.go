package admin

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/internal/peer"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/jsonltest"
	"github.com/e0dc0000/scribe/sinks/jsonl/internal/layout"
)

// See sinks/jsonl/internal/listing/sdk337_test.go.

func TestSDK337FixturesFork(t *testing.T) {
	p := peer.Find(t)
	sdkCfg, ourCfg := jsonltest.SDK337Config(t), jsonltest.SDK337Config(t)
	var cases []*forkCase
	for _, id := range jsonltest.SDK337Sessions(t, ourCfg) {
		path := claudedir.MainFile(Layout{Layout: layout.Layout{ConfigDir: ourCfg}}.ProjectDir(jsonltest.SDK337Cwd), id)
		src, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // the subagent-only session: nothing to fork
		} else if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, &forkCase{name: id + "/whole", source: id},
			&forkCase{name: id + "/title", source: id, title: " Named "})
		// Cut at every row, so that every state:kept row comes after a cut.
		for _, u := range sdk337RowUUIDs(src) {
			cases = append(cases, &forkCase{name: id + "/cut-" + u, source: id, upTo: u})
		}
	}
	forkBatchCompare(t, p, sdkCfg, ourCfg, cases)
	t.Logf("%d SDK/scribe fork pairs compared", len(cases))
}

// sdk337RowUUIDs are the distinct uuids of a file's rows, in order.
func sdk337RowUUIDs(src []byte) []string {
	seen := map[string]bool{}
	var out []string
	for _, ln := range strings.Split(string(src), "\n") {
		var r struct {
			UUID string `json:"uuid"`
		}
		if json.Unmarshal([]byte(ln), &r) == nil && r.UUID != "" && !seen[r.UUID] {
			seen[r.UUID] = true
			out = append(out, r.UUID)
		}
	}
	return out
}
