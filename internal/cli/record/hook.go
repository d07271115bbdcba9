package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/claudedir"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/watch"
)

// maxHookInput bounds what scribe hook reads from stdin.
const maxHookInput = 4 << 20

// hookLockWait is how long a hook waits for another hook holding the
// checkpoints; past it (or while watch runs) its event waits in the inbox.
const hookLockWait = 25 * time.Millisecond

// hookTimeout is how long a hook may take by default: reading a sealed
// archive's key, building the pipeline and recording the delta.
const hookTimeout = 20 * time.Second

func NewCmdHook(f *cmdutil.Factory) *cobra.Command {
	var stateDir string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "hook",
		Short: "Handle one Claude Code hook event (JSON on stdin): mirror the transcript's delta, record state and lifecycle",
		Long: `hook is what Claude Code's hooks run (scribe hooks install sets them up). It
reads the hook event from stdin and records, through the pipeline and the same
checkpoints as scribe watch (running both never doubles anything): the
transcript's delta since the last hook, the subagent's transcript on
SubagentStop, the session's state (UserPromptSubmit: running; a permission
request or notification: requires_action; Stop or Interrupt: idle), and SessionStart,
SessionEnd, PreCompact and PostCompact as lifecycle records.

It never fails the user's turn: every error is logged to <state dir>/hook.log
and it exits 0, printing nothing. While scribe watch runs, the event is left
in <state dir>/inbox for watch to take.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// A hook call lives for tens of milliseconds: with the
			// default GOGC its heap reaches the first 4 MB goal and pays
			// a collection it never needed (3 of the 12 ms spent in main).
			// A large delta still collects, at four times the live heap.
			debug.SetGCPercent(400)
			if timeout <= 0 {
				return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--timeout %s: want a positive duration", timeout)}
			}
			runHook(f, cmd, stateDir, timeout)
			return nil
		},
	}
	c.Flags().StringVar(&stateDir, "state-dir", "", "where the checkpoints live (as scribe watch's --state-dir)")
	c.Flags().DurationVar(&timeout, "timeout", hookTimeout, "how long the hook may take to record (a sealed archive's key command included); the event waits in the inbox past it")
	return c
}

// runHook handles one event; it reports nothing but its log.
func runHook(f *cmdutil.Factory, cmd *cobra.Command, stateDir string, timeout time.Duration) {
	log := hclog.New(&hclog.LoggerOptions{Name: "scribe.hook", Output: io.Discard})
	var logFile *os.File
	err := handleHook(f, cmd, stateDir, timeout, &log, &logFile)
	if err != nil {
		log.Error("hook event not recorded", "error", err)
	}
	if logFile != nil {
		logFile.Close()
	}
}

func handleHook(f *cmdutil.Factory, cmd *cobra.Command, stateDir string, timeout time.Duration, logp *hclog.Logger, logFile **os.File) error {
	received := time.Now()
	in, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxHookInput+1))
	if err != nil {
		return fmt.Errorf("read the hook event: %w", err)
	}
	cfg, err := f.LoadConfigAfter(cmd, in)
	if err != nil {
		return err
	}
	ws, err := ResolveWatch(cfg, nil, stateDir)
	if err != nil {
		// The log goes where the checkpoints would be without an archive.
		if f, lerr := openHookLog(defaultStateDir(nil)); lerr == nil {
			*logFile = f
			*logp = hclog.New(&hclog.LoggerOptions{Name: "scribe.hook", Output: f})
		}
		return err
	}
	if f, err := openHookLog(ws.stateDir); err == nil {
		*logFile = f
		*logp = hclog.New(&hclog.LoggerOptions{Name: "scribe.hook", Output: f, Level: hclog.LevelFromString(cfg.LogLevel), JSONFormat: cfg.LogJSON})
	}
	log := *logp
	if len(in) > maxHookInput {
		return fmt.Errorf("hook event larger than %d bytes", maxHookInput)
	}
	var ev watch.HookEvent
	if err := json.Unmarshal(in, &ev); err != nil {
		return fmt.Errorf("hook event is not JSON: %w", err)
	}
	if ev.SessionID == "" || ev.Event == "" {
		return errors.New("hook event without session_id or hook_event_name")
	}
	ev.ReceivedAt = received
	inbox := ws.inboxDir()
	if _, err := watch.WriteInbox(inbox, ev); err != nil {
		return err
	}
	wait := hookLockWait
	if watch.HeldByWatch(ws.stateDir) {
		wait = 0 // watch takes the event from the inbox; no need to wait
	}
	store, err := watch.OpenStoreAs(ws.stateDir, wait, "hook")
	if errors.Is(err, watch.ErrBusy) {
		log.Debug("checkpoints held by watch or another hook; the event waits in the inbox", "event", ev.Event, "session", ev.SessionID)
		return nil
	}
	if err != nil {
		return err
	}
	defer store.Close()
	ws.moveOldInbox(log)
	ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
	defer cancel()
	rts, err := buildPerSink(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		if err := closeRuntimes(cctx, rts); err != nil {
			log.Error("pipeline shutdown", "error", err)
		}
	}()
	w, err := watch.New(watch.Options{Roots: ws.roots, Store: store, Pipelines: pipelines(rts), Archives: ws.archives, Logger: log, Inbox: inbox, MaxLine: int64(cfg.Watch.MaxLineBytes)})
	if err != nil {
		return err
	}
	paths := []string{ev.TranscriptPath}
	switch ev.Event {
	case "SubagentStop":
		paths = append(paths, ev.AgentTranscriptPath, claudedir.AgentMetaFile(ev.AgentTranscriptPath))
	case "Stop", "Interrupt", "SessionEnd", "PreCompact":
		// The session's folder: subagents, their .meta.json, tool results.
		paths = append(paths, claudedir.SessionDirOf(ev.TranscriptPath))
	}
	err = w.Once(ctx, paths...)
	log.Debug("hook event recorded", "event", ev.Event, "session", ev.SessionID, "lines", w.Stats.Lines.Load(), "accepted", w.Stats.Accepted.Load(), "took", time.Since(received).String())
	return err
}

func openHookLog(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return os.OpenFile(filepath.Join(dir, "hook.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
}
