package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/e0dc0000/scribe/core"
)

const sid = "0565a3a4-0000-4000-8000-000000000001"

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func configured(t *testing.T, dir string) *Loader {
	t.Helper()
	l := &Loader{}
	if err := l.Configure(context.Background(), []byte(`{"dir":"`+dir+`"}`)); err != nil {
		t.Fatal(err)
	}
	return l
}

func TestProjectOfTheCWDComesFirst(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "-a-other", sid+".jsonl"), `{"type":"user","uuid":"other","sessionId":"`+sid+`"}`+"\n")
	write(t, filepath.Join(dir, "-home-alice-shop", sid+".jsonl"), `{"type":"user","uuid":"mine","sessionId":"`+sid+`"}`+"\n")
	l := configured(t, dir)
	tr, err := l.Load(context.Background(), core.SessionRef{SessionID: sid, CWD: "/home/alice/shop"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Entries) != 1 || tr.Entries[0].UUID != "mine" {
		t.Fatalf("got %+v", tr.Entries)
	}
	tr, err = l.Load(context.Background(), core.SessionRef{SessionID: sid})
	if err != nil || tr.Entries[0].UUID != "other" {
		t.Fatalf("without a cwd, name order: %v %v", tr, err)
	}
}

func TestMalformedLinesAreSkippedWithNotes(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, sid+".jsonl"),
		`{"type":"user","uuid":"u1","sessionId":"`+sid+`"}`+"\n\nnot json\n"+`{"type":"assistant","uuid":"u2","sessionId":"`+sid+`"}`+"\n"+`{"type":"user","uu`)
	tr, err := configured(t, dir).Load(context.Background(), core.SessionRef{SessionID: sid})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Entries) != 2 || len(tr.Notes) != 2 || !strings.Contains(tr.Notes[0], ":3: skipped") {
		t.Fatalf("entries %d, notes %q", len(tr.Entries), tr.Notes)
	}
}

func TestBadIDsAndMisses(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "secret.jsonl"), "{}\n")
	l := configured(t, dir)
	for _, ref := range []core.SessionRef{{SessionID: "../secret"}, {SessionID: sid, AgentID: "../../x"}, {SessionID: ""}} {
		if _, err := l.Load(context.Background(), ref); err == nil || errors.Is(err, core.ErrNotFound) {
			t.Errorf("%+v: %v, want a refusal", ref, err)
		}
	}
	if _, err := l.Load(context.Background(), core.SessionRef{SessionID: sid}); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("miss: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []string{`{}`, `{"dir":"relative"}`, `{"dir":"/nonexistent/scribe"}`, `{"dir":"/","x":1}`} {
		if err := (&Loader{}).Configure(context.Background(), []byte(c)); err == nil {
			t.Errorf("%s: accepted", c)
		}
	}
}
