package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/durable"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// A subagent's <agent>.meta.json (its toolUseId, parentAgentId, ...) lives
// beside its transcript in the local store; in a SessionStore it is an
// entry {"type":"agent_metadata", ...the file's fields} of the subagent's
// subpath, as the SDK's importSessionToStore appends it and its load turns
// it back into the file.

// typeAgentMetadata is the SDK's entry type for a subagent's meta file.
const typeAgentMetadata = "agent_metadata"

const agentMetaPrefix = `{"type":"` + typeAgentMetadata + `"`

// agentMetaEntry reads a subagent's meta file as the SDK's entry; ok is
// false when there is no meta file.
func agentMetaEntry(path string, ref core.SessionRef) (core.Entry, bool, error) {
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
	line := agentMetaPrefix + "}"
	if body := compact.Bytes()[1:]; !bytes.Equal(body, []byte("}")) {
		line = agentMetaPrefix + "," + string(body)
	}
	e, err := core.ParseEntry([]byte(line))
	if err != nil {
		return core.Entry{}, false, fmt.Errorf("%s: %w", path, err)
	}
	e.SessionID, e.AgentID = ref.SessionID, ref.AgentID
	return e, true, nil
}

// agentMetaFile is the meta file an agent_metadata entry stands for: the
// entry without its type (byte for byte when the entry was made by
// agentMetaEntry or the SDK puts type first).
func agentMetaFile(e core.Entry) ([]byte, error) {
	if rest, ok := bytes.CutPrefix(e.Raw, []byte(agentMetaPrefix)); ok {
		if bytes.Equal(rest, []byte("}")) {
			return []byte("{}"), nil
		}
		if len(rest) > 0 && rest[0] == ',' {
			return append([]byte("{"), rest[1:]...), nil
		}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(e.Raw, &m); err != nil {
		return nil, fmt.Errorf("agent_metadata entry: %w", err)
	}
	delete(m, "type")
	return json.Marshal(m)
}

// splitAgentMeta takes a subagent transcript's agent_metadata entries out
// of entries; the last one is its meta file.
func splitAgentMeta(entries []core.Entry) (rest []core.Entry, meta *core.Entry) {
	rest = entries[:0:0]
	for i := range entries {
		if entries[i].Type == typeAgentMetadata {
			meta = &entries[i]
			continue
		}
		rest = append(rest, entries[i])
	}
	return rest, meta
}

// writeAgentMeta writes a subagent's meta file from its agent_metadata
// entry, durably; it reports false when the file already held those bytes.
func writeAgentMeta(path string, e core.Entry) (bool, error) {
	b, err := agentMetaFile(e)
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

// localAgentFile is where the local store keeps a subagent's transcript
// (its folder found as the store finds it).
func localAgentFile(l jsonl.Layout, ref core.SessionRef) (string, error) {
	dir, err := l.FindSession(ref.SessionID, "")
	if err != nil {
		return "", err
	}
	if dir == "" {
		return "", fmt.Errorf("%w: session %s is not in %s", core.ErrNotFound, ref.SessionID, l.ProjectsDir())
	}
	return jsonl.AgentFile(dir, ref.SessionID, ref.AgentID), nil
}
