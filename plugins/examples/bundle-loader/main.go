// Command bundle-loader is a scribe loader plugin that reads sessions from
// a folder of exported bundles: transcripts laid out as Claude Code lays
// them out under ~/.claude/projects, either flat or one folder per project.
//
//	<dir>/<sessionId>.jsonl
//	<dir>/<sessionId>/subagents/agent-<agentId>.jsonl
//	<dir>/<project>/<sessionId>.jsonl                      (one level down)
//	<dir>/<project>/<sessionId>/subagents/agent-<agentId>.jsonl
//
// A copy of ~/.claude/projects (or of one project folder) is therefore a
// bundle folder as it is. The first file found wins: the flat layout
// first, then the project folders in name order (the folder named after the
// session's cwd, when scribe knows it, before the others).
//
// Lines come back byte for byte, in file order, streamed to scribe in pages
// without holding the whole session. Blank lines are skipped; a line that
// is not a JSON object is skipped too and reported in the transcript's
// notes (a torn last line, typically).
//
// Configuration (the `config` object of the plugin's block):
//
//	config = {
//	  dir = "/srv/scribe/bundles"   # required
//	}
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/plugins/sdk"
)

var version = "0.1.0"

// Config is the plugin's configuration.
type Config struct {
	Dir string `json:"dir" doc:"folder of exported bundles: <sessionId>.jsonl files, flat or one folder per project"`
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Dir == "" {
		return errors.New("dir is required")
	}
	if !filepath.IsAbs(c.Dir) {
		return fmt.Errorf("dir %q: want an absolute path", c.Dir)
	}
	fi, err := os.Stat(c.Dir)
	if err != nil {
		return fmt.Errorf("dir: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("dir %s is not a folder", c.Dir)
	}
	return nil
}

// Loader reads sessions from the bundle folder.
type Loader struct {
	dir string
}

var (
	_ sdk.Loader       = (*Loader)(nil)
	_ sdk.StreamLoader = (*Loader)(nil)
)

// Configure decodes the configuration.
func (l *Loader) Configure(_ context.Context, raw json.RawMessage) error {
	var cfg Config
	if err := sdk.DecodeConfig(raw, &cfg); err != nil {
		return err
	}
	l.dir = filepath.Clean(cfg.Dir)
	sdk.Logger().Info("bundle loader configured", "dir", l.dir)
	return nil
}

// Load reads a whole session.
func (l *Loader) Load(ctx context.Context, ref core.SessionRef) (*core.Transcript, error) {
	t := &core.Transcript{Ref: ref}
	partial, notes, err := l.LoadStream(ctx, ref, func(e core.Entry) error {
		t.Entries = append(t.Entries, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	t.Partial, t.Notes = partial, notes
	return t, nil
}

// LoadStream reads a session line by line.
func (l *Loader) LoadStream(ctx context.Context, ref core.SessionRef, emit func(core.Entry) error) (bool, []string, error) {
	path, err := l.find(ref)
	if err != nil {
		return false, nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return false, nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 256<<10)
	var notes []string
	skipped := 0
	for lineNo := 1; ; lineNo++ {
		if err := ctx.Err(); err != nil {
			return false, nil, err
		}
		line, rerr := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			e, perr := core.ParseEntryOwned(line)
			if perr != nil {
				skipped++
				if len(notes) < 10 {
					notes = append(notes, fmt.Sprintf("%s:%d: skipped: %v", filepath.Base(path), lineNo, perr))
				}
			} else if err := emit(e); err != nil {
				return false, nil, err
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return false, nil, fmt.Errorf("read %s: %w", path, rerr)
		}
	}
	if skipped > 0 {
		sdk.Logger().Warn("malformed lines skipped", "file", path, "count", skipped)
		if skipped > len(notes) {
			notes = append(notes, fmt.Sprintf("%s: %d malformed lines skipped in all", filepath.Base(path), skipped))
		}
	}
	return false, notes, nil
}

// find returns the file of a session or sidechain.
func (l *Loader) find(ref core.SessionRef) (string, error) {
	if !safeName(ref.SessionID) || (ref.AgentID != "" && !safeName(ref.AgentID)) {
		return "", fmt.Errorf("session %q: not a valid session or agent id", ref.Key())
	}
	rel := ref.SessionID + ".jsonl"
	if ref.AgentID != "" {
		rel = filepath.Join(ref.SessionID, "subagents", "agent-"+ref.AgentID+".jsonl")
	}
	candidates := []string{filepath.Join(l.dir, rel)}
	projects, _ := os.ReadDir(l.dir)
	var names []string
	for _, p := range projects {
		if p.IsDir() && p.Name() != ref.SessionID {
			names = append(names, p.Name())
		}
	}
	sort.Strings(names)
	if ref.CWD != "" {
		// Claude Code names a project folder after its cwd, every
		// character that is not a letter or digit replaced with '-'.
		want := sanitize(ref.CWD)
		sort.SliceStable(names, func(i, j int) bool { return names[i] == want && names[j] != want })
	}
	for _, n := range names {
		candidates = append(candidates, filepath.Join(l.dir, n, rel))
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() {
			return c, nil
		}
	}
	return "", fmt.Errorf("session %s in %s: %w", ref.Key(), l.dir, core.ErrNotFound)
}

func safeName(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > 200 {
		return false
	}
	return !strings.ContainsAny(s, "/\\\x00")
}

func sanitize(cwd string) string {
	b := []byte(cwd)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

func main() {
	sdk.ServeLoader(sdk.Info{
		Type:        "bundle",
		Version:     version,
		Description: "reads sessions from a folder of exported bundles (<sessionId>.jsonl, flat or per project)",
		Config:      &Config{},
	}, &Loader{})
}
