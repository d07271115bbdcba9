// Package config reads scribe's configuration: the built-in configuration
// (default.hcl, the same text as example.hcl), a file that states only what
// it changes, and environment variables and command-line flags over both.
//
// A file layers over the built-in configuration: its top-level settings
// override one by one; a labelled block merges with the built-in block of
// the same kind, type and name attribute by attribute (an attribute the file
// gives replaces the built-in one whole, lists and objects included), and a
// block the built-in configuration lacks adds a component; the server block
// merges the same way. A list (pipeline.sinks, pipeline.guards,
// resume.loaders, a guard's rules, ...) is replaced only when the file gives
// it, so the persistence guards stay unless the file says `guards = []`
// (then Config.Warnings says so).
//
// The top-level settings (config_dir, cleanup_period_days, log_level,
// log_json and the pipeline block) are owned by this package and checked
// here. The labelled component blocks (sink "type" "name" { ... }, and the
// same for loader and guard) are owned by their factories: this package only
// turns a block's attributes into a JSON object, keeps the position of every
// attribute, and lets the host decode that object into the factory's config
// struct with Component.Decode, which reports mistakes at their file:line.
// The unlabelled server block (the settings of `scribe serve`) is handed out
// the same way, as Config.Server, for package server to decode.
//
// Precedence, highest first: a flag the user set, an environment variable
// (SCRIBE_ + the key in upper case with '.' as '_'), the file, the built-in
// configuration. Config.Origin says which of them a value came from.
// The HCL is read by this package's own parser (on hashicorp/hcl, keeping
// every position); the top-level settings are then layered by spf13/viper,
// which is given them as maps (its defaults, the built-in configuration,
// the file with the environment over it) and the flags, and reads no file
// itself.
package config

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/e0dc0000/scribe/core"
)

//go:embed default.hcl
var defaultHCL []byte

// DefaultName is the file name used in positions for the embedded default.
const DefaultName = "<default>"

// EnvPrefix is the prefix of the environment variables that override the file.
const EnvPrefix = "SCRIBE_"

// LogLevels are the valid values of log_level.
var LogLevels = []string{"trace", "debug", "info", "warn", "error", "off"}

// Config is the decoded file after env and flag overrides.
type Config struct {
	// ConfigDir is Claude Code's config folder; "" means $CLAUDE_CONFIG_DIR,
	// else ~/.claude (resolved by the caller).
	ConfigDir string
	// CleanupPeriodDays is 0 to disable persistence, else a number of days.
	CleanupPeriodDays int
	// LogLevel is one of LogLevels.
	LogLevel string
	// LogJSON selects JSON log lines.
	LogJSON bool
	// Pipeline is the pipeline block.
	Pipeline PipelineConfig
	// Resume is the resume block.
	Resume ResumeConfig
	// Watch is the watch block (scribe watch and scribe hook).
	Watch WatchConfig
	// Usage is the usage block (scribe usage): price overrides.
	Usage UsageConfig
	// Components are the labelled sink, loader and guard blocks: the file's
	// in file order (merged with the built-in block of the same kind and ID),
	// then the built-in blocks the file does not mention, in their order.
	Components []Component
	// Server is the server block (the settings of `scribe serve`): the
	// built-in one with the file's attributes merged over it. Its Kind is
	// KindServer and its ID is zero; decode it with Decode like a
	// component's. It is nil only when neither has one.
	Server *Component
	// File is the path the configuration was read from, "" for the embedded
	// default.
	File string
	// Warnings are things that are allowed but probably not meant, such as
	// a pipeline.guards that leaves out the built-in persistence guards.
	Warnings []*Error

	// origins says where each setting's value came from, by setting key.
	origins map[string]origin
	// paths are the top-level path settings that are set, as written and
	// resolved.
	paths []PathOption
}

// Paths lists the top-level settings that name a file or folder and are
// set (config_dir), as written and as resolved (~ expanded). The blocks'
// paths are Component.Paths.
func (c *Config) Paths() []PathOption { return c.paths }

// BuiltinOrigin is what Origin returns for a value of the built-in
// configuration.
const BuiltinOrigin = "built-in default"

// Origin says where the value of key came from: "file:line:col" of the
// file, "env SCRIBE_..." for an environment variable, "flag --..." for a
// flag, or BuiltinOrigin. key is a setting ("cleanup_period_days",
// "pipeline.guards") or an attribute of a component as kind.type/name.path
// ("sink.jsonl/local.fsync", "guard.env/default.rules.0.var"), or of the
// server block as server.path ("server.listen"). An attribute no block
// sets takes its component's default: BuiltinOrigin. Origin is "" for a
// key that names no setting, component or server block.
func (c *Config) Origin(key string) string {
	if o, ok := c.origins[key]; ok {
		return o.String()
	}
	kind, rest, ok := strings.Cut(key, ".")
	if !ok {
		return ""
	}
	var comp *Component
	path := rest
	if kind == string(KindServer) {
		comp = c.Server
	} else {
		idText, p, _ := strings.Cut(rest, ".")
		id, err := core.ParseID(idText)
		if err != nil {
			return ""
		}
		found, ok := c.Lookup(core.Kind(kind), id)
		if !ok {
			return ""
		}
		comp, path = &found, p
	}
	if comp == nil {
		return ""
	}
	if path == "" {
		return posOrigin(comp.Range)
	}
	if p, ok := comp.attrs[path]; ok {
		return posOrigin(p)
	}
	return BuiltinOrigin
}

// posOrigin names a position for Origin: BuiltinOrigin inside the built-in
// configuration.
func posOrigin(p Pos) string {
	if p.File == DefaultName {
		return BuiltinOrigin
	}
	return p.String()
}

// ResumeConfig is the resume block.
type ResumeConfig struct {
	// Loaders are tried in order; each names a loader block, or a sink
	// block whose component is also a loader (jsonl, memcache).
	Loaders []core.ID
	// MaxAge: an interrupted turn older than this is not continued.
	MaxAge time.Duration
	// ContinueText is the prompt appended after an interrupted turn.
	ContinueText string
}

// WatchConfig is the watch block.
type WatchConfig struct {
	// MaxLineBytes is the longest transcript line watch and hook mirror;
	// a longer one is counted, logged and passed over.
	MaxLineBytes int
}

// PipelineConfig is the pipeline block.
type PipelineConfig struct {
	// Sinks are the sinks entries go to, in order. Each is a declared sink block.
	Sinks []core.ID
	// Guards are the guards every entry must pass, in order. Each is a
	// declared guard block.
	Guards []core.ID
	// Processors transform entries after the guards, in order. Each is a
	// declared processor block.
	Processors []core.ID
	// QueueSize is the number of entries each sink's queue holds.
	QueueSize int
	// OverflowWait is how long Submit waits for room in a full sink queue
	// before the entry is dropped for that sink (counted).
	OverflowWait time.Duration
	// DropWhenFull lists sinks whose full queue drops at once instead.
	DropWhenFull []core.ID
	// RetryFor is how long a failing sink's batch is retried before it is
	// dropped for that sink (counted).
	RetryFor time.Duration
}

// KindServer is the Kind of the server block.
const KindServer core.Kind = "server"

// Component is one labelled block: kind "type" "name" { ... }, or the
// unlabelled server block.
type Component struct {
	Kind core.Kind
	// ID is "type/name" from the two labels, with their case kept.
	ID core.ID
	// Body holds the block's attributes as a JSON object: strings, numbers
	// (integral values as JSON integers), bools, null, lists and objects.
	Body json.RawMessage
	// Range is the position of the block's first token.
	Range Pos

	// attrs maps an attribute path ("fsync", "rules.0.var") to the position
	// of its name (for list elements: of the element).
	attrs map[string]Pos
	// keys are the top-level attribute names in the order of Body.
	keys []string
}

// AttrPos returns the position of an attribute of the block given by its
// path: the attribute name, then for nested values object keys and list
// indexes, joined by '.' ("rules.1.var"). It is false when the path is not
// in the block.
func (c Component) AttrPos(path string) (Pos, bool) {
	p, ok := c.attrs[path]
	return p, ok
}

// Lookup returns the component of the given kind and ID.
func (c *Config) Lookup(kind core.Kind, id core.ID) (Component, bool) {
	for _, comp := range c.Components {
		if comp.Kind == kind && comp.ID == id {
			return comp, true
		}
	}
	return Component{}, false
}

// Pos is a position in a configuration file. Line and Column count from 1.
type Pos struct {
	File   string
	Line   int
	Column int
}

// String returns "file:line:col" ("line:col" without a file).
func (p Pos) String() string {
	if p.File == "" {
		return strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Column)
	}
	return p.File + ":" + strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Column)
}

// defaultSource is what is parsed of defaultHCL: the same text with its
// full-line comments emptied, their newlines kept so that every position
// stays. The comments are two thirds of its bytes, and HCL's scanner
// segments every byte into graphemes: parsed twice at every process
// start, they cost more than the settings.
var defaultSource = sync.OnceValue(func() []byte { return blankCommentLines(defaultHCL) })

// blankCommentLines returns src with each line whose first non-blank
// character starts a # comment emptied (a text without heredocs or block
// comments, as the built-in configuration is; a test keeps it so).
func blankCommentLines(src []byte) []byte {
	out := make([]byte, 0, len(src))
	for len(src) > 0 {
		line := src
		if i := bytes.IndexByte(src, '\n'); i >= 0 {
			line = src[:i+1]
		}
		src = src[len(line):]
		if t := bytes.TrimLeft(line, " \t"); len(t) > 0 && t[0] == '#' {
			if line[len(line)-1] == '\n' {
				out = append(out, '\n')
			}
			continue
		}
		out = append(out, line...)
	}
	return out
}

// Default returns the embedded default configuration, the same text as
// example.hcl at the root of the repository.
func Default() []byte {
	out := make([]byte, len(defaultHCL))
	copy(out, defaultHCL)
	return out
}

// valueKind is the type of a top-level setting.
type valueKind int

const (
	kindString valueKind = iota
	kindInt
	kindBool
	kindIDs
)

func (k valueKind) String() string {
	switch k {
	case kindString:
		return "a string"
	case kindInt:
		return "a whole number"
	case kindBool:
		return "a bool"
	default:
		return "a list of \"type/name\" strings"
	}
}

// setting is one overridable top-level setting.
type setting struct {
	block string // "" for a top-level attribute, else the block holding it
	name  string // attribute name
	kind  valueKind
	def   any
	usage string
	// path marks a file or folder: ~ and ~user are expanded (ExpandHome).
	path bool
}

// key is the viper key: "name" or "block.name".
func (s setting) key() string {
	if s.block == "" {
		return s.name
	}
	return s.block + "." + s.name
}

// env is the environment variable: SCRIBE_ + key upper-cased, '.' as '_'.
func (s setting) env() string {
	return EnvPrefix + upperUnderscore(s.key())
}

// flag is the flag name: the key with '.' and '_' as '-'.
func (s setting) flag() string {
	b := []byte(s.key())
	for i, c := range b {
		if c == '.' || c == '_' {
			b[i] = '-'
		}
	}
	return string(b)
}

func upperUnderscore(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c == '.':
			b[i] = '_'
		case c >= 'a' && c <= 'z':
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// settings are the top-level settings in the order they are documented.
var settings = []setting{
	{name: "config_dir", kind: kindString, def: "", path: true, usage: `Claude Code's config folder ("" = $CLAUDE_CONFIG_DIR, else ~/.claude)`},
	{name: "cleanup_period_days", kind: kindInt, def: 30, usage: "days transcripts are kept; 0 disables persistence"},
	{name: "log_level", kind: kindString, def: "info", usage: "log level: trace|debug|info|warn|error|off"},
	{name: "log_json", kind: kindBool, def: false, usage: "write log lines as JSON"},
	{block: "pipeline", name: "sinks", kind: kindIDs, def: []string{}, usage: "sinks entries go to (type/name, comma-separated)"},
	{block: "pipeline", name: "guards", kind: kindIDs, def: []string{}, usage: "guards every entry must pass (type/name, comma-separated)"},
	{block: "pipeline", name: "processors", kind: kindIDs, def: []string{}, usage: "processors every entry goes through after the guards (type/name, comma-separated)"},
	{block: "pipeline", name: "queue_size", kind: kindInt, def: 4096, usage: "entries per sink queue"},
	{block: "pipeline", name: "overflow_wait", kind: kindString, def: "5s", usage: "how long an entry waits for room in a full sink queue before it is dropped for that sink"},
	{block: "pipeline", name: "drop_when_full", kind: kindIDs, def: []string{}, usage: "sinks whose full queue drops entries at once instead of waiting (type/name, comma-separated)"},
	{block: "pipeline", name: "retry_for", kind: kindString, def: "1m", usage: "how long a failing sink's writes are retried before entries are dropped for it"},
	{block: "resume", name: "loaders", kind: kindIDs, def: []string{}, usage: "loaders resume tries, in order (type/name of loader or sink blocks, comma-separated)"},
	{block: "resume", name: "max_age", kind: kindString, def: "6h", usage: "an interrupted turn older than this is not continued (0s: no limit)"},
	{block: "resume", name: "continue_text", kind: kindString, def: "Continue from where you left off.", usage: "the prompt appended after an interrupted turn"},
	{block: "watch", name: "max_line_bytes", kind: kindInt, def: 268435456, usage: "the longest transcript line watch and hook mirror, in bytes; a longer one is counted, logged and passed over"},
}

func settingFor(block, name string) (setting, bool) {
	for _, s := range settings {
		if s.block == block && s.name == name {
			return s, true
		}
	}
	return setting{}, false
}

func validNames(block string) []string {
	var out []string
	for _, s := range settings {
		if s.block == block {
			out = append(out, s.name)
		}
	}
	return out
}

// checkValue applies the value rules of a setting to an already typed value.
func checkValue(s setting, v any) error {
	switch s.key() {
	case "log_level":
		lvl := v.(string)
		for _, l := range LogLevels {
			if lvl == l {
				return nil
			}
		}
		return fmt.Errorf("log_level %q is not valid (valid: %s)", lvl, strings.Join(LogLevels, ", "))
	case "cleanup_period_days":
		if v.(int) < 0 {
			return fmt.Errorf("cleanup_period_days must be 0 (persistence disabled) or more, not %d", v.(int))
		}
	case "pipeline.queue_size", "watch.max_line_bytes":
		if v.(int) <= 0 {
			return fmt.Errorf("%s must be greater than 0, not %d", s.key(), v.(int))
		}
	case "resume.max_age":
		if d, err := time.ParseDuration(v.(string)); err != nil || d < 0 {
			return fmt.Errorf("resume.max_age %q is not a duration such as 6h or 0s", v.(string))
		}
	case "pipeline.overflow_wait", "pipeline.retry_for":
		if d, err := time.ParseDuration(v.(string)); err != nil || d <= 0 {
			return fmt.Errorf("%s %q is not a positive duration such as 5s", s.key(), v.(string))
		}
	case "resume.continue_text":
		if strings.TrimSpace(v.(string)) == "" {
			return fmt.Errorf("resume.continue_text must not be empty")
		}
	}
	return nil
}
