package main_test

import (
	"encoding/json"
	"testing"

	"github.com/e0dc0000/scribe/internal/peer"
)

// The SDK lists and reads a fork made by `scribe fork` as one of its own.
func TestForkIsListedAndReadByTheSDK(t *testing.T) {
	p := peer.Find(t)
	dir := t.TempDir()
	ids := p.GenFixture(t, dir, "/home/alice/src/shop")
	src := ids["withCustomTitleTag"]
	var out struct {
		SessionID  string `json:"sessionId"`
		ForkedFrom string `json:"forkedFrom"`
	}
	scribeJSON(t, runOpts{}, &out, "fork", "--config-dir", dir, src[:8], "--json")
	if out.ForkedFrom != src || out.SessionID == "" || out.SessionID == src {
		t.Fatalf("fork printed %+v", out)
	}
	var info *peer.SessionInfo
	for _, s := range p.List(t, dir, "") {
		if s.SessionID == out.SessionID {
			s := s
			info = &s
		}
	}
	if info == nil || info.Summary != "README work (fork)" || info.CustomTitle != "README work (fork)" {
		t.Fatalf("SDK lists the fork as %+v", info)
	}
	srcMsgs := p.Messages(t, dir, src, "", false)
	forkMsgs := p.Messages(t, dir, out.SessionID, "", false)
	if len(forkMsgs) != len(srcMsgs) || len(forkMsgs) == 0 {
		t.Fatalf("fork has %d messages, source %d", len(forkMsgs), len(srcMsgs))
	}
	for i := range srcMsgs {
		var a, b struct {
			Type    string          `json:"type"`
			UUID    string          `json:"uuid"`
			Message json.RawMessage `json:"message"`
		}
		_ = json.Unmarshal(srcMsgs[i], &a)
		_ = json.Unmarshal(forkMsgs[i], &b)
		if a.Type != b.Type || string(a.Message) != string(b.Message) || a.UUID == b.UUID {
			t.Fatalf("message %d: source %s %s, fork %s %s", i, a.Type, a.UUID, b.Type, b.UUID)
		}
	}
	// --keep-uuids: the same messages with the same uuids.
	scribeJSON(t, runOpts{}, &out, "fork", "--config-dir", dir, src, "--keep-uuids", "--title", "Branch", "--json")
	kept := peer.UUIDs(p.Messages(t, dir, out.SessionID, "", false))
	want := peer.UUIDs(srcMsgs)
	if len(kept) != len(want) || kept[0] != want[0] || kept[len(kept)-1] != want[len(want)-1] {
		t.Fatalf("--keep-uuids fork reads %v, source %v", kept, want)
	}
}
