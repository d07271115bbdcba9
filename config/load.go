package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/e0dc0000/scribe/core"
)

// Load reads the configuration: the file at path layered over the
// built-in configuration (Default), then env, then flags.
//
// path is the HCL file to read; "" reads the built-in configuration alone.
// The file states only what it changes (see the package documentation). env
// is the environment as KEY=VALUE (os.Environ() for the real one); the
// variables SCRIBE_CONFIG_DIR, SCRIBE_CLEANUP_PERIOD_DAYS, SCRIBE_LOG_LEVEL,
// SCRIBE_LOG_JSON, SCRIBE_PIPELINE_SINKS, SCRIBE_PIPELINE_GUARDS (lists are
// comma-separated) and SCRIBE_PIPELINE_QUEUE_SIZE override the file; an empty
// value counts as unset, other SCRIBE_ variables are ignored. flags may be
// nil; a flag named after a setting (config-dir, cleanup-period-days,
// log-level, log-json, pipeline-sinks, pipeline-guards, pipeline-queue-size;
// see AddFlags) overrides everything else, but only when the user set it.
//
// All problems found are returned together, one per line, each starting
// with file:line:col (or with the variable or flag it came from).
func Load(path string, env []string, flags *pflag.FlagSet) (*Config, error) {
	cfg, errs := Check(path, env, flags)
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return cfg, nil
}

// Check reads the configuration as Load does but does not stop at a
// problem: it returns every problem it finds, in file order, and the
// configuration as far as it could be read, with each setting that has a
// problem left at its built-in value and each block that has one left out.
// The configuration is nil only when the file cannot be read or parsed.
// Check does not decode the components' blocks: Component.DecodeAll does.
func Check(path string, env []string, flags *pflag.FlagSet) (*Config, []*Error) {
	base, errs := parseSource(defaultSource(), DefaultName)
	if len(errs) > 0 {
		return nil, errs // the tests keep the built-in configuration valid
	}
	over := &parsed{values: map[string]fileValue{}, broken: map[string]bool{}}
	if path != "" {
		src, err := os.ReadFile(path)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, []*Error{{Msg: fmt.Sprintf("cannot read config file %s: %v", path, err), err: err}}
		}
		body, perrs := parseHCL(src, path)
		if len(perrs) > 0 {
			return nil, perrs
		}
		over, errs = parseFile(body)
	}
	file := layer(base, over)
	envVals, envErrs := parseEnv(env)
	errs = append(errs, envErrs...)

	// Layer: the settings' own defaults < the built-in configuration < the
	// file < env < changed flags. The file's values are merged as parsed,
	// so a value reported above is not taken.
	v := newViper()
	for _, s := range settings {
		v.SetDefault(s.key(), viperValue(s.def))
	}
	// The built-in configuration's settings, as parsed above (viper
	// parses no HCL).
	baseMap := map[string]any{}
	for key, fv := range base.values {
		setNested(baseMap, key, viperValue(fv.val))
	}
	if err := v.MergeConfigMap(baseMap); err != nil {
		return nil, append(errs, &Error{Msg: fmt.Sprintf("%s: %v", DefaultName, err), err: err})
	}
	fileMap := map[string]any{}
	for key, fv := range over.values {
		setNested(fileMap, key, viperValue(fv.val))
	}
	for key, val := range envVals {
		// viper reads only the process environment; the env given to Load
		// is merged over the file instead, which gives the same precedence.
		setNested(fileMap, key, viperValue(val))
	}
	if err := v.MergeConfigMap(fileMap); err != nil {
		return nil, append(errs, &Error{Msg: fmt.Sprintf("merge the configuration: %v", err), err: err})
	}
	changed := map[string]bool{}
	if flags != nil {
		for _, s := range settings {
			fl := flags.Lookup(s.flag())
			if fl == nil {
				continue
			}
			if err := v.BindPFlag(s.key(), fl); err != nil {
				errs = append(errs, &Error{Source: "flag --" + fl.Name, Msg: err.Error(), err: err})
				continue
			}
			changed[s.key()] = fl.Changed
		}
	}

	cfg := &Config{File: path, Components: file.components, Server: file.server, origins: map[string]origin{}}
	if file.usage != nil {
		cfg.Usage = *file.usage
	}
	for _, s := range settings {
		o := origin{source: BuiltinOrigin}
		switch fv, inFile := file.values[s.key()]; {
		case changed[s.key()]:
			o = origin{source: "flag --" + s.flag(), flag: true}
		case envVals[s.key()] != nil:
			o = origin{source: "env " + s.env()}
		case inFile:
			o = origin{pos: fv.pos, elem: fv.elem}
		}
		cfg.origins[s.key()] = o
		val, err := convert(s, v.Get(s.key()))
		if err == nil && o.flag {
			err = checkValue(s, val)
		}
		if err == nil && s.path && val.(string) != "" {
			var p string
			if p, err = ExpandHome(val.(string)); err == nil {
				cfg.paths = append(cfg.paths, PathOption{Option: s.key(), Written: val.(string), Resolved: p})
				val = p
			} else {
				err = fmt.Errorf("%s: %w", s.key(), err)
			}
		}
		if err != nil {
			errs = append(errs, o.errorf(-1, "%v", err))
			val, _ = convert(s, viperValue(s.def))
			if fv, ok := base.values[s.key()]; ok {
				val = fv.val
			}
		}
		assign(cfg, s, val)
	}

	errs = append(errs, checkRefs(cfg, file.broken, core.KindSink, "pipeline.sinks", cfg.Pipeline.Sinks)...)
	errs = append(errs, checkRefs(cfg, file.broken, core.KindGuard, "pipeline.guards", cfg.Pipeline.Guards)...)
	errs = append(errs, checkRefs(cfg, file.broken, core.KindProcessor, "pipeline.processors", cfg.Pipeline.Processors)...)
	errs = append(errs, checkRefs(cfg, file.broken, core.KindSink, "pipeline.drop_when_full", cfg.Pipeline.DropWhenFull)...)
	errs = append(errs, checkRefs(cfg, file.broken, core.KindLoader, "resume.loaders", cfg.Resume.Loaders)...)
	if bg, ok := base.values["pipeline.guards"]; ok {
		cfg.Warnings = persistenceWarnings(bg.val.([]core.ID), cfg.Pipeline.Guards, cfg.origins["pipeline.guards"])
	}
	return cfg, errs
}

// parseSource parses and checks one HCL text.
func parseSource(src []byte, name string) (*parsed, []*Error) {
	body, errs := parseHCL(src, name)
	if len(errs) > 0 {
		return nil, errs
	}
	return parseFile(body)
}

// origin says which layer a setting's value came from.
type origin struct {
	pos    Pos    // file position, when from a file (or the built-in one)
	elem   []Pos  // file positions of list elements
	source string // "flag --x", "env SCRIBE_X" or BuiltinOrigin; "" for a file
	flag   bool
}

// errorf builds an Error at the origin; i >= 0 selects a list element.
func (o origin) errorf(i int, format string, args ...any) *Error {
	e := &Error{Msg: fmt.Sprintf(format, args...)}
	switch {
	case o.source != "":
		e.Source = o.source
	case i >= 0 && i < len(o.elem):
		e.Pos = o.elem[i]
	default:
		e.Pos = o.pos
	}
	return e
}

// checkRefs checks that every ID in a pipeline or resume list is a declared
// block. A loader may also be a sink block: the same component serves both.
// A block declared with a problem (already reported) counts as declared.
func checkRefs(cfg *Config, broken map[string]bool, kind core.Kind, key string, ids []core.ID) []*Error {
	var declared []string
	for _, c := range cfg.Components {
		if c.Kind == kind || (kind == core.KindLoader && c.Kind == core.KindSink) {
			declared = append(declared, c.ID.String())
		}
	}
	var errs []*Error
	for i, id := range ids {
		if _, ok := cfg.Lookup(kind, id); ok || broken[refKey(kind, id)] {
			continue
		}
		if kind == core.KindLoader {
			if _, ok := cfg.Lookup(core.KindSink, id); ok || broken[refKey(core.KindSink, id)] {
				continue
			}
		}
		errs = append(errs, cfg.origins[key].errorf(i, "%s: unknown %s %q (%s)", key, kind, id, describeRefs(kind, declared)))
	}
	return errs
}

// parseEnv picks the SCRIBE_ variables of known settings out of env. Later
// entries win; empty values are ignored.
func parseEnv(env []string) (map[string]any, []*Error) {
	raw := map[string]string{}
	for _, kv := range env {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, EnvPrefix) {
			continue
		}
		raw[k] = val
	}
	out := map[string]any{}
	var errs []*Error
	for _, s := range settings {
		val, ok := raw[s.env()]
		if !ok || val == "" {
			continue
		}
		v, err := convert(s, val)
		if err == nil {
			err = checkValue(s, v)
		}
		if err != nil {
			errs = append(errs, &Error{Source: "env " + s.env(), Msg: err.Error()})
			continue
		}
		out[s.key()] = v
	}
	return out, errs
}

// setNested sets m["a"]["b"] for key "a.b".
func setNested(m map[string]any, key string, v any) {
	parts := strings.Split(key, ".")
	for _, p := range parts[:len(parts)-1] {
		sub, ok := m[p].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[p] = sub
		}
		m = sub
	}
	m[parts[len(parts)-1]] = v
}

// viperValue turns a typed setting value into what viper holds.
func viperValue(v any) any {
	switch x := v.(type) {
	case []core.ID:
		out := make([]any, len(x))
		for i, id := range x {
			out[i] = id.String()
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	}
	return v
}

// assign stores a converted value in cfg.
func assign(cfg *Config, s setting, v any) {
	switch s.key() {
	case "config_dir":
		cfg.ConfigDir = v.(string)
	case "cleanup_period_days":
		cfg.CleanupPeriodDays = v.(int)
	case "log_level":
		cfg.LogLevel = v.(string)
	case "log_json":
		cfg.LogJSON = v.(bool)
	case "pipeline.sinks":
		cfg.Pipeline.Sinks = v.([]core.ID)
	case "pipeline.guards":
		cfg.Pipeline.Guards = v.([]core.ID)
	case "pipeline.queue_size":
		cfg.Pipeline.QueueSize = v.(int)
	case "pipeline.processors":
		cfg.Pipeline.Processors = v.([]core.ID)
	case "pipeline.overflow_wait":
		cfg.Pipeline.OverflowWait, _ = time.ParseDuration(v.(string))
	case "pipeline.drop_when_full":
		cfg.Pipeline.DropWhenFull = v.([]core.ID)
	case "pipeline.retry_for":
		cfg.Pipeline.RetryFor, _ = time.ParseDuration(v.(string))
	case "resume.loaders":
		cfg.Resume.Loaders = v.([]core.ID)
	case "resume.max_age":
		cfg.Resume.MaxAge, _ = time.ParseDuration(v.(string))
	case "resume.continue_text":
		cfg.Resume.ContinueText = v.(string)
	case "watch.max_line_bytes":
		cfg.Watch.MaxLineBytes = v.(int)
	}
}

// convert turns a value from viper (or a raw env string) into the setting's
// type: string, int, bool or []core.ID.
func convert(s setting, v any) (any, error) {
	switch s.kind {
	case kindString:
		if x, ok := v.(string); ok {
			return x, nil
		}
	case kindBool:
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			b, err := strconv.ParseBool(strings.TrimSpace(x))
			if err == nil {
				return b, nil
			}
		}
	case kindInt:
		if n, ok := toInt(v); ok {
			return n, nil
		}
	case kindIDs:
		return toIDs(s, v)
	}
	return nil, fmt.Errorf("%s: want %s, got %s", s.key(), s.kind, describe(v))
}

func describe(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%T", v)
	}
	return string(b)
}

func toInt(v any) (int, bool) {
	switch x := v.(type) {
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(x))
		return n, err == nil
	case json.Number:
		n, err := strconv.Atoi(x.String())
		return n, err == nil
	case float32, float64:
		f := reflect.ValueOf(x).Float()
		if f != math.Trunc(f) || f > math.MaxInt || f < math.MinInt {
			return 0, false
		}
		return int(f), true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n := rv.Int()
		return int(n), n >= math.MinInt && n <= math.MaxInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n := rv.Uint()
		return int(n), n <= math.MaxInt
	}
	return 0, false
}

func toIDs(s setting, v any) (any, error) {
	var items []string
	switch x := v.(type) {
	case []core.ID:
		return x, nil
	case string:
		for _, part := range strings.Split(x, ",") {
			if part = strings.TrimSpace(part); part != "" {
				items = append(items, part)
			}
		}
	case []string:
		items = x
	case []any:
		for i, e := range x {
			str, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("%s[%d]: want a \"type/name\" string, got %s", s.key(), i, describe(e))
			}
			items = append(items, str)
		}
	default:
		return nil, fmt.Errorf("%s: want %s, got %s", s.key(), s.kind, describe(v))
	}
	ids := make([]core.ID, 0, len(items))
	seen := map[core.ID]bool{}
	for i, item := range items {
		id, err := core.ParseID(strings.TrimSpace(item))
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", s.key(), i, err)
		}
		if seen[id] {
			return nil, fmt.Errorf("%s: %q is listed twice", s.key(), id)
		}
		seen[id] = true
		ids = append(ids, id)
	}
	return ids, nil
}

// AddFlags registers on fs one flag per overridable setting, named after
// the setting's key with '.' and '_' as '-': --config-dir,
// --cleanup-period-days, --log-level, --log-json, --pipeline-sinks,
// --pipeline-guards (comma-separated type/name lists) and
// --pipeline-queue-size. Load uses a flag only when the user set it, so the
// defaults shown in help are the built-in ones. Callers may instead register
// any subset of these names themselves, with any pflag type whose value
// converts (a string flag for a number is checked at Load).
func AddFlags(fs *pflag.FlagSet) {
	for _, s := range settings {
		switch s.kind {
		case kindString:
			fs.String(s.flag(), s.def.(string), s.usage)
		case kindInt:
			fs.Int(s.flag(), s.def.(int), s.usage)
		case kindBool:
			fs.Bool(s.flag(), s.def.(bool), s.usage)
		case kindIDs:
			fs.StringSlice(s.flag(), nil, s.usage)
		}
	}
}
