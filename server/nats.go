package server

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// startEmbedded runs a nats-server with JetStream storing in dir. It does
// not listen on any port: the server's only client is this process, through
// an in-process connection. With syncAlways every write to a stream (the
// entries' and the KV buckets') is fsynced before it is acknowledged;
// otherwise the stores fsync in the background every syncInterval.
func startEmbedded(dir string, maxPayload int32, syncAlways bool, syncInterval time.Duration, log hclog.Logger) (*natsserver.Server, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data_dir: %w", err)
	}
	opts := &natsserver.Options{
		ServerName: "scribe-embedded",
		DontListen: true,
		JetStream:  true,
		StoreDir:   dir,
		NoSigs:     true,
		MaxPayload: maxPayload,
		SyncAlways: syncAlways,
		// nats-server's own default (2m) unless an interval is given;
		// with SyncAlways the interval only paces its idle checks.
		SyncInterval: syncInterval,
	}
	ns, err := natsserver.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS server: %w", err)
	}
	ns.SetLoggerV2(natsLogger{log}, false, false, false)
	ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("embedded NATS server (data_dir %s) did not start within 30s", dir)
	}
	return ns, nil
}

// embeddedPayload is the NATS max_payload of the embedded server: room for
// the largest body plus headers, at least the NATS default of 1 MiB.
func embeddedPayload(maxBody int64) int32 {
	p := maxBody + 64<<10
	if p < 1<<20 {
		p = 1 << 20
	}
	if p > 64<<20 {
		p = 64 << 20
	}
	return int32(p)
}

// connect opens a NATS connection named name: in-process to ns, or to url.
func connect(ns *natsserver.Server, url, creds, name string, log hclog.Logger) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(100*time.Millisecond, 250*time.Millisecond),
		nats.Timeout(5 * time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS connection lost", "error", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("NATS reconnected", "url", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			log.Warn("NATS error", "error", err)
		}),
	}
	if ns != nil {
		opts = append(opts, nats.InProcessServer(ns))
		url = ""
	}
	if creds != "" {
		opts = append(opts, nats.UserCredentials(creds))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		if ns == nil {
			return nil, fmt.Errorf("connect to NATS at %s: %w", url, err)
		}
		return nil, fmt.Errorf("connect to the embedded NATS server: %w", err)
	}
	return nc, nil
}

// natsLogger sends nats-server's log to hclog.
type natsLogger struct{ log hclog.Logger }

func (l natsLogger) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l natsLogger) Warnf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if strings.HasPrefix(msg, "Maximum payloads over") {
		// The embedded server's max_payload follows max_body_bytes on purpose.
		l.log.Debug(msg)
		return
	}
	l.log.Warn(msg)
}
func (l natsLogger) Fatalf(format string, v ...any) { l.log.Error(fmt.Sprintf(format, v...)) }
func (l natsLogger) Errorf(format string, v ...any) { l.log.Error(fmt.Sprintf(format, v...)) }
func (l natsLogger) Debugf(format string, v ...any) { l.log.Trace(fmt.Sprintf(format, v...)) }
func (l natsLogger) Tracef(format string, v ...any) { l.log.Trace(fmt.Sprintf(format, v...)) }
