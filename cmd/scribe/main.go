// Command scribe records, lists and resumes AI coding-agent sessions in
// Claude Code's own on-disk format.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/internal/cli/cloud"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/cli/install"
	"github.com/e0dc0000/scribe/internal/cli/manage"
	"github.com/e0dc0000/scribe/internal/cli/read"
	"github.com/e0dc0000/scribe/internal/cli/record"
	"github.com/e0dc0000/scribe/internal/cli/secrets"
	"github.com/e0dc0000/scribe/internal/cli/usagecmd"
)

// newFactory is what every command is made with: the process's streams and
// this build's hand-overs to the full build (lite.go, full.go).
func newFactory() *cmdutil.Factory {
	return &cmdutil.Factory{
		IOStreams:      cmdutil.System(),
		Version:        version,
		NeedsFull:      needsFull,
		FullFor:        fullFor,
		DropFromSearch: dropFromSearch,
		HTMLNeedsFull:  htmlNeedsFull,
		ExportHTML:     exportHTML,
	}
}

func newRoot() *cobra.Command {
	f := newFactory()
	root := cmdutil.NewRoot(f)
	pf := root.PersistentFlags()
	pf.String("cpu-profile", "", "write a CPU profile of the command to this file (for bench/)")
	_ = pf.MarkHidden("cpu-profile")
	pf.String("trace", "", "write an execution trace of the command to this file (for bench/)")
	_ = pf.MarkHidden("trace")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if tp, _ := cmd.Flags().GetString("trace"); tp != "" {
			f, err := os.Create(tp)
			if err != nil {
				return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--trace: %w", err)}
			}
			if err := trace.Start(f); err != nil {
				f.Close()
				return fmt.Errorf("--trace: %w", err)
			}
			prev := stopProfile
			stopProfile = func() { prev(); trace.Stop(); f.Close() }
		}
		path, _ := cmd.Flags().GetString("cpu-profile")
		if path == "" {
			return nil
		}
		f, err := os.Create(path)
		if err != nil {
			return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--cpu-profile: %w", err)}
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpu-profile: %w", err)
		}
		prev := stopProfile
		stopProfile = func() { pprof.StopCPUProfile(); f.Close(); prev() }
		return nil
	}
	root.AddCommand(
		// Recording.
		record.NewCmdRecord(f), record.NewCmdWatch(f), record.NewCmdHook(f), install.NewCmdHooks(f),
		// Reading.
		read.NewCmdLs(f), read.NewCmdShow(f), read.NewCmdInfo(f), read.NewCmdExport(f), read.NewCmdImport(f),
		// Changing and looking after stored sessions.
		manage.NewCmdRm(f), manage.NewCmdTrash(f), manage.NewCmdRename(f), manage.NewCmdTag(f),
		manage.NewCmdArchive(f, true), manage.NewCmdArchive(f, false), manage.NewCmdGC(f), manage.NewCmdDu(f),
		manage.NewCmdDoctor(f), manage.NewCmdRelocate(f), manage.NewCmdIndex(f),
		manage.NewCmdCheckpoint(f), manage.NewCmdCheckpoints(f), manage.NewCmdFork(f), manage.NewCmdResume(f),
		// The team server.
		cloud.NewCmdPush(f), cloud.NewCmdPull(f),
		// Secrets, usage, this binary.
		secrets.NewCmdScan(f), secrets.NewCmdRedact(f), usagecmd.NewCmdUsage(f), newVersionCmd(f),
	)
	// The full build's commands: in the light build, stubs that hand the
	// command to scribe-full (fullonly.go, lite.go, full.go).
	root.AddCommand(fullCommands(f)...)
	read.AddCompletions(f, root)
	cmdutil.FinishRoot(root)
	return root
}

// stopProfile ends the --cpu-profile of the command, if one runs.
var stopProfile = func() {}

func main() {
	cmd, err := newRoot().ExecuteC()
	stopProfile()
	if err == nil {
		return
	}
	os.Exit(cmdutil.ExitCode(cmd, err, os.Stderr))
}
