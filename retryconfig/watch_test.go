package retryconfig_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/retrytest"
)

// watched starts l.Watch on path with a fake clock, and returns a step
// func that moves time one interval and returns once the look it causes
// is over (the next wait is set), and the problems told.
func watched(t *testing.T, l *retryconfig.Live, path string, reload chan os.Signal) (step func(), told <-chan error) {
	t.Helper()
	clk := retrytest.NewClock()
	errs := make(chan error, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- l.Watch(ctx, path, retryconfig.WatchOptions{Interval: time.Second, Clock: clk, Reload: reload,
			OnError: func(err error) { errs <- err }})
	}()
	t.Cleanup(func() {
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled)
	})
	<-clk.Waits() // the first look is over
	return func() {
		t.Helper()
		clk.Add(time.Second)
		<-clk.Waits()
	}, errs
}

func writeDoc(t *testing.T, path string, attempts string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(`{"policies": {"p": {"maxAttempts": `+attempts+`}}}`), 0o600))
}

func newLiveFromFile(t *testing.T, path string) *retryconfig.Live {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	cfg, err := retryconfig.Parse(data)
	require.NoError(t, err)
	return retryconfig.NewLive(cfg)
}

// Watch follows the file: a rename over it and a truncate-and-write are
// read, an unchanged file is not parsed again, a bad document and a
// removed file keep the last good version and are told once each.
func TestWatchFollowsTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "policies.json")
	writeDoc(t, path, "2")
	l := newLiveFromFile(t, path)
	step, told := watched(t, l, path, nil)

	step()
	assert.Equal(t, uint64(1), l.Version(), "unchanged: not read again")

	tmp := filepath.Join(dir, "new.json")
	writeDoc(t, tmp, "3")
	require.NoError(t, os.Rename(tmp, path)) // an atomic replace
	step()
	assert.Equal(t, 3, l.Policy("p").MaxAttempts, "renamed over")
	assert.Equal(t, uint64(2), l.Version())

	writeDoc(t, path, "44") // truncate and write
	step()
	assert.Equal(t, 44, l.Policy("p").MaxAttempts, "written in place")

	require.NoError(t, os.WriteFile(path, []byte(`{"policies": {"p": {"maxAttempts": 0}}}`), 0o600))
	step()
	step()
	assert.Equal(t, 44, l.Policy("p").MaxAttempts, "a bad document keeps the last good version")
	err := <-told
	assert.ErrorContains(t, err, "keeping version 3")
	assert.Empty(t, told, "told once")

	require.NoError(t, os.Remove(path))
	step()
	step()
	err = <-told
	assert.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
	assert.Empty(t, told, "told once")
	assert.Equal(t, 44, l.Policy("p").MaxAttempts, "a removed file keeps the last good version")

	writeDoc(t, path, "5")
	step()
	assert.Equal(t, 5, l.Policy("p").MaxAttempts, "back")
}

// Reload reads the file at once, as a SIGHUP asks, changed or not.
func TestWatchReloadsOnASignal(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "policies.json")
	writeDoc(t, path, "2")
	l := newLiveFromFile(t, path)
	reload := make(chan os.Signal)
	got := make(chan uint64, 4)
	cancel := l.Subscribe(func(v uint64, _ *retryconfig.Config) { got <- v })
	defer cancel()
	_, _ = watched(t, l, path, reload)
	reload <- syscall.SIGHUP
	assert.Equal(t, uint64(2), <-got, "read at once, though unchanged")
	reload <- syscall.SIGHUP
	assert.Equal(t, uint64(3), <-got)
}
