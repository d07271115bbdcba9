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
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"
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
func (r Row) Total() int64 { return r.Input + r.Output + r.CacheCreate + r.CacheRead }

// Bad reasons a row with usage is left out.
const (
	BadTimestamp = "bad timestamp"
	BadTokens    = "missing, negative or non-integer token count"
	BadModel     = "model not a string"
	Absurd       = "absurd token count (counted)"
	NotCompact   = `usage not written "usage":{ as Claude Code writes it (ccusage skips these)`
)

type rawLine struct {
	Timestamp string          `json:"timestamp"`
	RequestID string          `json:"requestId"`
	CostUSD   json.RawMessage `json:"costUSD"`
	Message   *struct {
		ID    string                     `json:"id"`
		Model json.RawMessage            `json:"model"`
		Usage map[string]json.RawMessage `json:"usage"`
	} `json:"message"`
}

// ParseLine reads one transcript line. ok is false for a line that carries
// no usage (not an error) and for a bad one, whose reason says why.
func ParseLine(session string, line []byte) (r Row, ok bool, reason string) {
	if !bytes.Contains(line, []byte(`"usage"`)) {
		return Row{}, false, ""
	}
	var raw rawLine
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
	r.Time = t
	if len(raw.CostUSD) > 0 {
		if err := json.Unmarshal(raw.CostUSD, &r.CostUSD); err == nil && !bytes.Equal(raw.CostUSD, []byte("null")) {
			r.HasCost = true
		}
	}
	return r, true, ""
}

// tokens reads a token count: a non-negative integer literal. An absent
// field is 0 unless required.
func tokens(v json.RawMessage, required bool) (int64, bool) {
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
func (r Row) Absurd() bool {
	return r.Input > AbsurdTokens || r.Output > AbsurdTokens || r.CacheCreate > AbsurdTokens || r.CacheRead > AbsurdTokens
}

// Dedupe keeps one row per message: rows sharing message.id and requestId
// are one streamed message, of which the row with the most tokens counts
// (the first of equals, as in ccusage's session and blocks reports; with
// preferCost, as in its daily, weekly and monthly reports, the first of
// equals that carries costUSD). Rows without a message id all count. The rows keep their order; dropped counts
// the rows left out.
func Dedupe(rows []Row, preferCost bool) (kept []Row, dropped int) {
	best := map[string]int{} // key -> index into kept
	for _, r := range rows {
		if r.MessageID == "" {
			kept = append(kept, r)
			continue
		}
		key := r.MessageID + "\x00" + r.RequestID
		i, seen := best[key]
		if !seen {
			best[key] = len(kept)
			kept = append(kept, r)
			continue
		}
		dropped++
		if k := kept[i]; r.Total() > k.Total() || (preferCost && r.Total() == k.Total() && r.HasCost && !k.HasCost) {
			kept[i] = r
		}
	}
	return kept, dropped
}

// Pricer finds models' prices in the built-in table.
type Pricer struct{ cache map[string]*Price }

// NewPricer is a Pricer over the built-in table.
func NewPricer() *Pricer { return &Pricer{cache: map[string]*Price{}} }

// Lookup is the price of model, nil when the table has none.
func (p *Pricer) Lookup(model string) *Price {
	if pr, ok := p.cache[model]; ok {
		return pr
	}
	pr := lookup(model)
	p.cache[model] = pr
	return pr
}

func lookup(model string) *Price {
	bare := model
	if i := strings.LastIndexByte(bare, '/'); i >= 0 {
		bare = bare[i+1:]
	}
	for _, name := range []string{model, bare} {
		if pr, ok := litellmPrices[name]; ok {
			return &pr
		}
	}
	for _, name := range []string{model, bare, dotted(undated(bare))} {
		if pr, ok := modelsDevPrices[name]; ok {
			return &pr
		}
	}
	return nil
}

// undated strips a trailing -YYYYMMDD.
func undated(m string) string {
	if i := strings.LastIndexByte(m, '-'); i >= 0 && len(m)-i == 9 {
		if _, err := strconv.Atoi(m[i+1:]); err == nil {
			return m[:i]
		}
	}
	return m
}

// dotted writes version numbers with dots: claude-3-5-haiku is
// claude-3.5-haiku.
func dotted(m string) string {
	b := []byte(m)
	for i := 1; i+1 < len(b); i++ {
		if b[i] == '-' && isDigit(b[i-1]) && isDigit(b[i+1]) {
			b[i] = '.'
		}
	}
	return string(b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

const tierTokens = 200_000

func tiered(n int64, base, above float64) float64 {
	if above > 0 && n > tierTokens {
		return tierTokens*base + float64(n-tierTokens)*above
	}
	return float64(n) * base
}

// Cost is what a row cost: its costUSD when it carries one, else its
// tokens at the model's price; priced is false when the model has none.
func (p *Pricer) Cost(r Row) (cost float64, priced bool) {
	if r.HasCost {
		return r.CostUSD, true
	}
	pr := p.Lookup(r.Model)
	if pr == nil {
		return 0, false
	}
	c := tiered(r.Input, pr.Input, pr.InputAbove) + tiered(r.Output, pr.Output, pr.OutputAbove) +
		tiered(r.CacheCreate-r.CacheCreate1h, pr.CacheCreate, pr.CacheCreateAbove) +
		tiered(r.CacheCreate1h, 2*pr.Input, 2*pr.InputAbove) + tiered(r.CacheRead, pr.CacheRead, pr.CacheReadAbove)
	if r.Speed == "fast" {
		c *= fastMultiplier(r.Model, pr)
	}
	return c, true
}

// fastMultiplier is what fast mode multiplies model's price by: the
// override for its name or its normalized name's prefix, else the table's,
// else 1.
func fastMultiplier(model string, pr *Price) float64 {
	if m, ok := fastExact[model]; ok {
		return m
	}
	norm := strings.ToLower(model)
	if i := strings.LastIndexByte(norm, '/'); i >= 0 {
		norm = norm[i+1:]
	}
	norm = strings.ReplaceAll(norm, ".", "-")
	best := ""
	for prefix := range fastPrefix {
		if strings.HasPrefix(norm, prefix) && len(prefix) > len(best) {
			best = prefix
		}
	}
	if best != "" {
		return fastPrefix[best]
	}
	if pr.Fast > 0 {
		return pr.Fast
	}
	return 1
}

// ModelName is the name a row's model is reported under ("" for none).
func (r Row) ModelName() string {
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
