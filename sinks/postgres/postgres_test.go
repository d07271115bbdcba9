package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/core/coretest"
	"github.com/e0dc0000/scribe/internal/testbackend"
	"github.com/e0dc0000/scribe/sinks/backend"
	"github.com/e0dc0000/scribe/sinks/backend/backendtest"
)

func TestMain(m *testing.M) { os.Exit(testbackend.Main(m)) }

func newStore(t *testing.T, url string) *Store {
	t.Helper()
	cfg := DefaultConfig()
	cfg.URL = url
	s, err := New(*cfg, hclog.NewNullLogger(), "/home/alice/src/shop")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return s
}

func TestSinkContract(t *testing.T) {
	coretest.RunSinkContract(t, coretest.SinkHarness{
		Sessions: true, Sidechains: true,
		New: func(t *testing.T) core.Sink { return newStore(t, testbackend.Postgres(t)) },
		Read: func(t *testing.T, s core.Sink, ref core.SessionRef) []string {
			// A second store on the same table: what the first made durable.
			return backendtest.RawLines(t, newStore(t, s.(*Store).cfg.URL), ref)
		},
	})
}

func TestLoaderContract(t *testing.T) {
	coretest.RunLoaderContract(t, coretest.LoaderHarness{
		Sidechains: true,
		New: func(t *testing.T, sessions []coretest.Session) core.Loader {
			s := newStore(t, testbackend.Postgres(t))
			for _, ss := range sessions {
				if err := s.Write(context.Background(), backendtest.Entries(t, ss.Lines)); err != nil {
					t.Fatal(err)
				}
			}
			return newStore(t, s.cfg.URL)
		},
	})
}

func TestListerContract(t *testing.T) {
	backendtest.RunListerContract(t, func(t *testing.T) backendtest.Store {
		s := newStore(t, testbackend.Postgres(t))
		return backendtest.Store{Sink: s, Lister: s}
	})
}

// Writing the same entries twice stores each uuid once; uuid-less
// metadata lines are kept each time (as a file append would).
func TestUUIDStoredOnce(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, testbackend.Postgres(t))
	const sid = "0565a3a4-0000-4000-8000-0000000000aa"
	lines := []string{
		coretest.Line(core.TypeUser, sid, "4f7e0000-0000-4000-8000-000000000001", ""),
		coretest.Line(core.TypeAssistant, sid, "4f7e0000-0000-4000-8000-000000000002", "4f7e0000-0000-4000-8000-000000000001"),
	}
	for range 2 {
		if err := s.Write(ctx, backendtest.Entries(t, lines)); err != nil {
			t.Fatal(err)
		}
	}
	got := backendtest.RawLines(t, s, core.SessionRef{SessionID: sid})
	if !reflect.DeepEqual(got, lines) {
		t.Fatalf("after two writes: %q", got)
	}
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM claude_session_entries`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows %d (%v), want 2", n, err)
	}
	if r := s.Report(); r["duplicates"] != 2 || r["inserted"] != 2 {
		t.Fatalf("report %v: want 2 inserted, 2 duplicates", r)
	}
}

// referenceTable creates the table exactly as the SDK's reference adapter
// does, without scribe's columns.
func referenceTable(t *testing.T, ctx context.Context, conn *pgx.Conn) {
	t.Helper()
	for _, q := range []string{
		`CREATE TABLE claude_session_entries (id BIGSERIAL PRIMARY KEY, project_key TEXT NOT NULL, session_id TEXT NOT NULL,
			subpath TEXT, entry JSONB NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT NOW())`,
		`CREATE INDEX claude_session_entries_key_idx ON claude_session_entries (project_key, session_id, subpath, id)`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
}

// referenceAppend writes rows as the reference adapter's append does: one
// multi-row INSERT of jsonb entries.
func referenceAppend(t *testing.T, ctx context.Context, conn *pgx.Conn, pk, sid string, subpath *string, lines []string) {
	t.Helper()
	var vals []string
	args := []any{pk, sid, subpath}
	for i, l := range lines {
		vals = append(vals, "($1, $2, $3, $"+itoa(4+i)+"::jsonb)")
		args = append(args, l)
	}
	q := `INSERT INTO claude_session_entries (project_key, session_id, subpath, entry) VALUES ` + strings.Join(vals, ", ")
	if _, err := conn.Exec(ctx, q, args...); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func deepLines(t *testing.T, lines []string) []any {
	t.Helper()
	var out []any
	for _, l := range lines {
		var v any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		out = append(out, v)
	}
	return out
}

// Rows the reference adapter wrote (no raw, no uuid column) are read by
// scribe's loader, deep-equal, after Start migrated the adapter's table;
// and scribe's rows are read by the adapter's load query deep-equal to the
// original lines.
func TestReferenceAdapterInterop(t *testing.T) {
	ctx := context.Background()
	url := testbackend.Postgres(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	referenceTable(t, ctx, conn)
	const cwd = "/home/alice/src/shop"
	pk := claudedir.SanitizePath(cwd)
	const sdkSession = "0565a3a4-0000-4000-8000-0000000000b1"
	sdkLines := []string{
		coretest.Line(core.TypeUser, sdkSession, "5a000000-0000-4000-8000-000000000001", ""),
		coretest.Line(core.TypeAssistant, sdkSession, "5a000000-0000-4000-8000-000000000002", "5a000000-0000-4000-8000-000000000001"),
		`{"type":"custom-title","customTitle":"from the sdk","sessionId":"` + sdkSession + `"}`,
	}
	referenceAppend(t, ctx, conn, pk, sdkSession, nil, sdkLines[:2])
	referenceAppend(t, ctx, conn, pk, sdkSession, nil, sdkLines[1:2]) // the SDK retried an append
	referenceAppend(t, ctx, conn, pk, sdkSession, nil, sdkLines[2:])
	sub := "subagents/agent-a1"
	side := strings.Replace(strings.ReplaceAll(sdkLines[0], "5a000000-", "5b000000-"), `"isSidechain":false`, `"isSidechain":true,"agentId":"a1"`, 1)
	referenceAppend(t, ctx, conn, pk, sdkSession, &sub, []string{side})

	s := newStore(t, url)
	if err := s.Start(ctx); err != nil {
		t.Fatalf("Start on the adapter's table: %v", err)
	}
	tr, err := s.Load(ctx, core.SessionRef{SessionID: sdkSession, CWD: cwd})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range tr.Entries {
		got = append(got, string(e.Raw))
	}
	if !reflect.DeepEqual(deepLines(t, got), deepLines(t, sdkLines)) {
		t.Fatalf("scribe read the adapter's rows as\n%q\nwant (deep-equal)\n%q", got, sdkLines)
	}
	if len(tr.Notes) != 2 || !strings.Contains(strings.Join(tr.Notes, "; "), "1 rows repeat a uuid") || s.Report()["rows_without_raw"] != 4 {
		t.Fatalf("rows without raw are not reported: notes %q, report %v", tr.Notes, s.Report())
	}
	side2 := backendtest.RawLines(t, s, core.SessionRef{SessionID: sdkSession, AgentID: "a1"})
	if !reflect.DeepEqual(deepLines(t, side2), deepLines(t, []string{side})) {
		t.Fatalf("subagent: %q", side2)
	}

	// The other way: scribe writes, the adapter's query loads.
	const ours = "0565a3a4-0000-4000-8000-0000000000b2"
	lines := []string{
		coretest.Line(core.TypeUser, ours, "5c000000-0000-4000-8000-000000000001", ""),
		coretest.Line(core.TypeAssistant, ours, "5c000000-0000-4000-8000-000000000002", "5c000000-0000-4000-8000-000000000001"),
		`{"type":"last-prompt","lastPrompt":"z before a","sessionId":"` + ours + `"}`,
	}
	if err := s.Write(ctx, backendtest.Entries(t, lines)); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `SELECT entry FROM claude_session_entries WHERE project_key=$1 AND session_id=$2 AND subpath IS NULL ORDER BY id`, pk, ours)
	if err != nil {
		t.Fatal(err)
	}
	var loaded []any
	for rows.Next() {
		var v any
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		loaded = append(loaded, v)
	}
	rows.Close()
	if !reflect.DeepEqual(loaded, deepLines(t, lines)) {
		t.Fatalf("the adapter's query loads\n%v\nwant\n%v", loaded, deepLines(t, lines))
	}
	// And scribe gives back its own rows byte for byte.
	if got := backendtest.RawLines(t, s, core.SessionRef{SessionID: ours}); !reflect.DeepEqual(got, lines) {
		t.Fatalf("scribe's own rows: %q", got)
	}
	// The listing sees both sessions, as the adapter's listSessions would.
	ls, err := s.ListSessions(ctx, pk)
	if err != nil || len(ls) != 2 {
		t.Fatalf("ListSessions: %v %v", ls, err)
	}
	if subs, err := s.ListSubagents(ctx, pk, sdkSession); err != nil || !reflect.DeepEqual(subs, []string{"a1"}) {
		t.Fatalf("ListSubagents: %v %v", subs, err)
	}
}

// A line with an escaped NUL (which jsonb refuses) is stored: raw keeps it,
// entry gets U+FFFD, and the repair is counted.
func TestNULInEntry(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, testbackend.Postgres(t))
	const sid = "0565a3a4-0000-4000-8000-0000000000c1"
	l := strings.Replace(coretest.Line(core.TypeUser, sid, "5d000000-0000-4000-8000-000000000001", ""), "hello from", `nul \u0000 here`, 1)
	if err := s.Write(ctx, backendtest.Entries(t, []string{l})); err != nil {
		t.Fatal(err)
	}
	if got := backendtest.RawLines(t, s, core.SessionRef{SessionID: sid}); len(got) != 1 || got[0] != l {
		t.Fatalf("got %q", got)
	}
	if s.Report()["nul_repaired"] != 1 {
		t.Fatalf("report %v", s.Report())
	}
}

// A session's metadata line, which has no cwd, lands in the project its
// entries are in, even from another store instance.
func TestMetadataFollowsSession(t *testing.T) {
	ctx := context.Background()
	url := testbackend.Postgres(t)
	a := newStore(t, url)
	const sid = "0565a3a4-0000-4000-8000-0000000000d1"
	first := coretest.Line(core.TypeUser, sid, "5e000000-0000-4000-8000-000000000001", "")
	if err := a.Write(ctx, backendtest.Entries(t, []string{first})); err != nil {
		t.Fatal(err)
	}
	b := newStore(t, url)
	b.workDir = "/somewhere/else"
	title := `{"type":"custom-title","customTitle":"t","sessionId":"` + sid + `"}`
	if err := b.Write(ctx, backendtest.Entries(t, []string{title})); err != nil {
		t.Fatal(err)
	}
	ls, err := b.ListSessions(ctx, "")
	if err != nil || len(ls) != 1 || ls[0].ProjectKey != claudedir.SanitizePath("/home/alice/src/shop") {
		t.Fatalf("listing %v %v", ls, err)
	}
	if got := backendtest.RawLines(t, b, core.SessionRef{SessionID: sid}); !reflect.DeepEqual(got, []string{first, title}) {
		t.Fatalf("got %q", got)
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "url") {
		t.Fatalf("no url: %v", err)
	}
	c.URL = "postgres://x@127.0.0.1/db"
	c.Table = "bad;name"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "table") {
		t.Fatalf("bad table: %v", err)
	}
	c.Table = "myschema.entries"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	var _ backend.Lister = (*Store)(nil)
}

// A line without a session stops the batch there: what came before it is
// stored, and the error says how many were taken.
func TestWriteStopsAtALineWithoutSession(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, testbackend.Postgres(t))
	const sid = "0565a3a4-0000-4000-8000-0000000000f1"
	ok1 := coretest.Line(core.TypeUser, sid, "5f000000-0000-4000-8000-000000000001", "")
	bad := `{"type":"custom-title","customTitle":"nobody's"}`
	ok2 := coretest.Line(core.TypeAssistant, sid, "5f000000-0000-4000-8000-000000000002", "5f000000-0000-4000-8000-000000000001")
	err := s.Write(ctx, backendtest.Entries(t, []string{ok1, bad, ok2}))
	var pe *core.PartialError
	if !errors.As(err, &pe) || pe.N != 1 || !core.IsPermanent(err) {
		t.Fatalf("Write: %v, want a permanent PartialError after 1 entry", err)
	}
	if got := backendtest.RawLines(t, s, core.SessionRef{SessionID: sid}); !reflect.DeepEqual(got, []string{ok1}) {
		t.Fatalf("stored %q, want the entry before the bad line", got)
	}
}

// A batch over one statement's bound is inserted in several, in order.
func TestLargeBatchInOrder(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, testbackend.Postgres(t))
	const sid = "0565a3a4-0000-4000-8000-0000000000f2"
	var lines []string
	parent := ""
	for i := range maxInsertRows + 10 {
		u := fmt.Sprintf("60000000-0000-4000-8000-%012d", i)
		lines = append(lines, coretest.Line(core.TypeUser, sid, u, parent))
		parent = u
	}
	if err := s.Write(ctx, backendtest.Entries(t, lines)); err != nil {
		t.Fatal(err)
	}
	if n := s.Report()["insert_statements"]; n != 2 {
		t.Fatalf("%d statements, want 2", n)
	}
	if got := backendtest.RawLines(t, s, core.SessionRef{SessionID: sid}); !reflect.DeepEqual(got, lines) {
		t.Fatalf("got %d lines (in order: %v), want %d", len(got), len(got) == len(lines), len(lines))
	}
}
