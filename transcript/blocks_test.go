package transcript

import (
	"encoding/json"
	"testing"
)

func TestContentBlocks(t *testing.T) {
	for _, c := range []struct {
		msg   string
		types []string
		ok    bool
	}{
		{``, nil, true},
		{`null`, nil, true},
		{`{"role":"user"}`, nil, true},
		{`{"content":"hi"}`, []string{"text"}, true},
		{`{"content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t","name":"Bash","input":{}},7,{"type":"x-new","z":1}]}`, []string{"text", "tool_use", "", "x-new"}, true},
		{`{"content":{"type":"text"}}`, nil, false},
		{`[1,2]`, nil, false},
	} {
		bs, ok := ContentBlocks(json.RawMessage(c.msg))
		var types []string
		for _, b := range bs {
			types = append(types, b.Type)
		}
		if ok != c.ok || len(types) != len(c.types) {
			t.Errorf("%s: %v %v, want %v %v", c.msg, types, ok, c.types, c.ok)
			continue
		}
		for i := range types {
			if types[i] != c.types[i] {
				t.Errorf("%s: %v, want %v", c.msg, types, c.types)
			}
		}
	}
	bs, _ := ContentBlocks(json.RawMessage(`{"content":[{"type":"x-new","z":1}]}`))
	if string(bs[0].Raw) != `{"type":"x-new","z":1}` {
		t.Errorf("Raw = %s", bs[0].Raw)
	}
}
