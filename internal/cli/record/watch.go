package record

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/seal"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/watch"
)

type watchOpts struct {
	stateDir      string
	metrics       string
	rescan        time.Duration
	flushInterval time.Duration
	once          bool
	printService  bool
	launchd       bool
}

func NewCmdWatch(f *cmdutil.Factory) *cobra.Command {
	var o watchOpts
	c := &cobra.Command{
		Use:   "watch [ROOT...]",
		Short: "Follow Claude Code's live transcripts ($CLAUDE_CONFIG_DIR/projects and ROOTs) and mirror every new entry through the pipeline",
		Long: `watch follows $CLAUDE_CONFIG_DIR/projects (and every further projects folder
given) and sends each new transcript entry, once, through the configured
pipeline: new sessions, appends, subagent transcripts and their .meta.json,
tool-result files. A torn last line is waited for; a file replaced whole,
truncated or rewritten is read again from its start, and dedup sends only
what the sinks do not have; a deleted file loses nothing already mirrored
and is recorded as a lifecycle event. File events (inotify) do the work,
with a full listing every --rescan as the safety net.

Per-file checkpoints (offset, fingerprint of the first 1000 bytes) are kept
in --state-dir and saved only after every sink flushed what they cover, so
kill -9 and a restart re-send nothing acknowledged and skip nothing. watch
never writes to or locks the files it follows.

With no pipeline.sinks of your own, watch (and scribe hook) mirror into the
built-in archive, jsonl/archive: $XDG_DATA_HOME/scribe/archive
(~/.local/share/scribe/archive), laid out as Claude's folder, which
ls/show/info/fork --from jsonl/archive read and resume falls back to. The
local store of the watched folder is not a valid sink (it would write into
what watch reads); another folder is configured as

  sink "jsonl" "archive" { dir = "~/scribe-archive" }

SIGTERM or SIGINT stops it cleanly: a flush, then the checkpoints.`,
		RunE: func(cmd *cobra.Command, args []string) error { return runWatch(f, cmd, args, o) },
	}
	fl := c.Flags()
	fl.StringVar(&o.stateDir, "state-dir", "", "where the checkpoints live (default: <archive dir>/scribe/watch, else ~/.local/state/scribe/watch)")
	fl.StringVar(&o.metrics, "metrics", "", "serve Prometheus metrics on this address (host:port) at /metrics")
	fl.DurationVar(&o.rescan, "rescan", 30*time.Second, "how often to list every followed folder, for events that were missed")
	fl.DurationVar(&o.flushInterval, "flush-interval", 10*time.Millisecond, "how long submitted entries may wait for a flush while more keep coming")
	fl.BoolVar(&o.once, "once", false, "catch up with every file, make it durable, save the checkpoints and exit")
	fl.BoolVar(&o.printService, "print-service", false, "print a systemd user unit that runs this watch (with --launchd: a launchd agent plist) and exit")
	fl.BoolVar(&o.launchd, "launchd", false, "with --print-service: print a launchd plist (macOS) instead of a systemd unit")
	return c
}

// WatchSetup is what watch and hook derive from the configuration.
type WatchSetup struct {
	configDir string
	roots     []string
	archives  []string
	// sealed are the sealed archives: the sink seals what it writes there,
	// and watch copies no sidecar file (.meta.json, tool results) into
	// them, since that copy would be plain text.
	sealed   []string
	stateDir string
	// builtinSinks: pipeline.sinks was not configured, so the pipeline is
	// the built-in archive alone (DefaultArchive).
	builtinSinks bool
}

// DefaultArchive is the sink watch and hook mirror into when
// pipeline.sinks is the built-in one (example.hcl declares it).
var DefaultArchive = core.ID{Type: "jsonl", Name: "archive"}

// ResolveWatch checks the configuration for watching: no sink may be a
// jsonl store that writes into a followed folder. A pipeline.sinks left
// at the built-in ["jsonl/local"] (which would) becomes the built-in
// archive, DefaultArchive: cfg is changed so.
func ResolveWatch(cfg *config.Config, roots []string, stateDir string) (*WatchSetup, error) {
	dir, err := cmdutil.ClaudeConfigDir(cfg)
	if err != nil {
		return nil, err
	}
	ws := &WatchSetup{configDir: dir, roots: []string{jsonl.Layout{ConfigDir: dir}.ProjectsDir()}}
	if cfg.Origin("pipeline.sinks") == config.BuiltinOrigin {
		cfg.Pipeline.Sinks = []core.ID{DefaultArchive}
		ws.builtinSinks = true
	}
	for _, r := range roots {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("root %q: %w", r, err)
		}
		ws.roots = append(ws.roots, abs)
	}
	for _, id := range cfg.Pipeline.Sinks {
		if id.Type != "jsonl" {
			continue
		}
		comp, ok := cfg.Lookup(core.KindSink, id)
		if !ok {
			continue
		}
		jc := jsonl.DefaultConfig()
		if err := comp.Decode(jc); err != nil {
			return nil, err
		}
		store := dir
		if jc.Dir != "" {
			if store, err = filepath.Abs(jc.Dir); err != nil {
				return nil, fmt.Errorf("sink %s: dir %q: %w", id, jc.Dir, err)
			}
		}
		projects := jsonl.Layout{ConfigDir: store}.ProjectsDir()
		for _, r := range ws.roots {
			if within(projects, r) || within(r, projects) {
				return nil, fmt.Errorf("sink %s writes into %s, a folder watch follows (%s): it would write back into what it reads; "+
					"mirror into an archive instead: leave pipeline.sinks out (watch then mirrors into the built-in jsonl/archive, $XDG_DATA_HOME/scribe/archive) "+
					"or list pipeline { sinks = [\"jsonl/archive\", ...] } without %s; another folder: sink \"jsonl\" \"archive\" { dir = \"~/scribe-archive\" }",
					id, store, r, id)
			}
		}
		if !jc.Encryption.IsZero() {
			ws.sealed = append(ws.sealed, store)
			continue
		}
		ws.archives = append(ws.archives, store)
	}
	ws.stateDir = stateDir
	if ws.stateDir == "" {
		ws.stateDir = defaultStateDir(append(append([]string{}, ws.archives...), ws.sealed...))
	}
	return ws, nil
}

// inboxDir is where hook events wait for watch: <state dir>/inbox, but
// never inside a sealed archive (a waiting event is plain JSON: the
// session's folder, a notification's message): for a state dir there, a
// folder of the user's state named for it,
// $XDG_STATE_HOME/scribe/inbox/<hash> (~/.local/state/scribe/inbox/<hash>).
func (ws *WatchSetup) inboxDir() string {
	for _, s := range ws.sealed {
		if within(ws.stateDir, s) {
			sum := sha256.Sum256([]byte(ws.stateDir))
			return filepath.Join(filepath.Dir(defaultStateDir(nil)), "inbox", hex.EncodeToString(sum[:8]))
		}
	}
	return filepath.Join(ws.stateDir, "inbox")
}

// moveOldInbox moves the events an older scribe left in <state dir>/inbox
// inside a sealed archive to the inbox outside it (inboxDir).
func (ws *WatchSetup) moveOldInbox(log hclog.Logger) {
	old, inbox := filepath.Join(ws.stateDir, "inbox"), ws.inboxDir()
	if old == inbox {
		return
	}
	ents, err := os.ReadDir(old)
	if err != nil || len(ents) == 0 {
		return
	}
	if err := os.MkdirAll(inbox, 0o700); err != nil {
		log.Warn("hook events left inside the sealed archive: the inbox outside it cannot be made", "inbox", old, "error", err)
		return
	}
	moved := 0
	for _, e := range ents {
		if err := os.Rename(filepath.Join(old, e.Name()), filepath.Join(inbox, e.Name())); err != nil {
			log.Warn("hook event left inside the sealed archive", "path", filepath.Join(old, e.Name()), "error", err)
			continue
		}
		moved++
	}
	log.Info("moved waiting hook events out of the sealed archive", "from", old, "to", inbox, "events", moved)
}

func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// defaultStateDir is <first archive>/scribe/watch, else
// $XDG_STATE_HOME/scribe/watch (~/.local/state/scribe/watch).
func defaultStateDir(archives []string) string {
	if len(archives) > 0 {
		return filepath.Join(archives[0], "scribe", "watch")
	}
	if x := os.Getenv("XDG_STATE_HOME"); x != "" {
		return filepath.Join(x, "scribe", "watch")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "scribe", "watch")
}

func runWatch(f *cmdutil.Factory, cmd *cobra.Command, args []string, o watchOpts) error {
	cfg, err := f.LoadConfig(cmd)
	if err != nil {
		return &cmdutil.ExitError{Code: 2, Err: err}
	}
	if o.rescan <= 0 || o.flushInterval <= 0 {
		return &cmdutil.ExitError{Code: 2, Err: errors.New("--rescan and --flush-interval want positive durations")}
	}
	ws, err := ResolveWatch(cfg, args, o.stateDir)
	if err != nil {
		return &cmdutil.ExitError{Code: 2, Err: err}
	}
	if o.printService {
		return printService(cmd, cmd.OutOrStdout(), args, o)
	}
	log := f.Logger(cfg, "scribe")
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	store, err := watch.OpenStoreAs(ws.stateDir, 0, "watch")
	if errors.Is(err, watch.ErrBusy) {
		log.Warn("another scribe watch (or a hook) holds the checkpoints; waiting for it", "state_dir", ws.stateDir)
		store, err = watch.OpenStoreAs(ws.stateDir, -1, "watch")
	}
	if err != nil {
		return err
	}
	defer store.Close()
	ws.moveOldInbox(log)
	// A key read (a sealed archive's key command) ends at a signal.
	rts, err := buildPerSink(seal.BoundReads(cmd.Context(), ctx), cfg, log)
	if err != nil {
		return err
	}
	closeAll := func() error {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return closeRuntimes(cctx, rts)
	}
	w, err := watch.New(watch.Options{
		Roots: ws.roots, Store: store, Pipelines: pipelines(rts), Archives: ws.archives,
		Logger: log.Named("watch"), Rescan: o.rescan, FlushInterval: o.flushInterval,
		Inbox: ws.inboxDir(), MaxLine: int64(cfg.Watch.MaxLineBytes),
	})
	if err != nil {
		_ = closeAll()
		return err
	}
	if o.metrics != "" {
		srv, err := serveMetrics(o.metrics, w, log)
		if err != nil {
			_ = closeAll()
			return &cmdutil.ExitError{Code: 2, Err: err}
		}
		defer srv.Close()
	}
	if ws.builtinSinks {
		log.Info("no pipeline.sinks configured: mirroring into the built-in archive", "sink", DefaultArchive.String())
	}
	log.Info("watching", "roots", strings.Join(ws.roots, ","), "archives", strings.Join(ws.archives, ","), "state_dir", ws.stateDir)
	if len(ws.sealed) > 0 {
		log.Warn("sealed archives get the transcripts, sealed; sidecar files (subagents' .meta.json, tool results) are not copied into them, as they would be plain text",
			"sealed_archives", strings.Join(ws.sealed, ","))
	}
	var runErr error
	if o.once {
		runErr = w.CatchUp(ctx)
	} else {
		runErr = w.Run(ctx)
	}
	if err := closeAll(); err != nil {
		runErr = errors.Join(runErr, err)
	}
	printWatchSummary(cmd.ErrOrStderr(), w)
	return runErr
}

// buildPerSink builds and starts one pipeline per sink of pipeline.sinks,
// each with the configured guards and processors: each sink then
// deduplicates against what it holds itself, so after a kill -9 a server
// that got less than the archive is sent what it lacks.
func buildPerSink(ctx context.Context, cfg *config.Config, log hclog.Logger) ([]*cmdutil.Runtime, error) {
	var rts []*cmdutil.Runtime
	for _, id := range cfg.Pipeline.Sinks {
		c := *cfg
		c.Pipeline.Sinks = []core.ID{id}
		c.Resume.Loaders = nil
		rt, err := cmdutil.Build(ctx, &c, log, os.Args[1:], cmdutil.BuildOpts{})
		if err == nil {
			if err = rt.Pipeline.Start(ctx); err != nil {
				_ = rt.Close(context.Background())
			}
		}
		if err != nil {
			_ = closeRuntimes(context.Background(), rts)
			return nil, &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("sink %s: %w", id, err)}
		}
		rts = append(rts, rt)
	}
	if len(rts) == 0 {
		return nil, &cmdutil.ExitError{Code: 2, Err: errors.New("the pipeline has no sinks: list at least one in pipeline { sinks = [...] }")}
	}
	return rts, nil
}

func pipelines(rts []*cmdutil.Runtime) []*core.Pipeline {
	ps := make([]*core.Pipeline, len(rts))
	for i, rt := range rts {
		ps[i] = rt.Pipeline
	}
	return ps
}

// closeRuntimes shuts every pipeline down, the last built first.
func closeRuntimes(ctx context.Context, rts []*cmdutil.Runtime) error {
	var errs []error
	for i := len(rts) - 1; i >= 0; i-- {
		if err := rts[i].Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func serveMetrics(addr string, w *watch.Watcher, log hclog.Logger) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.WriteMetrics(rw)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "error", err)
		}
	}()
	log.Info("metrics", "address", ln.Addr().String())
	return srv, nil
}

func printWatchSummary(out io.Writer, w *watch.Watcher) {
	s := &w.Stats
	fmt.Fprintf(out, "watch: %d files followed, %d lines read (%d accepted, %d duplicates, %d refused, %d rejected, %d malformed, %d over the line cap), %d files waiting for a first user or assistant line, %d unreadable, %d rewrites, %d truncations, %d deletions (%d lines replayed from the archive), %d sidecars copied, %d hook events, %d errors\n",
		s.FilesFollowed.Load(), s.Lines.Load(), s.Accepted.Load(), s.Duplicates.Load(), s.Refused.Load(), s.Rejected.Load(), s.Malformed.Load(), s.OverLimit.Load(),
		s.WaitingForMessage.Load(), s.Unreadable.Load(),
		s.Rewrites.Load(), s.Truncations.Load(), s.Deletions.Load(), s.Replayed.Load(), s.SidecarsCopied.Load(), s.HookEvents.Load(), s.Errors.Load())
}

// printService writes a systemd user unit (or a launchd plist) that runs
// this watch with the same flags and configuration.
func printService(cmd *cobra.Command, out io.Writer, roots []string, o watchOpts) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the scribe binary: %w", err)
	}
	argv := []string{exe, "watch"}
	if p, err := cmdutil.PinnedConfig(cmd); err != nil {
		return &cmdutil.ExitError{Code: 2, Err: err}
	} else if p != "" {
		argv = append(argv, "--config", p)
	}
	if d, _ := cmd.Flags().GetString("config-dir"); d != "" {
		abs, _ := filepath.Abs(d)
		argv = append(argv, "--config-dir", abs)
	}
	if o.stateDir != "" {
		abs, _ := filepath.Abs(o.stateDir)
		argv = append(argv, "--state-dir", abs)
	}
	if o.metrics != "" {
		argv = append(argv, "--metrics", o.metrics)
	}
	for _, r := range roots {
		abs, _ := filepath.Abs(r)
		argv = append(argv, abs)
	}
	// The folders the service must resolve as this shell does: Claude's
	// folder, and the built-in archive's $XDG_DATA_HOME.
	var env [][2]string
	for _, k := range []string{"CLAUDE_CONFIG_DIR", "XDG_DATA_HOME"} {
		if v := os.Getenv(k); v != "" {
			env = append(env, [2]string{k, v})
		}
	}
	if o.launchd {
		fmt.Fprint(out, launchdPlist(argv, env))
		return nil
	}
	fmt.Fprint(out, systemdUnit(argv, env))
	return nil
}

func systemdUnit(argv []string, env [][2]string) string {
	var b strings.Builder
	b.WriteString("# ~/.config/systemd/user/scribe-watch.service\n")
	b.WriteString("# systemctl --user daemon-reload && systemctl --user enable --now scribe-watch\n")
	b.WriteString("[Unit]\nDescription=scribe watch: mirror Claude Code sessions as they are written\n\n[Service]\nType=simple\n")
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = systemdQuote(a)
	}
	fmt.Fprintf(&b, "ExecStart=%s\n", strings.Join(quoted, " "))
	for _, kv := range env {
		fmt.Fprintf(&b, "Environment=%s\n", systemdQuote(kv[0]+"="+kv[1]))
	}
	b.WriteString("Restart=on-failure\nRestartSec=5\nKillSignal=SIGTERM\nTimeoutStopSec=60\nNice=10\nIOSchedulingClass=idle\n\n[Install]\nWantedBy=default.target\n")
	return b.String()
}

func systemdQuote(s string) string {
	if !strings.ContainsAny(s, " \t\"'\\$%") {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `$$`, `%`, `%%`)
	return `"` + r.Replace(s) + `"`
}

func launchdPlist(argv []string, env [][2]string) string {
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!-- ~/Library/LaunchAgents/dev.scribe.watch.plist
     launchctl bootstrap gui/$(id -u) ~/Library/LaunchAgents/dev.scribe.watch.plist -->
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key><string>dev.scribe.watch</string>
  <key>ProgramArguments</key>
  <array>
`)
	for _, a := range argv {
		fmt.Fprintf(&b, "    <string>%s</string>\n", esc.Replace(a))
	}
	b.WriteString("  </array>\n")
	if len(env) > 0 {
		b.WriteString("  <key>EnvironmentVariables</key>\n  <dict>")
		for _, kv := range env {
			fmt.Fprintf(&b, "<key>%s</key><string>%s</string>", kv[0], esc.Replace(kv[1]))
		}
		b.WriteString("</dict>\n")
	}
	b.WriteString("  <key>RunAtLoad</key><true/>\n  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>\n  <key>ProcessType</key><string>Background</string>\n</dict>\n</plist>\n")
	return b.String()
}
