package usage

// The parser ParseLine replaced, on encoding/json: kept as the reference
// ParseLine is compared with.

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

type stdlibLine struct {
	Timestamp string          `json:"timestamp"`
	RequestID string          `json:"requestId"`
	CostUSD   json.RawMessage `json:"costUSD"`
	Message   *struct {
		ID    string                     `json:"id"`
		Model json.RawMessage            `json:"model"`
		Usage map[string]json.RawMessage `json:"usage"`
	} `json:"message"`
}

// parseLineStdlib is ParseLine as it was written on encoding/json.
func parseLineStdlib(session string, line []byte) (r Row, ok bool, reason string) {
	if !bytes.Contains(line, []byte(`"usage"`)) {
		return Row{}, false, ""
	}
	var raw stdlibLine
	if err := json.Unmarshal(line, &raw); err != nil || raw.Message == nil || raw.Message.Usage == nil {
		return Row{}, false, ""
	}
	if !bytes.Contains(line, []byte(`"usage":{`)) {
		return Row{}, false, NotCompact
	}
	u := raw.Message.Usage
	r = Row{Session: session, MessageID: raw.Message.ID, RequestID: raw.RequestID}
	var good bool
	if r.Input, good = tokens(u["input_tokens"], true); !good {
		return Row{}, false, BadTokens
	}
	if r.Output, good = tokens(u["output_tokens"], true); !good {
		return Row{}, false, BadTokens
	}
	if r.CacheCreate, good = tokens(u["cache_creation_input_tokens"], false); !good {
		return Row{}, false, BadTokens
	}
	if r.CacheRead, good = tokens(u["cache_read_input_tokens"], false); !good {
		return Row{}, false, BadTokens
	}
	if cc, found := u["cache_creation"]; found {
		var split struct {
			OneHour json.RawMessage `json:"ephemeral_1h_input_tokens"`
		}
		if json.Unmarshal(cc, &split) == nil {
			if n, good := tokens(split.OneHour, false); good && n <= r.CacheCreate {
				r.CacheCreate1h = n
			}
		}
	}
	if s, found := u["speed"]; found {
		_ = json.Unmarshal(s, &r.Speed)
	}
	if m := raw.Message.Model; len(m) > 0 {
		if err := json.Unmarshal(m, &r.Model); err != nil || bytes.Equal(m, []byte("null")) {
			return Row{}, false, BadModel
		}
	}
	t, err := time.Parse(time.RFC3339Nano, raw.Timestamp)
	if err != nil {
		return Row{}, false, BadTimestamp
	}
	r.Time = t.UTC()
	if len(raw.CostUSD) > 0 {
		if err := json.Unmarshal(raw.CostUSD, &r.CostUSD); err == nil && !bytes.Equal(raw.CostUSD, []byte("null")) {
			r.HasCost = true
		}
	}
	return r, true, ""
}

// parseLines are lines of every shape ParseLine meets: rows, bad rows,
// costUSD of every type, keys given twice, escapes, wrong types, nulls.
var parseLines = []string{
	`{"timestamp":"2025-09-04T01:00:00.000Z","requestId":"r","costUSD":0.5,"message":{"id":"m","model":"claude-haiku-4-5","usage":{"input_tokens":3,"output_tokens":4,"cache_creation_input_tokens":5,"cache_read_input_tokens":6,"cache_creation":{"ephemeral_1h_input_tokens":2},"speed":"fast"}}}`,
	`{"timestamp":"2025-09-04T01:00:00+09:00","message":{"id":"m","usage":{"input_tokens":3,"output_tokens":4}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","costUSD":null,"message":{"id":null,"model":"x","usage":{"input_tokens":3,"output_tokens":4,"cache_read_input_tokens":null}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","costUSD":"0.5","message":{"model":"x","usage":{"input_tokens":3,"output_tokens":4}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","costUSD":1e400,"message":{"model":"x","usage":{"input_tokens":3,"output_tokens":4}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","costUSD":-2E-3,"message":{"model":"x","usage":{"input_tokens":3,"output_tokens":4}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","costUSD":true,"message":{"model":"x","usage":{"input_tokens":3,"output_tokens":4}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","costUSD":[1],"message":{"model":"x","usage":{"input_tokens":3,"output_tokens":4}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":{"model":"a","model":"b","usage":{"input_tokens":3,"input_tokens":9,"output_tokens":4}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","timestamp":"2025-09-05T01:00:00Z","message":{"usage":{"input_tokens":3,"output_tokens":4}},"message":{"id":"second","usage":{"input_tokens":1,"output_tokens":1}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","requestId":"r\u00e9\n","message":{"id":"m\"x","model":"cl\u0061ude","usage":{"input_tokens":3,"output_tokens":4,"speed":"f\u0061st"}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":{"model":null,"usage":{"input_tokens":3,"output_tokens":4}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":{"model":7,"usage":{"input_tokens":3,"output_tokens":4}}}`,
	`{"timestamp":7,"message":{"usage":{"input_tokens":3,"output_tokens":4}}}`,
	`{"timestamp":null,"message":{"usage":{"input_tokens":3,"output_tokens":4}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","requestId":7,"message":{"usage":{"input_tokens":3,"output_tokens":4}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":{"id":7,"usage":{"input_tokens":3,"output_tokens":4}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":{"usage":"x"}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":{"usage":null}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":{"usage":{}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":"usage"}`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":null,"usage":{"input_tokens":1,"output_tokens":1}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":{"usage": {"input_tokens":3,"output_tokens":4}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":{"usage":{"input_tokens":3,"output_tokens":4,"cache_creation":{"ephemeral_1h_input_tokens":9}}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":{"usage":{"input_tokens":30,"output_tokens":4,"cache_creation_input_tokens":10,"cache_creation":{"ephemeral_1h_input_tokens":"9"}}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":{"usage":{"input_tokens":30,"output_tokens":4,"cache_creation_input_tokens":10,"cache_creation":[1]}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":{"usage":{"input_tokens":3,"output_tokens":4,"speed":1}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":{"usage":{"input_tokens":3,"output_tokens":-4}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":{"usage":{"input_tokens":3.0,"output_tokens":4}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":{"usage":{"input_tokens":99999999999999999999,"output_tokens":4}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":{"usage":{"input_tokens":300000000,"output_tokens":4}}}`,
	`{"timestamp":"yesterday","message":{"usage":{"input_tokens":3,"output_tokens":4}}}`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":{"usage":{"input_tokens":3,"output_tokens":4}}} trailing`,
	`[{"timestamp":"2025-09-04T01:00:00Z","message":{"usage":{"input_tokens":3,"output_tokens":4}}}]`,
	`{"timestamp":"2025-09-04T01:00:00Z","message":{"usage":{"input_tokens":3,"output_tokens":4}}`,
	`"usage"`, `{"usage":{"input_tokens":1}}`, `{}`, ``, "{\"message\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":2}},\"timestamp\":\"2025-09-04T01:00:00Z\"}\r\n",
}

// TestParseLineMatchesStdlib: ParseLine (on jsonv) reads every line of
// the real corpus and every shape above as the encoding/json parser it
// replaced did.
func TestParseLineMatchesStdlib(t *testing.T) {
	lines := append([]string(nil), parseLines...)
	root := filepath.Join("..", "testdata", "corpus")
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		data, err := os.ReadFile(p)
		lines = append(lines, strings.SplitAfter(string(data), "\n")...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, l := range lines {
		r1, ok1, why1 := ParseLine("s", []byte(l))
		r2, ok2, why2 := parseLineStdlib("s", []byte(l))
		if ok1 != ok2 || why1 != why2 || !reflect.DeepEqual(r1, r2) {
			t.Fatalf("%.300s\njsonv:  %v %q %+v\nstdlib: %v %q %+v", l, ok1, why1, r1, ok2, why2, r2)
		}
		if ok1 {
			rows++
		}
	}
	if rows < 1000 {
		t.Fatalf("only %d rows with usage in %d lines", rows, len(lines))
	}
}

// FuzzParseLine compares ParseLine with the encoding/json parser on any
// line, except those naming a key in another case (encoding/json matches
// struct fields regardless of case; ParseLine, as ccusage, does not).
func FuzzParseLine(f *testing.F) {
	for _, l := range parseLines {
		f.Add([]byte(l))
	}
	keys := []string{"timestamp", "requestId", "costUSD", "message", "id", "model", "usage", "ephemeral_1h_input_tokens"}
	f.Fuzz(func(t *testing.T, line []byte) {
		low := bytes.ToLower(line)
		for _, k := range keys {
			if bytes.Count(low, []byte(strings.ToLower(`"`+k+`"`))) != bytes.Count(line, []byte(`"`+k+`"`)) {
				return
			}
		}
		if bytes.Contains(line, []byte(`\u`)) || !utf8.Valid(line) {
			return // keys spelled with escapes, invalid UTF-8: decoded alike, not worth the guard's complexity
		}
		r1, ok1, why1 := ParseLine("s", line)
		r2, ok2, why2 := parseLineStdlib("s", line)
		if ok1 != ok2 || why1 != why2 || !reflect.DeepEqual(r1, r2) {
			t.Fatalf("%q\njsonv:  %v %q %+v\nstdlib: %v %q %+v", line, ok1, why1, r1, ok2, why2, r2)
		}
	})
}
