package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/e0dc0000/scribe/core"
)

// layer returns what a file over the built-in configuration says: base's
// settings with over's replacing them one by one, over's blocks merged with
// base's of the same kind and ID (in over's order, then base's other blocks
// in base's order), and the server blocks merged. Neither input is changed.
func layer(base, over *parsed) *parsed {
	out := &parsed{values: map[string]fileValue{}, broken: map[string]bool{}}
	for k, v := range base.values {
		out.values[k] = v
	}
	for k, v := range over.values {
		out.values[k] = v
	}
	for k := range base.broken {
		out.broken[k] = true
	}
	for k := range over.broken {
		out.broken[k] = true
	}
	merged := map[string]bool{}
	for _, c := range over.components {
		if b, ok := findComponent(base.components, c.Kind, c.ID); ok {
			c = mergeComponent(b, c)
			merged[refKey(c.Kind, c.ID)] = true
		}
		out.components = append(out.components, c)
	}
	for _, c := range base.components {
		if !merged[refKey(c.Kind, c.ID)] && !out.broken[refKey(c.Kind, c.ID)] {
			out.components = append(out.components, c)
		}
	}
	out.usage = base.usage
	if over.usage != nil {
		out.usage = over.usage
	}
	switch {
	case base.server != nil && over.server != nil:
		s := mergeComponent(*base.server, *over.server)
		out.server = &s
	case over.server != nil:
		out.server = over.server
	default:
		out.server = base.server
	}
	return out
}

// refKey names a block by kind and ID, for sets of blocks.
func refKey(kind core.Kind, id core.ID) string { return string(kind) + " " + id.String() }

func findComponent(list []Component, kind core.Kind, id core.ID) (Component, bool) {
	for _, c := range list {
		if c.Kind == kind && c.ID == id {
			return c, true
		}
	}
	return Component{}, false
}

// mergeComponent lays over's attributes over base's: an attribute over
// gives replaces base's whole (with its positions); base's others stay, in
// their place. The block's position is over's.
func mergeComponent(base, over Component) Component {
	out := Component{Kind: over.Kind, ID: over.ID, Range: over.Range, attrs: map[string]Pos{}}
	bv, ov := bodyValues(base.Body), bodyValues(over.Body)
	for _, k := range base.keys {
		if _, replaced := ov[k]; !replaced {
			out.keys = append(out.keys, k)
		}
	}
	for _, k := range over.keys {
		out.keys = append(out.keys, k)
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range out.keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		name, _ := json.Marshal(k)
		buf.Write(name)
		buf.WriteByte(':')
		if v, ok := ov[k]; ok {
			buf.Write(v)
		} else {
			buf.Write(bv[k])
		}
	}
	buf.WriteByte('}')
	out.Body = json.RawMessage(buf.Bytes())
	for p, pos := range base.attrs {
		top, _, _ := strings.Cut(p, ".")
		if _, replaced := ov[top]; !replaced {
			out.attrs[p] = pos
		}
	}
	for p, pos := range over.attrs {
		out.attrs[p] = pos
	}
	return out
}

// bodyValues splits a block body (a JSON object written by blockBody) into
// its attributes.
func bodyValues(body json.RawMessage) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(body)) > 0 {
		// blockBody writes valid JSON; a zero Component has no body.
		_ = json.Unmarshal(body, &m)
	}
	return m
}

// persistenceWarnings warns when the effective pipeline.guards leaves out
// guards the built-in configuration runs: then nothing stops recording
// when NODE_ENV=test, --no-session-persistence or cleanup_period_days = 0
// say it should not.
func persistenceWarnings(builtin, guards []core.ID, o origin) []*Error {
	var missing []string
	for _, id := range builtin {
		if !slices.Contains(guards, id) {
			missing = append(missing, id.String())
		}
	}
	if len(missing) == 0 || o.builtin() {
		return nil
	}
	what := "the built-in persistence guards " + strings.Join(missing, ", ")
	if len(missing) == 1 {
		what = "the built-in persistence guard " + missing[0]
	}
	return []*Error{o.errorf(-1, "pipeline.guards leaves out %s: entries are recorded even when %s",
		what, "NODE_ENV=test, CLAUDE_CODE_SKIP_PROMPT_HISTORY, --no-session-persistence or cleanup_period_days = 0 say not to")}
}

// String names the origin for Config.Origin.
func (o origin) String() string {
	switch {
	case o.builtin():
		return BuiltinOrigin
	case o.source != "":
		return o.source
	}
	return o.pos.String()
}

// builtin reports whether the value is the built-in configuration's.
func (o origin) builtin() bool {
	return o.source == BuiltinOrigin || (o.source == "" && o.pos.File == DefaultName)
}

// describeRefs lists declared blocks for an unknown-reference message.
func describeRefs(kind core.Kind, declared []string) string {
	if len(declared) == 0 {
		return fmt.Sprintf("no %s blocks are declared", kind)
	}
	return fmt.Sprintf("declared %ss: %s", kind, strings.Join(declared, ", "))
}
