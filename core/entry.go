package core

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"

	"github.com/e0dc0000/scribe/jsonv"
)

// Entry is one transcript line. Raw holds the line exactly as it was read or
// will be written (without the trailing newline), so unknown fields and key
// order survive every round trip. The other fields are parsed from Raw, except
// that a host may fill SessionID and CWD for routing when the line lacks them.
type Entry struct {
	Raw []byte

	Type              string
	UUID              string
	ParentUUID        NullString
	LogicalParentUUID NullString
	SessionID         string
	AgentID           string
	IsSidechain       bool
	IsMeta            bool
	IsCompactSummary  bool
	Timestamp         string
	CWD               string
	// Subtype is a system entry's subtype, such as "compact_boundary".
	Subtype string
	// Role and StopReason come from the entry's message object.
	Role       string
	StopReason string

	// Seq is the host's position of the entry in its input (a line number,
	// counting from 1), not part of Raw; 0 when the host does not number its
	// input. The pipeline reports acknowledgements in it (Pipeline.Acked).
	Seq int64

	// Lease, when not nil, is the reference on the memory Raw lives in that
	// the entry holds (a LineReader's block, reused once every reference
	// is returned). Pipeline.Submit takes it over and releases it once no
	// guard, processor or sink reads Raw any more; a host that does not
	// submit the entry releases it itself.
	Lease *Lease
}

// NullString is a JSON string field that may be absent, null, or a string.
// parentUuid uses all three: null starts a chain, absent means the line is
// not part of one.
type NullString struct {
	Value   string
	Present bool // the key was in the object
	Null    bool // its value was null
}

// Valid reports whether the field holds a string.
func (n NullString) Valid() bool { return n.Present && !n.Null }

// Chain entry types: the rows linked through parentUuid.
const (
	TypeUser       = "user"
	TypeAssistant  = "assistant"
	TypeSystem     = "system"
	TypeAttachment = "attachment"
	TypeProgress   = "progress"
)

// SubtypeCompactBoundary is the subtype of the system entry a compaction
// writes: the conversation before it is summarized.
const SubtypeCompactBoundary = "compact_boundary"

// IsCompactBoundary reports whether e is a compaction's system entry.
func (e *Entry) IsCompactBoundary() bool {
	return e.Type == TypeSystem && e.Subtype == SubtypeCompactBoundary
}

// IsChain reports whether the entry is a conversation row linked by
// parentUuid (user, assistant, system, attachment, progress).
func (e *Entry) IsChain() bool {
	switch e.Type {
	case TypeUser, TypeAssistant, TypeSystem, TypeAttachment, TypeProgress:
		return true
	}
	return false
}

// IsMessage reports whether the entry is a user or assistant row: the rows
// whose arrival makes Claude Code create the session file.
func (e *Entry) IsMessage() bool { return e.Type == TypeUser || e.Type == TypeAssistant }

// IsMetadata reports whether the entry is a per-session record outside the
// chain (custom-title, tag, last-prompt, summary, ...).
func (e *Entry) IsMetadata() bool { return !e.IsChain() }

// Ref returns the session (or sidechain) the entry belongs to. Sidechain rows
// of a subagent carry the parent's sessionId plus their agentId.
func (e *Entry) Ref() SessionRef {
	r := SessionRef{SessionID: e.SessionID, CWD: e.CWD}
	if e.IsSidechain && e.AgentID != "" {
		r.AgentID = e.AgentID
	}
	return r
}

// ErrMalformed is returned by ParseEntry for a line that is not a JSON object.
var ErrMalformed = errors.New("malformed entry")

// ParseEntry parses one line. The line is copied, so the caller may reuse
// its buffer. A trailing "\n" (and "\r") is removed.
func ParseEntry(line []byte) (Entry, error) {
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	raw := make([]byte, len(line))
	copy(raw, line)
	e := Entry{Raw: raw}
	if err := e.parse(nil); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// ParseEntryOwned is ParseEntry without the copy: the entry keeps line.
func ParseEntryOwned(line []byte) (Entry, error) { return parseOwned(line, nil) }

// parseOwned is ParseEntryOwned with an interner for the values most
// entries repeat (nil: the last value of each, shared).
func parseOwned(line []byte, in *interner) (Entry, error) {
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	e := Entry{Raw: line}
	if err := e.parse(in); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// interner keeps one string per distinct sessionId and cwd that one
// goroutine parsed (Intake gives each parse worker its own): an input
// interleaving many sessions allocates each value once, and no two cores
// write the same memory, as they did with one shared last value.
type interner struct{ m map[string]string }

// maxInterned bounds an interner; past it, it starts again empty.
const maxInterned = 4096

func newInterner() *interner { return &interner{m: make(map[string]string)} }

// strInterned is str for a member whose value most entries repeat.
func strInterned(b []byte, v int, dst *string, in *interner) int {
	if b[v] == '"' {
		if end, esc := jsonv.StringEnd(b, v); end > 0 && !esc {
			raw := b[v+1 : end-1]
			if s, ok := in.m[string(raw)]; ok {
				*dst = s
				return end
			}
			end = str(b, v, dst)
			if len(in.m) >= maxInterned {
				clear(in.m)
			}
			in.m[*dst] = *dst
			return end
		}
	}
	return str(b, v, dst)
}

func (e *Entry) parse(in *interner) error {
	b := e.Raw
	i := jsonv.Space(b, 0)
	if i >= len(b) || b[i] != '{' {
		return fmt.Errorf("%w: %v", ErrMalformed, jsonv.Err(b, ^i))
	}
	// uuid, parentUuid and timestamp, when plain, are noted as spans of
	// b and copied together after the walk: one allocation, not three
	// (a later member of the same name wins, as it does for the others).
	var spans [3]span
	dsts := [3]*string{&e.UUID, &e.ParentUUID.Value, &e.Timestamp}
	end := jsonv.Object(b, i, func(key []byte, v int) int {
		switch keyName(key) {
		case "type":
			return strKnown(b, v, &e.Type)
		case "uuid":
			return strSpan(b, v, &e.UUID, &spans[0])
		case "parentUuid":
			e.ParentUUID.Present = true
			if e.ParentUUID.Null = b[v] == 'n'; e.ParentUUID.Null {
				spans[1] = span{}
				e.ParentUUID.Value = ""
				return jsonv.End(b, v)
			}
			return strSpan(b, v, &e.ParentUUID.Value, &spans[1])
		case "logicalParentUuid":
			return nullStr(b, v, &e.LogicalParentUUID)
		case "sessionId":
			if in != nil {
				return strInterned(b, v, &e.SessionID, in)
			}
			return strRepeated(b, v, &e.SessionID, &lastSessionID)
		case "agentId":
			return str(b, v, &e.AgentID)
		case "isSidechain":
			return boolean(b, v, &e.IsSidechain)
		case "isMeta":
			return boolean(b, v, &e.IsMeta)
		case "isCompactSummary":
			return boolean(b, v, &e.IsCompactSummary)
		case "timestamp":
			return strSpan(b, v, &e.Timestamp, &spans[2])
		case "cwd":
			if in != nil {
				return strInterned(b, v, &e.CWD, in)
			}
			return strRepeated(b, v, &e.CWD, &lastCWD)
		case "subtype":
			return strKnown(b, v, &e.Subtype)
		case "message":
			if b[v] == '{' {
				return jsonv.Object(b, v, func(k []byte, w int) int {
					switch keyName(k) {
					case "role":
						return strKnown(b, w, &e.Role)
					case "stop_reason":
						return strKnown(b, w, &e.StopReason)
					}
					return jsonv.End(b, w)
				})
			}
		}
		return jsonv.End(b, v)
	})
	if end >= 0 {
		joinSpans(b, spans[:], dsts[:])
		if j := jsonv.Space(b, end); j != len(b) {
			end = ^j
		}
	}
	if end < 0 {
		return fmt.Errorf("%w: %v", ErrMalformed, jsonv.Err(b, end))
	}
	return nil
}

// keyName is a member's key (as written, with its quotes) decoded; keys
// are plain in practice, so that is a view, not a copy.
func keyName(key []byte) string {
	in := key[1 : len(key)-1]
	if bytes.IndexByte(in, '\\') < 0 {
		return unsafe.String(unsafe.SliceData(in), len(in))
	}
	k, _ := jsonv.UnquoteInside(in)
	return k
}

// str reads the string at b[v] into dst ("" for another kind of value) and
// returns the offset after the value, or ^off where it is not valid.
func str(b []byte, v int, dst *string) int {
	var sp span
	end := strSpan(b, v, dst, &sp)
	if sp.set {
		*dst = string(b[sp.lo:sp.hi])
	}
	return end
}

// span is a plain string value's bytes, b[lo:hi], not yet copied.
type span struct {
	lo, hi int
	set    bool
}

// strSpan is str that, for a plain value, notes its span instead of
// copying it (joinSpans copies it); any other value clears the span.
func strSpan(b []byte, v int, dst *string, sp *span) int {
	*sp = span{}
	if b[v] != '"' {
		*dst = ""
		return jsonv.End(b, v)
	}
	end, esc := jsonv.StringEnd(b, v)
	if end < 0 {
		return end
	}
	if in := b[v+1 : end-1]; !esc && utf8.Valid(in) {
		*sp = span{lo: v + 1, hi: end - 1, set: true}
	} else {
		*dst, _ = jsonv.UnquoteInside(in)
	}
	return end
}

// joinSpans copies the noted spans into one new string and points each
// destination at its part.
func joinSpans(b []byte, spans []span, dsts []*string) {
	n := 0
	for _, sp := range spans {
		if sp.set {
			n += sp.hi - sp.lo
		}
	}
	if n == 0 {
		for i, sp := range spans {
			if sp.set {
				*dsts[i] = ""
			}
		}
		return
	}
	buf := make([]byte, 0, n)
	for _, sp := range spans {
		if sp.set {
			buf = append(buf, b[sp.lo:sp.hi]...)
		}
	}
	all := unsafe.String(unsafe.SliceData(buf), len(buf))
	off := 0
	for i, sp := range spans {
		if sp.set {
			l := sp.hi - sp.lo
			*dsts[i] = all[off : off+l]
			off += l
		}
	}
}

// knownValues are the values of type, subtype, role and stop_reason that
// transcripts hold most: strKnown takes them without an allocation.
var knownValues = [...]string{
	"user", "assistant", "system", "progress", "attachment", "summary", "file-history-snapshot",
	"queue-operation", "custom-title", "tag", "last-prompt", "agent-name", SubtypeCompactBoundary,
	"stop_hook_summary", "api_error", "turn_duration", "local_command", "informational",
	"tool_use", "end_turn", "stop_sequence", "max_tokens",
}

// strKnown is str for a member whose value is usually one of knownValues.
func strKnown(b []byte, v int, dst *string) int {
	if b[v] == '"' {
		if end, esc := jsonv.StringEnd(b, v); end > 0 && !esc {
			in := b[v+1 : end-1]
			for _, k := range knownValues {
				if string(in) == k {
					*dst = k
					return end
				}
			}
		}
	}
	return str(b, v, dst)
}

// lastSessionID and lastCWD hold the value last parsed of a member that
// most entries of an input repeat: strRepeated reuses it for equal bytes
// instead of allocating the same string once per entry.
var lastSessionID, lastCWD atomic.Pointer[string]

func strRepeated(b []byte, v int, dst *string, last *atomic.Pointer[string]) int {
	if b[v] == '"' {
		if end, esc := jsonv.StringEnd(b, v); end > 0 && !esc {
			if p := last.Load(); p != nil && *p == string(b[v+1:end-1]) {
				*dst = *p
				return end
			}
			end = str(b, v, dst)
			s := *dst
			last.Store(&s)
			return end
		}
	}
	return str(b, v, dst)
}

func nullStr(b []byte, v int, dst *NullString) int {
	dst.Present = true
	if b[v] == 'n' {
		dst.Null, dst.Value = true, ""
		return jsonv.End(b, v)
	}
	dst.Null = false
	return str(b, v, &dst.Value)
}

func boolean(b []byte, v int, dst *bool) int {
	*dst = b[v] == 't'
	return jsonv.End(b, v)
}

// ValidJSON reports whether b is one JSON value (with surrounding spaces).
func ValidJSON(b []byte) bool { return jsonv.Valid(b) }
