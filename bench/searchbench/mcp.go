package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// benchMCP times search_sessions as an agent calls it: `scribe mcp` (built
// from this checkout) over the same folder, a real MCP client (the Go SDK's)
// over stdio, each query one round trip; the peer is `grep -rlF` of the
// same query over the same transcripts (what an agent without scribe would
// run), in the same run.
func benchMCP(ctx context.Context, work string, l jsonl.Layout, qs []string, p func(string, ...any)) error {
	bin := filepath.Join(work, "scribe")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/scribe")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build scribe: %v\n%s", err, out)
	}
	home := filepath.Join(work, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	cmd := exec.Command(bin, "mcp")
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "CLAUDE_CONFIG_DIR=" + l.ConfigDir, "SCRIBE_LOG_LEVEL=warn"}
	c := mcp.NewClient(&mcp.Implementation{Name: "searchbench", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("connect to scribe mcp: %w", err)
	}
	defer cs.Close()
	var lat, grep []time.Duration
	for i, q := range qs {
		t0 := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_sessions", Arguments: map[string]any{"query": q}})
		if err != nil || res.IsError {
			return fmt.Errorf("search_sessions %q: %v %v", q, err, res)
		}
		lat = append(lat, time.Since(t0))
		if i < 30 { // grep reads every byte: 30 queries are enough for its median
			t0 = time.Now()
			g := exec.CommandContext(ctx, "grep", "-rlFi", "--", q, l.ProjectsDir())
			_ = g.Run() // exit 1 when nothing matches
			grep = append(grep, time.Since(t0))
		}
	}
	p("| **search_sessions over MCP** (`scribe mcp`, the Go SDK's client over stdio, one round trip per query), the same queries | **p50 %s, p99 %s** |\n", pct(lat, 50), pct(lat, 99))
	p("| peer: `grep -rlFi` of the query over the transcripts (%d queries) | p50 %s: scribe's round trip is **%.3f×** of it at p50 |\n",
		len(grep), pct(grep, 50), float64(pct(lat, 50))/float64(pct(grep, 50)))
	return nil
}
