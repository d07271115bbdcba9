package configcmd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/server"
)

// NewCmdDemo is scribe demo: it records sample (a session's JSONL) and
// runs the commands of newRoot, a root command as the binary's, on it.
func NewCmdDemo(f *cmdutil.Factory, newRoot func() *cobra.Command, sample []byte) *cobra.Command {
	var keep bool
	c := &cobra.Command{
		Use:  "demo",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := os.MkdirTemp("", "scribe-demo-")
			if err != nil {
				return err
			}
			if !keep {
				defer os.RemoveAll(dir)
			}
			out := cmd.OutOrStdout()
			in := filepath.Join(dir, "sample.jsonl")
			if err := os.WriteFile(in, sample, 0o600); err != nil {
				return err
			}
			cfgDir := filepath.Join(dir, "claude")
			run := func(title string, args ...string) error {
				fmt.Fprintf(out, "\n$ scribe %s\n", title)
				root := newRoot()
				root.SetOut(out)
				root.SetErr(cmd.ErrOrStderr())
				root.SetArgs(args)
				return root.ExecuteContext(cmd.Context())
			}
			fmt.Fprintf(out, "scribe demo: a throwaway Claude config folder at %s\n", cfgDir)
			if err := run("record sample.jsonl", "record", "--config-dir", cfgDir, in); err != nil {
				return err
			}
			if err := run("record sample.jsonl   # again: dedup adds nothing", "record", "--config-dir", cfgDir, in); err != nil {
				return err
			}
			if err := run("ls --all", "ls", "--config-dir", cfgDir, "--all"); err != nil {
				return err
			}
			if err := run("show 7b3c --subagents   # a unique prefix of the id is enough", "show", "--config-dir", cfgDir, "7b3c", "--subagents"); err != nil {
				return err
			}
			if err := run("resume 7b3c --dry-run   # what a host would send to the model", "resume", "--config-dir", cfgDir, "7b3c", "--dry-run"); err != nil {
				return err
			}
			if err := demoTeam(cmd, dir, cfgDir, run); err != nil {
				return err
			}
			fmt.Fprintln(out, "\nfiles written, in Claude Code's own layout:")
			return filepath.WalkDir(cfgDir, func(p string, d os.DirEntry, err error) error {
				if err != nil || p == cfgDir {
					return err
				}
				rel, _ := filepath.Rel(cfgDir, p)
				info, err := d.Info()
				if err != nil {
					return err
				}
				fmt.Fprintf(out, "  %v %8d  %s\n", info.Mode(), info.Size(), rel)
				return nil
			})
		},
	}
	c.Flags().BoolVar(&keep, "keep", false, "keep the throwaway folder")
	return c
}

// demoTeam starts a team server in process (embedded JetStream, a loopback
// port), pushes the recorded session to it and pulls it into a second
// config folder, as another machine would.
func demoTeam(cmd *cobra.Command, dir, cfgDir string, run func(string, ...string) error) error {
	out := cmd.OutOrStdout()
	token := "demo-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	sc := server.DefaultConfig()
	sc.Listen = "127.0.0.1:0"
	sc.DataDir = filepath.Join(dir, "serve")
	sc.Tokens = []server.Token{{SHA256: server.HashToken(token), Tenant: "demo", Scopes: []string{"read", "write"}}}
	srv, err := server.New(*sc, hclog.NewNullLogger())
	if err != nil {
		return err
	}
	if err := srv.Start(cmd.Context()); err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		return err
	}
	hcl := fmt.Sprintf(`pipeline {
  sinks  = ["jsonl/local"]
  guards = []
}
sink "jsonl" "local" {}
sink "events" "team" {
  base_url   = "http://%[1]s"
  token_file = %[2]q
}
loader "cloud" "team" {
  base_url   = "http://%[1]s"
  token_file = %[2]q
}
resume {
  loaders = ["jsonl/local", "cloud/team"]
}
`, srv.Addr(), tokenFile)
	cfgFile := filepath.Join(dir, "team.hcl")
	if err := os.WriteFile(cfgFile, []byte(hcl), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nscribe serve is running in process at http://%s (embedded JetStream in %s)\n", srv.Addr(), sc.DataDir)
	if err := run("push --all --no-progress   # to the team server", "push", "--config", cfgFile, "--config-dir", cfgDir, "--all", "--no-progress"); err != nil {
		return err
	}
	other := filepath.Join(dir, "other-machine")
	if err := run("pull 7b3c2a10-5d4e-4f6a-9b8c-1d2e3f4a5b6c   # on another machine", "pull", "--config", cfgFile, "--config-dir", other, "7b3c2a10-5d4e-4f6a-9b8c-1d2e3f4a5b6c"); err != nil {
		return err
	}
	return run("ls --all   # the other machine sees the same session", "ls", "--config-dir", other, "--all")
}
