// Package redisserver starts a throwaway redis-server for a test: on a free
// loopback port, with no persistence, stopped when the test ends.
//
// Tests that need Redis skip when redis-server is not installed, except in
// CI: with the environment variable CI set to "true", a missing
// redis-server fails the test, so that CI cannot pass by skipping.
package redisserver

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Server is a running redis-server.
type Server struct {
	// Addr is its host:port on loopback.
	Addr string
}

// startTimeout bounds how long a server may take to answer PING.
const startTimeout = 10 * time.Second

// Start starts a redis-server and stops it when tb ends. Without
// redis-server on PATH it skips tb, or fails it if CI is "true".
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("redis-server is not installed, and CI=true does not allow a skip (apt-get install redis-server): %v", err)
		} else {
			tb.Skipf("redis-server is not installed: skipped (apt-get install redis-server to run it; CI=true fails instead): %v", err)
		}
		return nil
	}
	var last error
	for range 3 { // a free port can be taken by someone else before we bind it
		s, err := start(tb, bin)
		if err == nil {
			return s
		}
		last = err
	}
	tb.Fatalf("redis-server did not start: %v", last)
	return nil
}

func start(tb testing.TB, bin string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := tb.TempDir()
	logfile := filepath.Join(dir, "redis.log")
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", logfile,
		"--daemonize", "no")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(startTimeout)
	for {
		if err := ping(addr); err == nil {
			break
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(logfile)
			return nil, fmt.Errorf("exited (%v): %s", err, log)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return nil, errors.New("no answer to PING in time")
		}
	}
	tb.Cleanup(stop)
	return &Server{Addr: addr}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ping sends PING in the inline protocol and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}
