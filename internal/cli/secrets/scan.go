// Package secrets holds the commands that find and remove secrets in
// stored transcripts: scan (report) and redact (rewrite in place, the
// originals kept in the trash).
package secrets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/processors/redact"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/transcript"
)

// redactTargets is what scan and redact share: the store, the redactor of
// --rules, and the sessions the arguments name.
func redactTargets(f *cmdutil.Factory, cmd *cobra.Command, args []string, all bool) (jsonl.Layout, *redact.Redactor, *redact.Config, core.ID, []cmdutil.LocalSession, error) {
	l, cfg, err := f.LocalLayout(cmd)
	if err != nil {
		return l, nil, nil, core.ID{}, nil, err
	}
	red, rc, id, err := cmdutil.RedactorFor(cmd.Context(), cmd, cfg, l)
	if err != nil {
		return l, nil, nil, id, nil, err
	}
	sessions, err := sessionsFor(cmd.Context(), l, args, all)
	return l, red, rc, id, sessions, err
}

// sessionsFor resolves the ID arguments (or --all) to local sessions.
func sessionsFor(ctx context.Context, l jsonl.Layout, args []string, all bool) ([]cmdutil.LocalSession, error) {
	if all == (len(args) > 0) {
		return nil, &cmdutil.ExitError{Code: 2, Err: errors.New("give session ids or --all (not both)")}
	}
	every, err := cmdutil.AllLocalSessions(l)
	if err != nil {
		return nil, err
	}
	if all {
		return every, nil
	}
	byID := map[string]cmdutil.LocalSession{}
	for _, s := range every {
		byID[s.ID] = s
	}
	var out []cmdutil.LocalSession
	seen := map[string]bool{}
	for _, a := range args {
		id, err := cmdutil.ResolveSession(ctx, l, a)
		if err != nil {
			return nil, err
		}
		s, ok := byID[id]
		if !ok {
			return nil, &cmdutil.ExitError{Code: 1, Err: fmt.Errorf("session %s: not found in %s", id, l.ProjectsDir())}
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, s)
		}
	}
	return out, nil
}

// scanFinding is one secret `scribe scan` reports.
type scanFinding struct {
	Session     string `json:"session"`
	File        string `json:"file"`
	Line        int    `json:"line"`
	Column      int    `json:"column"`
	Rule        string `json:"rule"`
	Key         string `json:"key"`
	Fingerprint string `json:"fingerprint"`
	Secret      string `json:"secret,omitempty"`
}

type scanReport struct {
	Rules    string           `json:"rules"`
	Sessions int              `json:"sessions_scanned"`
	Files    int              `json:"files_scanned"`
	Bytes    int64            `json:"bytes_scanned"`
	Skipped  []string         `json:"skipped_by_allow_paths"`
	ByRule   map[string]int64 `json:"by_rule"`
	Findings []scanFinding    `json:"findings"`
}

func NewCmdScan(f *cmdutil.Factory) *cobra.Command {
	var all, asJSON, sarif, show bool
	cmd := &cobra.Command{
		Use:   "scan [ID... | --all]",
		Short: "Report secrets in stored transcripts (exit 1 when there are any)",
		Long: "Scans sessions' transcripts and subagent files with the redact processor's rules and reports each\n" +
			"secret's session, file, line, rule and keyed fingerprint (the value only with --show).\n" +
			"Exit status: 0 none found, 1 found (or a failure), 2 usage.",
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && sarif {
				return &cmdutil.ExitError{Code: 2, Err: errors.New("--json and --sarif: choose one")}
			}
			_, red, _, id, sessions, err := redactTargets(f, cmd, args, all)
			if err != nil {
				return err
			}
			rep := &scanReport{Rules: id.String(), ByRule: map[string]int64{}, Findings: []scanFinding{}, Skipped: []string{}}
			for _, s := range sessions {
				if err := scanSession(red, s, show, rep); err != nil {
					return err
				}
			}
			out := cmd.OutOrStdout()
			switch {
			case asJSON:
				err = cmdutil.WriteJSON(out, rep)
			case sarif:
				err = cmdutil.WriteJSON(out, sarifOf(rep, red, f.Version))
			default:
				printScanReport(out, rep)
			}
			if err != nil {
				return err
			}
			if len(rep.Findings) > 0 {
				return &cmdutil.ExitError{Code: 1, Err: fmt.Errorf("%d secrets found in %d sessions", len(rep.Findings), countSessions(rep))}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&all, "all", false, "scan every session")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fl.BoolVar(&sarif, "sarif", false, "print the report as SARIF 2.1.0 (for code-scanning tools)")
	fl.BoolVar(&show, "show", false, "print each secret's value too")
	fl.String("rules", "", `the redact processor block whose rules apply (its name: "default" for processor "redact" "default")`)
	return cmd
}

// scanSession scans a session's transcript and subagent files (not
// scribe's sidecar).
func scanSession(red *redact.Redactor, s cmdutil.LocalSession, show bool, rep *scanReport) error {
	files, _ := jsonl.TranscriptFiles(s.Dir, s.ID)
	rep.Sessions++
	for _, f := range files {
		if f.Sidecar {
			continue
		}
		if red.Allowed(f.Path) {
			rep.Skipped = append(rep.Skipped, f.Path)
			continue
		}
		fh, err := os.Open(f.Path)
		if err != nil {
			return fmt.Errorf("scan %s: %w", f.Path, err)
		}
		rep.Files++
		n := 0
		err = transcript.EachLine(fh, func(line []byte, _ bool) {
			n++
			rep.Bytes += int64(len(line)) + 1
			for _, fd := range red.Scan(line) {
				sf := scanFinding{Session: s.ID, File: f.Path, Line: n, Column: fd.Start + 1, Rule: fd.Rule, Key: fd.Key,
					Fingerprint: red.Fingerprint(fd.Secret)}
				if show {
					sf.Secret = fd.Secret
				}
				rep.ByRule[fd.Rule]++
				rep.Findings = append(rep.Findings, sf)
			}
		})
		fh.Close()
		if err != nil {
			return fmt.Errorf("scan %s: %w", f.Path, err)
		}
	}
	return nil
}

func countSessions(rep *scanReport) int {
	s := map[string]bool{}
	for _, f := range rep.Findings {
		s[f.Session] = true
	}
	return len(s)
}

func printScanReport(w io.Writer, rep *scanReport) {
	for _, f := range rep.Findings {
		fmt.Fprintf(w, "%s  %s:%d:%d  %s  %s  (in %q)", f.Session, f.File, f.Line, f.Column, f.Rule, f.Fingerprint, f.Key)
		if f.Secret != "" {
			fmt.Fprintf(w, "  %s", f.Secret)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%d secrets in %d of %d sessions (%d files, %s scanned, rules of %s)\n",
		len(rep.Findings), countSessions(rep), rep.Sessions, rep.Files, cmdutil.HumanBytes(rep.Bytes), rep.Rules)
	rules := make([]string, 0, len(rep.ByRule))
	for r := range rep.ByRule {
		rules = append(rules, r)
	}
	sort.Strings(rules)
	for _, r := range rules {
		fmt.Fprintf(w, "  %-28s %d\n", r, rep.ByRule[r])
	}
	for _, p := range rep.Skipped {
		fmt.Fprintf(w, "  skipped (allow_paths): %s\n", p)
	}
}

// sarifOf is the report as a SARIF 2.1.0 log.
func sarifOf(rep *scanReport, red *redact.Redactor, version string) map[string]any {
	var rules []map[string]any
	for _, id := range red.Rules() {
		rules = append(rules, map[string]any{"id": id, "shortDescription": map[string]any{"text": "secret: " + id}})
	}
	results := []map[string]any{}
	for _, f := range rep.Findings {
		uri := f.File
		if abs, err := filepath.Abs(f.File); err == nil {
			uri = "file://" + filepath.ToSlash(abs)
		}
		msg := fmt.Sprintf("%s secret in %q of session %s (fingerprint %s)", f.Rule, f.Key, f.Session, f.Fingerprint)
		results = append(results, map[string]any{
			"ruleId":  f.Rule,
			"level":   "error",
			"message": map[string]any{"text": strings.TrimSpace(msg)},
			"locations": []any{map[string]any{"physicalLocation": map[string]any{
				"artifactLocation": map[string]any{"uri": uri},
				"region":           map[string]any{"startLine": f.Line, "startColumn": f.Column},
			}}},
			"partialFingerprints": map[string]any{"secretHmac/v1": f.Fingerprint},
		})
	}
	return map[string]any{
		"$schema": "https://json.schemastore.org/sarif-2.1.0.json",
		"version": "2.1.0",
		"runs": []any{map[string]any{
			"tool":    map[string]any{"driver": map[string]any{"name": "scribe", "informationUri": "https://github.com/e0dc0000/scribe", "version": version, "rules": rules}},
			"results": results,
		}},
	}
}
