// Package agentmeta moves a subagent's metadata between the local store,
// where it is the file <agent>.meta.json beside the subagent's transcript
// (its toolUseId, parentAgentId, ...), and a SessionStore, where it is an
// entry {"type":"agent_metadata", ...the file's fields} of the subagent's
// subpath, as the SDK's importSessionToStore appends it and its load turns
// it back into the file.
package agentmeta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/sinks/backend"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// Entry reads a subagent's meta file as the SDK's entry; ok is
// false when there is no meta file.
func Entry(path string, ref core.SessionRef) (core.Entry, bool, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return core.Entry{}, false, nil
	}
	if err != nil {
		return core.Entry{}, false, fmt.Errorf("read %s: %w", path, err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil || !bytes.HasPrefix(compact.Bytes(), []byte("{")) {
		return core.Entry{}, false, fmt.Errorf("%s is not a JSON object: %v", path, err)
	}
	line := backend.AgentMetaPrefix + "}"
	if body := compact.Bytes()[1:]; !bytes.Equal(body, []byte("}")) {
		line = backend.AgentMetaPrefix + "," + string(body)
	}
	e, err := core.ParseEntry([]byte(line))
	if err != nil {
		return core.Entry{}, false, fmt.Errorf("%s: %w", path, err)
	}
	e.SessionID, e.AgentID = ref.SessionID, ref.AgentID
	return e, true, nil
}

// Write writes a subagent's meta file from its agent_metadata
// entry, durably; it reports false when the file already held those bytes.
func Write(path string, e core.Entry) (bool, error) {
	b, err := backend.AgentMetaFile(e)
	if err != nil {
		return false, err
	}
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		return false, nil
	}
	// 0600 from the start, as Claude Code makes its files.
	_, err = durable.Replace(path, durable.Options{Perm: 0o600}, func(w io.Writer) error { _, err := w.Write(b); return err })
	if err != nil {
		return false, fmt.Errorf("write %s: %w", path, err)
	}
	return true, nil
}

// LocalAgentFile is where the local store keeps a subagent's transcript
// (its folder found as the store finds it).
func LocalAgentFile(l jsonl.Layout, ref core.SessionRef) (string, error) {
	dir, err := l.FindSession(ref.SessionID, "")
	if err != nil {
		return "", err
	}
	if dir == "" {
		return "", fmt.Errorf("%w: session %s is not in %s", core.ErrNotFound, ref.SessionID, l.ProjectsDir())
	}
	return claudedir.AgentFile(dir, ref.SessionID, ref.AgentID), nil
}
