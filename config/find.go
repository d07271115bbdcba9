package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// FileEnv is the environment variable that names scribe's configuration
// file when --config is not given. (CLAUDE_CONFIG_DIR is another thing:
// Claude Code's own folder, which scribe reads and mirrors.)
const FileEnv = "SCRIBE_CONFIG"

// Where a configuration file was found (Found.Source).
const (
	SourceFlag     = "--config"
	SourceEnv      = "$" + FileEnv
	SourceXDG      = "$XDG_CONFIG_HOME/scribe/config.hcl"
	SourceHome     = "~/.config/scribe/config.hcl"
	SourceBuiltin  = "built-in only"
	configFileName = "config.hcl"
)

// Found is the configuration file a command reads over the built-in one.
type Found struct {
	// Path is the file; "" when there is none (the built-in configuration
	// alone).
	Path string `json:"path"`
	// Source says how it was found: SourceFlag, SourceEnv, SourceXDG,
	// SourceHome, or SourceBuiltin when no file was.
	Source string `json:"source"`
}

// Find returns the configuration file to layer over the built-in one: the
// --config flag's value (flag) when given, else $SCRIBE_CONFIG when set
// (a leading ~ expanded; it must exist, as --config's must), else
// $XDG_CONFIG_HOME/scribe/config.hcl, else ~/.config/scribe/config.hcl,
// the first of these two that exists (one that exists but cannot be read
// is found: Load then says why). No file at all is the built-in
// configuration alone.
func Find(flag string) (Found, error) {
	if flag != "" {
		return Found{Path: flag, Source: SourceFlag}, nil
	}
	if p := os.Getenv(FileEnv); p != "" {
		p, err := ExpandHome(p)
		if err != nil {
			return Found{}, err
		}
		return Found{Path: p, Source: SourceEnv}, nil
	}
	var candidates []Found
	if x := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		candidates = append(candidates, Found{filepath.Join(x, "scribe", configFileName), SourceXDG})
	}
	if home, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates, Found{filepath.Join(home, ".config", "scribe", configFileName), SourceHome})
	}
	for _, c := range candidates {
		if _, err := os.Stat(c.Path); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return c, nil
		}
	}
	return Found{Source: SourceBuiltin}, nil
}
