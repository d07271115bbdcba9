package s3

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/hashicorp/go-hclog"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/internal/testbackend"
	"github.com/e0dc0000/scribe/sinks/backend/backendtest"
)

func TestMain(m *testing.M) { os.Exit(testbackend.Main(m)) }

func configFor(srv testbackend.S3Server) Config {
	c := DefaultConfig()
	c.Bucket, c.Endpoint, c.Region, c.PathStyle, c.Prefix = srv.Bucket, srv.Endpoint, srv.Region, true, "sessions/"
	return *c
}

func environ(srv testbackend.S3Server) []string {
	return []string{"AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + srv.SecretKey}
}

func newStore(t *testing.T, srv testbackend.S3Server, cfg Config) *Store {
	t.Helper()
	s, err := New(context.Background(), cfg, hclog.NewNullLogger(), environ(srv), "/home/alice/src/shop")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return s
}

type harnessSink struct {
	*Store
	srv testbackend.S3Server
}

func TestSinkContract(t *testing.T) {
	coretest.RunSinkContract(t, coretest.SinkHarness{
		Sessions: true, Sidechains: true,
		New: func(t *testing.T) core.Sink {
			srv := testbackend.S3(t)
			return harnessSink{newStore(t, srv, configFor(srv)), srv}
		},
		Read: func(t *testing.T, s core.Sink, ref core.SessionRef) []string {
			h := s.(harnessSink)
			return backendtest.RawLines(t, newStore(t, h.srv, h.cfg), ref)
		},
	})
}

func TestLoaderContract(t *testing.T) {
	coretest.RunLoaderContract(t, coretest.LoaderHarness{
		Sidechains: true,
		New: func(t *testing.T, sessions []coretest.Session) core.Loader {
			srv := testbackend.S3(t)
			cfg := configFor(srv)
			cfg.PartBytes = 256 << 10 // the large session spans parts
			s := newStore(t, srv, cfg)
			for _, ss := range sessions {
				if err := s.Write(context.Background(), backendtest.Entries(t, ss.Lines)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			return newStore(t, srv, cfg)
		},
	})
}

func TestListerContract(t *testing.T) {
	backendtest.RunListerContract(t, func(t *testing.T) backendtest.Store {
		srv := testbackend.S3(t)
		s := newStore(t, srv, configFor(srv))
		return backendtest.Store{Sink: s, Lister: s}
	})
}

// The keys follow the reference adapter's layout, and Flush stores what
// Write buffered: nothing is in the bucket before it.
func TestKeyLayoutAndFlush(t *testing.T) {
	ctx := context.Background()
	srv := testbackend.S3(t)
	s := newStore(t, srv, configFor(srv))
	const sid = "0565a3a4-0000-4000-8000-0000000000e1"
	main := coretest.Line(core.TypeUser, sid, "6a000000-0000-4000-8000-000000000001", "")
	side := strings.Replace(strings.ReplaceAll(main, "6a000000-", "6b000000-"), `"isSidechain":false`, `"isSidechain":true,"agentId":"a1"`, 1)
	if err := s.Write(ctx, backendtest.Entries(t, []string{main, side})); err != nil {
		t.Fatal(err)
	}
	keys := listAll(t, s)
	if len(keys) != 0 {
		t.Fatalf("before Flush the bucket holds %v", keys)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	keys = listAll(t, s)
	pk := claudedir.SanitizePath("/home/alice/src/shop")
	if len(keys) != 2 {
		t.Fatalf("keys %v", keys)
	}
	mainRE := "sessions/" + pk + "/" + sid + "/part-"
	sideRE := "sessions/" + pk + "/" + sid + "/subagents/agent-a1/part-"
	for _, k := range keys {
		name := filepath.Base(k)
		if !(strings.HasPrefix(k, mainRE) || strings.HasPrefix(k, sideRE)) || len(name) != len("part-1234567890123-abcdef.jsonl") {
			t.Fatalf("key %s is not in the reference layout", k)
		}
	}
	if r := s.Report(); r["parts"] != 2 || r["buffered_bytes"] != 0 {
		t.Fatalf("report %v", r)
	}
}

func listAll(t *testing.T, s *Store) []string {
	t.Helper()
	var keys []string
	err := s.listKeys(context.Background(), "", "", func(k string, _ time.Time) { keys = append(keys, k) })
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// Parts written by another client in the reference layout (one object per
// append, lines ending in newlines) are read in key order, a repeated uuid
// once; Compact merges them into one part, atomically, with the same load.
func TestReferencePartsAndCompact(t *testing.T) {
	ctx := context.Background()
	srv := testbackend.S3(t)
	cfg := configFor(srv)
	s := newStore(t, srv, cfg)
	const sid = "0565a3a4-0000-4000-8000-0000000000e2"
	pk := claudedir.SanitizePath("/home/alice/src/shop")
	var lines []string
	parent := ""
	for i := range 6 {
		typ := core.TypeUser
		if i%2 == 1 {
			typ = core.TypeAssistant
		}
		u := fmt.Sprintf("6c000000-0000-4000-8000-%012d", i)
		lines = append(lines, coretest.Line(typ, sid, u, parent))
		parent = u
	}
	c := srv.Client()
	put := func(name, body string) {
		key := "sessions/" + pk + "/" + sid + "/" + name
		if _, err := c.PutObject(ctx, putInput(srv.Bucket, key, body)); err != nil {
			t.Fatal(err)
		}
	}
	put("part-1700000000000-aaaaaa.jsonl", lines[0]+"\n"+lines[1]+"\n")
	put("part-1700000000001-0abcde.jsonl", lines[2]+"\n")
	put("part-1700000000001-zz0000.jsonl", lines[2]+"\n"+lines[3]+"\n") // a retried append
	put("part-1700000000005-x1y2z3.jsonl", lines[4]+"\n"+lines[5])      // no final newline
	ref := core.SessionRef{SessionID: sid}
	if got := backendtest.RawLines(t, s, ref); !reflect.DeepEqual(got, lines) {
		t.Fatalf("load\n%q\nwant\n%q", got, lines)
	}
	res, err := s.Compact(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if res.Parts != 4 || !strings.HasSuffix(res.Merged, "part-1700000000005-zzzzzz.jsonl") {
		t.Fatalf("compact: %+v", res)
	}
	if keys := listAll(t, s); len(keys) != 1 || keys[0] != res.Merged {
		t.Fatalf("after compact the bucket holds %v", keys)
	}
	if got := backendtest.RawLines(t, s, ref); !reflect.DeepEqual(got, lines) {
		t.Fatalf("load after compact\n%q\nwant\n%q", got, lines)
	}
	if res, err := s.Compact(ctx, ref); err != nil || res.Parts != 0 {
		t.Fatalf("second compact: %+v %v", res, err)
	}
	if _, err := s.Compact(ctx, core.SessionRef{SessionID: "0565a3a4-0000-4000-8000-0000000000ff"}); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("compact of a missing session: %v", err)
	}
}

// A store that cannot reach the server keeps the lines: Flush fails and
// says why, the failure is counted, and a later Flush stores them.
func TestFlushFailureKeepsLines(t *testing.T) {
	ctx := context.Background()
	srv := testbackend.S3(t)
	cfg := configFor(srv)
	bad := cfg
	bad.Bucket = "no-such-bucket-scribe"
	s := newStore(t, srv, bad)
	const sid = "0565a3a4-0000-4000-8000-0000000000e3"
	l := coretest.Line(core.TypeUser, sid, "6d000000-0000-4000-8000-000000000001", "")
	if err := s.Write(ctx, backendtest.Entries(t, []string{l})); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err == nil || !strings.Contains(err.Error(), "store a part") {
		t.Fatalf("Flush into a missing bucket: %v", err)
	}
	if r := s.Report(); r["put_errors"] != 1 || r["buffered_bytes"] != int64(len(l)+1) {
		t.Fatalf("report %v", r)
	}
	s.cfg.Bucket = cfg.Bucket // the bucket is back
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := backendtest.RawLines(t, s, core.SessionRef{SessionID: sid}); !reflect.DeepEqual(got, []string{l}) {
		t.Fatalf("got %q", got)
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	c.Bucket = "b"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.SecretAccessKey = "abc"
	if err := c.Validate(); !errors.Is(err, ErrInlineSecret) || !strings.Contains(err.Error(), "secret_access_key") {
		t.Fatalf("inline secret: %v", err)
	}
	c = DefaultConfig()
	c.Bucket, c.Endpoint = "b", "127.0.0.1:7070"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "endpoint") {
		t.Fatalf("an endpoint without a scheme: %v", err)
	}
	c = DefaultConfig()
	c.PartInterval = "soon"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "bucket") || !strings.Contains(err.Error(), "part_interval") {
		t.Fatalf("every problem: %v", err)
	}
}

func putInput(bucket, key, body string) *s3.PutObjectInput {
	return &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader(body), ContentLength: aws.Int64(int64(len(body)))}
}

// Credentials come from credentials_file (its profile) when it is set,
// not from the environment.
func TestCredentialsFile(t *testing.T) {
	ctx := context.Background()
	srv := testbackend.S3(t)
	cfg := configFor(srv)
	p := filepath.Join(t.TempDir(), "credentials")
	ini := "[scribe]\naws_access_key_id = " + srv.AccessKey + "\naws_secret_access_key = " + srv.SecretKey + "\n"
	if err := os.WriteFile(p, []byte(ini), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.CredentialsFile, cfg.Profile = p, "scribe"
	s, err := New(ctx, cfg, nil, []string{"AWS_ACCESS_KEY_ID=wrong", "AWS_SECRET_ACCESS_KEY=wrong"}, "/tmp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListSessions(ctx, ""); err != nil {
		t.Fatalf("with the credentials file: %v", err)
	}
	wrong, err := New(ctx, configFor(srv), nil, []string{"AWS_ACCESS_KEY_ID=wrong", "AWS_SECRET_ACCESS_KEY=wrong"}, "/tmp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wrong.ListSessions(ctx, ""); err == nil {
		t.Fatal("wrong credentials from the environment were accepted: the test proves nothing")
	}
}

// A buffer is stored as a part once it reaches part_bytes (during Write)
// and once part_interval passes (by the timer), without a Flush.
func TestPartsBySizeAndTime(t *testing.T) {
	ctx := context.Background()
	srv := testbackend.S3(t)
	cfg := configFor(srv)
	cfg.PartBytes, cfg.PartInterval = 200, "1h"
	s := newStore(t, srv, cfg)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	const sid = "0565a3a4-0000-4000-8000-0000000000e4"
	var lines []string
	for i := range 3 {
		lines = append(lines, coretest.Line(core.TypeUser, sid, fmt.Sprintf("6e000000-0000-4000-8000-%012d", i), ""))
	}
	for _, l := range lines {
		if err := s.Write(ctx, backendtest.Entries(t, []string{l})); err != nil {
			t.Fatal(err)
		}
	}
	if keys := listAll(t, s); len(keys) != 3 {
		t.Fatalf("with part_bytes 200, three writes of a longer line stored %v", keys)
	}

	timed := configFor(srv)
	timed.Prefix, timed.PartInterval = "timed/", "20ms"
	s2 := newStore(t, srv, timed)
	if err := s2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s2.Write(ctx, backendtest.Entries(t, lines)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for s2.Report()["parts"] == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := backendtest.RawLines(t, newStore(t, srv, timed), core.SessionRef{SessionID: sid}); !reflect.DeepEqual(got, lines) {
		t.Fatalf("the timer stored %q, want %q (no Flush was called)", got, lines)
	}
}

// A part is stored after the transcript's last part, even one stored
// with a time ahead of this machine's clock by another writer.
func TestPartAfterTheLastOne(t *testing.T) {
	ctx := context.Background()
	srv := testbackend.S3(t)
	cfg := configFor(srv)
	s := newStore(t, srv, cfg)
	const sid = "0565a3a4-0000-4000-8000-0000000000e5"
	pk := claudedir.SanitizePath("/home/alice/src/shop")
	first := coretest.Line(core.TypeUser, sid, "6f000000-0000-4000-8000-000000000001", "")
	future := time.Now().Add(24 * time.Hour).UnixMilli()
	key := "sessions/" + pk + "/" + sid + "/" + partName(future, "zzzzzz")
	if _, err := srv.Client().PutObject(ctx, putInput(srv.Bucket, key, first+"\n")); err != nil {
		t.Fatal(err)
	}
	second := coretest.Line(core.TypeAssistant, sid, "6f000000-0000-4000-8000-000000000002", "6f000000-0000-4000-8000-000000000001")
	if err := s.Write(ctx, backendtest.Entries(t, []string{second})); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := backendtest.RawLines(t, s, core.SessionRef{SessionID: sid}); !reflect.DeepEqual(got, []string{first, second}) {
		t.Fatalf("got %q", got)
	}
}
