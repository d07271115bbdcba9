// Package configcmd holds config (check, path) and demo, commands of the
// full build.
package configcmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/cli/record"
	"github.com/e0dc0000/scribe/plugins"
	"github.com/e0dc0000/scribe/server"
)

func NewCmdConfig(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{Use: "config"}
	var asJSON bool
	check := &cobra.Command{
		Use:   "check",
		Short: "Check the configuration (its file over the built-in one) and report every problem with its file:line",
		Long: "Check reads the configuration as every command does (the file `scribe config path` names\n" +
			"layered over the built-in configuration, then SCRIBE_ variables and flags), says which file\n" +
			"that is, decodes every block into its component,\n" +
			"and for the components in use (pipeline.sinks, pipeline.guards, resume.loaders) checks plugin\n" +
			"binaries and their sha256, and token files. Every problem is reported, each at its file:line;\n" +
			"each file or folder the configuration names is printed as written and as resolved (~ expanded);\n" +
			"warnings (such as persistence guards left out) go to stderr. Exit status 2 when there are problems.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			found, err := cmdutil.ConfigFile(cmd)
			if err != nil {
				return &cmdutil.ExitError{Code: 2, Err: err}
			}
			rep, cfg := checkConfig(f, found.Path, os.Environ(), cmd.Flags())
			rep.Source = found.Source
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				printCheck(cmd.OutOrStdout(), cmd.ErrOrStderr(), rep, cfg)
			}
			if !rep.OK {
				return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("%s: %d %s", rep.name(), len(rep.Problems), plural(len(rep.Problems), "problem"))}
			}
			return nil
		},
	}
	check.Flags().BoolVar(&asJSON, "json", false, `print {"file", "source", "ok", "problems", "warnings", "paths"} as JSON`)
	c.AddCommand(check, newConfigPathCmd(f))
	return c
}

func newConfigPathCmd(f *cmdutil.Factory) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "path",
		Short: "Print the configuration file in use, and how it was found (or: built-in only)",
		Long: `path prints the configuration file every command reads over the built-in one,
and how it was found: --config, else $SCRIBE_CONFIG, else
$XDG_CONFIG_HOME/scribe/config.hcl, else ~/.config/scribe/config.hcl (the first
that exists). With none, it prints "built-in only". CLAUDE_CONFIG_DIR is not
scribe's configuration: it names Claude Code's folder, the one scribe mirrors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			found, err := cmdutil.ConfigFile(cmd)
			if err != nil {
				return &cmdutil.ExitError{Code: 2, Err: err}
			}
			if asJSON {
				return cmdutil.WriteJSON(cmd.OutOrStdout(), found)
			}
			fmt.Fprintln(cmd.OutOrStdout(), describeFound(found))
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, `print {"path", "source"} as JSON`)
	return c
}

// describeFound says which configuration file is in use, in a line.
func describeFound(f config.Found) string {
	if f.Path == "" {
		return config.SourceBuiltin
	}
	return fmt.Sprintf("%s (%s, over the built-in configuration)", f.Path, f.Source)
}

// checkReport is what `scribe config check` finds (--json prints it).
type checkReport struct {
	// File is the --config path, config.DefaultName for the built-in
	// configuration alone.
	File string `json:"file"`
	// Source says how the file was found (config.Found.Source).
	Source   string      `json:"source"`
	OK       bool        `json:"ok"`
	Problems []checkItem `json:"problems"`
	Warnings []checkItem `json:"warnings"`
	// Paths are the files and folders the configuration in use names
	// (config_dir, the blocks in use, the server block), as written and
	// as resolved (~ and ~user expanded).
	Paths []config.PathOption `json:"paths"`
}

// checkItem is one problem or warning: where ("file:line:col", "env
// SCRIBE_X", "flag --x", or "" when there is no place) and what.
type checkItem struct {
	Pos     string `json:"pos"`
	Message string `json:"message"`
}

func (r checkReport) name() string {
	if r.File == config.DefaultName {
		return "built-in configuration"
	}
	return r.File
}

func itemOf(e *config.Error) checkItem {
	it := checkItem{Message: e.Msg}
	switch {
	case e.Source != "":
		it.Pos = e.Source
	case e.Pos.Line > 0:
		it.Pos = e.Pos.String()
	default:
		it.Pos = e.Pos.File
	}
	return it
}

func itemsOf(errs []*config.Error) []checkItem {
	out := []checkItem{}
	for _, e := range errs {
		out = append(out, itemOf(e))
	}
	return out
}

// checkConfig runs every check of `scribe config check` and returns the
// report, and the configuration when it could be read.
func checkConfig(f *cmdutil.Factory, path string, env []string, flags *pflag.FlagSet) (checkReport, *config.Config) {
	rep := checkReport{File: path}
	if path == "" {
		rep.File = config.DefaultName
	}
	cfg, errs := config.Check(path, env, flags)
	if cfg != nil {
		decoded, derrs := decodeAll(f, cfg)
		errs = append(errs, derrs...)
		errs = append(errs, checkInUse(cfg, decoded, env)...)
		rep.Warnings = itemsOf(cfg.Warnings)
		rep.Paths = pathsInUse(cfg, decoded)
	}
	if rep.Paths == nil {
		rep.Paths = []config.PathOption{}
	}
	rep.Problems = itemsOf(errs)
	if rep.Warnings == nil {
		rep.Warnings = []checkItem{}
	}
	rep.OK = len(rep.Problems) == 0
	return rep, cfg
}

// printCheck prints problems and warnings on stderr, one a line, and the
// summary of a good configuration on stdout.
func printCheck(out, errw io.Writer, rep checkReport, cfg *config.Config) {
	for _, w := range rep.Warnings {
		fmt.Fprintln(errw, "warning: "+joinPos(w))
	}
	for _, p := range rep.Problems {
		fmt.Fprintln(errw, joinPos(p))
	}
	if rep.OK {
		fmt.Fprintf(out, "%s: ok (%d components; sinks %v; guards %v; loaders %v)\n",
			rep.name(), len(cfg.Components), cfg.Pipeline.Sinks, cfg.Pipeline.Guards, cfg.Resume.Loaders)
		if rep.Source != "" {
			fmt.Fprintf(out, "file: %s\n", describeFound(config.Found{Path: cfg.File, Source: rep.Source}))
		}
		if cfg.Origin("pipeline.sinks") == config.BuiltinOrigin {
			fmt.Fprintf(out, "watch and hook mirror into %s (pipeline.sinks is not configured)\n", record.DefaultArchive)
		}
		printPaths(out, rep.Paths)
	}
}

// printPaths says what each path of the configuration resolved to.
func printPaths(out io.Writer, paths []config.PathOption) {
	wd, _ := os.Getwd()
	for _, p := range paths {
		line := fmt.Sprintf("path %s = %q", p.Option, p.Written)
		if p.Resolved != p.Written {
			line += " -> " + p.Resolved
		}
		program := strings.HasSuffix(p.Option, ".command") || strings.HasSuffix(p.Option, ".command.0")
		if !filepath.IsAbs(p.Resolved) && (!program || strings.ContainsRune(p.Resolved, filepath.Separator)) {
			line += " (relative: " + filepath.Join(wd, p.Resolved) + " from this folder)"
		}
		fmt.Fprintln(out, line)
	}
}

// pathsInUse lists the paths of config_dir, of the blocks in use and of
// the server block, as written and resolved.
func pathsInUse(cfg *config.Config, decoded map[blockRef]any) []config.PathOption {
	out := append([]config.PathOption{}, cfg.Paths()...)
	for _, r := range inUse(cfg) {
		if c, ok := decoded[r]; ok {
			comp, _ := cfg.Lookup(r.kind, r.id)
			out = append(out, comp.Paths(c)...)
		}
	}
	if c, ok := decoded[blockRef{kind: config.KindServer}]; ok && cfg.Server != nil {
		out = append(out, cfg.Server.Paths(c)...)
	}
	return out
}

func joinPos(it checkItem) string {
	if it.Pos == "" {
		return it.Message
	}
	return it.Pos + ": " + it.Message
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// blockRef names a declared block.
type blockRef struct {
	kind core.Kind
	id   core.ID
}

// decodeAll decodes every declared block (and the server block) into its
// factory's config without starting anything. It returns the configs of the
// blocks that decoded, and every problem of the others.
func decodeAll(f *cmdutil.Factory, cfg *config.Config) (map[blockRef]any, []*config.Error) {
	decoded := map[blockRef]any{}
	var errs []*config.Error
	for _, comp := range cfg.Components {
		fac, err := f.FindFactory(comp.Kind, comp.ID.Type)
		if err != nil {
			errs = append(errs, &config.Error{Pos: comp.Range, Msg: fmt.Sprintf("%s %s: %v", comp.Kind, comp.ID, err)})
			continue
		}
		c := fac.DefaultConfig()
		if derrs := comp.DecodeAll(c); len(derrs) > 0 {
			errs = append(errs, derrs...)
			continue
		}
		decoded[blockRef{comp.Kind, comp.ID}] = c
	}
	if cfg.Server != nil {
		sc := server.DefaultConfig()
		if derrs := cfg.Server.DecodeAll(sc); len(derrs) > 0 {
			errs = append(errs, derrs...)
		} else {
			decoded[blockRef{kind: config.KindServer}] = sc
		}
	}
	return decoded, errs
}

// validate decodes and checks every declared component without starting
// anything: decodeAll's problems.
func validate(f *cmdutil.Factory, cfg *config.Config) []*config.Error {
	_, errs := decodeAll(f, cfg)
	return errs
}

// inUse lists the blocks the configuration runs: pipeline.guards,
// pipeline.sinks, then resume.loaders (a loader ID naming a sink block is
// that block), each once.
func inUse(cfg *config.Config) []blockRef {
	var out []blockRef
	seen := map[blockRef]bool{}
	add := func(kind core.Kind, id core.ID) {
		r := blockRef{kind, id}
		if _, ok := cfg.Lookup(kind, id); !ok || seen[r] {
			return
		}
		seen[r] = true
		out = append(out, r)
	}
	for _, id := range cfg.Pipeline.Guards {
		add(core.KindGuard, id)
	}
	for _, id := range cfg.Pipeline.Sinks {
		add(core.KindSink, id)
	}
	for _, id := range cfg.Resume.Loaders {
		if _, ok := cfg.Lookup(core.KindLoader, id); ok {
			add(core.KindLoader, id)
		} else {
			add(core.KindSink, id)
		}
	}
	return out
}

// checkInUse checks what starting the components in use would need: a
// plugin block's binary (found, executable, with the configured sha256)
// and a token_file (readable, not empty). Blocks that did not decode are
// left out: their problems are reported already.
func checkInUse(cfg *config.Config, decoded map[blockRef]any, env []string) []*config.Error {
	environ := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			environ[k] = v
		}
	}
	wd, _ := os.Getwd()
	var errs []*config.Error
	for _, r := range inUse(cfg) {
		comp, _ := cfg.Lookup(r.kind, r.id)
		c, ok := decoded[r]
		if !ok {
			continue
		}
		label := fmt.Sprintf("%s %q", r.kind, r.id)
		if pc, ok := c.(*plugins.Config); ok && pc.Reattach == "" && environ[plugins.ReattachEnv(r.id.Name)] == "" {
			if _, err := plugins.CheckBinary(pc, wd, environ["PATH"]); err != nil {
				attr := "command"
				if errors.Is(err, plugins.ErrChecksum) {
					attr = "sha256"
				}
				errs = append(errs, &config.Error{Pos: attrPos(comp, attr), Msg: fmt.Sprintf("%s: %s%s: %v",
					label, attr, builtinNote(cfg, r, attr), err)})
			}
		}
		for _, p := range comp.Paths(c) {
			if !strings.HasSuffix(p.Option, ".token_file") {
				continue
			}
			if err := checkTokenFile(p.Resolved); err != nil {
				errs = append(errs, &config.Error{Pos: attrPos(comp, "token_file"), Msg: fmt.Sprintf("%s: token_file %q%s: %v",
					label, p.Written, builtinNote(cfg, r, "token_file"), err)})
			}
		}
	}
	return errs
}

// builtinNote says " (the built-in default)" when the file does not set
// a block's attribute (the problem is then reported at the block), else
// nothing: the position names the file's line.
func builtinNote(cfg *config.Config, r blockRef, attr string) string {
	if cfg.Origin(string(r.kind)+"."+r.id.String()+"."+attr) == config.BuiltinOrigin {
		return " (the built-in default)"
	}
	return ""
}

// attrPos is where to report a problem with an attribute: the attribute
// when the file sets it, else the block.
func attrPos(comp config.Component, attr string) config.Pos {
	if p, ok := comp.AttrPos(attr); ok && p.File != config.DefaultName {
		return p
	}
	return comp.Range
}

// checkTokenFile checks that a token file can be read and holds a token.
func checkTokenFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("cannot read it: %w", err)
	}
	if strings.TrimSpace(string(b)) == "" {
		return errors.New("the file is empty")
	}
	return nil
}
