// Package pgserver starts a throwaway PostgreSQL server for a test: a fresh
// cluster (initdb) in a temporary directory, on a free loopback port, stopped
// and removed when the test ends. It needs only the server's programs from
// Debian's postgresql package, found on PATH or under /usr/lib/postgresql.
//
// Tests that need PostgreSQL skip when it is not installed, except in CI:
// with the environment variable CI set to "true", a missing server fails the
// test, so that CI cannot pass by skipping.
//
// PostgreSQL refuses to run as root. When the test runs as root, the server
// runs as the "postgres" user that Debian's package creates.
//
// The server runs with fsync off by default: the crash tests kill clients,
// not the server, and a test server has no data to keep. Pass "fsync=on"
// (and "synchronous_commit=on") to Start to measure durable commits.
package pgserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Server is a running PostgreSQL server on loopback. Its superuser is
// "postgres", with trust authentication (loopback only).
type Server struct {
	// Host and Port are where it listens: Host is always 127.0.0.1.
	Host string
	Port int

	bin      string
	dir      string // owns data/ and the socket directory
	settings []string
	cred     *syscall.Credential

	mu   sync.Mutex
	proc *process
}

type process struct {
	cmd    *exec.Cmd
	exited chan error
}

// startTimeout bounds how long a server may take to accept connections.
const startTimeout = 20 * time.Second

// dbSeq numbers the databases NewDatabase creates in this process.
var dbSeq atomic.Int64

// Start initialises a cluster, starts a server and stops it when tb ends.
// settings are extra "name=value" server settings (postgres -c). Without
// PostgreSQL installed it skips tb, or fails it if CI is "true".
func Start(tb testing.TB, settings ...string) *Server {
	tb.Helper()
	bin, err := findBin()
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("PostgreSQL is not installed, and CI=true does not allow a skip (apt-get install postgresql): %v", err)
		} else {
			tb.Skipf("PostgreSQL is not installed: skipped (apt-get install postgresql to run it; CI=true fails instead): %v", err)
		}
		return nil
	}
	s, err := initCluster(bin, settings)
	if err != nil {
		tb.Fatalf("pgserver: %v", err)
		return nil
	}
	tb.Cleanup(s.remove)
	var last error
	for range 3 { // a free port can be taken by someone else before we bind it
		port, err := freePort()
		if err != nil {
			last = err
			continue
		}
		s.Port = port
		if last = s.start(); last == nil {
			tb.Cleanup(s.stop)
			return s
		}
	}
	tb.Fatalf("pgserver: postgres did not start: %v", last)
	return nil
}

// URL is a connection string for database db as the superuser.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), db)
}

// NewDatabase creates an empty database and returns its connection string,
// so that the tests of one package can share a server.
func (s *Server) NewDatabase(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	out, err := exec.Command(filepath.Join(s.bin, "createdb"),
		"-h", s.Host, "-p", strconv.Itoa(s.Port), "-U", "postgres", name).CombinedOutput()
	if err != nil {
		tb.Fatalf("pgserver: createdb: %v: %s", err, out)
	}
	return s.URL(name)
}

// Restart stops the server at once (an immediate shutdown, like a crash:
// every connection is cut and uncommitted work is lost) and starts it again
// on the same port with the same data.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.stop()
	if err := s.start(); err != nil {
		tb.Fatalf("pgserver: restart: %v", err)
	}
}

// Stop stops the server at once, as Restart does, without starting it
// again: clients see connection errors until Resume.
func (s *Server) Stop() { s.stop() }

// Resume starts a server stopped by Stop.
func (s *Server) Resume(tb testing.TB) {
	tb.Helper()
	if err := s.start(); err != nil {
		tb.Fatalf("pgserver: resume: %v", err)
	}
}

func findBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	// Debian keeps the server's programs out of PATH, one directory per
	// major version: take the newest.
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
				return d, nil
			}
		}
	}
	return "", errors.New("no initdb and postgres on PATH or in /usr/lib/postgresql/*/bin")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

func initCluster(bin string, settings []string) (*Server, error) {
	dir, err := os.MkdirTemp("", "pgserver-")
	if err != nil {
		return nil, err
	}
	s := &Server{Host: "127.0.0.1", bin: bin, dir: dir, settings: settings}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			s.remove()
			return nil, fmt.Errorf("running as root and there is no postgres user to run the server as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		err = os.Chmod(dir, 0o755)
		if err == nil {
			err = os.Chown(dir, uid, gid)
		}
		if err != nil {
			s.remove()
			return nil, err
		}
	}
	cmd := exec.Command(filepath.Join(bin, "initdb"), "-D", s.data(), "-U", "postgres",
		"-A", "trust", "-E", "UTF8", "--no-sync", "--no-instructions")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		s.remove()
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	return s, nil
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	args := []string{"-D", s.data(), "-p", strconv.Itoa(s.Port), "-k", s.dir,
		"-c", "listen_addresses=" + s.Host, "-c", "fsync=off",
		"-c", "max_connections=200", "-c", "shared_buffers=32MB"}
	for _, kv := range s.settings {
		args = append(args, "-c", kv)
	}
	logfile := filepath.Join(s.dir, "postgres.log")
	log, err := os.OpenFile(logfile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	p := &process{cmd: cmd, exited: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	deadline := time.Now().Add(startTimeout)
	for {
		if s.ready() {
			s.proc = p
			return nil
		}
		select {
		case err := <-p.exited:
			out, _ := os.ReadFile(logfile)
			return fmt.Errorf("postgres exited (%v): %s", err, out)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
			return errors.New("postgres did not accept connections in time")
		}
	}
}

// ready asks pg_isready, which tells "starting up" from "accepting
// connections" (a TCP connect alone does not).
func (s *Server) ready() bool {
	return exec.Command(filepath.Join(s.bin, "pg_isready"), "-q",
		"-h", s.Host, "-p", strconv.Itoa(s.Port), "-U", "postgres", "-t", "1").Run() == nil
}

// stop shuts the server down immediately (SIGQUIT), killing its process
// group if it does not go within 5 s.
func (s *Server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.proc
	if p == nil {
		return
	}
	s.proc = nil
	_ = p.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
	// An immediate shutdown leaves the postmaster's children to exit on
	// their own; the next start on the same data waits for them through
	// postmaster.pid, so nothing else is needed here.
}

func (s *Server) remove() { _ = os.RemoveAll(s.dir) }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
