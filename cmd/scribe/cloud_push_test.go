package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/e0dc0000/scribe/internal/testenv"
)

// cloudPushUnits are the sessions the push tests lay out: the corpus
// sessions with subagents plus a few plain ones, all of whose lines the
// server takes.
func cloudPushUnits(t *testing.T, extra int) []*unit {
	t.Helper()
	var out []*unit
	for _, sid := range cloudUnits {
		out = append(out, cloudUnit(t, sid))
	}
	for _, u := range loadCorpus(t).units {
		if extra == 0 {
			break
		}
		if u.main == nil || u.mainAt == "" || len(u.agents) > 0 || u.main.size > 100<<10 || len(u.main.malformed) > 0 ||
			len(u.main.sessionIDs) != 1 || u.main.sessionIDs[0] != u.sid || u.main.chainEntries() == 0 {
			continue
		}
		out = append(out, u)
		extra--
	}
	return out
}

type cloudPushReport struct {
	Sessions    int   `json:"sessions"`
	Files       int   `json:"files"`
	EntriesSent int64 `json:"entries_sent"`
	Stored      int64 `json:"stored"`
	Duplicates  int64 `json:"duplicates"`
	Bytes       int64 `json:"bytes"`
	Malformed   int64 `json:"malformed"`
	Refused     int64 `json:"refused"`
	Errors      []struct {
		Session, Error string
	} `json:"errors"`
}

func cloudPush(t *testing.T, cfg string, args ...string) (cloudPushReport, int, string) {
	t.Helper()
	out, errOut, code := cloudRun(t, "", append([]string{"push", "--config", cfg, "--json"}, args...)...)
	var rep cloudPushReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("push --json: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	return rep, code, out + errOut
}

// layPushFolder lays the units out in a fresh config folder and returns
// what the server must hold for each after a push.
func layPushFolder(t *testing.T, configDir string, units []*unit) []cloudExpect {
	t.Helper()
	var exps []cloudExpect
	for _, u := range units {
		proj := layOriginal(t, configDir, u)
		exps = append(exps, expectFiles(t, proj, u.sid, false))
	}
	return exps
}

func TestPushAllTwiceStoresOnce(t *testing.T) {
	srv := startCloudServer(t)
	cfg, dir := cloudMachine(t, srv.url(), "jsonl/local")
	units := cloudPushUnits(t, 5)
	exps := layPushFolder(t, dir, units)
	var sent, entries, dups int64
	for _, e := range exps {
		sent, entries, dups = sent+int64(e.sent), entries+int64(e.entries), dups+int64(e.dups)
	}

	// A refused token stops the push at once, storing nothing.
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.hcl")
	if err := os.WriteFile(bad, bytes.ReplaceAll(raw, []byte(cloudToken), []byte("not-the-token")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := cloudRun(t, "", "push", "--config", bad, "--all", "--json")
	if code != 1 || !strings.Contains(out, `"token_refused": true`) || !strings.Contains(errOut, "refused the token") || len(srv.counts()) != 0 {
		t.Errorf("push with a wrong token: exit %d\n%s\n%s", code, out, errOut)
	}

	start := time.Now()
	rep, code, out := cloudPush(t, cfg, "--all")
	t.Logf("first push: %d sessions, %d entries in %v", rep.Sessions, rep.EntriesSent, time.Since(start).Round(time.Millisecond))
	if code != 0 || len(rep.Errors) > 0 || rep.Refused > 0 || rep.Malformed > 0 || rep.Sessions != len(units) {
		t.Fatalf("first push: exit %d\n%s", code, out)
	}
	if rep.EntriesSent != sent || rep.Stored != entries || rep.Duplicates != dups {
		t.Errorf("first push: sent %d, stored %d, duplicates %d; want %d, %d, %d", rep.EntriesSent, rep.Stored, rep.Duplicates, sent, entries, dups)
	}
	counts := srv.counts()
	for _, e := range exps {
		checkOnServer(t, srv, e, counts)
	}

	rep, code, out = cloudPush(t, cfg, "--all")
	if code != 0 || len(rep.Errors) > 0 {
		t.Fatalf("second push: exit %d\n%s", code, out)
	}
	if rep.Stored != 0 || rep.Duplicates != sent || rep.EntriesSent != sent {
		t.Errorf("second push: sent %d, stored %d, duplicates %d; want %d, 0, %d", rep.EntriesSent, rep.Stored, rep.Duplicates, sent, sent)
	}
	// One session by id (a prefix), with batches of 7.
	rep, code, out = cloudPush(t, cfg, units[1].sid[:8], "--batch", "7")
	if code != 0 || rep.Sessions != 1 || rep.Stored != 0 || rep.EntriesSent != int64(exps[1].sent) {
		t.Errorf("push of one session by prefix: exit %d\n%s", code, out)
	}
	counts = srv.counts()
	for _, e := range exps {
		checkOnServer(t, srv, e, counts)
	}
}

// TestPushAfterKill9 kills, with SIGKILL, in the middle of a push, the
// server (then restarts it on the same data folder) or the push itself;
// the push run again leaves every entry on the server once, in order.
func TestPushAfterKill9(t *testing.T) {
	for _, victim := range []string{"server", "push"} {
		t.Run(victim, func(t *testing.T) {
			srv := startCloudServer(t)
			cfg, dir := cloudMachine(t, srv.url(), "jsonl/local")
			units := cloudPushUnits(t, 3)
			exps := layPushFolder(t, dir, units)
			total := 0
			for _, e := range exps {
				total += e.entries
			}

			// One entry a request, one session at a time: slow enough to
			// be caught in the middle.
			ctx, cancel := context.WithTimeout(context.Background(), cloudCmdTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, testenv.BuildScribe(t), "push", "--config", cfg, "--all", "--json", "--batch", "1", "--workers", "1")
			cmd.Env = cleanEnv()
			var out cloudBuffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pushed := make(chan error, 1)
			go func() { pushed <- cmd.Wait() }()

			stored := func() int {
				n := int64(0)
				for _, c := range srv.counts() {
					n += c
				}
				return int(n)
			}
			deadline := time.Now().Add(60 * time.Second)
			for {
				select {
				case err := <-pushed:
					t.Fatalf("the push ended before the kill (%v); make it slower\n%s", err, out.String())
				default:
				}
				n := stored()
				if n >= total/4 {
					t.Logf("kill -9 of the %s with %d of %d entries stored", victim, n, total)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the push stored only %d of %d entries in 60s\n%s", n, total, out.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if victim == "server" {
				srv.kill9()
				time.Sleep(300 * time.Millisecond)
				srv.start()
			} else {
				_ = cmd.Process.Signal(syscall.SIGKILL)
			}
			select {
			case err := <-pushed:
				t.Logf("the interrupted push ended: %v", err)
			case <-time.After(90 * time.Second):
				t.Fatalf("the interrupted push did not end within 90s\n%s", out.String())
			}

			rep, code, text := cloudPush(t, cfg, "--all")
			if code != 0 || len(rep.Errors) > 0 {
				t.Fatalf("push run again: exit %d\n%s", code, text)
			}
			t.Logf("push run again: %d sent, %d stored, %d duplicates", rep.EntriesSent, rep.Stored, rep.Duplicates)
			if victim == "push" && (rep.Stored == 0 || rep.Duplicates == 0) {
				t.Errorf("after a killed push, the next one should store the rest (stored %d) and skip what was there (duplicates %d)", rep.Stored, rep.Duplicates)
			}
			counts := srv.counts()
			for _, e := range exps {
				checkOnServer(t, srv, e, counts)
			}
		})
	}
}
