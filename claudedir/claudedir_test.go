package claudedir

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
)

func TestLayoutNames(t *testing.T) {
	const id = "0d8e3c1a-5b7f-4c2e-9a1d-3f6b8e2c4a10"
	p := filepath.Join("p", "proj")
	if got, want := AgentFile(p, id, "a1"), filepath.Join(SubagentDir(p, id), "agent-a1.jsonl"); got != want {
		t.Errorf("AgentFile = %s, want %s", got, want)
	}
	if got := AgentMetaFile(AgentFile(p, id, "a1")); got != filepath.Join(p, id, "subagents", "agent-a1.meta.json") {
		t.Errorf("AgentMetaFile = %s", got)
	}
	if got := SessionDirOf(MainFile(p, id)); got != SessionDir(p, id) {
		t.Errorf("SessionDirOf = %s", got)
	}
	if m, _ := filepath.Match(AgentFileGlob(p, id), AgentFile(p, id, "x")); !m {
		t.Errorf("AgentFileGlob %s does not match AgentFile", AgentFileGlob(p, id))
	}
	for name, want := range map[string]string{"agent-a1.jsonl": "a1", "agent-.jsonl": "", "agent-a1.meta.json": "-", "a.jsonl": "-"} {
		got, ok := AgentFileID(name)
		if !ok {
			got = "-"
		}
		if got != want {
			t.Errorf("AgentFileID(%q) = %q, want %q", name, got, want)
		}
	}
	if _, ok := MainFileID("x.jsonl"); ok {
		t.Error("MainFileID accepts a name that is not a uuid")
	}
	j := func(s ...string) string { return filepath.Join(s...) }
	for _, c := range []struct {
		rel            string
		kind           PathKind
		session, agent string
	}{
		{j("proj", id+".jsonl"), PathMain, id, ""},
		{j("proj", "notes.jsonl"), PathNone, "", ""},
		{j("proj", id, "subagents", "agent-a1.jsonl"), PathAgent, id, "a1"},
		{j("proj", id, "subagents", "deep", "agent-a2.jsonl"), PathAgent, id, "a2"},
		{j("proj", id, "subagents", "agent-a1.meta.json"), PathSidecar, id, ""},
		{j("proj", id, SidecarName), PathLifecycle, id, ""},
		{j("proj", id, "tool-results", "t.txt"), PathSidecar, id, ""},
		{j("proj", id, "tool-results", ".t.txt"), PathNone, "", ""},
		{j("proj", id, "stray.jsonl"), PathNone, "", ""},
		{j("proj", id, "x.tmp1"), PathNone, "", ""},
		{j("proj", "memory", "MEMORY.md"), PathNone, "", ""},
		{"proj", PathNone, "", ""},
	} {
		k, s, a := ClassifyPath(c.rel)
		if k != c.kind || s != c.session || a != c.agent {
			t.Errorf("ClassifyPath(%s) = %v %q %q, want %v %q %q", c.rel, k, s, a, c.kind, c.session, c.agent)
		}
	}
}

func TestSanitizePath(t *testing.T) {
	long := "/home/alice/" + strings.Repeat("très-long-dossier/", 14) + "😀end"
	for _, tc := range []struct{ in, want string }{
		{"/home/alice/src/shop", "-home-alice-src-shop"},
		{"/a/b.c", "-a-b-c"},
		{"/Users/dain/workspace/danieldemmel.me-next", "-Users-dain-workspace-danieldemmel-me-next"},
		{"/x/😀", "-x---"},
		{"/x/é", "-x--"},
		// The SDK's own answer (peer.mjs sanitize) for this path.
		{long, "-home-alice" + strings.Repeat("-tr-s-long-dossier", 10) + "-tr-s-lon-kvkmau"},
	} {
		if got := SanitizePath(tc.in); got != tc.want {
			t.Errorf("SanitizePath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	got := SanitizePath(long)
	if len(got) <= 201 || got[200] != '-' {
		t.Errorf("long path: %q", got)
	}
}

func TestIsSessionID(t *testing.T) {
	if !IsSessionID("0565a3a4-1b2c-4d5e-8f90-0123456789ab") || IsSessionID("agent-c63fe96c") || IsSessionID("../x") {
		t.Error("IsSessionID")
	}
}

// SanitizeFull maps each UTF-16 unit of the path (as the SDK's JavaScript
// string holds it) to one byte, without converting the string.
func TestSanitizeFullIsPerUTF16Unit(t *testing.T) {
	perUnit := func(p string) string {
		var b strings.Builder
		for _, u := range utf16.Encode([]rune(p)) {
			if u < 0x80 && (u >= 'a' && u <= 'z' || u >= 'A' && u <= 'Z' || u >= '0' && u <= '9') {
				b.WriteByte(byte(u))
			} else {
				b.WriteByte('-')
			}
		}
		return b.String()
	}
	for _, p := range []string{"", "/a/b", "/x/😀é", "bad\xff\xfe utf8", "\U0010FFFF", strings.Repeat("ab/", 90) + "日本"} {
		if got, want := SanitizeFull(p), perUnit(p); got != want {
			t.Errorf("SanitizeFull(%q) = %q, want %q", p, got, want)
		}
	}
}
