// Package install puts scribe into Claude Code's settings files and takes
// it out again, editing them in place (every byte scribe does not change
// stays as it was): hooks install/uninstall (settings.json) and mcp
// install/uninstall (.claude.json, .mcp.json).
package install

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/cli/record"
	"github.com/e0dc0000/scribe/internal/durable"
)

// hookEvents are the Claude Code hook events scribe hook handles.
var hookEvents = []string{"SessionStart", "UserPromptSubmit", "PermissionRequest", "Notification", "PostToolUse", "Stop", "Interrupt", "SubagentStop", "PreCompact", "PostCompact", "SessionEnd"}

func NewCmdHooks(f *cmdutil.Factory) *cobra.Command {
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
folder. Running it twice changes nothing the second time. Only the groups scribe
writes are touched ({"hooks": [{"type": "command", "command": "<this scribe> hook
[--config FILE]", "timeout": 10}]}, nothing else in them); every other byte of the
file stays as it is, so uninstall after install gives the file back as it was. A
settings.json that is a symbolic link is written through it: its target is
replaced atomically and the link stays. Before a change the file's content is
kept beside it as settings.json.scribe.bak, or .scribe.bak.1, .2, ... when that
is taken: no backup is ever overwritten. A settings.json that is not valid JSON,
or that holds a key twice where scribe edits (two "hooks", an event twice in
"hooks"), is refused and left as it is (exit 2). --dry-run prints
the file as it would be and changes nothing.`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return runHooks(f, cmd, install, scope, dryRun) },
		}
		sub.Flags().StringVar(&scope, "scope", "user", "which settings.json: user, project or local")
		sub.Flags().BoolVar(&dryRun, "dry-run", false, "print the changed settings.json instead of writing it")
		c.AddCommand(sub)
	}
	return c
}

func settingsPath(f *cmdutil.Factory, cmd *cobra.Command, scope string) (string, error) {
	switch scope {
	case "user":
		cfg, err := f.LoadConfig(cmd)
		if err != nil {
			return "", err
		}
		dir, err := cmdutil.ClaudeConfigDir(cfg)
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

func runHooks(f *cmdutil.Factory, cmd *cobra.Command, install bool, scope string, dryRun bool) error {
	path, err := settingsPath(f, cmd, scope)
	if err != nil {
		return &cmdutil.ExitError{Code: 2, Err: err}
	}
	target, old, exe, err := readSettings(path)
	if err != nil {
		return err
	}
	command := cmdutil.ShellQuote(exe) + " hook"
	if p, err := cmdutil.PinnedConfig(cmd); err != nil {
		return &cmdutil.ExitError{Code: 2, Err: err}
	} else if p != "" {
		// The hook reads the same configuration as this command.
		command += " --config " + cmdutil.ShellQuote(p)
	}
	if install {
		if cfg, err := f.LoadConfig(cmd); err != nil {
			return &cmdutil.ExitError{Code: 2, Err: err}
		} else if _, err := record.ResolveWatch(cfg, nil, ""); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: scribe hook will record nothing with this configuration: %v\n", err)
		}
	}
	names := []string{"scribe", "scribe-full", filepath.Base(exe)}
	updated, changes, err := editHooks(old, install, command, names)
	if err != nil {
		return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("%s: %w; nothing changed", path, err)}
	}
	return saveSettings(cmd, path, target, old, updated, changes,
		"scribe's hooks are "+map[bool]string{true: "installed", false: "not there"}[install], dryRun)
}

// saveSettings writes updated, the edited form of old, to target (path
// after its links) with the changes said; a backup of old first. dryRun
// prints it instead; no changes says nothing (what is there, as is).
func saveSettings(cmd *cobra.Command, path, target string, old, updated []byte, changes []string, as string, dryRun bool) error {
	out := cmd.OutOrStdout()
	shown := path
	if target != path {
		shown = path + " -> " + target
	}
	if len(changes) == 0 {
		fmt.Fprintf(out, "%s: nothing to change (%s)\n", shown, as)
		return nil
	}
	if dryRun {
		fmt.Fprintf(out, "%s would change (%s):\n%s", shown, strings.Join(changes, ", "), updated)
		return nil
	}
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(target); err == nil {
		mode = fi.Mode().Perm()
		bak, err := backUpSettings(path, old, mode)
		if err != nil {
			return fmt.Errorf("back up %s: %w; nothing changed", path, err)
		}
		fmt.Fprintf(out, "%s: saved as %s\n", path, bak)
	}
	// Through a symbolic link, the target is replaced (its folder gets
	// the temporary file): the link stays.
	if err := durable.WriteFile(target, updated, mode); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: %s\n", shown, strings.Join(changes, ", "))
	return nil
}

// readSettings reads the file path names (after its links: target; nil
// when there is none yet) and finds this scribe binary (exe), what an
// install writes.
func readSettings(path string) (target string, old []byte, exe string, err error) {
	if target, err = followLinks(path); err != nil {
		return "", nil, "", err
	}
	old, err = os.ReadFile(target)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", nil, "", fmt.Errorf("read %s: %w", target, err)
	}
	if exe, err = os.Executable(); err != nil {
		return "", nil, "", fmt.Errorf("find the scribe binary: %w", err)
	}
	return target, old, exe, nil
}

// followLinks returns the file path names after every symbolic link, even
// one whose target does not exist yet (writing creates it there).
func followLinks(path string) (string, error) {
	if t, err := filepath.EvalSymlinks(path); err == nil {
		return t, nil
	}
	p := path
	for range 40 {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		t, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = t
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// maxBackups bounds the backup generations hooks keeps beside a file.
const maxBackups = 1000

// backUpSettings keeps old beside path as path.scribe.bak, else the first
// free path.scribe.bak.N: a backup is never overwritten. When the newest
// backup holds old already, it is the backup.
func backUpSettings(path string, old []byte, mode os.FileMode) (string, error) {
	newest := ""
	for i := range maxBackups {
		name := path + ".scribe.bak"
		if i > 0 {
			name += "." + strconv.Itoa(i)
		}
		if _, err := os.Lstat(name); err == nil {
			newest = name
			continue
		}
		if newest != "" {
			if b, err := os.ReadFile(newest); err == nil && bytes.Equal(b, old) {
				return newest, nil
			}
		}
		err := durable.WriteFileNew(name, old, mode)
		if errors.Is(err, fs.ErrExist) {
			continue // made meanwhile: the next name
		}
		if err != nil {
			return "", err
		}
		return name, nil
	}
	return "", fmt.Errorf("%d backups are there already (%s.scribe.bak…); remove old ones", maxBackups, path)
}
