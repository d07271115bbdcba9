// Package storekey is the key of a request to the Agent SDK's SessionStore
// routes of `scribe serve` (server/sessionstore.go describes them): the
// query's project_key, session_id and subpath, checked, and the name the
// server keeps the session under.
package storekey

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/ident"
)

const (
	// SubagentPrefix is what a subpath is: subagents/agent-<id>.
	SubagentPrefix = "subagents/agent-"
	// MaxProjectKey bounds a project key (the SDK cuts its own at 200
	// characters and adds a hash).
	MaxProjectKey = 512
	// MaxSessionID bounds a session id (the SDK's are UUIDs).
	MaxSessionID = 512
)

// Key is a SessionStore key, validated.
type Key struct {
	Project string
	ID      string // the session id as the client names it (a UUID in lower case)
	Session string // the name the store keeps it under (see server/sessionstore.go)
	// Pair is Name(Project, ID) for a session id that is its own name
	// first: the name when another project key has that one.
	Pair    string
	Agent   string // "" for the main transcript
	Subpath string // a subpath other than subagents/agent-<agent>
}

// truncate shortens s for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// validKeyPart reports whether v can be the part name of a key: 1 to max
// bytes of UTF-8 without control characters.
func validKeyPart(name, v string, maxLen int) error {
	switch {
	case v == "":
		return fmt.Errorf("%s is missing", name)
	case len(v) > maxLen:
		return fmt.Errorf("%s is %d bytes; at most %d", name, len(v), maxLen)
	case !utf8.ValidString(v):
		return fmt.Errorf("%s is not valid UTF-8", name)
	}
	for _, c := range v {
		if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) {
			return fmt.Errorf("%s %q: no control characters", name, truncate(v, 100))
		}
	}
	return nil
}

// validProjectKey reports whether p can be a project key.
func validProjectKey(p string) error {
	if err := validKeyPart("project_key", p, MaxProjectKey); err != nil {
		return err
	}
	if p == "." || p == ".." || strings.ContainsAny(p, `/\`) {
		return fmt.Errorf("project_key %q: no '/', '\\', \".\" or \"..\"", truncate(p, 100))
	}
	return nil
}

// Name is the name the server keeps the session of (project, id)
// under when id cannot be its own (see server/sessionstore.go): a UUID of
// version 8 (RFC 9562's custom version) made of the SHA-256 of both. The
// two parts hold no NUL, so the input is unambiguous; 122 bits of it make
// a collision out of reach.
func Name(project, id string) string {
	h := sha256.New()
	h.Write([]byte("scribe session_store\x00"))
	h.Write([]byte(project))
	h.Write([]byte{0})
	h.Write([]byte(id))
	var b [16]byte
	copy(b[:], h.Sum(nil))
	b[6] = b[6]&0x0f | 0x80 // version 8
	b[8] = b[8]&0x3f | 0x80 // the RFC variant
	x := hex.EncodeToString(b[:])
	return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}

// OwnName reports whether the session id id is kept under its own name:
// a UUID not of version 8.
func OwnName(id string) bool {
	return core.IsUUID(id) && id[14] != '8'
}

// Parse reads the key of a request from its query; withSession
// false reads only the project key, subpath false refuses a subpath.
func Parse(q url.Values, withSession, subpath bool) (Key, error) {
	// A parameter given twice is refused: read as its first value here and
	// its last by a proxy or a log, it would be two keys.
	for _, name := range []string{"project_key", "session_id", "subpath", "batch"} {
		if len(q[name]) > 1 {
			return Key{}, fmt.Errorf("%s is given %d times; once at most", name, len(q[name]))
		}
	}
	k := Key{Project: q.Get("project_key")}
	if err := validProjectKey(k.Project); err != nil {
		return k, err
	}
	if !withSession {
		return k, nil
	}
	id := q.Get("session_id")
	if err := validKeyPart("session_id", id, MaxSessionID); err != nil {
		return k, err
	}
	k.ID, k.Session = id, Name(k.Project, id)
	if OwnName(id) {
		// Its own name first, the pair's when another project key has it
		// (the server's resolveKey and bindKey).
		k.ID = strings.ToLower(id)
		k.Session, k.Pair = k.ID, Name(k.Project, k.ID)
	}
	if !q.Has("subpath") {
		return k, nil
	}
	sub := q.Get("subpath")
	agent, ok := strings.CutPrefix(sub, SubagentPrefix)
	switch {
	case !subpath:
		return k, errors.New("this route takes no subpath")
	case sub == "":
		return k, errors.New("subpath is empty: leave it out for the main transcript")
	case ok && ident.Token(agent, 64) && !strings.HasPrefix(agent, NestedAgent):
		k.Agent = agent
		return k, nil
	}
	if err := validSubpath(sub); err != nil {
		return k, err
	}
	// Any other subpath (the SDK's are opaque: subagents/workflows/<run>/
	// agent-<id>, …/journal) is stored as an agent named after its hash;
	// its name is kept beside its markers (see nameSubpath).
	sum := sha256.Sum256([]byte(sub))
	k.Agent, k.Subpath = NestedAgent+hex.EncodeToString(sum[:16]), sub
	return k, nil
}

// NestedAgent starts the agent name of a subpath other than
// subagents/agent-<id> (an agent id of the route cannot start so).
const NestedAgent = "_sp-"

// validSubpath reports whether sub can be a subpath: at most 512 bytes,
// '/'-separated segments of 1 to 128 letters, digits, '-', '_' and '.',
// none "." or "..".
func validSubpath(sub string) error {
	if len(sub) > MaxProjectKey {
		return fmt.Errorf("subpath is %d bytes; at most %d", len(sub), MaxProjectKey)
	}
	for _, seg := range strings.Split(sub, "/") {
		if seg == "." || seg == ".." || !ident.Token(strings.ReplaceAll(seg, ".", "_"), 128) {
			return fmt.Errorf("subpath %q: want '/'-separated segments of 1 to 128 letters, digits, '-', '_' and '.', none \".\" or \"..\"", truncate(sub, 100))
		}
	}
	return nil
}
