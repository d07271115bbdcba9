package plugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/e0dc0000/scribe/core"
	"github.com/e0dc0000/scribe/plugins/internal/shared"
	pb "github.com/e0dc0000/scribe/plugins/proto"
)

// Sentinel errors of the host side.
var (
	// ErrNotFound: the plugin binary does not exist or is not executable.
	ErrNotFound = errors.New("plugin binary not found")
	// ErrChecksum: the binary's sha256 is not the configured one; it is not run.
	ErrChecksum = errors.New("plugin binary sha256 mismatch")
	// ErrHandshake: the process did not complete go-plugin's handshake.
	ErrHandshake = errors.New("plugin handshake failed")
	// ErrWrongKind: the binary serves another kind of component.
	ErrWrongKind = errors.New("plugin serves another kind")
	// ErrUnavailable: the plugin process is down (crashed, killed, or
	// being restarted).
	ErrUnavailable = errors.New("plugin unavailable")
	// ErrTimeout: a call took longer than call_timeout.
	ErrTimeout = errors.New("plugin call timed out")
	// ErrClosed: the component was shut down.
	ErrClosed = errors.New("plugin component shut down")
)

// launcher starts one plugin component's process.
type launcher struct {
	id   core.ID
	kind core.Kind
	cfg  *resolved
	log  hclog.Logger
}

// instance is one running plugin process (or one attached to).
type instance struct {
	client     *plugin.Client
	rpc        *plugin.GRPCClient
	cmd        *exec.Cmd
	stub       any
	desc       *pb.Description
	reattached bool
	started    time.Time

	once sync.Once
}

// fixedName is a logger that go-plugin cannot rename: the plugin's log
// lines are re-emitted under the component's own logger name, not the
// binary's file name that go-plugin would append.
type fixedName struct{ hclog.Logger }

func (f fixedName) Named(string) hclog.Logger      { return f }
func (f fixedName) ResetNamed(string) hclog.Logger { return f }

func grpcDialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(shared.MaxMessageBytes),
		grpc.MaxCallSendMsgSize(shared.MaxMessageBytes),
	)}
}

// launch starts (or attaches to) the plugin, checks that it serves l.kind,
// and returns it. On any failure nothing is left running.
func (l *launcher) launch(ctx context.Context) (*instance, error) {
	in, err := l.connect()
	if err != nil {
		return nil, err
	}
	if err := l.bind(ctx, in, l.kind); err != nil {
		in.kill()
		return nil, err
	}
	l.log.Debug("plugin started", "pid", in.pid(), "type", in.desc.GetType(), "version", in.desc.GetVersion(), "reattached", in.reattached)
	return in, nil
}

// connect starts (or attaches to) the process and completes the
// handshake. On failure nothing is left running.
func (l *launcher) connect() (*instance, error) {
	cc := &plugin.ClientConfig{
		HandshakeConfig:  shared.Handshake,
		VersionedPlugins: shared.HostPlugins(),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           fixedName{l.log},
		StartTimeout:     l.cfg.startTimeout,
		GRPCDialOptions:  grpcDialOptions(),
	}
	in := &instance{}
	if ra := l.cfg.reattach; ra != nil {
		rc, err := ra.Config()
		if err != nil {
			return nil, err
		}
		cc.Reattach = rc
		// go-plugin negotiates nothing on reattach: the set of the version
		// the plugin announced is used as is.
		cc.Plugins = cc.VersionedPlugins[rc.ProtocolVersion]
		in.reattached = true
	} else {
		if err := checkSum(l.cfg.path, l.cfg.sum); err != nil {
			return nil, err
		}
		cmd := exec.Command(l.cfg.path, l.cfg.Args...)
		cmd.Env = append([]string(nil), l.cfg.env...)
		setProcessGroup(cmd)
		cc.Cmd = cmd
		// go-plugin checks the sum again right before exec.
		cc.SecureConfig = &plugin.SecureConfig{Checksum: l.cfg.sum, Hash: sha256.New()}
		cc.AutoMTLS = true
		cc.SkipHostEnv = true
		in.cmd = cmd
	}
	in.client = plugin.NewClient(cc)
	in.started = time.Now()
	ok := false
	defer func() {
		if !ok {
			in.kill()
		}
	}()
	proto, err := in.client.Client()
	if err != nil {
		return nil, l.startError(err)
	}
	rpc, isGRPC := proto.(*plugin.GRPCClient)
	if !isGRPC {
		return nil, fmt.Errorf("%w: %s: not a gRPC plugin", ErrHandshake, l.what())
	}
	in.rpc = rpc
	ok = true
	return in, nil
}

// bind takes the client of the service of kind and asks the plugin to
// describe itself through it.
func (l *launcher) bind(ctx context.Context, in *instance, kind core.Kind) error {
	stub, err := in.rpc.Dispense(string(kind))
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrHandshake, l.what(), err)
	}
	dctx, cancel := context.WithTimeout(ctx, l.cfg.startTimeout)
	defer cancel()
	desc, err := describe(dctx, kind, stub)
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			return fmt.Errorf("%w: %s does not serve a %s", ErrWrongKind, l.what(), kind)
		}
		return fmt.Errorf("%s: describe: %w", l.what(), callError(err))
	}
	if desc.GetKind() != string(kind) {
		return fmt.Errorf("%w: %s is a %s plugin, configured as a %s", ErrWrongKind, l.what(), desc.GetKind(), kind)
	}
	in.stub, in.desc = stub, desc
	return nil
}

func (l *launcher) what() string {
	if l.cfg.reattach != nil {
		return fmt.Sprintf("plugin at %s %s", l.cfg.reattach.Addr.Network, l.cfg.reattach.Addr.Address)
	}
	return l.cfg.path
}

// startError turns go-plugin's start errors into ours.
func (l *launcher) startError(err error) error {
	msg := err.Error()
	timeout := l.cfg.startTimeout
	switch {
	case errors.Is(err, plugin.ErrChecksumsDoNotMatch):
		return fmt.Errorf("%w: %s changed between the check and the start; refusing to run it", ErrChecksum, l.what())
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		return fmt.Errorf("%w: %s did not answer the handshake within %s (start_timeout); is it a scribe plugin built with plugins/sdk?", ErrHandshake, l.what(), timeout)
	case strings.HasPrefix(msg, "Unrecognized remote plugin message: "):
		got := strings.TrimPrefix(msg, "Unrecognized remote plugin message: ")
		got, _, _ = strings.Cut(got, "\n")
		return fmt.Errorf("%w: %s wrote %q to stdout instead of the handshake line; a plugin must keep stdout for the handshake and log to stderr", ErrHandshake, l.what(), clip(got, 120))
	case strings.Contains(msg, "plugin exited before we could connect"):
		return fmt.Errorf("%w: %s exited before the handshake (its stderr is in the log above)", ErrHandshake, l.what())
	case strings.Contains(msg, "incompatible API version"), strings.Contains(msg, "incompatible core API version"):
		return fmt.Errorf("%w: %s speaks another protocol version: %v", ErrHandshake, l.what(), err)
	case strings.Contains(msg, "unsupported plugin protocol"):
		return fmt.Errorf("%w: %s is not a gRPC plugin: %v", ErrHandshake, l.what(), err)
	case strings.Contains(msg, "reattachment process not found"):
		return fmt.Errorf("%w: %s: the process to reattach to is gone", ErrUnavailable, l.what())
	}
	return fmt.Errorf("%w: %s: %v", ErrHandshake, l.what(), err)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// checkSum refuses a binary whose sha256 is not want.
func checkSum(path string, want []byte) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("read plugin binary %s: %w", path, err)
	}
	got := h.Sum(nil)
	if !equalBytes(got, want) {
		return fmt.Errorf("%w: %s has sha256 %s, the configuration says %s; refusing to run it",
			ErrChecksum, path, hex.EncodeToString(got), hex.EncodeToString(want))
	}
	return nil
}

func equalBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	var d byte
	for i := range a {
		d |= a[i] ^ b[i]
	}
	return d == 0
}

// FileSHA256 returns the hex sha256 of a file.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file", ErrNotFound, path)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%w: %s is not executable", ErrNotFound, path)
	}
	return nil
}

func describe(ctx context.Context, kind core.Kind, stub any) (*pb.Description, error) {
	switch kind {
	case core.KindSink:
		return stub.(pb.SinkClient).Describe(ctx, &pb.DescribeRequest{})
	case core.KindLoader:
		return stub.(pb.LoaderClient).Describe(ctx, &pb.DescribeRequest{})
	case core.KindGuard:
		return stub.(pb.GuardClient).Describe(ctx, &pb.DescribeRequest{})
	}
	return nil, fmt.Errorf("unknown kind %q", kind)
}

// pid returns the plugin's process id, 0 when unknown.
func (in *instance) pid() int {
	if in.cmd != nil && in.cmd.Process != nil {
		return in.cmd.Process.Pid
	}
	if rc := in.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// exited reports whether the process is gone.
func (in *instance) exited() bool { return in.client.Exited() }

// kill ends the process at once (its whole process group) and reaps it. A
// process attached to is not ours to kill: only the connection is closed.
func (in *instance) kill() {
	in.once.Do(func() {
		if in.reattached {
			if in.rpc != nil {
				_ = in.rpc.Conn.Close()
			}
			return
		}
		if in.cmd != nil && in.cmd.Process != nil {
			killProcessGroup(in.cmd.Process.Pid)
		}
		reap(in.client, 5*time.Second)
	})
}

// stop asks the process to exit, and kills it if it does not in time.
func (in *instance) stop(grace time.Duration) {
	in.once.Do(func() {
		if in.reattached {
			if in.rpc != nil {
				_ = in.rpc.Conn.Close()
			}
			return
		}
		if !reap(in.client, grace) && in.cmd != nil && in.cmd.Process != nil {
			killProcessGroup(in.cmd.Process.Pid)
			reap(in.client, 5*time.Second)
		}
	})
}

// reap runs client.Kill (a graceful close, then a kill) but waits for it
// no longer than d.
func reap(c *plugin.Client, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Kill()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// callError classifies an error from a call to the plugin.
func callError(err error) error {
	if err == nil {
		return nil
	}
	switch status.Code(err) {
	case codes.DeadlineExceeded:
		return fmt.Errorf("%w: %v", ErrTimeout, status.Convert(err).Message())
	case codes.Unavailable, codes.Canceled:
		return fmt.Errorf("%w: %v", ErrUnavailable, status.Convert(err).Message())
	}
	if st, ok := status.FromError(err); ok {
		return errors.New(st.Message())
	}
	return err
}

// transportFault reports whether err says the process is gone or hung
// (rather than the plugin answering with an error of its own).
func transportFault(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrTimeout)
}

func levelName(l hclog.Logger) string {
	switch l.GetLevel() {
	case hclog.Trace:
		return "trace"
	case hclog.Debug:
		return "debug"
	case hclog.Info, hclog.NoLevel, hclog.DefaultLevel:
		return "info"
	case hclog.Warn:
		return "warn"
	case hclog.Error:
		return "error"
	case hclog.Off:
		return "off"
	}
	return "info"
}
