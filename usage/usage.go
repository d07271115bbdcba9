// Package usage counts the tokens and the cost of Claude Code's messages as
// ccusage (20.0.24, --offline) counts them: one count per message (the rows
// a streamed message is split into share message.id and requestId, and the
// biggest of them counts), costUSD when a row carries it, else the built-in
// price table (prices_gen.go) with its tier above 200,000 tokens of a kind,
// and days in a given time zone. Rows whose usage is malformed are left out
// and counted by reason.
package usage

import (
	"bytes"
	"hash/maphash"
	"sort"
	"strconv"
	"time"

	"github.com/e0dc0000/scribe/jsonv"
)

// Synthetic is the model Claude Code names on rows it made up itself.
const Synthetic = "<synthetic>"

// AbsurdTokens is the count of one kind of token in one message beyond
// which a row is reported as absurd (it is still counted, as ccusage does).
const AbsurdTokens = 100_000_000

// Row is one transcript row that carries token usage.
type Row struct {
	Session   string
	Time      time.Time
	Model     string // "" when the row names none; Synthetic for made-up rows
	MessageID string
	RequestID string
	Speed     string

	Input, Output, CacheCreate, CacheRead int64
	// CacheCreate1h is the part of CacheCreate written for an hour, priced
	// at twice the input price.
	CacheCreate1h int64

	HasCost bool // the row carries costUSD
	CostUSD float64
}

// Total is the row's tokens of every kind.
func (r *Row) Total() int64 { return r.Input + r.Output + r.CacheCreate + r.CacheRead }

// Bad reasons a row with usage is left out.
const (
	BadTimestamp = "bad timestamp"
	BadTokens    = "missing, negative or non-integer token count"
	BadModel     = "model not a string"
	Absurd       = "absurd token count (counted)"
	NotCompact   = `usage not written "usage":{ as Claude Code writes it (ccusage skips these)`
)

// The keys ParseLine reads, of a line, of its message and of its usage.
var (
	lineKeys    = []string{"timestamp", "requestId", "costUSD", "message"}
	messageKeys = []string{"id", "model", "usage"}
	usageKeys   = []string{"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "cache_creation", "speed"}
)

// ParseLine reads one transcript line. ok is false for a line that carries
// no usage (not an error) and for a bad one, whose reason says why. A line
// that is not a JSON object, or whose timestamp, requestId, message,
// message.id or message.usage is of the wrong type, carries no usage; a
// key given twice counts with its last value.
func ParseLine(session string, line []byte) (r Row, ok bool, reason string) {
	if !bytes.Contains(line, []byte(`"usage"`)) {
		return Row{}, false, ""
	}
	obj, valid := jsonv.Value(line)
	if !valid || obj[0] != '{' {
		return Row{}, false, ""
	}
	var top [4][]byte
	jsonv.Lookup(obj, lineKeys, top[:])
	msg := top[3]
	if msg == nil || msg[0] != '{' {
		return Row{}, false, ""
	}
	var m [3][]byte
	jsonv.Lookup(msg, messageKeys, m[:])
	ts, ok1 := optString(top[0])
	req, ok2 := optString(top[1])
	id, ok3 := optString(m[0])
	if usage := m[2]; !ok1 || !ok2 || !ok3 || usage == nil || usage[0] != '{' {
		return Row{}, false, ""
	}
	if !bytes.Contains(line, []byte(`"usage":{`)) {
		return Row{}, false, NotCompact
	}
	r = Row{Session: session, MessageID: id, RequestID: req}
	if reason := r.readUsage(m[2]); reason != "" {
		return Row{}, false, reason
	}
	if model := m[1]; model != nil {
		var isString bool
		if r.Model, isString = jsonv.String(model); !isString {
			return Row{}, false, BadModel
		}
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return Row{}, false, BadTimestamp
	}
	r.Time = t.UTC()
	if c := top[2]; c != nil && (c[0] == '-' || isDigit(c[0])) {
		if f, err := strconv.ParseFloat(string(c), 64); err == nil {
			r.CostUSD, r.HasCost = f, true
		}
	}
	return r, true, ""
}

// optString reads a value that must be a string or null when it is there
// ("" for null or absent).
func optString(v []byte) (string, bool) {
	if v == nil || jsonv.IsNull(v) {
		return "", true
	}
	return jsonv.String(v)
}

// readUsage reads the token counts of a usage object, or says why they
// are bad.
func (r *Row) readUsage(usage []byte) string {
	var u [6][]byte
	jsonv.Lookup(usage, usageKeys, u[:])
	var good bool
	for i, dst := range []*int64{&r.Input, &r.Output, &r.CacheCreate, &r.CacheRead} {
		if *dst, good = tokens(u[i], i < 2); !good {
			return BadTokens
		}
	}
	if cc := u[4]; cc != nil && cc[0] == '{' {
		if oneHour, found := jsonv.Get(cc, "ephemeral_1h_input_tokens"); found {
			if n, good := tokens(oneHour, false); good && n <= r.CacheCreate {
				r.CacheCreate1h = n
			}
		}
	}
	if sp := u[5]; sp != nil {
		r.Speed, _ = jsonv.String(sp)
	}
	return ""
}

// tokens reads a token count: a non-negative integer literal. An absent
// field is 0 unless required.
func tokens(v []byte, required bool) (int64, bool) {
	if len(v) == 0 || (!required && string(v) == "null") {
		return 0, !required
	}
	s := string(v)
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// Absurd reports whether a counted row holds an absurd count.
func (r *Row) Absurd() bool {
	return r.Input > AbsurdTokens || r.Output > AbsurdTokens || r.CacheCreate > AbsurdTokens || r.CacheRead > AbsurdTokens
}

// Dedupe keeps one row per message: rows sharing message.id and requestId
// are one streamed message, of which the row with the most tokens counts
// (the first of equals, as in ccusage's session and blocks reports; with
// preferCost, as in its daily, weekly and monthly reports, the first of
// equals that carries costUSD). Rows without a message id all count. The
// rows keep their order; dropped counts the rows left out.
func Dedupe(rows []*Row, preferCost bool) (kept []*Row, dropped int) {
	kept, costFirst, dropped := dedupeBoth(rows)
	if preferCost {
		for j, r := range costFirst {
			kept[j] = r
		}
	}
	return kept, dropped
}

// dedupeBoth is Dedupe(rows, false) and, for the messages whose row
// Dedupe(rows, true) takes from another of their rows (an equal one with
// costUSD), that row by its place in kept: both deduplications in one
// pass.
func dedupeBoth(rows []*Row) (kept []*Row, costFirst map[int]*Row, dropped int) {
	return dedupeFirst(rows, nil)
}

// dedupeFirst is dedupeBoth that also appends to first (when not nil), for
// each message kept, the index in rows of its first row.
func dedupeFirst(rows []*Row, first *[]int) (kept []*Row, costFirst map[int]*Row, dropped int) {
	seed := maphash.MakeSeed()
	return dedupe(rows, func(k msgKey) uint64 { return maphash.Comparable(seed, k) }, first)
}

// dedupe is dedupeFirst with the hash of keys given. best maps a key's
// hash to its row in kept; a key whose hash another key took first is
// looked up by its strings in collided.
func dedupe(rows []*Row, hash func(msgKey) uint64, first *[]int) (kept []*Row, costFirst map[int]*Row, dropped int) {
	best := make(map[uint64]int, len(rows))
	var collided map[msgKey]int
	costFirst = map[int]*Row{}
	kept = make([]*Row, 0, len(rows))
	for i, r := range rows {
		if r.MessageID == "" {
			kept = appendKept(kept, r, first, i)
			continue
		}
		key := msgKey{r.MessageID, r.RequestID}
		h := hash(key)
		j, seen := best[h]
		if seen && (kept[j].MessageID != key.id || kept[j].RequestID != key.req) {
			if collided == nil {
				collided = map[msgKey]int{}
			}
			if j, seen = collided[key]; !seen {
				collided[key] = len(kept)
			}
		} else if !seen {
			best[h] = len(kept)
		}
		if !seen {
			kept = appendKept(kept, r, first, i)
			continue
		}
		dropped++
		switch k := kept[j]; {
		case r.Total() > k.Total():
			kept[j] = r
			delete(costFirst, j)
		case r.Total() == k.Total() && r.HasCost && !k.HasCost:
			if _, taken := costFirst[j]; !taken {
				costFirst[j] = r
			}
		}
	}
	return kept, costFirst, dropped
}

// appendKept appends a message's first row to kept, and its index i to
// first when wanted.
func appendKept(kept []*Row, r *Row, first *[]int, i int) []*Row {
	if first != nil {
		*first = append(*first, i)
	}
	return append(kept, r)
}

// msgKey is what makes rows one message.
type msgKey struct{ id, req string }

// ModelName is the name a row's model is reported under ("" for none).
func (r *Row) ModelName() string {
	if r.Model == Synthetic || r.Model == "" {
		return ""
	}
	if r.Speed == "fast" {
		return r.Model + "-fast"
	}
	return r.Model
}

// sortStrings returns the keys of m, sorted.
func sortStrings(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
