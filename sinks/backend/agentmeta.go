package backend

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/e0dc0000/scribe/core"
)

// A subagent's <agent>.meta.json (its toolUseId, parentAgentId, ...) lives
// beside its transcript in the local store; in a SessionStore it is an
// entry {"type":"agent_metadata", ...the file's fields} of the subagent's
// subpath, as the SDK's importSessionToStore appends it and its load turns
// it back into the file.

// TypeAgentMetadata is the SDK's entry type for a subagent's meta file.
const TypeAgentMetadata = "agent_metadata"

// AgentMetaPrefix is how an agent_metadata entry made by scribe starts.
const AgentMetaPrefix = `{"type":"` + TypeAgentMetadata + `"`

// AgentMetaFile is the meta file an agent_metadata entry stands for: the
// entry without its type (byte for byte when the entry was made by
// the command line's agentMetaEntry or the SDK puts type first).
func AgentMetaFile(e core.Entry) ([]byte, error) {
	if rest, ok := bytes.CutPrefix(e.Raw, []byte(AgentMetaPrefix)); ok {
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

// SplitAgentMeta takes a subagent transcript's agent_metadata entries out
// of entries; the last one is its meta file.
func SplitAgentMeta(entries []core.Entry) (rest []core.Entry, meta *core.Entry) {
	rest = entries[:0:0]
	for i := range entries {
		if entries[i].Type == TypeAgentMetadata {
			meta = &entries[i]
			continue
		}
		rest = append(rest, entries[i])
	}
	return rest, meta
}
