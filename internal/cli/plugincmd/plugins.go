// Package plugincmd holds the full build's plugin commands: plugin
// describe (one binary) and plugins status (those of the configuration).
package plugincmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/plugins"
)

// newPluginCmd is `scribe plugin`: work with one plugin binary.
func NewCmdPlugin(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{Use: "plugin"}
	var asJSON bool
	var timeout time.Duration
	var args []string
	describe := &cobra.Command{
		Use:   "describe PATH",
		Short: "Start a plugin binary briefly and print what it is: kind, type, version, sha256 and config schema",
		Long: "describe starts the binary just long enough to ask what it offers, then stops it.\n" +
			"It passes only PATH, HOME and TMPDIR of the environment. The sha256 it prints is\n" +
			"the one to put in the plugin's block.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			// Quiet unless something goes wrong: the answer is on stdout.
			log := hclog.New(&hclog.LoggerOptions{Name: "scribe.plugin", Level: hclog.Warn, Output: cmd.ErrOrStderr()})
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout+5*time.Second)
			defer cancel()
			d, err := plugins.Describe(ctx, a[0], plugins.DescribeOptions{
				Args: args, Environ: os.Environ(), StartTimeout: timeout, Logger: log,
			})
			if err != nil {
				return &cmdutil.ExitError{Code: 1, Err: err}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(d)
			}
			printDescription(out, d)
			return nil
		},
	}
	describe.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	describe.Flags().DurationVar(&timeout, "start-timeout", 10*time.Second, "how long the plugin may take to answer")
	describe.Flags().StringArrayVar(&args, "arg", nil, "an argument to pass to the binary (repeatable)")
	c.AddCommand(describe)
	return c
}

func printDescription(w io.Writer, d *plugins.Description) {
	fmt.Fprintf(w, "%s\n", d.Path)
	fmt.Fprintf(w, "  kind:      %s\n", d.Kind)
	fmt.Fprintf(w, "  type:      %s\n", d.Type)
	fmt.Fprintf(w, "  version:   %s\n", d.Version)
	fmt.Fprintf(w, "  protocol:  %d\n", d.ProtocolVersion)
	fmt.Fprintf(w, "  sha256:    %s\n", d.SHA256)
	if d.Description != "" {
		fmt.Fprintf(w, "  about:     %s\n", d.Description)
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, d.ConfigSchema, "  ", "  ") != nil {
		pretty.Reset()
		pretty.Write(d.ConfigSchema)
	}
	fmt.Fprintf(w, "\nconfig schema:\n  %s\n", pretty.String())
	fmt.Fprintf(w, "\nconfigure it with:\n\n  %s %q \"NAME\" {\n    command = %q\n    sha256  = %q\n    config  = {}\n  }\n",
		d.Kind, plugins.Type, d.Path, d.SHA256)
}

// newPluginsCmd is `scribe plugins`: the configured plugins.
func NewCmdPlugins(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{Use: "plugins"}
	var asJSON, all bool
	status := &cobra.Command{
		Use:   "status",
		Short: "Start each configured plugin (sha256 check, handshake, its configuration), report its state, stop it",
		Long: "status starts every plugin component the configuration uses (the sinks and guards of type\n" +
			"\"plugin\" in the pipeline block, and every loader of type \"plugin\"; --all: every block of\n" +
			"type \"plugin\") the way scribe would, reports what happened (state, pid, version, start time,\n" +
			"the last error) and what a sink's spool holds on disk, waiting for the plugin, and stops them.\n" +
			"It sends the plugins nothing else; the counters of a running scribe are in its pipeline stats.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.LoadConfig(cmd)
			if err != nil {
				return &cmdutil.ExitError{Code: 2, Err: err}
			}
			results, err := probePlugins(f, cmd.Context(), cfg, os.Args, all)
			if err != nil {
				return &cmdutil.ExitError{Code: 2, Err: err}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(results); err != nil {
					return err
				}
			} else {
				printStatus(out, results)
			}
			for _, r := range results {
				if r.State != plugins.StateOK {
					return &cmdutil.ExitError{Code: 1, Err: fmt.Errorf("%s %s: %s", r.Kind, r.ID, r.LastError)}
				}
			}
			return nil
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	status.Flags().BoolVar(&all, "all", false, "probe every plugin block, used or not")
	c.AddCommand(status)
	return c
}

// probePlugins starts and stops the plugin components of cfg in turn: the
// ones in use, or with all every one declared.
func probePlugins(f *cmdutil.Factory, ctx context.Context, cfg *config.Config, args []string, all bool) ([]plugins.ProbeResult, error) {
	dir, err := cmdutil.ClaudeConfigDir(cfg)
	if err != nil {
		return nil, err
	}
	wd, _ := os.Getwd()
	host := core.HostInfo{ConfigDir: dir, CleanupPeriodDays: cfg.CleanupPeriodDays, WorkDir: wd}
	log := f.Logger(cfg, "scribe")
	used := map[string]bool{}
	for _, id := range cfg.Pipeline.Sinks {
		used[string(core.KindSink)+" "+id.String()] = true
	}
	for _, id := range cfg.Pipeline.Guards {
		used[string(core.KindGuard)+" "+id.String()] = true
	}
	results := []plugins.ProbeResult{}
	for _, comp := range cfg.Components {
		if comp.ID.Type != plugins.Type {
			continue
		}
		// Loaders have no list of their own yet: every declared one counts.
		if !all && comp.Kind != core.KindLoader && !used[string(comp.Kind)+" "+comp.ID.String()] {
			continue
		}
		pc := plugins.DefaultConfig()
		if err := comp.Decode(pc); err != nil {
			results = append(results, plugins.ProbeResult{Status: plugins.Status{
				ID: comp.ID.String(), Kind: string(comp.Kind), State: plugins.StateFailed, LastError: err.Error(),
			}})
			continue
		}
		set := core.Settings{ID: comp.ID, Logger: log.Named(comp.ID.String()), Environ: os.Environ(), Args: args, Host: host}
		results = append(results, plugins.Probe(ctx, comp.Kind, set, pc))
	}
	return results, nil
}

func printStatus(w io.Writer, results []plugins.ProbeResult) {
	if len(results) == 0 {
		fmt.Fprintln(w, "no plugin component in use (--all probes every plugin block)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tID\tSTATE\tPID\tTYPE\tVERSION\tSTART\tSPOOLED\tERROR")
	for _, r := range results {
		pid, start, spooled := "-", "-", "-"
		if r.PID > 0 {
			pid = strconv.Itoa(r.PID)
			if r.Reattached {
				pid += " (attached)"
			}
		}
		if r.StartTime > 0 {
			start = r.StartTime.Round(time.Millisecond).String()
		}
		if r.Spool != nil {
			spooled = strconv.Itoa(r.Spool.Entries)
		}
		msg := strings.ReplaceAll(r.LastError, "\n", " ")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Kind, r.ID, r.State, pid,
			dash(r.PluginType), dash(r.PluginVersion), start, spooled, msg)
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
