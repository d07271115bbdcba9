package testbackend

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// VersityModule is the S3-compatible server the tests run, built with go
// install into VersityBin's folder when missing.
const VersityModule = "github.com/versity/versitygw/cmd/versitygw@v1.8.0"

// S3Server is a running S3-compatible server and a fresh bucket on it.
type S3Server struct {
	Endpoint  string // http://127.0.0.1:PORT
	Region    string
	AccessKey string
	SecretKey string
	Bucket    string
}

var (
	s3Once    sync.Once
	s3Base    S3Server
	s3Err     error
	s3Buckets atomic.Int64
)

// VersityBin is where the versitygw binary is cached:
// $SCRIBE_CACHE_DIR/bin, else $HOME/.cache/scribe/bin, outside the
// repository.
func VersityBin() string {
	dir := os.Getenv("SCRIBE_CACHE_DIR")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "scribe")
	}
	return filepath.Join(dir, "bin", "versitygw")
}

// S3 returns the process's S3 server with a new empty bucket, starting the
// server the first time.
func S3(t testing.TB) S3Server {
	t.Helper()
	srv, err := NewBucket()
	if errors.Is(err, errUnavailable) {
		unavailable(t, "the S3 server (versitygw)", err)
	}
	if err != nil {
		t.Fatalf("testbackend: %v", err)
	}
	return srv
}

// NewBucket is S3 for a program (the benchmarks); Stop stops the server.
func NewBucket() (S3Server, error) {
	s3Once.Do(func() { s3Base, s3Err = startVersity() })
	if s3Err != nil {
		return S3Server{}, fmt.Errorf("%w: %w", errUnavailable, s3Err)
	}
	srv := s3Base
	srv.Bucket = fmt.Sprintf("scribe-test-%d-%d", os.Getpid(), s3Buckets.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := srv.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &srv.Bucket}); err != nil {
		return S3Server{}, fmt.Errorf("create bucket %s: %w", srv.Bucket, err)
	}
	return srv, nil
}

// Client returns an S3 client for the server (path-style addressing).
func (s S3Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       s.Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// ensureVersity returns the cached binary, building it when missing.
func ensureVersity() (string, error) {
	bin := VersityBin()
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("versitygw is not in %s and there is no go tool to build it: %w", bin, err)
	}
	cmd := exec.Command(goTool, "install", VersityModule)
	cmd.Env = append(os.Environ(), "GOBIN="+filepath.Dir(bin), "GOFLAGS=-mod=mod")
	cmd.Dir = os.TempDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go install %s: %w: %s", VersityModule, err, out)
	}
	return bin, nil
}

func startVersity() (S3Server, error) {
	bin, err := ensureVersity()
	if err != nil {
		return S3Server{}, err
	}
	dir, err := os.MkdirTemp("", "scribe-s3-")
	if err != nil {
		return S3Server{}, fmt.Errorf("make the S3 folder: %w", err)
	}
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o700); err != nil {
		return S3Server{}, fmt.Errorf("make the S3 folder: %w", err)
	}
	srv := S3Server{Region: "us-east-1", AccessKey: "scribetest", SecretKey: "scribetestsecret"}
	var lastErr error
	for range 3 {
		port, err := freePort()
		if err != nil {
			return S3Server{}, err
		}
		addr := "127.0.0.1:" + itoa(port)
		logf, _ := os.Create(filepath.Join(dir, "log"))
		cmd := exec.Command(bin, "--access", srv.AccessKey, "--secret", srv.SecretKey, "--region", srv.Region,
			"--port", addr, "--quiet", "posix", root)
		cmd.Stdout, cmd.Stderr = logf, logf
		if err := cmd.Start(); err != nil {
			logf.Close()
			lastErr = fmt.Errorf("start versitygw: %w", err)
			continue
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if err := waitHTTP(addr, done); err != nil {
			cmd.Process.Kill()
			logf.Close()
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			lastErr = fmt.Errorf("versitygw on %s: %w: %s", addr, err, log)
			continue
		}
		onStop(func() {
			cmd.Process.Kill()
			<-done
			logf.Close()
			os.RemoveAll(dir)
		})
		srv.Endpoint = "http://" + addr
		return srv, nil
	}
	os.RemoveAll(dir)
	return S3Server{}, lastErr
}

// waitHTTP waits until addr answers HTTP, or the process exits.
func waitHTTP(addr string, exited <-chan error) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("exited: %v", err)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			resp, err := http.Get("http://" + addr + "/")
			if err == nil {
				resp.Body.Close()
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("no answer within 60s")
}
