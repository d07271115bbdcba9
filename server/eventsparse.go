package server

// A fast parser for the body of POST /events. encoding/json reads a batch
// five times over (validate the body, split it, validate each event,
// decode it, skip its payload) before core.ParseEntry reads each entry
// once more; this one walks the body once with jsonv, skipping each
// payload unchecked (jsonv.Skip) and leaving its checking to
// core.ParseEntry, which validates it anyway. It takes only the usual
// shapes of a body and gives up (ok false) on anything else or on any
// error: parseEvents then parses the body with encoding/json, as before,
// which also words the error. So it accepts exactly the bodies
// encoding/json accepts, with the same result.

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/e0dc0000/scribe/jsonv"
	"github.com/e0dc0000/scribe/server/wire"
)

// parseEventsFast parses body (trimmed) as parseEvents does; ok is false
// when it leaves the body to parseEvents.
func parseEventsFast(body []byte, session string) (steps []step, ok bool) {
	end := -1
	switch {
	case len(body) > 0 && body[0] == '[':
		end = events(body, 0, session, &steps)
	case len(body) > 0 && body[0] == '{':
		// {"events":[...]}; other members are allowed (and ignored).
		seen := false
		end = jsonv.Object(body, 0, func(key []byte, v int) int {
			k, plain := plainKey(key)
			switch {
			case !plain:
				return -1
			case k == "events":
				if seen || body[v] != '[' {
					return -1 // twice, or not an array: let encoding/json decide
				}
				seen = true
				return events(body, v, session, &steps)
			case strings.EqualFold(k, "events"):
				return -1 // encoding/json matches keys regardless of case
			}
			return jsonv.End(body, v)
		})
		if !seen {
			return nil, false
		}
	}
	if end != len(body) {
		return nil, false
	}
	if steps == nil {
		steps = []step{}
	}
	return steps, true
}

// eventKeys are the members of an event that parseEvents reads.
var eventKeys = [...]string{"type", "agent_id", "event_id", "state", "payload"}

// events parses the array of events at body[i]=='[' into *steps and
// returns the offset after it (negative when it gives up).
func events(body []byte, i int, session string, steps *[]step) int {
	n := 0
	return jsonv.Array(body, i, func(v int) int {
		if n >= maxBatchEvents || body[v] != '{' {
			return -1
		}
		var ev wire.Event
		end := jsonv.Object(body, v, func(key []byte, v int) int { return eventMember(body, key, v, &ev) })
		if end < 0 {
			return -1
		}
		raw := body[v:end]
		hasPayload := len(ev.Payload) > 0 && !bytes.Equal(ev.Payload, []byte("null"))
		// The payload is checked by core.ParseEntry when it is the entry;
		// otherwise check it here (the raw event, the entry then, is
		// checked whole).
		if len(ev.Payload) > 0 && (ev.Type == "state" || !hasPayload) && !jsonv.Valid(ev.Payload) {
			return -1
		}
		st, err := eventStep(n, raw, &ev, session)
		if err != nil {
			return -1
		}
		if *steps == nil {
			*steps = make([]step, 0, 64)
		}
		*steps = append(*steps, st)
		n++
		return end
	})
}

// eventMember reads the member key of an event, whose value is at
// body[v], into ev and returns the offset after the value (negative when
// it gives up).
func eventMember(body, key []byte, v int, ev *wire.Event) int {
	k, plain := plainKey(key)
	if !plain {
		return -1
	}
	switch k {
	case "type":
		return plainStr(body, v, &ev.Type)
	case "agent_id":
		return plainStr(body, v, &ev.AgentID)
	case "event_id":
		return plainStr(body, v, &ev.EventID)
	case "state":
		return plainStr(body, v, &ev.State)
	case "payload":
		end := jsonv.Skip(body, v) // checked by core.ParseEntry, or below
		if end <= v {
			return -1
		}
		ev.Payload = body[v:end]
		return end
	}
	for _, ek := range eventKeys {
		if strings.EqualFold(k, ek) {
			return -1
		}
	}
	return jsonv.End(body, v)
}

// plainKey returns a key as written without its quotes, and whether it
// has no escapes (any other is given up on).
func plainKey(key []byte) (string, bool) {
	in := key[1 : len(key)-1]
	return string(in), bytes.IndexByte(in, '\\') < 0
}

// plainStr decodes the string at body[i] into *dst when it has no
// escapes and valid UTF-8 (what encoding/json would decode to the same
// bytes); anything else is given up on.
func plainStr(body []byte, i int, dst *string) int {
	end, escaped := jsonv.StringEnd(body, i)
	if end < 0 || escaped || !utf8.Valid(body[i+1:end-1]) {
		return -1
	}
	*dst = string(body[i+1 : end-1])
	return end
}
