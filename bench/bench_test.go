package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// TestHarnessSmall runs the whole harness on 2 MiB, one run, without the CLI
// case (which would build ./cmd/scribe), and checks that it measured
// something and verified it.
func TestHarnessSmall(t *testing.T) {
	rep, err := run(context.Background(), options{MB: 2, Sessions: 5, Seed: 1, Runs: 1, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Cases) != 2 {
		t.Fatalf("%d cases, want 2 (plain, library)", len(rep.Cases))
	}
	for _, c := range rep.Cases {
		if !c.Verified || !(c.MiBps > 0) || !(c.EntriesPerSec > 0) {
			t.Errorf("%s: verified %v, %.1f MiB/s, %.0f entries/s", c.Name, c.Verified, c.MiBps, c.EntriesPerSec)
		}
	}
	lib := library(rep)
	if lib == nil || lib.Latency == nil || lib.Latency.Count != rep.Workload.Entries || lib.Latency.Max <= 0 {
		t.Errorf("library Submit latency = %+v, want one sample per entry (%d)", lib.Latency, rep.Workload.Entries)
	}
	path, err := writeMarkdown(t.TempDir(), rep)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "| scribe library |") {
		t.Errorf("markdown lacks the library row:\n%s", b)
	}
}

// TestVerifyCatchesMissingWork checks that verification fails when the
// store does not hold what was submitted.
func TestVerifyCatchesMissingWork(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := generate(in, 3, 256<<10, 7); err != nil {
		t.Fatal(err)
	}
	p, err := makePlan([]string{in}, dir)
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "store")
	res, err := runLibrary(context.Background(), p, root, jsonl.FsyncBatch)
	if err != nil {
		t.Fatal(err)
	}
	if err := verifyStore(p, root, &res); err != nil {
		t.Fatalf("clean run: %v", err)
	}
	// Drop the first line (a user prompt) of one transcript.
	f := filepath.Join(root, p.Files[0].Rel)
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "\n")
	if err := os.WriteFile(f, []byte(rest), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := verifyStore(p, root, &runResult{}); err == nil {
		t.Fatal("verification passed on a transcript missing its first line")
	}
	// Same line count, one byte changed.
	if err := os.WriteFile(f, []byte(strings.Replace(string(b), "Run the tests", "Run the test!", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if string(b) == strings.Replace(string(b), "Run the tests", "Run the test!", 1) {
		t.Skip("no Bash row in this transcript to alter")
	}
	if err := verifyStore(p, root, &runResult{}); err == nil {
		t.Fatal("verification passed on an altered line")
	}
}

// BenchmarkParseWorkload parses the generated workload's lines in place
// (what `scribe record` does per line), to compare scanner changes on the
// bytes the record benchmark uses.
func BenchmarkParseWorkload(b *testing.B) {
	path := filepath.Join(b.TempDir(), "w.jsonl")
	if err := generate(path, 5, 8<<20, 1); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		for _, l := range lines {
			if _, err := core.ParseEntryOwned(l); err != nil {
				b.Fatal(err)
			}
		}
	}
}
