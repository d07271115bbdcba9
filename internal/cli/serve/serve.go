// Package serve holds the team server's commands (the full build's):
// serve, and token to make and hash its bearer tokens.
package serve

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/e0dc0000/scribe/config"
	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/internal/cli/cmdutil"
	"github.com/e0dc0000/scribe/internal/cli/mcpcmd"
	"github.com/e0dc0000/scribe/internal/cli/usagecmd"
	"github.com/e0dc0000/scribe/internal/ident"
	"github.com/e0dc0000/scribe/processors/redact"
	"github.com/e0dc0000/scribe/server"
	"github.com/e0dc0000/scribe/sinks/events"
	"github.com/e0dc0000/scribe/sinks/jsonl"
	"github.com/e0dc0000/scribe/sinks/sinkhelper"
	"github.com/e0dc0000/scribe/stores"
)

func NewCmdServe(f *cmdutil.Factory) *cobra.Command {
	var tokenFile string
	cmd := &cobra.Command{
		Use: "serve",
		Long: `Run the scribe server: the routes Claude Code's remote client uses (PUT/GET
/v1/session_ingress/session/{id}, POST /v1/code/sessions/{id}/events, GET
/v1/code/sessions/{id}/teleport-events), GET /v1/sessions, /healthz, /readyz and
/metrics; scribe mcp's tools at /mcp, and the web viewer at /ui/ (sign in
with a token; share links).

Settings come from the server { ... } block of the configuration (see
example.hcl); the flags below beat it. With no nats_url, an embedded NATS
server with JetStream keeps the data in data_dir: one command, nothing to
install. An entry is acknowledged once it is fsynced (sync = "always"; a
duration fsyncs in the background instead). Requests need a bearer token listed, hashed, in the configuration or
in --token-file: make one with 'scribe token new'.

It stops on SIGINT or SIGTERM, finishing the requests in flight.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.LoadConfig(cmd)
			if err != nil {
				return &cmdutil.ExitError{Code: 2, Err: err}
			}
			sc, err := serverConfig(cfg, cmd.Flags(), tokenFile)
			if err != nil {
				return &cmdutil.ExitError{Code: 2, Err: err}
			}
			log := f.Logger(cfg, "scribe")
			toks := newUITokens(sc)
			srv, err := server.New(*sc, log.Named("serve"))
			if err != nil {
				return &cmdutil.ExitError{Code: 2, Err: err}
			}
			if p, err := serveProcessor(cmd.Context(), cfg, sc.Redact); err != nil {
				return err
			} else if p != nil {
				srv.SetProcessor(p)
			}
			mountMCP(srv, cfg, cmdutil.BuildVersion(f.Version), log)
			portal, err := mountUI(srv, cfg, sc, toks)
			if err != nil {
				return err
			}
			defer portal.Close(context.Background())
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := srv.Start(ctx); err != nil {
				_ = srv.Shutdown(context.Background())
				return err
			}
			<-ctx.Done()
			log.Info("shutting down")
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return srv.Shutdown(sctx)
		},
	}
	fl := cmd.Flags()
	fl.String("listen", "", "HTTP address, host:port (default: server.listen, 127.0.0.1:8787)")
	fl.String("data-dir", "", "embedded JetStream store folder (default: server.data_dir, <user config dir>/scribe/serve)")
	fl.String("nats-url", "", "external NATS server or cluster URLs, comma-separated (default: server.nats_url, embedded)")
	fl.String("nats-creds", "", "NATS credentials file for --nats-url (default: server.nats_creds)")
	fl.Int("replicas", 0, "replicas of the stream and KV buckets (default: server.replicas, 1)")
	fl.String("sync", "", `when the embedded JetStream fsyncs: "always" (before every acknowledgement) or a duration (default: server.sync, always)`)
	fl.StringVar(&tokenFile, "token-file", "", "file of more tokens, one a line: <sha256> <tenant> <scope>[,<scope>]")
	return cmd
}

// serverConfig decodes the server block (or takes the defaults), then
// applies the flags the user set and the token file.
func serverConfig(cfg *config.Config, fs *pflag.FlagSet, tokenFile string) (*server.Config, error) {
	sc := server.DefaultConfig()
	if cfg.Server != nil {
		if err := cfg.Server.Decode(sc); err != nil {
			return nil, err
		}
	}
	str := func(name string, dst *string) {
		if fl := fs.Lookup(name); fl != nil && fl.Changed {
			*dst = fl.Value.String()
		}
	}
	str("listen", &sc.Listen)
	str("data-dir", &sc.DataDir)
	str("nats-url", &sc.NatsURL)
	str("nats-creds", &sc.NatsCreds)
	str("sync", &sc.Sync)
	if fl := fs.Lookup("replicas"); fl != nil && fl.Changed {
		n, err := fs.GetInt("replicas")
		if err != nil {
			return nil, err
		}
		sc.Replicas = n
	}
	if tokenFile != "" {
		f, err := os.Open(tokenFile)
		if err != nil {
			return nil, fmt.Errorf("token file: %w", err)
		}
		defer f.Close()
		toks, err := readTokens(f, tokenFile)
		if err != nil {
			return nil, err
		}
		sc.Tokens = append(sc.Tokens, toks...)
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	return sc, nil
}

// readTokens reads a token file: one token a line, "<sha256> <tenant>
// <scope>[,<scope>]"; blank lines and lines starting with # are skipped.
func readTokens(r io.Reader, name string) ([]server.Token, error) {
	var out []server.Token
	var errs []error
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 3 {
			errs = append(errs, fmt.Errorf("%s:%d: want <sha256> <tenant> <scope>[,<scope>], got %d fields", name, line, len(fields)))
			continue
		}
		out = append(out, server.Token{SHA256: fields[0], Tenant: fields[1], Scopes: strings.Split(fields[2], ",")})
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	return out, errors.Join(errs...)
}

func NewCmdToken(f *cmdutil.Factory) *cobra.Command {
	c := &cobra.Command{Use: "token"}
	hash := &cobra.Command{
		Use:   "hash",
		Short: "Print the SHA-256 of a token read from stdin (the form the server configuration keeps)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
			if err != nil && !errors.Is(err, io.EOF) {
				return fmt.Errorf("read the token from stdin: %w", err)
			}
			tok := strings.TrimSpace(line)
			if tok == "" {
				return &cmdutil.ExitError{Code: 2, Err: errors.New("no token on stdin")}
			}
			fmt.Fprintln(cmd.OutOrStdout(), server.HashToken(tok))
			return nil
		},
	}
	var tenant, scopes string
	newTok := &cobra.Command{
		Use:   "new",
		Short: "Make a random token; print it, and the line for the server block's tokens list",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var b [32]byte
			if _, err := rand.Read(b[:]); err != nil {
				return err
			}
			tok := "scribe_" + base64.RawURLEncoding.EncodeToString(b[:])
			list := strings.Split(scopes, ",")
			for _, s := range list {
				if s != server.ScopeRead && s != server.ScopeWrite {
					return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--scopes: unknown scope %q (valid: %s, %s)", s, server.ScopeRead, server.ScopeWrite)}
				}
			}
			if !ident.Tenant(tenant) {
				return &cmdutil.ExitError{Code: 2, Err: fmt.Errorf("--tenant %q: want 1 to 64 of a-z, 0-9, '_' and '-'", tenant)}
			}
			t := server.Token{SHA256: server.HashToken(tok), Tenant: tenant, Scopes: list}
			quoted := make([]string, len(list))
			for i, s := range list {
				quoted[i] = fmt.Sprintf("%q", s)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "token: %s\n", tok)
			fmt.Fprintf(out, "server block: { sha256 = %q, tenant = %q, scopes = [%s] },\n", t.SHA256, tenant, strings.Join(quoted, ", "))
			fmt.Fprintf(out, "token file:   %s %s %s\n", t.SHA256, tenant, scopes)
			return nil
		},
	}
	newTok.Flags().StringVar(&tenant, "tenant", "default", "tenant the token writes and reads as")
	newTok.Flags().StringVar(&scopes, "scopes", "read,write", "scopes, comma-separated: read, write")
	c.AddCommand(hash, newTok)
	return c
}

// serveProcessor is the processor of server { redact = NAME }: nil when
// the option is empty.
func serveProcessor(ctx context.Context, cfg *config.Config, name string) (core.Processor, error) {
	if name == "" {
		return nil, nil
	}
	dir, err := cmdutil.ClaudeConfigDir(cfg)
	if err != nil {
		return nil, err
	}
	red, _, id, err := cmdutil.RedactorNamed(ctx, cfg, jsonl.Layout{ConfigDir: dir}, name, "server.redact")
	if err != nil {
		return nil, err
	}
	return redact.New(id, red), nil
}

// mountMCP serves scribe mcp's tools at /mcp over MCP's streamable HTTP
// transport, behind the server's bearer tokens: each request reads the
// sessions of its caller's tenant only, through the server's own routes
// with the caller's token (the team server as a store, stores.Remote),
// redacted by the configuration's redact processor as scribe mcp is.
func mountMCP(srv *server.Server, cfg *config.Config, version string, log hclog.Logger) {
	srv.Mount("/mcp", mcpcmd.HTTPHandler(func(r *http.Request) mcpcmd.ServerOptions {
		c := &events.Client{BaseURL: "http://" + srv.Addr(), Token: sinkhelper.NewToken(server.BearerToken(r.Context())),
			HTTP: sinkhelper.NewHTTPClient(), Retry: sinkhelper.RetryConfig{MaxAttempts: 1}}
		o := mcpcmd.ServerOptions{Store: stores.NewRemote("serve/"+server.Tenant(r.Context()), c), Version: version, Pricer: usagecmd.PricerOf(cfg)}
		red, _, _, err := cmdutil.RedactorNamed(r.Context(), cfg, jsonl.Layout{}, "", "processor")
		if err != nil {
			// Never hand out raw text because the rules did not load:
			// the tools answer nothing instead.
			log.Error("mcp: the redact processor cannot be made; answering with an empty store", "error", err)
			o.Store = stores.NewReader("serve/"+server.Tenant(r.Context()), "nowhere", jsonl.Layout{ConfigDir: "/nonexistent-scribe-mcp"})
		}
		o.Redactor = red
		return o
	}))
}
