package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"reflect"
	"strconv"
	"strings"

	"github.com/e0dc0000/scribe/core"
)

// Paths in the configuration: every option that names a file or a folder
// carries the struct tag `config:"path"` (a string, or a list of strings),
// or `config:"command"` (a list whose first element is a program), and
// Component.Decode expands a leading ~ or ~user in it, as a shell would,
// before Validate sees it: one place for every component, so that
// `dir = "~/scribe-archive"` means the same folder to every command and
// never a folder named ~ under the current one. The top-level config_dir
// is expanded when the settings are layered. Component.Paths and
// Config.Paths say what each path resolved to.

// PathTag is the struct tag key that marks a path option.
const PathTag = "config"

// ExpandHome expands a leading "~" (the home folder, $HOME) or "~user"
// (that user's home folder) in p, as a shell would, and a leading XDG base
// directory variable ($XDG_DATA_HOME, $XDG_CONFIG_HOME, $XDG_STATE_HOME,
// $XDG_CACHE_HOME, or ${...}) to its value, or to its default under the
// home folder when it is unset or not absolute (XDGDir); any other p is
// returned as it is. An unknown user, or a home folder that cannot be
// found, is an error.
func ExpandHome(p string) (string, error) {
	if strings.HasPrefix(p, "$") {
		return expandXDG(p)
	}
	if !strings.HasPrefix(p, "~") {
		return p, nil
	}
	name, rest, _ := strings.Cut(p[1:], "/")
	var home string
	if name == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%q: cannot find the home folder for ~: %w", p, err)
		}
		home = h
	} else {
		u, err := user.Lookup(name)
		if err != nil {
			var unknown user.UnknownUserError
			if errors.As(err, &unknown) {
				return "", fmt.Errorf("%q: no user %q (~%s would be that user's home folder)", p, name, name)
			}
			return "", fmt.Errorf("%q: look up user %q: %w", p, name, err)
		}
		if u.HomeDir == "" {
			return "", fmt.Errorf("%q: user %q has no home folder", p, name)
		}
		home = u.HomeDir
	}
	if rest == "" {
		return home, nil
	}
	return strings.TrimSuffix(home, "/") + "/" + rest, nil
}

// xdgDefaults are the XDG base directory variables a configured path may
// start with, and the folder under the home folder each stands for when it
// is unset (the XDG Base Directory Specification's defaults).
var xdgDefaults = map[string]string{
	"XDG_DATA_HOME":   ".local/share",
	"XDG_CONFIG_HOME": ".config",
	"XDG_STATE_HOME":  ".local/state",
	"XDG_CACHE_HOME":  ".cache",
}

// XDGDir returns the folder an XDG base directory variable names (name is
// "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME" or
// "XDG_CACHE_HOME"): its value when it is an absolute path, else its
// default under the home folder (~/.local/share, ~/.config,
// ~/.local/state, ~/.cache), as the specification asks (a relative value
// is ignored).
func XDGDir(name string) (string, error) {
	def, ok := xdgDefaults[name]
	if !ok {
		return "", fmt.Errorf("%s is not an XDG base directory variable", name)
	}
	if v := os.Getenv(name); v != "" && strings.HasPrefix(v, "/") {
		return v, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("$%s is unset and the home folder for its default ~/%s cannot be found: %w", name, def, err)
	}
	return strings.TrimSuffix(home, "/") + "/" + def, nil
}

// expandXDG expands a leading $NAME or ${NAME} of an XDG base directory
// variable in p; any other variable is left as it is.
func expandXDG(p string) (string, error) {
	name, rest, _ := strings.Cut(p[1:], "/")
	if strings.HasPrefix(name, "{") && strings.HasSuffix(name, "}") {
		name = name[1 : len(name)-1]
	}
	if _, ok := xdgDefaults[name]; !ok {
		return p, nil
	}
	dir, err := XDGDir(name)
	if err != nil {
		return "", fmt.Errorf("%q: %w", p, err)
	}
	if rest == "" {
		return dir, nil
	}
	return strings.TrimSuffix(dir, "/") + "/" + rest, nil
}

// PathOption is one path of the configuration as written and as resolved.
type PathOption struct {
	// Option names it as Config.Origin does: "config_dir",
	// "sink.jsonl/archive.dir", "sink.jsonl/archive.encryption.identity.file".
	Option string `json:"option"`
	// Written is the value as the configuration gives it.
	Written string `json:"written"`
	// Resolved is the value scribe uses (~ and $XDG_... expanded).
	Resolved string `json:"resolved"`
}

// pathField is a path option inside a decoded value: its option path
// ("encryption.identity.file", "command.0") and where it is stored.
type pathField struct {
	path string
	ptr  *string
}

// pathFields lists the path options of v (a pointer to a decoded config
// struct), in declaration order.
func pathFields(v reflect.Value, prefix string, out []pathField) []pathField {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return out
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			fv := v.Field(i)
			if sf.Anonymous && name == "" {
				out = pathFields(fv, prefix, out) // embedded: its options are this struct's
				continue
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			sub := joinPath(prefix, name)
			switch kind := sf.Tag.Get(PathTag); {
			case kind == "path" && fv.Kind() == reflect.String:
				out = append(out, pathField{sub, fv.Addr().Interface().(*string)})
			case kind == "path" && fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.String:
				for j := range fv.Len() {
					out = append(out, pathField{joinPath(sub, fmt.Sprint(j)), fv.Index(j).Addr().Interface().(*string)})
				}
			case kind == "command" && fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.String:
				if fv.Len() > 0 {
					out = append(out, pathField{joinPath(sub, "0"), fv.Index(0).Addr().Interface().(*string)})
				}
			default:
				out = pathFields(fv, sub, out)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.String {
			return out
		}
		for j := range v.Len() {
			out = pathFields(v.Index(j), joinPath(prefix, fmt.Sprint(j)), out)
		}
	}
	return out
}

// expandPaths expands ~ in every path option of dst (see ExpandHome),
// reporting each one that cannot be at its attribute.
func (c Component) expandPaths(dst any) []*Error {
	var errs []*Error
	for _, f := range pathFields(reflect.ValueOf(dst), "", nil) {
		p, err := ExpandHome(*f.ptr)
		if err != nil {
			errs = append(errs, &Error{Pos: c.pos(f.path), Msg: fmt.Sprintf("%s: option %q: %v", c.label(), displayPath(f.path), err), err: err})
			continue
		}
		*f.ptr = p
	}
	return errs
}

// Paths lists the path options dst holds (dst decoded by Decode, so
// resolved) that are not empty, with the values the block wrote.
func (c Component) Paths(dst any) []PathOption {
	var out []PathOption
	prefix := string(c.Kind) + "."
	if c.ID != (core.ID{}) {
		prefix += c.ID.String() + "."
	}
	for _, f := range pathFields(reflect.ValueOf(dst), "", nil) {
		if *f.ptr == "" {
			continue
		}
		written, ok := c.written(f.path)
		if !ok {
			written = *f.ptr
		}
		out = append(out, PathOption{Option: prefix + f.path, Written: written, Resolved: *f.ptr})
	}
	return out
}

// written returns the string the block gives at path ("" parts of which
// are object keys, matched as encoding/json matches them, or list
// indexes); false when the block does not set it.
func (c Component) written(path string) (string, bool) {
	var v any
	if json.Unmarshal(c.Body, &v) != nil {
		return "", false
	}
	for _, part := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			val, ok := x[part]
			if !ok {
				for k, kv := range x {
					if strings.EqualFold(k, part) {
						val, ok = kv, true
					}
				}
			}
			if !ok {
				return "", false
			}
			v = val
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(x) {
				return "", false
			}
			v = x[i]
		default:
			return "", false
		}
	}
	s, ok := v.(string)
	return s, ok
}
