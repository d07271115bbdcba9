//go:build lite

package main

// The light build (`go build -tags lite`, installed as `scribe` by
// scripts/install): every command that reads or writes the local store,
// without the packages that cost every start most of its time (the AWS
// SDK, pgx, gRPC and go-plugin, nats-server, SQLite: about 25 ms and 900
// page faults before main). A command or a configuration that needs one of
// them runs in the full build, installed beside it as scribe-full: this
// process is replaced by it (same arguments, environment and standard
// input), so the user sees one scribe.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/service"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/sinks/jsonl"
)

// fullName is the full build's file name, beside the light one.
const fullName = "scribe-full"

// handedOver is set in the environment of the full build a light one
// hands a command to: a light build that finds it set was itself handed
// the command, and refuses instead of handing it on for ever.
const handedOver = "SCRIBE_HANDED_OVER"

// fullCommands are the commands of the full build, as stubs (fullOnly
// holds their text) that hand the command to it.
func fullCommands(*cmdutil.Factory) []*cobra.Command {
	names := make([]string, 0, len(fullOnly))
	for name := range fullOnly {
		names = append(names, name)
	}
	sort.Strings(names)
	cmds := make([]*cobra.Command, len(names))
	for i, name := range names {
		cmds[i] = fullCmd(fullOnly[name])
	}
	return cmds
}

// fullCmd is a command the full build runs: its flags, help and
// subcommands are the full build's.
func fullCmd(t cmdText) *cobra.Command {
	c := &cobra.Command{
		Use:                t.use,
		Short:              t.short,
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, _ []string) error {
			return runFull("scribe "+c.Name(), nil)
		},
	}
	c.SetHelpFunc(func(c *cobra.Command, _ []string) {
		if err := runFull("scribe "+c.Name(), nil); err != nil {
			fmt.Fprintln(os.Stderr, "scribe:", err)
			os.Exit(2)
		}
	})
	return c
}

// needsFull hands the command to the full build when the configuration
// puts to use a component only the full build holds (service.FullOnly).
// stdin is what the command already read of its standard input (nil for
// none), given to the full build as its standard input.
func needsFull(cfg *config.Config, stdin []byte) error {
	if kind, id, ok := service.FullOnly(cfg); ok {
		return runFull(fmt.Sprintf("the configuration's %s %s", kind, id), stdin)
	}
	return nil
}

// fullFor hands the command to the full build when it is to create a
// component of a type only the full build holds (a --from or --to store).
func fullFor(kind core.Kind, typ string) error {
	if service.IsHeavy(kind, typ) {
		return runFull(fmt.Sprintf("a %s of type %q", kind, typ), nil)
	}
	return nil
}

// htmlNeedsFull hands export --format html to the full build: the page is
// the web viewer's (package ui, with its Markdown and highlighting).
func htmlNeedsFull() error { return runFull("export --format html", nil) }

// exportHTML is never reached in this build (htmlNeedsFull hands over).
func exportHTML(context.Context, io.Writer, sessions.Store, string) error {
	return errors.New("export --format html needs the full build")
}

// htmlExporter is never reached in this build either.
func htmlExporter(sessions.Store) (func(context.Context, io.Writer, string) error, error) {
	return nil, errors.New("export --all needs the full build")
}

// exportHTMLIndex is never reached in this build either.
func exportHTMLIndex(io.Writer, string, []sessions.Record, func(string) string) error {
	return errors.New("export --all needs the full build")
}

// buildName says which build this is, and where its full build is, for
// scribe version.
func buildName() string {
	if p, err := fullBinary(); err == nil {
		return "light build; full build: " + p
	}
	return "light build; full build " + fullName + " not found"
}

// fullBinary finds the full build: beside this binary, else on $PATH.
func fullBinary() (string, error) {
	self, err := os.Executable()
	if err == nil {
		p := filepath.Join(filepath.Dir(self), fullName)
		if st, serr := os.Stat(p); serr == nil && !st.IsDir() {
			return p, nil
		}
	}
	return exec.LookPath(fullName)
}

// runFull replaces this process with the full build, with the same
// arguments and environment. When stdin is not nil it becomes the full
// build's standard input (the command read it already). It returns only
// on an error.
func runFull(why string, stdin []byte) error {
	path, err := fullBinary()
	if err != nil {
		return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("%s needs the full build, %s, which is neither beside this scribe nor on PATH (bash scripts/install installs both): %w", why, fullName, err)}
	}
	if os.Getenv(handedOver) != "" {
		// This process is what a light build handed the command to: the
		// scribe-full it found is a light build too.
		return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("%s needs the full build, and %s is a light build: reinstall both with bash scripts/install", why, path)}
	}
	if stdin != nil {
		if err := replayStdin(stdin); err != nil {
			return fmt.Errorf("%s: hand the standard input to %s: %w", why, fullName, err)
		}
	}
	if debugWanted() {
		fmt.Fprintf(os.Stderr, "scribe: %s: handing the command to %s\n", why, path)
	}
	stopProfile()
	err = syscall.Exec(path, append([]string{path}, os.Args[1:]...), append(os.Environ(), handedOver+"=1"))
	return fmt.Errorf("%s: run %s: %w", why, path, err)
}

// debugWanted reports whether --log-level (or SCRIBE_LOG_LEVEL) asks for
// debug or trace: the hand-over is said then. It reads the arguments
// itself, since a command the full build runs parses no flags here.
func debugWanted() bool {
	level := os.Getenv("SCRIBE_LOG_LEVEL")
	for i, a := range os.Args[1:] {
		switch {
		case a == "--":
			return level == "debug" || level == "trace"
		case strings.HasPrefix(a, "--log-level="):
			level = strings.TrimPrefix(a, "--log-level=")
		case a == "--log-level" && i+2 < len(os.Args):
			level = os.Args[i+2]
		}
	}
	return level == "debug" || level == "trace"
}

// replayStdin makes standard input a memory file holding in.
func replayStdin(in []byte) error {
	fd, err := unix.MemfdCreate("scribe-stdin", 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), "scribe-stdin")
	defer f.Close()
	if _, err := f.Write(in); err != nil {
		return err
	}
	if _, err := f.Seek(0, 0); err != nil {
		return err
	}
	return unix.Dup2(fd, 0)
}

// dropFromSearch drops sessions from the search index (forgetSearch)
// through the full build, which holds SQLite; nothing runs when there is
// no index.
func dropFromSearch(l jsonl.Layout, ids []string) error {
	if _, err := os.Stat(l.SearchIndexFile()); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	path, err := fullBinary()
	if err != nil {
		return err
	}
	args := append([]string{"search", "--forget", "--config-dir", l.ConfigDir}, ids...)
	if out, err := exec.Command(path, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	return nil
}
