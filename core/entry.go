package core

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"unicode/utf8"
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
	if err := e.parse(); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// ParseEntryOwned is ParseEntry without the copy: the entry keeps line.
func ParseEntryOwned(line []byte) (Entry, error) {
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	e := Entry{Raw: line}
	if err := e.parse(); err != nil {
		return Entry{}, err
	}
	return e, nil
}

func (e *Entry) parse() error {
	s := scanner{b: e.Raw}
	err := s.object(func(key []byte, vstart int) (int, error) {
		switch string(key) {
		case "type":
			return s.str(vstart, &e.Type)
		case "uuid":
			return s.str(vstart, &e.UUID)
		case "parentUuid":
			return s.nullStr(vstart, &e.ParentUUID)
		case "logicalParentUuid":
			return s.nullStr(vstart, &e.LogicalParentUUID)
		case "sessionId":
			return s.str(vstart, &e.SessionID)
		case "agentId":
			return s.str(vstart, &e.AgentID)
		case "isSidechain":
			return s.boolean(vstart, &e.IsSidechain)
		case "isMeta":
			return s.boolean(vstart, &e.IsMeta)
		case "isCompactSummary":
			return s.boolean(vstart, &e.IsCompactSummary)
		case "timestamp":
			return s.str(vstart, &e.Timestamp)
		case "cwd":
			return s.str(vstart, &e.CWD)
		case "subtype":
			return s.str(vstart, &e.Subtype)
		case "message":
			if vstart < len(s.b) && s.b[vstart] == '{' {
				return s.objectAt(vstart, 1, func(k []byte, vs int) (int, error) {
					switch string(k) {
					case "role":
						return s.str(vs, &e.Role)
					case "stop_reason":
						return s.str(vs, &e.StopReason)
					}
					return s.skip(vs, 2)
				})
			}
		}
		return s.skip(vstart, 1)
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return nil
}

// ValidJSON reports whether b is one JSON value (with surrounding spaces).
func ValidJSON(b []byte) bool {
	s := scanner{b: b}
	i := s.ws(0)
	end, err := s.skip(i, 0)
	if err != nil {
		return false
	}
	return s.ws(end) == len(b)
}

// scanner is a small validating JSON reader. It walks the top-level object
// of a line, decodes only the values asked for, and checks the grammar of
// the rest while skipping it, so that a torn or garbled line is refused
// without building a tree of the whole entry.
type scanner struct{ b []byte }

const maxDepth = 10000

var errDepth = errors.New("nesting too deep")

func (s *scanner) errAt(i int, what string) error {
	if i >= len(s.b) {
		return fmt.Errorf("unexpected end of line (want %s)", what)
	}
	return fmt.Errorf("offset %d: want %s, found %q", i, what, s.b[i])
}

func (s *scanner) ws(i int) int {
	for i < len(s.b) {
		switch s.b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// object scans the whole line as one object.
func (s *scanner) object(field func(key []byte, vstart int) (int, error)) error {
	i := s.ws(0)
	if i >= len(s.b) || s.b[i] != '{' {
		return s.errAt(i, "'{'")
	}
	end, err := s.objectAt(i, 0, field)
	if err != nil {
		return err
	}
	if j := s.ws(end); j != len(s.b) {
		return s.errAt(j, "end of line")
	}
	return nil
}

// objectAt scans the object starting at b[i]=='{' and returns the offset
// after its closing brace. field is called for each member with the value's
// offset and must return the offset after the value.
func (s *scanner) objectAt(i, depth int, field func(key []byte, vstart int) (int, error)) (int, error) {
	if depth > maxDepth {
		return 0, errDepth
	}
	i = s.ws(i + 1)
	if i < len(s.b) && s.b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(s.b) || s.b[i] != '"' {
			return 0, s.errAt(i, "a key")
		}
		kend, esc, err := s.strEnd(i)
		if err != nil {
			return 0, err
		}
		key := s.b[i+1 : kend-1]
		if esc {
			var k string
			if err := json.Unmarshal(s.b[i:kend], &k); err != nil {
				return 0, err
			}
			key = []byte(k)
		}
		i = s.ws(kend)
		if i >= len(s.b) || s.b[i] != ':' {
			return 0, s.errAt(i, "':'")
		}
		i = s.ws(i + 1)
		if i >= len(s.b) {
			return 0, s.errAt(i, "a value")
		}
		i, err = field(key, i)
		if err != nil {
			return 0, err
		}
		i = s.ws(i)
		if i >= len(s.b) {
			return 0, s.errAt(i, "',' or '}'")
		}
		switch s.b[i] {
		case ',':
			i = s.ws(i + 1)
		case '}':
			return i + 1, nil
		default:
			return 0, s.errAt(i, "',' or '}'")
		}
	}
}

// strEnd returns the offset after the string starting at b[i]=='"', and
// whether it holds escapes. Tool output makes strings most of a
// transcript's bytes: plain runs are checked eight bytes at a time, and a
// word holding a special byte jumps straight to it (escapes come every few
// dozen bytes in tool output, so no byte-by-byte walk to reach it).
func (s *scanner) strEnd(i int) (int, bool, error) {
	esc := false
	b := s.b
	j := i + 1
	for {
		for j+8 <= len(b) {
			// A byte of m is set for each '"', '\\' or control character
			// (and maybe for bytes after one, never before): the lowest
			// set byte is the first special one.
			x := binary.LittleEndian.Uint64(b[j:])
			q := x ^ (ones * '"')
			sl := x ^ (ones * '\\')
			m := ((q - ones) &^ q) | ((sl - ones) &^ sl) | ((x - ones*0x20) &^ x)
			if m &= highs; m != 0 {
				j += bits.TrailingZeros64(m) >> 3
				break
			}
			j += 8
		}
		if j >= len(b) {
			return 0, false, s.errAt(len(b), "'\"'")
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1, esc, nil
		case c == '\\':
			esc = true
			j++
			if j >= len(b) {
				return 0, false, s.errAt(j, "an escape")
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(b) {
					return 0, false, s.errAt(len(b), "four hex digits")
				}
				for k := 1; k <= 4; k++ {
					if !isHex(b[j+k]) {
						return 0, false, s.errAt(j+k, "a hex digit")
					}
				}
				j += 4
			default:
				return 0, false, s.errAt(j, "an escape")
			}
		case c < 0x20:
			return 0, false, s.errAt(j, "no control character in a string")
		}
		j++
	}
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// str decodes a string value into *dst; a value of another type is skipped
// and leaves *dst empty.
func (s *scanner) str(i int, dst *string) (int, error) {
	if s.b[i] != '"' {
		*dst = ""
		return s.skip(i, 1)
	}
	end, esc, err := s.strEnd(i)
	if err != nil {
		return 0, err
	}
	if !esc && utf8.Valid(s.b[i+1:end-1]) {
		*dst = string(s.b[i+1 : end-1])
		return end, nil
	}
	if err := json.Unmarshal(s.b[i:end], dst); err != nil {
		return 0, err
	}
	return end, nil
}

func (s *scanner) nullStr(i int, dst *NullString) (int, error) {
	dst.Present = true
	if s.b[i] == 'n' {
		dst.Null = true
		dst.Value = ""
		return s.literal(i, "null")
	}
	dst.Null = false
	return s.str(i, &dst.Value)
}

func (s *scanner) boolean(i int, dst *bool) (int, error) {
	switch s.b[i] {
	case 't':
		*dst = true
		return s.literal(i, "true")
	case 'f':
		*dst = false
		return s.literal(i, "false")
	}
	*dst = false
	return s.skip(i, 1)
}

func (s *scanner) literal(i int, lit string) (int, error) {
	if len(s.b)-i < len(lit) || string(s.b[i:i+len(lit)]) != lit {
		return 0, s.errAt(i, lit)
	}
	return i + len(lit), nil
}

// skip checks and steps over the value at b[i].
func (s *scanner) skip(i, depth int) (int, error) {
	if i >= len(s.b) {
		return 0, s.errAt(i, "a value")
	}
	switch c := s.b[i]; {
	case c == '"':
		end, _, err := s.strEnd(i)
		return end, err
	case c == '{':
		return s.objectAt(i, depth+1, func(_ []byte, vs int) (int, error) { return s.skip(vs, depth+1) })
	case c == '[':
		return s.array(i, depth+1)
	case c == 't':
		return s.literal(i, "true")
	case c == 'f':
		return s.literal(i, "false")
	case c == 'n':
		return s.literal(i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number(i)
	default:
		return 0, s.errAt(i, "a value")
	}
}

func (s *scanner) array(i, depth int) (int, error) {
	if depth > maxDepth {
		return 0, errDepth
	}
	i = s.ws(i + 1)
	if i < len(s.b) && s.b[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		i, err = s.skip(i, depth)
		if err != nil {
			return 0, err
		}
		i = s.ws(i)
		if i >= len(s.b) {
			return 0, s.errAt(i, "',' or ']'")
		}
		switch s.b[i] {
		case ',':
			i = s.ws(i + 1)
		case ']':
			return i + 1, nil
		default:
			return 0, s.errAt(i, "',' or ']'")
		}
	}
}

func (s *scanner) number(i int) (int, error) {
	b := s.b
	j := i
	if b[j] == '-' {
		j++
	}
	digits := func() int {
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j - k
	}
	if j < len(b) && b[j] == '0' {
		j++
	} else if digits() == 0 {
		return 0, s.errAt(j, "a digit")
	}
	if j < len(b) && b[j] == '.' {
		j++
		if digits() == 0 {
			return 0, s.errAt(j, "a digit")
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if digits() == 0 {
			return 0, s.errAt(j, "a digit")
		}
	}
	return j, nil
}
