package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// panel is the command, built once for all the tests.
var panel string

// TestMain builds the command, runs the tests, and fails them if any
// goroutine outlives them.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "panel-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	panel = filepath.Join(dir, "panel")
	// go test puts its own go first on PATH.
	if out, err := exec.Command("go", "build", "-o", panel, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the command: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// watchdog bounds each wait for the command; it is never reached when the
// command works.
const watchdog = 30 * time.Second

// start runs the command with args and returns it with its panel's URL.
func start(t *testing.T, args ...string) (*exec.Cmd, string, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(panel, args...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan(), "no first line: %v", lines.Err())
	url, ok := strings.CutPrefix(lines.Text(), "retry panel: ")
	require.True(t, ok, "first line %q", lines.Text())
	require.True(t, strings.HasPrefix(url, "http://127.0.0.1:"), "the panel listens on loopback: %s", url)
	return cmd, url, lines
}

// wait waits for cmd to exit and returns its exit code.
func wait(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			return 0
		}
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		return exit.ExitCode()
	case <-time.After(watchdog):
		t.Fatal("the command did not exit")
		return -1
	}
}

type snapshot struct {
	Operations []struct {
		Name   string `json:"name"`
		Calls  int    `json:"calls"`
		GaveUp int    `json:"gave_up"`
		Recent []struct {
			Attempts int `json:"attempts"`
		} `json:"recent"`
	} `json:"operations"`
	Budgets []struct {
		Name string `json:"name"`
	} `json:"budgets"`
}

func fetch(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, url)
	return string(body)
}

// The command serves a live panel of successes, retries and give-ups, over
// HTTP and retry.Do, and stops cleanly when interrupted.
func TestPanelServesLiveCalls(t *testing.T) {
	cmd, url, lines := start(t, "-rate", "200", "-duration", "1m")
	defer http.DefaultClient.CloseIdleConnections()

	var s snapshot
	deadline := time.Now().Add(watchdog)
	seen := func() (names map[string]bool, retried, gaveUp bool) {
		names = map[string]bool{}
		for _, op := range s.Operations {
			names[op.Name] = op.Calls > 0
			gaveUp = gaveUp || op.GaveUp > 0
			for _, c := range op.Recent {
				retried = retried || c.Attempts > 1
			}
		}
		return names, retried, gaveUp
	}
	for {
		require.NoError(t, json.Unmarshal([]byte(fetch(t, url+"?format=json")), &s))
		names, retried, gaveUp := seen()
		if names["GET /users/{id}/orders"] && names["POST /payments"] && names["cache.get"] && retried && gaveUp {
			break
		}
		require.True(t, time.Now().Before(deadline), "the panel never showed retries and give-ups: %+v", s)
		time.Sleep(50 * time.Millisecond)
	}
	for _, op := range s.Operations {
		assert.NotContains(t, op.Name, "session", "no query reaches a name")
		assert.NotContains(t, op.Name, "/catalog", "no raw path reaches a name")
		assert.NotRegexp(t, `/\d+(/|$)`, op.Name, "no id reaches a name")
	}
	require.Len(t, s.Budgets, 1)
	assert.Contains(t, fetch(t, url), "POST /payments")

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.True(t, lines.Scan(), "read before Wait, which closes the pipe")
	assert.Equal(t, "stopping", lines.Text())
	assert.Equal(t, 0, wait(t, cmd))
}

// -duration stops the command by itself.
func TestPanelStopsAfterDuration(t *testing.T) {
	cmd, _, _ := start(t, "-duration", "200ms")
	assert.Equal(t, 0, wait(t, cmd))
}

// A bad flag is an error.
func TestPanelRejectsBadRate(t *testing.T) {
	out, err := exec.Command(panel, "-rate", "0").CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, string(out), "-rate must be positive")
}
