package core

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func TestParseEntryFields(t *testing.T) {
	line := `{"parentUuid":"p-1","logicalParentUuid":null,"isSidechain":true,"agentId":"a1b2","type":"assistant","message":{"model":"m","content":[{"type":"text","text":"}{\"role\":\"user\""}],"role":"assistant","stop_reason":"tool_use"},"uuid":"u-1","timestamp":"2026-01-10T11:00:02.267Z","isMeta":true,"cwd":"/home/al\u0069ce","sessionId":"s-1","extra":{"nested":[1,2.5e3,-0.1,true,false,null,"x"]}}` + "\r\n"
	e, err := ParseEntry([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := Entry{
		Raw:               []byte(strings.TrimRight(line, "\r\n")),
		Type:              "assistant",
		UUID:              "u-1",
		ParentUUID:        NullString{Value: "p-1", Present: true},
		LogicalParentUUID: NullString{Present: true, Null: true},
		SessionID:         "s-1",
		AgentID:           "a1b2",
		IsSidechain:       true,
		IsMeta:            true,
		Timestamp:         "2026-01-10T11:00:02.267Z",
		CWD:               "/home/alice",
		Role:              "assistant",
		StopReason:        "tool_use",
	}
	if string(e.Raw) != string(want.Raw) {
		t.Errorf("Raw = %q", e.Raw)
	}
	e.Raw, want.Raw = nil, nil
	if !reflect.DeepEqual(e, want) {
		t.Errorf("got  %+v\nwant %+v", e, want)
	}
	e.Raw = []byte(line)
	if got := e.Ref(); got.Key() != "s-1/agent-a1b2" {
		t.Errorf("Ref().Key() = %q", got.Key())
	}
}

func TestParentUUIDAbsentNullString(t *testing.T) {
	for _, tc := range []struct {
		line string
		want NullString
	}{
		{`{"type":"tag","tag":"x"}`, NullString{}},
		{`{"parentUuid":null,"type":"user"}`, NullString{Present: true, Null: true}},
		{`{"parentUuid":"abc","type":"user"}`, NullString{Present: true, Value: "abc"}},
	} {
		e, err := ParseEntry([]byte(tc.line))
		if err != nil {
			t.Fatal(err)
		}
		if e.ParentUUID != tc.want {
			t.Errorf("%s: ParentUUID = %+v, want %+v", tc.line, e.ParentUUID, tc.want)
		}
	}
}

func TestParseEntryRejectsMalformed(t *testing.T) {
	for _, line := range []string{
		``,
		`   `,
		`[1,2]`,
		`"x"`,
		`{"type":"user"`,
		`{"type":"user",}`,
		`{"type":"user"}}`,
		`{"type":"us` + "\x01" + `er"}`,
		`{"a":[1,,2]}`,
		`{"a":01}`,
		`{"a":tru}`,
		`{"a":"\x"}`,
		`{"a":"\u12"}`,
		`{"parentUuid":"p-1","type":"user","message":{"role":"user","content":"cut here`,
		`// Source: https://example.com`,
		`{"a":1} trailing`,
	} {
		if _, err := ParseEntry([]byte(line)); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseEntry(%q) = %v, want ErrMalformed", line, err)
		}
	}
}

// FuzzParseEntry checks the scanner agrees with encoding/json on what is a
// valid JSON object, and never panics.
func FuzzParseEntry(f *testing.F) {
	for _, s := range []string{
		`{"type":"user","uuid":"u","parentUuid":null}`,
		`{"a":[1,{"b":"c\"d"}],"message":{"role":"user"}}`,
		`{"a":-0.5e+3}`,
		`{"x":"\ud83d\ude00"}`,
		`{`, `{"a":}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := ParseEntry(b)
		trimmed := strings.TrimRight(string(b), "\r\n")
		body := strings.TrimLeft(trimmed, " \t\r\n")
		wantOK := json.Valid([]byte(trimmed)) && strings.HasPrefix(body, "{")
		if (err == nil) != wantOK {
			t.Fatalf("ParseEntry err=%v, but encoding/json says valid object=%v, for %q", err, wantOK, b)
		}
	})
}

func TestParseID(t *testing.T) {
	id, err := ParseID("jsonl/local")
	if err != nil || id != (ID{"jsonl", "local"}) || id.String() != "jsonl/local" {
		t.Fatalf("ParseID = %v, %v", id, err)
	}
	for _, bad := range []string{"", "jsonl", "/x", "x/", "a/b/c", "a b/c"} {
		if _, err := ParseID(bad); !errors.Is(err, ErrInvalidID) {
			t.Errorf("ParseID(%q) = %v, want ErrInvalidID", bad, err)
		}
	}
}

// The vectorized runs in strEnd must see a quote, a backslash or a control
// character at every offset.
func TestStringScanAtEveryOffset(t *testing.T) {
	for n := range 24 {
		pad := strings.Repeat("é", n/2) + strings.Repeat("a", n%2)
		for _, tc := range []struct {
			mid string
			ok  bool
		}{
			{`\"`, true}, {`\\`, true}, {`\u00e9`, true}, {"\t", false}, {"\x1f", false}, {`\q`, false},
		} {
			line := `{"type":"` + pad + tc.mid + pad + `x"}`
			e, err := ParseEntry([]byte(line))
			if (err == nil) != tc.ok {
				t.Fatalf("offset %d, %q: err %v, want ok=%v", n, tc.mid, err, tc.ok)
			}
			if tc.ok {
				var want struct{ Type string }
				if err := json.Unmarshal([]byte(line), &want); err != nil || e.Type != want.Type {
					t.Fatalf("offset %d, %q: Type %q, want %q (%v)", n, tc.mid, e.Type, want.Type, err)
				}
			}
		}
	}
}

// The members parsed without an allocation (strKnown, strRepeated) hold
// what str gives, line after line, whatever the previous line held: equal
// values, different ones, escapes, invalid UTF-8, values that are not
// strings.
func TestInternedMembersAreWhatStrGives(t *testing.T) {
	values := []string{`"user"`, `"assistant"`, `"us\u0065r"`, `"userx"`, `""`, `null`, `7`,
		`"/home/a"`, `"/home/b"`, `"/home/\u0061"`, "\"/home/\xff\"", `"0c1f0000-0000-4000-8000-000000000001"`,
		`"tool_use"`, `"end_turn"`, `"compact_boundary"`, `"x\"y"`}
	r := rand.New(rand.NewPCG(5, 6))
	for range 5000 {
		pick := func() string { return values[r.IntN(len(values))] }
		typ, sub, sid, cwd, role, stop := pick(), pick(), pick(), pick(), pick(), pick()
		line := `{"type":` + typ + `,"subtype":` + sub + `,"sessionId":` + sid + `,"cwd":` + cwd +
			`,"message":{"role":` + role + `,"stop_reason":` + stop + `}}`
		e, err := ParseEntry([]byte(line))
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		for _, c := range []struct {
			name, raw, got string
		}{{"type", typ, e.Type}, {"subtype", sub, e.Subtype}, {"sessionId", sid, e.SessionID}, {"cwd", cwd, e.CWD},
			{"role", role, e.Role}, {"stop_reason", stop, e.StopReason}} {
			var want string
			str([]byte(c.raw), 0, &want)
			if c.got != want {
				t.Fatalf("%s of %s = %q, str gives %q", c.name, line, c.got, want)
			}
		}
	}
}

// uuid, parentUuid and timestamp are copied together after the walk
// (joinSpans): each holds what str gives for the last member of its name,
// whatever came before it (a plain value, an escaped one, null, a number),
// through the interning parse too.
func TestSpanMembersAreWhatStrGives(t *testing.T) {
	values := []string{`"0c1f0000-0000-4000-8000-000000000001"`, `"u-2"`, `"u\u002d3"`, `""`, `null`, `7`,
		"\"\xffbad\"", `"2026-01-10T11:00:02.267Z"`, `"x\"y"`, `{"a":1}`}
	r := rand.New(rand.NewPCG(7, 8))
	in := newInterner()
	for range 20000 {
		var b strings.Builder
		b.WriteString(`{"type":"user"`)
		last := map[string]string{}
		for range 1 + r.IntN(5) {
			key := []string{"uuid", "parentUuid", "timestamp"}[r.IntN(3)]
			v := values[r.IntN(len(values))]
			last[key] = v
			b.WriteString(`,"` + key + `":` + v)
		}
		b.WriteString("}")
		line := b.String()
		for _, parse := range []func([]byte) (Entry, error){ParseEntry, func(l []byte) (Entry, error) { return parseOwned(l, in) }} {
			e, err := parse([]byte(line))
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			want := func(key string) (s string) {
				if raw, ok := last[key]; ok && raw != "null" {
					str([]byte(raw), 0, &s)
				}
				return s
			}
			if e.UUID != want("uuid") || e.ParentUUID.Value != want("parentUuid") || e.Timestamp != want("timestamp") {
				t.Fatalf("%s: uuid %q parentUuid %q timestamp %q; want %q %q %q", line, e.UUID, e.ParentUUID.Value, e.Timestamp,
					want("uuid"), want("parentUuid"), want("timestamp"))
			}
			_, present := last["parentUuid"]
			if e.ParentUUID.Present != present || e.ParentUUID.Null != (last["parentUuid"] == "null") {
				t.Fatalf("%s: parentUuid %+v", line, e.ParentUUID)
			}
		}
	}
}
