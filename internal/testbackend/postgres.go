package testbackend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PGUser is the system user the cluster runs as when the tests run as
// root (PostgreSQL refuses to run as root). scripts/test creates it; the
// helper creates it too when it is missing.
const PGUser = "scribe-test"

var (
	pgOnce sync.Once
	pgURL  string // the server's admin database URL
	pgErr  error
	pgDBs  atomic.Int64
)

// Postgres returns the URL of a fresh, empty database on the process's
// PostgreSQL server, starting the server the first time.
func Postgres(t testing.TB) string {
	t.Helper()
	url, err := NewDatabase()
	if errors.Is(err, errUnavailable) {
		unavailable(t, "PostgreSQL", err)
	}
	if err != nil {
		t.Fatalf("testbackend: %v", err)
	}
	return url
}

// errUnavailable marks a server that could not be started.
var errUnavailable = errors.New("server unavailable")

// NewDatabase is Postgres for a program (the benchmarks): the URL of a
// fresh database, the server started the first time; Stop stops it.
func NewDatabase() (string, error) {
	pgOnce.Do(func() { pgURL, pgErr = startPostgres() })
	if pgErr != nil {
		return "", fmt.Errorf("%w: %w", errUnavailable, pgErr)
	}
	name := fmt.Sprintf("scribe_test_%d_%d", os.Getpid(), pgDBs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return "", fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return strings.Replace(pgURL, "/postgres?", "/"+name+"?", 1), nil
}

// pgBinDir finds the newest /usr/lib/postgresql/<version>/bin with initdb.
func pgBinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(dirs) == 0 {
		if p, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p), nil
		}
		return "", errors.New("no initdb in /usr/lib/postgresql/*/bin or on PATH (apt-get install postgresql)")
	}
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) > pgVersion(dirs[j]) })
	return filepath.Dir(dirs[0]), nil
}

func pgVersion(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

// runAs runs a command as PGUser when the process is root, else as the
// current user.
func runAs(bin string, args ...string) *exec.Cmd {
	if os.Geteuid() != 0 {
		return exec.Command(bin, args...)
	}
	return exec.Command("runuser", append([]string{"-u", PGUser, "--", bin}, args...)...)
}

// ensureUser creates PGUser when the process is root and the user is
// missing, and returns its uid and gid (-1 when not root).
func ensureUser() (int, int, error) {
	if os.Geteuid() != 0 {
		return -1, -1, nil
	}
	u, err := user.Lookup(PGUser)
	if err != nil {
		out, cerr := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PGUser).CombinedOutput()
		if cerr != nil {
			return 0, 0, fmt.Errorf("create the user %s: %w: %s", PGUser, cerr, out)
		}
		if u, err = user.Lookup(PGUser); err != nil {
			return 0, 0, fmt.Errorf("look up the user %s: %w", PGUser, err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uid, gid, nil
}

// startPostgres runs initdb into a temporary folder and starts the
// cluster on a loopback port with its socket in that folder.
func startPostgres() (string, error) {
	bin, err := pgBinDir()
	if err != nil {
		return "", err
	}
	uid, gid, err := ensureUser()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "scribe-pg-")
	if err != nil {
		return "", fmt.Errorf("make the cluster folder: %w", err)
	}
	if uid >= 0 {
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return "", fmt.Errorf("give %s to %s: %w", dir, PGUser, err)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := runAs(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("initdb: %w: %s", err, out)
	}
	var lastErr error
	for range 3 {
		port, err := freePort()
		if err != nil {
			return "", err
		}
		opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200", port, dir)
		out, err := runAs(filepath.Join(bin, "pg_ctl"), "-D", data, "-l", filepath.Join(dir, "log"), "-o", opts, "-w", "-t", "60", "start").CombinedOutput()
		if err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			lastErr = fmt.Errorf("pg_ctl start: %w: %s\n%s", err, out, log)
			continue
		}
		onStop(func() {
			_ = runAs(filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop").Run()
			os.RemoveAll(dir)
		})
		return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), nil
	}
	os.RemoveAll(dir)
	return "", lastErr
}
