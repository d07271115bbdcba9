package server

// A fast parser for the body of POST /events. encoding/json reads a batch
// five times over (validate the body, split it, validate each event,
// decode it, skip its payload) before core.ParseEntry reads each entry
// once more; this one walks the body once, finding where each value ends,
// and leaves the checking of each entry to core.ParseEntry, which
// validates it anyway. It takes only the usual shapes of a body and gives
// up (ok false) on anything else or on any error: parseEvents then parses
// the body with encoding/json, as before, which also words the error. So
// it accepts exactly the bodies encoding/json accepts, with the same
// result.

import (
	"bytes"
	"encoding/binary"
	"strings"
	"unicode/utf8"

	"github.com/e0dc0000/scribe/core"
)

// parseEventsFast parses body (trimmed) as parseEvents does; ok is false
// when it leaves the body to parseEvents.
func parseEventsFast(body []byte, session string) (steps []step, ok bool) {
	p := &evParser{b: body}
	switch {
	case len(body) > 0 && body[0] == '[':
		end, ok := p.events(0, session, &steps)
		if !ok || end != len(body) {
			return nil, false
		}
	case len(body) > 0 && body[0] == '{':
		// {"events":[...]}; other members are allowed (and ignored).
		seen := false
		end, ok := p.object(0, func(key []byte, v int) (int, bool) {
			if string(key) == "events" {
				if seen || p.b[v] != '[' {
					return 0, false // twice, or not an array: let encoding/json decide
				}
				seen = true
				return p.events(v, session, &steps)
			}
			if strings.EqualFold(string(key), "events") {
				return 0, false // encoding/json matches keys regardless of case
			}
			return p.skipChecked(v)
		})
		if !ok || end != len(body) || !seen {
			return nil, false
		}
	default:
		return nil, false
	}
	if steps == nil {
		steps = []step{}
	}
	return steps, true
}

// eventKeys are the members of an event that parseEvents reads.
var eventKeys = [...]string{"type", "agent_id", "event_id", "state", "payload"}

// events parses the array of events at b[i]=='[' into *steps and returns
// the offset after it.
func (p *evParser) events(i int, session string, steps *[]step) (int, bool) {
	body := p.b
	i = p.ws(i + 1)
	if i < len(body) && body[i] == ']' {
		return i + 1, true
	}
	*steps = make([]step, 0, 64)
	for n := 0; ; n++ {
		if n >= maxBatchEvents || i >= len(body) || body[i] != '{' {
			return 0, false
		}
		var ev event
		end, ok := p.object(i, func(key []byte, v int) (int, bool) {
			switch string(key) {
			case "type":
				return p.plainStr(v, &ev.Type)
			case "agent_id":
				return p.plainStr(v, &ev.AgentID)
			case "event_id":
				return p.plainStr(v, &ev.EventID)
			case "state":
				return p.plainStr(v, &ev.State)
			case "payload":
				end, ok := p.skip(v)
				if !ok || end == v {
					return 0, false
				}
				ev.Payload = p.b[v:end]
				return end, true
			}
			for _, k := range eventKeys {
				if strings.EqualFold(string(key), k) {
					return 0, false
				}
			}
			return p.skipChecked(v)
		})
		if !ok {
			return 0, false
		}
		raw := body[i:end]
		hasPayload := len(ev.Payload) > 0 && !bytes.Equal(ev.Payload, []byte("null"))
		// The payload is checked by core.ParseEntry when it is the entry;
		// otherwise check it here (the raw event, the entry then, is
		// checked whole).
		if len(ev.Payload) > 0 && (ev.Type == "state" || !hasPayload) && !core.ValidJSON(ev.Payload) {
			return 0, false
		}
		st, err := eventStep(n, raw, &ev, session)
		if err != nil {
			return 0, false
		}
		*steps = append(*steps, st)
		i = p.ws(end)
		if i >= len(body) {
			return 0, false
		}
		switch body[i] {
		case ',':
			i = p.ws(i + 1)
		case ']':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

type evParser struct{ b []byte }

func (p *evParser) ws(i int) int {
	for i < len(p.b) {
		switch p.b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// object walks the object at b[i]=='{' and returns the offset after it.
// member is called with each key (one without escapes; any other is given
// up on) and the offset of its value, and returns the offset after the
// value.
func (p *evParser) object(i int, member func(key []byte, v int) (int, bool)) (int, bool) {
	b := p.b
	i = p.ws(i + 1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		kend, plain := p.strEnd(i)
		if kend < 0 || !plain {
			return 0, false
		}
		key := b[i+1 : kend-1]
		i = p.ws(kend)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		i = p.ws(i + 1)
		if i >= len(b) {
			return 0, false
		}
		var ok bool
		if i, ok = member(key, i); !ok {
			return 0, false
		}
		i = p.ws(i)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i = p.ws(i + 1)
		case '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// plainStr decodes the string at b[i] into *dst when it has no escapes,
// no control characters and valid UTF-8 (what encoding/json would decode
// to the same bytes); anything else is given up on.
func (p *evParser) plainStr(i int, dst *string) (int, bool) {
	if p.b[i] != '"' {
		return 0, false
	}
	end, plain := p.strEnd(i)
	if end < 0 || !plain || !utf8.Valid(p.b[i+1:end-1]) {
		return 0, false
	}
	*dst = string(p.b[i+1 : end-1])
	return end, true
}

// strEnd returns the offset after the string at b[i]=='"' (-1 when it does
// not end, or holds a control character) and whether it is free of escapes.
func (p *evParser) strEnd(i int) (int, bool) {
	b := p.b
	plain := true
	j := i + 1
	for {
		for j+8 <= len(b) && !mayBeSpecial(binary.LittleEndian.Uint64(b[j:])) {
			j += 8
		}
		if j >= len(b) {
			return -1, false
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1, plain
		case c == '\\':
			plain = false
			j++ // the escaped byte; the escape itself is checked later, by the validators
		case c < 0x20:
			return -1, false
		}
		j++
	}
}

// mayBeSpecial reports whether one of the eight bytes of x may be '"',
// '\\' or a control character (never no for one that is).
func mayBeSpecial(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := x ^ (ones * '"')
	s := x ^ (ones * '\\')
	return ((q-ones)&^q|(s-ones)&^s|(x-ones*0x20)&^x)&highs != 0
}

// skip returns the offset after the value at b[i] without checking it
// (whoever uses it checks it). Inside strings it jumps from quote to
// quote (bytes.IndexByte), a quote preceded by an odd number of
// backslashes being escaped.
func (p *evParser) skip(i int) (int, bool) {
	b := p.b
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			j := i + 1
			for {
				k := bytes.IndexByte(b[j:], '"')
				if k < 0 {
					return 0, false
				}
				j += k
				n := 0
				for n < j-i-1 && b[j-1-n] == '\\' {
					n++
				}
				j++
				if n%2 == 0 {
					break
				}
			}
			i = j
			if depth == 0 {
				return i, true
			}
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i, true // the end of the enclosing value: a scalar before it
			}
			depth--
			i++
			if depth == 0 {
				return i, true
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				return i, true
			}
			i++
		default:
			i++
		}
	}
	if depth == 0 {
		return i, true
	}
	return 0, false
}

// skipChecked is skip for a value nobody else checks.
func (p *evParser) skipChecked(i int) (int, bool) {
	end, ok := p.skip(i)
	if !ok || end == i || !core.ValidJSON(p.b[i:end]) {
		return 0, false
	}
	return end, true
}
