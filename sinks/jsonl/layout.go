package jsonl

import (
	"path/filepath"
	"strings"
)

// The names of Claude Code's layout below a project folder, one home for
// every package that reads or writes it (see the package comment).
const (
	transcriptExt = ".jsonl"
	subagentsDir  = "subagents"
	agentPrefix   = "agent-"
	agentMetaExt  = ".meta.json"
)

// SessionDir is a session's folder in a project folder: its subagents,
// their meta files, tool results and scribe's sidecar.
func SessionDir(projectDir, sessionID string) string {
	return filepath.Join(projectDir, sessionID)
}

// SessionDirOf is the session folder beside a main transcript
// (<dir>/<id>.jsonl → <dir>/<id>), without Join's cleaning.
func SessionDirOf(mainFile string) string {
	return strings.TrimSuffix(mainFile, transcriptExt)
}

// SubagentDir is the folder that holds a session's subagent transcripts
// (in folders below it too).
func SubagentDir(projectDir, sessionID string) string {
	return filepath.Join(projectDir, sessionID, subagentsDir)
}

// AgentFileGlob is the filepath.Glob pattern of the subagent transcripts
// directly in a session's SubagentDir.
func AgentFileGlob(projectDir, sessionID string) string {
	return filepath.Join(SubagentDir(projectDir, sessionID), agentPrefix+"*"+transcriptExt)
}

// AgentMetaFile is the meta file (toolUseId, agentType, ...) beside a
// subagent's transcript: agent-<id>.jsonl → agent-<id>.meta.json.
func AgentMetaFile(agentFile string) string {
	return strings.TrimSuffix(agentFile, transcriptExt) + agentMetaExt
}

// MainFileID returns the session id a main transcript's file name carries
// (<uuid>.jsonl, as given: not lower-cased); ok is false for any other name.
func MainFileID(name string) (id string, ok bool) {
	id, ok = strings.CutSuffix(name, transcriptExt)
	if !ok || !IsSessionID(id) {
		return "", false
	}
	return id, true
}

// AgentFileID returns the agent id of a subagent transcript's file name
// (agent-<id>.jsonl); ok is false for any other name.
func AgentFileID(name string) (id string, ok bool) {
	if !strings.HasPrefix(name, agentPrefix) || !strings.HasSuffix(name, transcriptExt) ||
		len(name) < len(agentPrefix)+len(transcriptExt) {
		return "", false
	}
	return name[len(agentPrefix) : len(name)-len(transcriptExt)], true
}

// PathKind is what a file below a projects folder is in Claude Code's
// layout (ClassifyPath).
type PathKind int

// Path kinds.
const (
	PathNone      PathKind = iota // nothing of a session: memory/, a project's own files, temporary files
	PathMain                      // <project>/<sessionId>.jsonl
	PathAgent                     // <project>/<sessionId>/subagents/**/agent-<id>.jsonl
	PathLifecycle                 // <project>/<sessionId>/scribe-lifecycle.jsonl (SidecarName)
	PathSidecar                   // any other file under <project>/<sessionId>/ (.meta.json, tool-results/)
)

// ClassifyPath says what the file at rel (a path below a projects folder,
// <project>/...) is, with its session and agent ids. Dot files (temporary files, Claude Code's and
// scribe's), transcripts out of place and temporary (.tmp) files are
// PathNone.
func ClassifyPath(rel string) (kind PathKind, session, agent string) {
	parts := strings.Split(rel, string(filepath.Separator))
	if len(parts) < 2 {
		return PathNone, "", ""
	}
	base := parts[len(parts)-1]
	if strings.HasPrefix(base, ".") {
		return PathNone, "", ""
	}
	if len(parts) == 2 {
		if id, ok := MainFileID(base); ok {
			return PathMain, id, ""
		}
		return PathNone, "", ""
	}
	session = parts[1]
	if !IsSessionID(session) {
		return PathNone, "", ""
	}
	if len(parts) == 3 && base == SidecarName {
		return PathLifecycle, session, ""
	}
	if len(parts) >= 4 && parts[2] == subagentsDir {
		if id, ok := AgentFileID(base); ok {
			return PathAgent, session, id
		}
	}
	if strings.HasSuffix(base, transcriptExt) || strings.Contains(base, ".tmp") {
		return PathNone, "", ""
	}
	return PathSidecar, session, ""
}
