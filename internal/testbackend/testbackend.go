// Package testbackend starts the real storage servers scribe's backend
// tests run against: a PostgreSQL cluster (Debian's postgresql package) and
// an S3-compatible server (versitygw, built from the Go module proxy into a
// cache folder outside the repository). Each runs in a temporary folder on
// loopback, once per test process, and is stopped by Main.
//
// When a server cannot be started the calling test is skipped with the
// reason, or fails when SCRIBE_REQUIRE_BACKENDS=1 (scripts/test sets it).
// It is imported only from tests and the benchmarks.
package testbackend

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"testing"
)

// RequireEnv is the variable that turns a server that cannot start from a
// skip into a failure.
const RequireEnv = "SCRIBE_REQUIRE_BACKENDS"

var (
	stopMu sync.Mutex
	stops  []func()
)

// Main runs the package's tests and then stops every server this process
// started. Use it from TestMain: os.Exit(testbackend.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	Stop()
	return code
}

func onStop(f func()) {
	stopMu.Lock()
	defer stopMu.Unlock()
	stops = append(stops, f)
}

// Stop stops every server this process started.
func Stop() {
	stopMu.Lock()
	defer stopMu.Unlock()
	for i := len(stops) - 1; i >= 0; i-- {
		stops[i]()
	}
	stops = nil
}

// unavailable skips t, or fails it when the backends are required.
func unavailable(t testing.TB, what string, err error) {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("testbackend: %s cannot be started and %s=1: %v", what, RequireEnv, err)
	}
	t.Skipf("testbackend: %s cannot be started (set %s=1 to fail instead): %v", what, RequireEnv, err)
}

// freePort returns a loopback TCP port nobody listens on right now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func itoa(n int) string { return strconv.Itoa(n) }
