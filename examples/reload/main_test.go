package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/retrytest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// write replaces the file at once, as editors and config pushers do, so
// that a look under way sees the old file or the new one, never half of it.
func write(t *testing.T, path, doc string) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(doc), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

func TestReloader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policies.json")
	write(t, path, `{"policies": {"payments": {"maxAttempts": 2}, "feed": {"maxAttempts": 6}}}`)
	var logs bytes.Buffer
	var o retryconfig.Overrides
	require.NoError(t, o.FromEnv("RETRY_", []string{"RETRY_FEED_MAX_ATTEMPTS=3"}))
	r, err := newReloader(path, &o, log.New(&logs, "", 0))
	require.NoError(t, err)
	assert.Equal(t, 2, r.live.Policy("payments").MaxAttempts)
	assert.Equal(t, 3, r.live.Policy("feed").MaxAttempts, "env > file")
	v := r.live.Version()

	hup := make(chan os.Signal)
	clk := retrytest.NewClock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		r.run(ctx, retryconfig.WatchOptions{Interval: time.Second, Reload: hup, Clock: clk})
		close(done)
	}()
	defer func() { cancel(); <-done }()
	<-clk.Waits() // the first look is over
	look := func() { clk.Add(time.Second); <-clk.Waits() }

	look() // unchanged: nothing to do
	assert.Equal(t, v, r.live.Version())

	write(t, path, `{"policies": {"payments": {"maxAttempts": 1}, "feed": {"maxAttempts": 6}}}`)
	look()
	assert.Equal(t, v+1, r.live.Version(), "a changed file is reloaded")
	assert.Equal(t, 1, r.live.Policy("payments").MaxAttempts)
	assert.Equal(t, 3, r.live.Policy("feed").MaxAttempts, "the override outlives the reload")

	write(t, path, `{"policies": {"payments": {"maxBackoff": "5"}}}`)
	hup <- syscall.SIGHUP
	look()
	assert.Equal(t, v+1, r.live.Version(), "a bad file is rejected")
	assert.NotContains(t, logs.String(), "not valid JSON")
	assert.Equal(t, 1, r.live.Policy("payments").MaxAttempts, "the last good config stays")
	assert.Contains(t, logs.String(), `keeping version 3: retryconfig: policies.payments.maxBackoff: "5" has no unit`)

	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest("GET", "/debug/retries", nil))
	var page struct {
		Version uint64          `json:"version"`
		Config  json.RawMessage `json:"config"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &page))
	assert.Equal(t, v+1, page.Version)
	shown, err := retryconfig.Parse(page.Config)
	require.NoError(t, err)
	assert.Equal(t, 1, shown.Policy("payments").MaxAttempts)
}
