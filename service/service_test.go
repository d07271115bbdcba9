package service_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/internal/testenv"
	"github.com/e0dc0000/scribe/service"
)

const sess = "0565a3a4-0000-4000-8000-000000000001"

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "scribe.hcl")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func load(t *testing.T, body string) *config.Config {
	t.Helper()
	cfg, err := config.Load(writeConfig(t, body), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestBuildSubmitFlushClose(t *testing.T) {
	dir := t.TempDir()
	cfg := load(t, "config_dir = \""+dir+"\"\n")
	ctx := context.Background()
	svc, err := service.Build(ctx, service.Options{Config: cfg, Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	line := coretest.Line(core.TypeUser, sess, "4f7e0000-0000-4000-8000-000000000001", "")
	if r, err := svc.Pipeline.Submit(ctx, coretest.MustEntry(t, line)); err != nil || r.Status != core.Accepted {
		t.Fatalf("Submit: %v %v", r.Status, err)
	}
	if err := svc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := svc.Close(ctx); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "projects", "*", sess+".jsonl"))
	if len(files) != 1 {
		t.Fatalf("transcripts %v", files)
	}
	if b, _ := os.ReadFile(files[0]); string(b) != line+"\n" {
		t.Fatalf("file holds %q", b)
	}
	if _, err := svc.Pipeline.Submit(ctx, coretest.MustEntry(t, line)); err != core.ErrClosed {
		t.Fatalf("Submit after Close: %v", err)
	}
}

// children lists the live child processes of this test whose executable
// is bin.
func children(t *testing.T, bin string) []string {
	t.Helper()
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
		f := strings.Fields(rest)
		if len(f) < 2 || f[0] == "Z" || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		dir := filepath.Dir(p)
		if exe, err := os.Readlink(filepath.Join(dir, "exe")); err == nil && exe == bin {
			out = append(out, dir)
		}
	}
	return out
}

// A guard that is a plugin process is stopped when a later component fails
// to build: Build leaves nothing running.
func TestBuildFailureStopsThePluginsItStarted(t *testing.T) {
	root := testenv.RepoRoot(t)
	bin := filepath.Join(t.TempDir(), "pattern-guard")
	build := exec.Command("go", "build", "-o", bin, "./plugins/examples/pattern-guard")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the plugin: %v\n%s", err, out)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	cfg := load(t, fmt.Sprintf(`
pipeline {
  guards = ["env/default", "plugin/pg"]
  sinks  = ["jsonl/local", "nope/x"]
}
guard "plugin" "pg" {
  command = %q
  sha256  = %q
}
sink "nope" "x" {}
`, bin, hex.EncodeToString(sum[:])))
	_, err = service.Build(context.Background(), service.Options{Config: cfg, Environ: []string{"CLAUDE_CONFIG_DIR=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}})
	if err == nil || !strings.Contains(err.Error(), `unknown sink type "nope"`) {
		t.Fatalf("Build: %v", err)
	}
	if left := children(t, bin); len(left) > 0 {
		t.Fatalf("plugin processes still running after a failed Build: %v", left)
	}
	// The same configuration without the broken sink does start the
	// plugin, so the check above can fail.
	cfg = load(t, fmt.Sprintf(`
pipeline {
  guards = ["env/default", "plugin/pg"]
}
guard "plugin" "pg" {
  command = %q
  sha256  = %q
}
`, bin, hex.EncodeToString(sum[:])))
	svc, err := service.Build(context.Background(), service.Options{Config: cfg, Environ: []string{"CLAUDE_CONFIG_DIR=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(children(t, bin)) == 0 {
		t.Fatal("the plugin guard runs no process: the test proves nothing")
	}
	if err := svc.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left := children(t, bin); len(left) > 0 {
		t.Fatalf("plugin processes still running after Close: %v", left)
	}
}

// The example host in examples/embed embeds scribe from a configuration
// file and records through it.
func TestExampleHostRecordsThroughTheService(t *testing.T) {
	root := testenv.RepoRoot(t)
	bin := filepath.Join(t.TempDir(), "embed")
	build := exec.Command("go", "build", "-o", bin, "./examples/embed")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the example host: %v\n%s", err, out)
	}
	dir := t.TempDir()
	cfg := writeConfig(t, "config_dir = \""+dir+"\"\npipeline {\n  processors = [\"filter/noise\"]\n}\n")
	var in strings.Builder
	in.WriteString(coretest.Line(core.TypeUser, sess, "4f7e0000-0000-4000-8000-000000000001", "") + "\n")
	in.WriteString(strings.Replace(coretest.Line(core.TypeUser, sess, "4f7e0000-0000-4000-8000-000000000002", "4f7e0000-0000-4000-8000-000000000001"), `"type":"user"`, `"type":"progress"`, 1) + "\n")
	in.WriteString("not json\n")
	cmd := exec.Command(bin, "-config", cfg)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	cmd.Stdin = strings.NewReader(in.String())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("example host: %v\n%s", err, errb.String())
	}
	var rep struct {
		Outcomes map[string]int `json:"outcomes"`
		Durable  int64          `json:"durable_lines"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if rep.Outcomes["accepted"] != 1 || rep.Outcomes["dropped"] != 1 || rep.Outcomes["malformed"] != 1 || rep.Durable != 3 {
		t.Fatalf("report %s", out.String())
	}
	files, _ := filepath.Glob(filepath.Join(dir, "projects", "*", sess+".jsonl"))
	if len(files) != 1 {
		t.Fatalf("the example host wrote no transcript: %v", files)
	}
}
