package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/internal/durable"
)

// hookEvents are the Claude Code hook events scribe hook handles.
var hookEvents = []string{"SessionStart", "UserPromptSubmit", "PermissionRequest", "Notification", "PostToolUse", "Stop", "SubagentStop", "PreCompact", "PostCompact", "SessionEnd"}

// scribeHookRE recognizes a command scribe installed, whatever binary path
// it named.
var scribeHookRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|[/\\ "'])scribe[\w.-]*["']? hook( |$)`) })

func newHooksCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "hooks",
		Short: "Install or remove scribe's entries in Claude Code's settings.json hooks",
	}
	var scope string
	var dryRun bool
	for _, install := range []bool{true, false} {
		name, short := "install", "Add `scribe hook` to every hook event scribe handles, keeping every other hook"
		if !install {
			name, short = "uninstall", "Remove scribe's hook entries, keeping every other hook"
		}
		sub := &cobra.Command{
			Use:   name,
			Short: short,
			Long: short + `.

--scope user (default) changes $CLAUDE_CONFIG_DIR/settings.json (~/.claude/settings.json),
project .claude/settings.json and local .claude/settings.local.json in the current
folder. Running it twice changes nothing the second time. The file is replaced
atomically after its previous content is saved beside it as settings.json.scribe.bak;
a settings.json that is not valid JSON is refused and left as it is. --dry-run prints
the file as it would be and changes nothing.`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return runHooks(cmd, install, scope, dryRun) },
		}
		sub.Flags().StringVar(&scope, "scope", "user", "which settings.json: user, project or local")
		sub.Flags().BoolVar(&dryRun, "dry-run", false, "print the changed settings.json instead of writing it")
		c.AddCommand(sub)
	}
	return c
}

func settingsPath(cmd *cobra.Command, scope string) (string, error) {
	switch scope {
	case "user":
		cfg, err := loadConfig(cmd)
		if err != nil {
			return "", err
		}
		dir, err := claudeConfigDir(cfg)
		if err != nil {
			return "", err
		}
		return filepath.Join(dir, "settings.json"), nil
	case "project", "local":
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		name := "settings.json"
		if scope == "local" {
			name = "settings.local.json"
		}
		return filepath.Join(wd, ".claude", name), nil
	}
	return "", fmt.Errorf("--scope %q: want user, project or local", scope)
}

func runHooks(cmd *cobra.Command, install bool, scope string, dryRun bool) error {
	path, err := settingsPath(cmd, scope)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the scribe binary: %w", err)
	}
	command := shellQuote(exe) + " hook"
	if p, _ := cmd.Flags().GetString("config"); p != "" {
		// The hook reads the same configuration as this command.
		abs, err := filepath.Abs(p)
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("--config %q: %w", p, err)}
		}
		command += " --config " + shellQuote(abs)
	}
	if install {
		if cfg, err := loadConfig(cmd); err != nil {
			return &exitError{code: 2, err: err}
		} else if _, err := resolveWatch(cfg, nil, ""); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: scribe hook will record nothing with this configuration: %v\n", err)
		}
	}
	updated, changes, err := mergeHooks(old, install, command)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("%s: %w; nothing changed", path, err)}
	}
	out := cmd.OutOrStdout()
	if len(changes) == 0 {
		fmt.Fprintf(out, "%s: nothing to change (scribe's hooks are %s)\n", path, map[bool]string{true: "installed", false: "not there"}[install])
		return nil
	}
	if dryRun {
		fmt.Fprintf(out, "%s would change (%s):\n%s", path, strings.Join(changes, ", "), updated)
		return nil
	}
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
		if err := durable.WriteFile(path+".scribe.bak", old, mode); err != nil {
			return fmt.Errorf("back up %s: %w", path, err)
		}
	}
	if err := durable.WriteFile(path, updated, mode); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: %s\n", path, strings.Join(changes, ", "))
	return nil
}

// member is one key of a JSON object, in file order.
type member struct {
	key string
	val json.RawMessage
}

// decodeObject reads a JSON object's members in order; ok is false when
// data is not an object.
func decodeObject(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonPosError(data, dec, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out []member
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, jsonPosError(data, dec, err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, jsonPosError(data, dec, err)
		}
		out = append(out, member{kt.(string), v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, jsonPosError(data, dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("text after the JSON object")
	}
	return out, nil
}

func jsonPosError(data []byte, dec *json.Decoder, err error) error {
	off := int(dec.InputOffset())
	line := 1 + bytes.Count(data[:min(off, len(data))], []byte{'\n'})
	return fmt.Errorf("not valid JSON (line %d): %w", line, err)
}

func encodeObject(ms []member) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func setMember(ms []member, key string, val json.RawMessage) []member {
	for i := range ms {
		if ms[i].key == key {
			ms[i].val = val
			return ms
		}
	}
	return append(ms, member{key, val})
}

func deleteMember(ms []member, key string) []member {
	for i := range ms {
		if ms[i].key == key {
			return append(ms[:i], ms[i+1:]...)
		}
	}
	return ms
}

// mergeHooks adds (or removes) scribe's hook entries in a settings.json,
// keeping every other key and hook in its order. It returns the new file
// and what changed (nothing: the file needs no write).
func mergeHooks(old []byte, install bool, command string) ([]byte, []string, error) {
	top := []member{}
	if len(bytes.TrimSpace(old)) > 0 {
		var err error
		if top, err = decodeObject(old); err != nil {
			return nil, nil, err
		}
	}
	var hooks []member
	for _, m := range top {
		if m.key == "hooks" {
			var err error
			if hooks, err = decodeObject(m.val); err != nil {
				return nil, nil, fmt.Errorf("\"hooks\": %w", err)
			}
		}
	}
	var changes []string
	for _, ev := range hookEvents {
		var groups []json.RawMessage
		for _, m := range hooks {
			if m.key == ev {
				if err := json.Unmarshal(m.val, &groups); err != nil {
					return nil, nil, fmt.Errorf("\"hooks\".%q is not a list of matcher groups: %w", ev, err)
				}
			}
		}
		kept, found, err := withoutScribe(groups)
		if err != nil {
			return nil, nil, fmt.Errorf("\"hooks\".%q: %w", ev, err)
		}
		had := len(found) > 0
		switch {
		case install && len(found) == 1 && found[0] == command:
			continue
		case install:
			type handler struct {
				Type    string `json:"type"`
				Command string `json:"command"`
				Timeout int    `json:"timeout"`
			}
			g, _ := json.Marshal(map[string]any{"hooks": []handler{{"command", command, 10}}})
			if had {
				// Another scribe binary or configuration: this one replaces it.
				kept = append(kept, g)
				changes = append(changes, "updated "+ev)
			} else {
				kept = append(groups, g)
				changes = append(changes, "added "+ev)
			}
		case had:
			changes = append(changes, "removed "+ev)
		default:
			continue
		}
		if len(kept) == 0 {
			hooks = deleteMember(hooks, ev)
			continue
		}
		b, _ := json.Marshal(kept)
		hooks = setMember(hooks, ev, b)
	}
	if len(changes) == 0 {
		return old, nil, nil
	}
	if len(hooks) == 0 {
		top = deleteMember(top, "hooks")
	} else {
		top = setMember(top, "hooks", encodeObject(hooks))
	}
	var out bytes.Buffer
	if err := json.Indent(&out, encodeObject(top), "", "  "); err != nil {
		return nil, nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), changes, nil
}

// withoutScribe drops scribe's handlers from matcher groups (and groups
// left empty); found are their commands.
func withoutScribe(groups []json.RawMessage) ([]json.RawMessage, []string, error) {
	var kept []json.RawMessage
	var found []string
	for _, g := range groups {
		ms, err := decodeObject(g)
		if err != nil {
			return nil, nil, err
		}
		var handlers []json.RawMessage
		for _, m := range ms {
			if m.key == "hooks" {
				if err := json.Unmarshal(m.val, &handlers); err != nil {
					return nil, nil, fmt.Errorf("a group's \"hooks\" is not a list: %w", err)
				}
			}
		}
		var rest []json.RawMessage
		for _, h := range handlers {
			var hd struct {
				Type    string `json:"type"`
				Command string `json:"command"`
			}
			if json.Unmarshal(h, &hd) == nil && hd.Type == "command" && scribeHookRE().MatchString(hd.Command) {
				found = append(found, hd.Command)
				continue
			}
			rest = append(rest, h)
		}
		if len(rest) == len(handlers) {
			kept = append(kept, g)
			continue
		}
		if len(rest) == 0 {
			continue
		}
		b, _ := json.Marshal(rest)
		kept = append(kept, encodeObject(setMember(ms, "hooks", b)))
	}
	return kept, found, nil
}
