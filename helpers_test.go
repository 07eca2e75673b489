package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/require"
)

// errUnavailable stands for a transient failure, a "503".
var errUnavailable = errors.New("503 service unavailable")

// errBadRequest stands for a failure that retrying cannot fix, a "400".
var errBadRequest = errors.New("400 bad request")

// result is what a Do running on another goroutine returned.
type result struct {
	trace retry.Trace
	err   error
}

// start runs retry.Do on its own goroutine, for tests that step the clock.
func start(ctx context.Context, op func(context.Context) error, p retry.Policy) <-chan result {
	ch := make(chan result, 1)
	go func() {
		tr, err := retry.Do(ctx, op, p)
		ch <- result{tr, err}
	}()
	return ch
}

// watchdog bounds how long a test waits for a goroutine it expects to finish
// at once; it is never reached when the code works, so it costs no time.
const watchdog = 10 * time.Second

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(watchdog):
		require.FailNowf(t, "timed out", "waiting for %s", what)
		panic("unreachable")
	}
}

// requireNoTimers fails the test if anything is still pending on clk: a wait,
// an attempt timeout or a MaxElapsed deadline that Do should have stopped.
// WaitForAllTimers moves time to the last pending timer, so time stays put
// only if there is none.
func requireNoTimers(t *testing.T, clk *retrytest.Clock) {
	t.Helper()
	before := clk.Now()
	require.Zero(t, clk.Pending(), "a timer was left running on the clock")
	_ = before
}
