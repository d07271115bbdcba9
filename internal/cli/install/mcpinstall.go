package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
)

// mcpServerName is the name scribe's entry has under "mcpServers".
const mcpServerName = "scribe"

func NewMcpInstallCmds(f *cmdutil.Factory) []*cobra.Command {
	var cmds []*cobra.Command
	for _, install := range []bool{true, false} {
		var (
			scope  string
			dryRun bool
		)
		name, short := "install", "Add scribe mcp to Claude Code's MCP servers, keeping every other byte of the file"
		if !install {
			name, short = "uninstall", "Remove scribe mcp from Claude Code's MCP servers, keeping every other byte of the file"
		}
		c := &cobra.Command{
			Use:   name,
			Short: short,
			Long: short + `.

--scope user (default) edits the "mcpServers" of $CLAUDE_CONFIG_DIR/.claude.json
(~/.claude.json without CLAUDE_CONFIG_DIR), project the .mcp.json of the current
folder. The entry is "scribe": {"type": "stdio", "command": "<this scribe>",
"args": ["mcp"]} (with --config FILE when one is pinned). It is edited as hooks
install edits settings.json: running it twice changes nothing the second time,
uninstall after install gives the file back byte for byte, a backup of the file
is kept beside it (.scribe.bak, .scribe.bak.N), the write is atomic and goes
through a symbolic link. A file that is not valid JSON, or a "scribe" server
scribe did not write, is refused and left as it is (exit 2). --dry-run prints
the file as it would be and changes nothing.`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return runMcpInstall(cmd, install, scope, dryRun) },
		}
		c.Flags().StringVar(&scope, "scope", "user", "which file: user (.claude.json) or project (.mcp.json)")
		c.Flags().BoolVar(&dryRun, "dry-run", false, "print the changed file instead of writing it")
		cmds = append(cmds, c)
	}
	return cmds
}

// mcpConfigPath is the file Claude Code reads MCP servers from.
func mcpConfigPath(scope string) (string, error) {
	switch scope {
	case "user":
		if dir := os.Getenv("CLAUDE_CONFIG_DIR"); dir != "" {
			return filepath.Join(dir, ".claude.json"), nil
		}
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(home, ".claude.json"), nil
	case "project":
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		return filepath.Join(wd, ".mcp.json"), nil
	}
	return "", fmt.Errorf("--scope %q: want user or project", scope)
}

func runMcpInstall(cmd *cobra.Command, install bool, scope string, dryRun bool) error {
	path, err := mcpConfigPath(scope)
	if err != nil {
		return &cmdutil.ExitError{Code: 2, Err: err}
	}
	target, old, exe, err := readSettings(path)
	if err != nil {
		return err
	}
	args := []any{"mcp"}
	if p, err := cmdutil.PinnedConfig(cmd); err != nil {
		return &cmdutil.ExitError{Code: 2, Err: err}
	} else if p != "" {
		args = append(args, "--config", p)
	}
	entry := []member{{"type", "stdio"}, {"command", exe}, {"args", args}}
	names := []string{"scribe", "scribe-full", filepath.Base(exe)}
	updated, changes, err := editMcpServers(old, install, entry, names)
	if err != nil {
		return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("%s: %w; nothing changed", path, err)}
	}
	return saveSettings(cmd, path, target, old, updated, changes,
		"scribe mcp is "+map[bool]string{true: "installed", false: "not there"}[install], dryRun)
}

// editMcpServers adds (install) or removes scribe's entry in the
// "mcpServers" of old ("" for none) and returns the new file and what
// changed (nothing: no write needed). An entry named scribe that scribe
// did not write (mcpEntryOfScribe) is refused.
func editMcpServers(old []byte, install bool, entry []member, names []string) ([]byte, []string, error) {
	b, top, st, err := settingsTop(old)
	if err != nil {
		return nil, nil, err
	}
	var edits []edit
	change := "added mcpServers." + mcpServerName
	si := top.find("mcpServers")
	switch {
	case si < 0 && !install:
		return old, nil, nil
	case si < 0:
		edits = listEdit{add: []any{member{"mcpServers", []member{{mcpServerName, entry}}}}}.edits(b, top, st)
	default:
		v := top.items[si].val
		if b[v] != '{' {
			return nil, nil, errors.New(`"mcpServers" is not an object`)
		}
		servers := scanList(b, v)
		if k, dup := servers.duplicateKey(); dup {
			return nil, nil, fmt.Errorf("the key %q is there twice in \"mcpServers\" (Claude Code reads only the last one)", k)
		}
		mi := servers.find(mcpServerName)
		if mi < 0 {
			if !install {
				return old, nil, nil
			}
			edits = listEdit{add: []any{member{mcpServerName, entry}}}.edits(b, servers, st)
			break
		}
		cur, ok := mcpEntryOfScribe(b[servers.items[mi].val:servers.items[mi].end], names)
		if !ok {
			return nil, nil, fmt.Errorf("\"mcpServers\".%q is not an entry scribe writes (leave it, or remove it yourself)", mcpServerName)
		}
		switch {
		case install && slices.Equal(cur, entryWords(entry)):
			return old, nil, nil
		case install:
			change = "updated mcpServers." + mcpServerName
			edits = listEdit{replace: map[int]any{mi: entry}}.edits(b, servers, st)
		case len(servers.items) == 1:
			// scribe's entry alone: "mcpServers" goes with it.
			change = "removed mcpServers." + mcpServerName
			edits = listEdit{remove: map[int]bool{si: true}}.edits(b, top, st)
		default:
			change = "removed mcpServers." + mcpServerName
			edits = listEdit{remove: map[int]bool{mi: true}}.edits(b, servers, st)
		}
	}
	out, err := finishEdit(old, b, edits)
	if err != nil {
		return nil, nil, err
	}
	return out, []string{change}, nil
}

// mcpEntryOfScribe returns the words (type, command, args) of v, a checked
// JSON value, when it is exactly an entry scribe writes: {"type": "stdio",
// "command": C, "args": ["mcp", ...]} and nothing else, C an absolute path
// whose name is one of names.
func mcpEntryOfScribe(v []byte, names []string) ([]string, bool) {
	var e map[string]json.RawMessage
	if json.Unmarshal(v, &e) != nil || len(e) != 3 {
		return nil, false
	}
	var typ, command string
	var args []string
	if json.Unmarshal(e["type"], &typ) != nil || json.Unmarshal(e["command"], &command) != nil || json.Unmarshal(e["args"], &args) != nil {
		return nil, false
	}
	if typ != "stdio" || !filepath.IsAbs(command) || !slices.Contains(names, filepath.Base(command)) || len(args) == 0 || args[0] != "mcp" {
		return nil, false
	}
	return append([]string{typ, command}, args...), true
}

// entryWords is entryOfScribe's answer for the entry scribe writes.
func entryWords(entry []member) []string {
	var w []string
	for _, m := range entry {
		switch v := m.val.(type) {
		case string:
			w = append(w, v)
		case []any:
			for _, a := range v {
				w = append(w, a.(string))
			}
		}
	}
	return w
}
