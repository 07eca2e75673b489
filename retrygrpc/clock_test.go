package retrygrpc_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// 200 concurrent calls through one interceptor share its Policy's fake
// clock under Clock.Run: each call fails twice, waits its own 200ms and
// 400ms, and succeeds within its MaxElapsed, however many other calls wait
// at the same time. The deadline each attempt sends is real time left.
func TestConcurrentCallsShareAFakeClock(t *testing.T) {
	const n = 200
	clk := retrytest.NewAutoClock()
	srv := newServer()
	srv.failFirst = 2
	p := retry.Policy{Clock: clk, Jitter: retry.NoJitter, MaxElapsed: time.Second}
	c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()))

	traces, errs := make([]retry.Trace, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			clk.Run(func() { traces[i], errs[i] = unary(t.Context(), c, "x") })
		})
	}
	wg.Wait()
	for i := range n {
		if !assert.NoError(t, errs[i], "call %d", i) {
			continue
		}
		assert.Equal(t, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}, traces[i].Waits(), "call %d", i)
		assert.Equal(t, 600*time.Millisecond, traces[i].Elapsed(), "call %d: its own waits only", i)
	}
	assert.Len(t, srv.seen(), 3*n)
	for _, s := range srv.seen() {
		assert.Greater(t, s.deadline, time.Duration(0), "a deadline still to come")
		assert.LessOrEqual(t, s.deadline, time.Second)
	}
	assert.Zero(t, clk.Pending())
}

// A clock that moves only when told, in a test with a server that never
// answers: under Clock.Run the hung attempt ends at its AttemptTimeout in
// fake time, the retry follows, and the test does not hang.
func TestRunEndsAnAttemptToAHungServer(t *testing.T) {
	clk := retrytest.NewClock()
	srv := newServer(reply{block: true}, reply{})
	p := retry.Policy{Clock: clk, AttemptTimeout: time.Hour, Jitter: retry.NoJitter}
	c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()))

	var tr retry.Trace
	var err error
	clk.Run(func() { tr, err = unary(t.Context(), c, "x") })
	require.NoError(t, err)
	assert.Equal(t, []string{"attempt timed out", ""}, reasons(tr))
	assert.Len(t, srv.seen(), 2)
	assert.Zero(t, clk.Pending())

}
