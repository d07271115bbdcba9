package stores

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"filippo.io/age"
	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/memfs"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/internal/testbackend"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sessions/sessionstest"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/sinks/postgres"
	"github.com/e0dc0000/scribe/sinks/s3"
)

func TestMain(m *testing.M) { os.Exit(testbackend.Main(m)) }

// write puts entries through a sink and shuts it down.
func write(t *testing.T, sk core.Sink, entries []core.Entry) {
	t.Helper()
	ctx := context.Background()
	if err := writeThrough(ctx, func(context.Context) (core.Sink, error) { return sk, nil }, entries); err != nil {
		t.Fatal(err)
	}
}

func TestLocalStoreContract(t *testing.T) {
	sessionstest.RunStoreContract(t, sessionstest.Fixture{New: func(t *testing.T, seeds []sessionstest.Seed) func() sessions.Store {
		dir := t.TempDir()
		sessionstest.WriteFiles(t, dir, seeds)
		return func() sessions.Store { return NewLocal("jsonl/archive", dir, nil) }
	}})
}

func sealKey(t *testing.T) seal.Options {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "archive.key")
	if err := os.WriteFile(p, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return seal.Options{Identity: seal.KeySource{File: p}}
}

func TestSealedStoreContract(t *testing.T) {
	sessionstest.RunStoreContract(t, sessionstest.Fixture{New: func(t *testing.T, seeds []sessionstest.Seed) func() sessions.Store {
		dir, key := t.TempDir(), sealKey(t)
		sink := func(context.Context) (core.Sink, error) {
			return jsonl.New(jsonl.Options{ConfigDir: dir, Fsync: jsonl.FsyncBatch, Encryption: key})
		}
		sk, err := sink(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		write(t, sk, sessionstest.Entries(t, seeds))
		return func() sessions.Store {
			st, err := OpenSealed(context.Background(), "jsonl/archive", dir, key, nil, sink)
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
	}})
}

// TestSealedStoreLeavesNothingOnDisk: reading a sealed archive writes no
// file anywhere (the decrypted transcripts are held in memory).
func TestSealedStoreLeavesNothingOnDisk(t *testing.T) {
	dir, key := t.TempDir(), sealKey(t)
	sk, err := jsonl.New(jsonl.Options{ConfigDir: dir, Fsync: jsonl.FsyncBatch, Encryption: key})
	if err != nil {
		t.Fatal(err)
	}
	write(t, sk, sessionstest.Entries(t, sessionstest.Seeds()))
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("XDG_RUNTIME_DIR", tmp)
	t.Setenv("SCRIBE_SEALED_VIEW_DIR", tmp)
	before := tree(t, dir)
	st, err := OpenSealed(context.Background(), "jsonl/archive", dir, key, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _, err := st.Messages(context.Background(), sessionstest.IDOne, sessions.MessagesOptions{})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("Messages: %d, %v", len(msgs), err)
	}
	if got := tree(t, tmp); len(got) != 0 {
		t.Errorf("reading the sealed archive left %v in the temporary folders", got)
	}
	if after := tree(t, dir); len(after) != len(before) {
		t.Errorf("reading the sealed archive changed it: %d files before, %d after", len(before), len(after))
	}
}

func tree(t *testing.T, dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && p != dir {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func backendFixture(name string, newComp func(t *testing.T) (core.Sink, func() core.Sink)) sessionstest.Fixture {
	return sessionstest.Fixture{New: func(t *testing.T, seeds []sessionstest.Seed) func() sessions.Store {
		sk, again := newComp(t)
		write(t, sk, sessionstest.Entries(t, seeds))
		trash := t.TempDir()
		return func() sessions.Store {
			comp := again()
			b, err := NewBackend(BackendOptions{Name: name, Where: name, Component: comp, TrashDir: trash,
				Sink:  func(context.Context) (core.Sink, error) { return again(), nil },
				Close: comp.Shutdown})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}}
}

func TestPostgresStoreContract(t *testing.T) {
	sessionstest.RunStoreContract(t, backendFixture("postgres/team", func(t *testing.T) (core.Sink, func() core.Sink) {
		cfg := postgres.DefaultConfig()
		cfg.URL = testbackend.Postgres(t)
		open := func() core.Sink {
			s, err := postgres.New(*cfg, hclog.NewNullLogger(), "/somewhere/else")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Shutdown(context.Background()) })
			return s
		}
		return open(), open
	}))
}

func TestS3StoreContract(t *testing.T) {
	sessionstest.RunStoreContract(t, backendFixture("s3/bucket", func(t *testing.T) (core.Sink, func() core.Sink) {
		srv := testbackend.S3(t)
		cfg := s3.DefaultConfig()
		cfg.Bucket, cfg.Endpoint, cfg.Region, cfg.PathStyle, cfg.Prefix = srv.Bucket, srv.Endpoint, srv.Region, true, "sessions/"
		env := []string{"AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + srv.SecretKey}
		open := func() core.Sink {
			s, err := s3.New(context.Background(), *cfg, hclog.NewNullLogger(), env, "/somewhere/else")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Shutdown(context.Background()) })
			return s
		}
		return open(), open
	}))
}

// TestMemFSIsWhatTheReaderReads guards the memory tree's folder listing,
// which the reader's listing depends on (sorted, folders and files).
func TestMemFSIsWhatTheReaderReads(t *testing.T) {
	m := &memfs.FS{}
	m.Add("/a/projects/p/b.jsonl", []byte("x\n"), testTime)
	m.Add("/a/projects/p/a.jsonl", []byte("y\n"), testTime)
	m.Add("/a/projects/p/a/subagents/agent-1.jsonl", []byte("z\n"), testTime)
	ents, err := m.ReadDir("/a/projects/p")
	if err != nil || len(ents) != 3 || ents[0].Name() != "a" || !ents[0].IsDir() || ents[1].Name() != "a.jsonl" || ents[2].Name() != "b.jsonl" {
		t.Fatalf("ReadDir: %v, %v", ents, err)
	}
	if _, err := m.Stat("/a/projects/q"); !os.IsNotExist(err) {
		t.Errorf("Stat of a missing folder: %v", err)
	}
}

var testTime = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
