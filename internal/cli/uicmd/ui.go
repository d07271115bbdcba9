// Package uicmd is scribe ui: the web viewer (package ui) on a loopback
// address, behind a one-time token exchanged for a cookie and a Host check
// (ui.LocalGuard). Full build only.
package uicmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/cli/read"
	"github.com/e0dc0000/scribe/internal/cli/usagecmd"
	"github.com/e0dc0000/scribe/sessions"
	"github.com/e0dc0000/scribe/stores"
	"github.com/e0dc0000/scribe/ui"
)

// NewCmdUI is scribe ui (its Use and Short come from the full build's
// table).
func NewCmdUI(f *cmdutil.Factory) *cobra.Command {
	var (
		listen string
		noOpen bool
	)
	c := &cobra.Command{
		Use: "ui",
		Long: `ui serves a web viewer of the sessions on a loopback address and prints its
address, which carries a one-time token: the first request with it gets a
cookie (HttpOnly, SameSite=Strict) and the token leaves the address, so only
the browser that opened it can read the sessions. A request whose Host is not
the server's own address is refused (DNS rebinding); changes (rename, tag,
archive, trash, fork) are POST requests with a CSRF token.

The viewer reads through the session-store contract: Claude Code's folder
("claude", the default, or --from's store first), and the configuration's
jsonl, postgres and s3 stores in the chooser. The browser is opened with
xdg-open unless --no-open. Ctrl-C stops it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.LoadConfig(cmd)
			if err != nil {
				return &cmdutil.ExitError{Code: 2, Err: err}
			}
			return runUI(f, cmd, cfg, listen, !noOpen)
		},
	}
	c.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "address to listen on (port 0: a free one)")
	c.Flags().BoolVar(&noOpen, "no-open", false, "do not open a browser")
	c.Flags().String("from", "", "the store shown first (a jsonl, postgres or s3 block, type/name)")
	return c
}

// runUI serves until a signal.
func runUI(f *cmdutil.Factory, cmd *cobra.Command, cfg *config.Config, listen string, open bool) error {
	opener, err := f.StoreOpener(cmd, cfg)
	if err != nil {
		return err
	}
	names := uiStores(cfg, cmdutil.FromFlag(cmd))
	stderr := cmd.ErrOrStderr()
	h, err := ui.New(ui.Options{Stores: names, Open: opener, Search: Search, Markdown: read.WriteMarkdown, Usage: UsageFunc(usagecmd.PricerOf(cfg)),
		Bundle: func(st sessions.Store) ui.ExportFunc {
			if w := read.BundleWriter(st); w != nil {
				return w
			}
			return nil
		}})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--listen %s: %w", listen, err)}
	}
	addr := ln.Addr().(*net.TCPAddr)
	if !addr.IP.IsLoopback() {
		fmt.Fprintf(stderr, "scribe: warning: %s is not a loopback address: anyone who can reach it and has the token can read the sessions\n", addr)
	}
	guard := ui.NewLocalGuard(h, uiHosts(addr))
	srv := &http.Server{Handler: guard, ReadHeaderTimeout: 10 * time.Second}
	base := "http://" + net.JoinHostPort(hostOf(addr), strconv.Itoa(addr.Port))
	u := base + "/?token=" + guard.Token()
	fmt.Fprintf(cmd.OutOrStdout(), "scribe ui: %s\n", u)
	if open {
		openBrowser(u, stderr)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Close() // live pages hold their streams open: close, not drain
	}()
	err = srv.Serve(ln)
	_ = h.Close(context.Background())
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// uiStores are the stores the viewer offers: first the one --from names
// (else Claude Code's folder), then Claude Code's folder, then the
// configuration's jsonl, postgres and s3 sinks that are put to use or
// written in the configuration file (a built-in block nobody configured
// is left out, and so is a jsonl block whose folder is Claude's own).
func uiStores(cfg *config.Config, first string) []string {
	used := map[string]bool{}
	for _, s := range cfg.Pipeline.Sinks {
		used[s.String()] = true
	}
	for _, s := range cfg.Resume.Loaders {
		used[s.String()] = true
	}
	names := []string{stores.Claude}
	if first != "" && first != stores.Claude {
		names = []string{first, stores.Claude}
	}
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	for _, c := range cfg.Components {
		id := c.ID.String()
		if c.Kind != core.KindSink || seen[id] {
			continue
		}
		switch c.ID.Type {
		case "jsonl", "postgres", "s3":
		default:
			continue
		}
		if !used[id] && c.Range.File == config.DefaultName {
			continue
		}
		if c.ID.Type == "jsonl" && jsonlDirOf(c) == "" {
			continue
		}
		seen[id] = true
		names = append(names, id)
	}
	return names
}

// jsonlDirOf is a jsonl block's dir ("" for Claude's folder).
func jsonlDirOf(c config.Component) string {
	var v struct {
		Dir string `json:"dir"`
	}
	_ = json.Unmarshal(c.Body, &v)
	return v.Dir
}

// uiHosts are the Host headers the viewer answers to.
func uiHosts(addr *net.TCPAddr) []string {
	port := strconv.Itoa(addr.Port)
	return []string{net.JoinHostPort(hostOf(addr), port), net.JoinHostPort("localhost", port)}
}

// hostOf is the address's host for a URL (127.0.0.1 for an unspecified
// one).
func hostOf(addr *net.TCPAddr) string {
	if addr.IP.IsUnspecified() {
		return "127.0.0.1"
	}
	return addr.IP.String()
}

// openBrowser runs xdg-open on u when there is one; never an error.
func openBrowser(u string, stderr io.Writer) {
	p, err := exec.LookPath("xdg-open")
	if err != nil {
		fmt.Fprintln(stderr, "scribe: no xdg-open: open the address above in a browser")
		return
	}
	c := exec.Command(p, u)
	if err := c.Start(); err != nil {
		fmt.Fprintf(stderr, "scribe: xdg-open: %v: open the address above in a browser\n", err)
		return
	}
	go func() { _ = c.Wait() }()
}
