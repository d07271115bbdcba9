package main_test

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/watch/watchsim"
)

// TestWatchSealedSurvivesKill9: `scribe watch` mirrors into a sealed
// archive while it is killed with SIGKILL at random points; a last watch
// catches up, and the archive, decrypted, holds every line exactly once,
// while on disk it holds no plain transcript and no plain sidecar.
func TestWatchSealedSurvivesKill9(t *testing.T) {
	we := newWatchEnv(t)
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(we.dir, "archive.key")
	writeFile(t, keyFile, id.String()+"\n")
	keys := seal.Options{Identity: seal.KeySource{File: keyFile}}
	writeFile(t, we.cfg, fmt.Sprintf("sink \"jsonl\" \"archive\" {\n  dir = %q\n  drain_interval = \"10ms\"\n  encryption = { identity = { file = %q } }\n}\npipeline {\n  sinks = [\"jsonl/archive\"]\n}\n", we.archive, keyFile))

	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	sim := watchsim.New(we.projects, 3, seed)
	stopSim := runSim(sim)
	for i := 0; i < 4; i++ {
		cmd, stderr := we.start(t)
		time.Sleep(time.Duration(100+rng.Intn(500)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		if strings.Contains(stderr.String(), "panic") || strings.Contains(stderr.String(), "damaged") {
			t.Fatalf("watch run %d:\n%s", i, stderr)
		}
	}
	if err := stopSim(); err != nil {
		t.Fatal(err)
	}
	if err := sim.Finish(); err != nil {
		t.Fatal(err)
	}

	cmd, stderr := we.start(t)
	// Up (its signal handler set) once it has said what it copies.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stderr.String(), "not copied into them"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("watch did not say that sidecars are not copied into the sealed archive:\n%s", stderr)
		}
	}
	// The archive decrypted (here, in the test's own folder) is what
	// watchsim checks.
	decrypted := func() string {
		view := t.TempDir()
		if _, err := jsonl.DecryptArchive(context.Background(), we.archive, keys, nil, view); err != nil {
			t.Fatalf("decrypt the archive: %v\nwatch stderr:\n%s", err, stderr)
		}
		return filepath.Join(view, "projects")
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		missing, err := sim.Verify(decrypted(), false)
		if err != nil {
			t.Fatalf("%v\nwatch stderr:\n%s", err, stderr)
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			_, err := sim.Verify(decrypted(), true)
			t.Fatalf("%d lines still missing: %v\nwatch stderr:\n%s", missing, err, stderr)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("watch after SIGTERM: %v\n%s", err, stderr)
	}
	if _, err := sim.Verify(decrypted(), true); err != nil {
		t.Fatal(err)
	}
	_ = filepath.WalkDir(filepath.Join(we.archive, "projects"), func(p string, d fs.DirEntry, err error) error {
		// (A kill while an extent record was made leaves its temporary
		// file, sealed as the record is, until the session is written again.)
		extentTemp := strings.HasPrefix(d.Name(), ".") && strings.Contains(d.Name(), ".jsonl"+claudedir.SealedSuffix+claudedir.ExtentSuffix+".tmp-")
		if err == nil && !d.IsDir() && !extentTemp && !strings.HasSuffix(p, ".jsonl"+claudedir.SealedSuffix) && !strings.HasSuffix(p, ".jsonl"+claudedir.SealedSuffix+claudedir.ExtentSuffix) {
			t.Errorf("%s: a file in the clear in the sealed archive", p)
		}
		return err
	})
}
