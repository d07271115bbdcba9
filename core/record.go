package core

// What scribe's own records (checkpoints, lifecycle, state changes, events)
// are written with: an ordered JSON object, name-based uuids and the
// timestamp layout Claude Code writes.

import "github.com/google/uuid"

// timestampLayout is a timestamp as Claude Code writes it (JavaScript's
// toISOString): UTC, milliseconds.
const timestampLayout = "2006-01-02T15:04:05.000Z"

// jsonObject writes a JSON object with its keys in the order they are
// added. Strings are escaped like JSON.stringify: no HTML escaping.
type jsonObject struct{ b []byte }

func (o *jsonObject) key(k string) {
	if len(o.b) == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.b = AppendJSString(o.b, k)
	o.b = append(o.b, ':')
}

func (o *jsonObject) str(k, v string) { o.key(k); o.b = AppendJSString(o.b, v) }

func (o *jsonObject) boolean(k string, v bool) {
	o.key(k)
	if v {
		o.b = append(o.b, "true"...)
	} else {
		o.b = append(o.b, "false"...)
	}
}

func (o *jsonObject) raw(k string, v []byte) { o.key(k); o.b = append(o.b, v...) }

func (o *jsonObject) bytes() []byte {
	if len(o.b) == 0 {
		return []byte("{}")
	}
	return append(o.b, '}')
}

// nameUUID returns a version 5 (SHA-1, name-based) uuid of name in
// scribe's namespace: the same name always gives the same uuid.
func nameUUID(name string) string { return uuid.NewSHA1(nameSpace, []byte(name)).String() }

// nameSpace is the namespace of nameUUID (itself a fixed random uuid).
var nameSpace = uuid.UUID{0x6b, 0x1e, 0x0c, 0x3a, 0x9d, 0x52, 0x4f, 0x0e, 0x8a, 0x41, 0x2c, 0x77, 0xd3, 0x90, 0x15, 0xe8}
