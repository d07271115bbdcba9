package jsonl

import (
	"path/filepath"
	"testing"
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
	if l := (Layout{ConfigDir: "c"}); l.ProjectFolder("-p") != filepath.Join("c", "projects", "-p") || l.ProjectFolder(SanitizePath("/p")) != l.ProjectDir("/p") {
		t.Errorf("ProjectFolder = %s", l.ProjectFolder("-p"))
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
