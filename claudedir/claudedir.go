// Package claudedir holds the naming and layout rules of Claude Code's
// config folder, as pure functions of names and paths: the project folder
// a working directory gets, where a session's transcript, subagents and
// sidecar files are, what a path below the projects folder is. It reads
// and writes nothing; the local store (sinks/jsonl), the backends
// (postgres, s3), watch and the session stores all follow these rules
// through it.
//
// The layout on disk:
//
//	<config dir>/
//	├── projects/<sanitized cwd>/
//	│   ├── <sessionId>.jsonl                               main transcript
//	│   └── <sessionId>/
//	│       ├── subagents/agent-<agentId>.jsonl             sidechains
//	│       ├── subagents/agent-<agentId>.meta.json         a subagent's meta file
//	│       └── scribe-lifecycle.jsonl                      scribe's sidecar
//	└── scribe/locks/<sessionId>.lock                       flock + holder pid
//
// An archive configured with encryption keeps every transcript as
// <name>.jsonl.sealed (SealedSuffix) with its extent record beside it
// (<name>.jsonl.sealed.extent, ExtentSuffix), and its data key in
// archive.key.age (ArchiveKeyName) beside projects/.
package claudedir

import (
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/e0dc0000/scribe/core"
)

// The names of Claude Code's layout below a project folder.
const (
	// TranscriptExt ends every transcript's name.
	TranscriptExt = ".jsonl"
	// SubagentsDir is the folder of a session's subagent transcripts, in
	// its session folder.
	SubagentsDir = "subagents"
	// AgentPrefix starts a subagent transcript's name (agent-<id>.jsonl).
	AgentPrefix = "agent-"
	// AgentMetaExt ends a subagent's meta file (agent-<id>.meta.json).
	AgentMetaExt = ".meta.json"
	// SidecarName is scribe's sidecar (lifecycle records and checkpoints)
	// in a session's folder.
	SidecarName = "scribe-lifecycle.jsonl"
	// SealedSuffix ends the name of every sealed transcript.
	SealedSuffix = ".sealed"
	// ExtentSuffix ends a sealed transcript's extent record, after
	// SealedSuffix.
	ExtentSuffix = ".extent"
	// ArchiveKeyName is a sealed archive's data key, sealed with age, in
	// the archive's folder beside projects/.
	ArchiveKeyName = "archive.key.age"
	// MaxProjectName is where Claude Code cuts a long project folder name
	// and adds a hash (SanitizePath).
	MaxProjectName = 200
	// ListWindow is the size of the head and the tail of a transcript the
	// SDK's listing reads (its 65536), never the whole file.
	ListWindow = 64 << 10
)

// SanitizePath returns the project folder name Claude Code derives from a
// working directory: every UTF-16 code unit outside [A-Za-z0-9] becomes '-';
// a name over 200 characters keeps its first 200 and gets '-' plus the
// base-36 Java string hash of the original path.
func SanitizePath(p string) string {
	out := SanitizeFull(p)
	if len(out) <= MaxProjectName {
		return out
	}
	var h int32
	for _, u := range utf16.Encode([]rune(p)) {
		h = h*31 + int32(u)
	}
	abs := int64(h)
	if abs < 0 {
		abs = -abs
	}
	return out[:MaxProjectName] + "-" + strconv.FormatInt(abs, 36)
}

// SanitizeFull is SanitizePath without the 200-character cut: every UTF-16
// unit outside [A-Za-z0-9] becomes '-' (a character outside the BMP, two
// units, becomes "--"). The SDK compares project paths by this name.
func SanitizeFull(p string) string {
	b := make([]byte, 0, len(p))
	for _, r := range p {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b = append(b, byte(r))
		case r >= 0x10000:
			b = append(b, '-', '-')
		default:
			b = append(b, '-')
		}
	}
	return string(b)
}

// IsSessionID reports whether s is a UUID, the only names Claude Code's
// readers accept for session files.
func IsSessionID(s string) bool { return core.IsUUID(s) }

// MainFile is a session's transcript in a project folder.
func MainFile(projectDir, sessionID string) string {
	return filepath.Join(projectDir, sessionID+TranscriptExt)
}

// AgentFile is a subagent's transcript.
func AgentFile(projectDir, sessionID, agentID string) string {
	return filepath.Join(SubagentDir(projectDir, sessionID), AgentPrefix+agentID+TranscriptExt)
}

// SidecarFile is a session's sidecar in a project folder.
func SidecarFile(projectDir, sessionID string) string {
	return filepath.Join(SessionDir(projectDir, sessionID), SidecarName)
}

// SessionDir is a session's folder in a project folder: its subagents,
// their meta files, tool results and scribe's sidecar.
func SessionDir(projectDir, sessionID string) string {
	return filepath.Join(projectDir, sessionID)
}

// SessionDirOf is the session folder beside a main transcript
// (<dir>/<id>.jsonl → <dir>/<id>), without Join's cleaning.
func SessionDirOf(mainFile string) string {
	return strings.TrimSuffix(mainFile, TranscriptExt)
}

// SubagentDir is the folder that holds a session's subagent transcripts
// (in folders below it too).
func SubagentDir(projectDir, sessionID string) string {
	return filepath.Join(projectDir, sessionID, SubagentsDir)
}

// AgentFileGlob is the filepath.Glob pattern of the subagent transcripts
// directly in a session's SubagentDir.
func AgentFileGlob(projectDir, sessionID string) string {
	return filepath.Join(SubagentDir(projectDir, sessionID), AgentPrefix+"*"+TranscriptExt)
}

// AgentMetaFile is the meta file (toolUseId, agentType, ...) beside a
// subagent's transcript: agent-<id>.jsonl → agent-<id>.meta.json.
func AgentMetaFile(agentFile string) string {
	return strings.TrimSuffix(agentFile, TranscriptExt) + AgentMetaExt
}

// MainFileID returns the session id a main transcript's file name carries
// (<uuid>.jsonl, as given: not lower-cased); ok is false for any other name.
func MainFileID(name string) (id string, ok bool) {
	id, ok = strings.CutSuffix(name, TranscriptExt)
	if !ok || !IsSessionID(id) {
		return "", false
	}
	return id, true
}

// AgentFileID returns the agent id of a subagent transcript's file name
// (agent-<id>.jsonl); ok is false for any other name.
func AgentFileID(name string) (id string, ok bool) {
	if !strings.HasPrefix(name, AgentPrefix) || !strings.HasSuffix(name, TranscriptExt) ||
		len(name) < len(AgentPrefix)+len(TranscriptExt) {
		return "", false
	}
	return name[len(AgentPrefix) : len(name)-len(TranscriptExt)], true
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
// <project>/...) is, with its session and agent ids. Dot files (temporary
// files, Claude Code's and scribe's), transcripts out of place and
// temporary (.tmp) files are PathNone.
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
	if len(parts) >= 4 && parts[2] == SubagentsDir {
		if id, ok := AgentFileID(base); ok {
			return PathAgent, session, id
		}
	}
	if strings.HasSuffix(base, TranscriptExt) || strings.Contains(base, ".tmp") {
		return PathNone, "", ""
	}
	return PathSidecar, session, ""
}
