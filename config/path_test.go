package config

import (
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

func TestExpandHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	me, err := user.Current()
	if err != nil {
		t.Skip("no current user:", err)
	}
	for in, want := range map[string]string{
		"~":                      home,
		"~/":                     home,
		"~/scribe-archive":       filepath.Join(home, "scribe-archive"),
		"~" + me.Username + "/x": filepath.Join(me.HomeDir, "x"),
		"/abs/~/x":               "/abs/~/x",
		"rel/~x":                 "rel/~x",
		"":                       "",
	} {
		if got, err := ExpandHome(in); err != nil || filepath.Clean(got) != filepath.Clean(want) {
			t.Errorf("ExpandHome(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ExpandHome("~nosuchuser-scribe/x"); err == nil || !strings.Contains(err.Error(), `no user "nosuchuser-scribe"`) {
		t.Fatalf("~nosuchuser-scribe: %v, want an error naming the user", err)
	}
}

// TestExpandXDG: a leading XDG base directory variable is its value when
// absolute, else its default under the home folder; other variables stay.
func TestExpandXDG(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("XDG_STATE_HOME", "relative/state")
	t.Setenv("XDG_CONFIG_HOME", "/xdg/config")
	for in, want := range map[string]string{
		"$XDG_DATA_HOME/scribe/archive":   filepath.Join(home, ".local/share/scribe/archive"),
		"${XDG_DATA_HOME}/scribe/archive": filepath.Join(home, ".local/share/scribe/archive"),
		"$XDG_DATA_HOME":                  filepath.Join(home, ".local/share"),
		"$XDG_STATE_HOME/x":               filepath.Join(home, ".local/state/x"),
		"$XDG_CONFIG_HOME/scribe":         "/xdg/config/scribe",
		"$XDG_CACHE_HOME/scribe":          filepath.Join(home, ".cache/scribe"),
		"$HOME/x":                         "$HOME/x",
		"$XDG_DATA_HOMEX/x":               "$XDG_DATA_HOMEX/x",
		"/abs/$XDG_DATA_HOME":             "/abs/$XDG_DATA_HOME",
	} {
		if got, err := ExpandHome(in); err != nil || filepath.Clean(got) != filepath.Clean(want) {
			t.Errorf("ExpandHome(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

type pathKey struct {
	File    string   `json:"file" config:"path"`
	Command []string `json:"command" config:"command"`
}

type pathEmbedded struct {
	SpoolDir string `json:"spool_dir" config:"path"`
}

type pathConfig struct {
	pathEmbedded
	Dir   string    `json:"dir" config:"path"`
	Globs []string  `json:"globs"`
	Files []string  `json:"files" config:"path"`
	Key   pathKey   `json:"key"`
	Keys  []pathKey `json:"keys"`
	Name  string    `json:"name"`
}

// TestDecodeExpandsEveryPathOption: Decode expands ~ in every option
// tagged config:"path" (nested, embedded, in lists) and the program of a
// config:"command", nothing else; Paths lists them as written and
// resolved; ~nosuchuser is reported at its attribute.
func TestDecodeExpandsEveryPathOption(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	c, _ := loadComponent(t, `  dir = "~/a"
  spool_dir = "~/spool"
  globs = ["~/not-a-path"]
  files = ["~/f1", "/abs"]
  key = { file = "~/k", command = ["~/bin/get-key", "~/arg"] }
  keys = [{ file = "~/k2" }]
  name = "~tilde"
`)
	var pc pathConfig
	if err := c.Decode(&pc); err != nil {
		t.Fatal(err)
	}
	h := func(p string) string { return filepath.Join(home, p) }
	want := pathConfig{pathEmbedded: pathEmbedded{SpoolDir: h("spool")}, Dir: h("a"), Globs: []string{"~/not-a-path"}, Files: []string{h("f1"), "/abs"},
		Key: pathKey{File: h("k"), Command: []string{h("bin/get-key"), "~/arg"}}, Keys: []pathKey{{File: h("k2")}}, Name: "~tilde"}
	if got, wantS := strings.Join(flat(pc), "|"), strings.Join(flat(want), "|"); got != wantS {
		t.Fatalf("decoded\n%s\nwant\n%s", got, wantS)
	}
	var opts []string
	for _, p := range c.Paths(&pc) {
		opts = append(opts, p.Option+"="+p.Written+"->"+p.Resolved)
	}
	wantOpts := []string{"sink.test/Main.spool_dir=~/spool->" + h("spool"), "sink.test/Main.dir=~/a->" + h("a"), "sink.test/Main.files.0=~/f1->" + h("f1"),
		"sink.test/Main.files.1=/abs->/abs", "sink.test/Main.key.file=~/k->" + h("k"), "sink.test/Main.key.command.0=~/bin/get-key->" + h("bin/get-key"),
		"sink.test/Main.keys.0.file=~/k2->" + h("k2")}
	if strings.Join(opts, "\n") != strings.Join(wantOpts, "\n") {
		t.Fatalf("Paths:\n%s\nwant\n%s", strings.Join(opts, "\n"), strings.Join(wantOpts, "\n"))
	}

	bad, _ := loadComponent(t, "  dir = \"~/ok\"\n  key = { file = \"~nosuchuser-scribe/k\" }\n")
	errs := bad.DecodeAll(&pathConfig{})
	if len(errs) != 1 || errs[0].Pos.Line != 3 || !strings.Contains(errs[0].Msg, `option "key.file"`) || !strings.Contains(errs[0].Msg, `no user "nosuchuser-scribe"`) {
		t.Fatalf("~nosuchuser: %v, want one error at line 3 naming the option and the user", errs)
	}
}

func flat(c pathConfig) []string {
	out := []string{c.SpoolDir, c.Dir, c.Key.File, c.Name}
	out = append(out, c.Globs...)
	out = append(out, c.Files...)
	out = append(out, c.Key.Command...)
	for _, k := range c.Keys {
		out = append(out, k.File)
	}
	return out
}

// TestConfigDirExpandsHome: the top-level config_dir, from the file, the
// environment or a flag, has its ~ expanded, and Paths says so.
func TestConfigDirExpandsHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	path := writeFile(t, t.TempDir(), "c.hcl", "config_dir = \"~/.claude\"\n")
	cfg, err := Load(path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ConfigDir != filepath.Join(home, ".claude") {
		t.Fatalf("config_dir = %q, want %s", cfg.ConfigDir, filepath.Join(home, ".claude"))
	}
	if p := cfg.Paths(); len(p) != 1 || p[0].Option != "config_dir" || p[0].Written != "~/.claude" {
		t.Fatalf("Paths() = %+v", p)
	}
	cfg, err = Load("", []string{"SCRIBE_CONFIG_DIR=~/other"}, nil)
	if err != nil || cfg.ConfigDir != filepath.Join(home, "other") {
		t.Fatalf("SCRIBE_CONFIG_DIR=~/other: %v, %q", err, cfg.ConfigDir)
	}
	if _, err := Load("", []string{"SCRIBE_CONFIG_DIR=~nosuchuser-scribe"}, nil); err == nil || !strings.Contains(err.Error(), "SCRIBE_CONFIG_DIR") || !strings.Contains(err.Error(), "nosuchuser-scribe") {
		t.Fatalf("SCRIBE_CONFIG_DIR=~nosuchuser-scribe: %v", err)
	}
}
