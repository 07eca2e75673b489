package retrygrpc_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// AttemptTimeout gives each attempt a deadline of its own, which grpc sends
// to the server; an attempt that runs out of it while the caller's ctx is
// alive is retried.
func TestUnaryAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(reply{block: true}, reply{})
		p := fast()
		p.AttemptTimeout = time.Second
		c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()))

		tr, err := unary(t.Context(), c, "x")
		require.NoError(t, err)
		assert.Equal(t, []string{"attempt timed out", ""}, reasons(tr))
		for i, s := range srv.seen() {
			assert.Equal(t, time.Second, s.deadline, "attempt %d's deadline, as the server saw it", i+1)
		}
	})
}

// Attempts that all time out end with DEADLINE_EXCEEDED, retry.ErrExhausted
// and context.DeadlineExceeded; a caller's deadline is not retried.
func TestUnaryTimeoutsGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(reply{block: true})
		p := fast()
		p.AttemptTimeout = time.Second
		p.MaxAttempts = 3
		c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()))

		tr, err := unary(t.Context(), c, "x")
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
		assert.ErrorIs(t, err, retry.ErrExhausted)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 3, tr.Attempts())

		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		tr, err = unary(ctx, c, "x")
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
		assert.Equal(t, 1, tr.Attempts(), "the caller's deadline is not retried")
		assert.NotErrorIs(t, err, retry.ErrGaveUp)
		// StopContextDone, or StopNotRetryable when the server's copy of the
		// deadline fires before the caller's: both timers fire at once.
		assert.Contains(t, []retry.StopReason{retry.StopContextDone, retry.StopNotRetryable}, tr.Stop())
	})
}

// A canceled caller ctx ends the call with CANCELLED, mid-wait too.
func TestUnaryCallerCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(fail(codes.Unavailable))
		p := retry.Policy{BaseBackoff: time.Hour, MaxBackoff: time.Hour, Jitter: retry.NoJitter}
		c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()))

		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Minute, cancel)
		tr, err := unary(ctx, c, "x")
		assert.Equal(t, codes.Canceled, status.Code(err))
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, retry.StopContextDone, tr.Stop())
		assert.Equal(t, 1, tr.Attempts())
	})
}

// MaxElapsed bounds the whole call: a wait that would pass it ends the call
// at once, and an attempt it cuts short counts as timed out.
func TestUnaryMaxElapsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(fail(codes.Unavailable))
		p := retry.Policy{BaseBackoff: time.Second, MaxBackoff: time.Second, Jitter: retry.NoJitter, MaxElapsed: 2500 * time.Millisecond, MaxAttempts: 10}
		c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()))
		tr, err := unary(t.Context(), c, "x")
		assert.ErrorIs(t, err, retry.ErrDeadline)
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Equal(t, 3, tr.Attempts())

		srv = newServer(reply{block: true})
		c = dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()))
		start := time.Now()
		tr, err = unary(t.Context(), c, "x")
		assert.ErrorIs(t, err, retry.ErrDeadline)
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
		assert.Equal(t, []string{"attempt timed out"}, reasons(tr))
		assert.Equal(t, p.MaxElapsed, time.Since(start))
	})
}

// On a Policy.Clock, AttemptTimeout runs on that clock: the attempt ends
// when the fake time passes its deadline, and the retry follows.
func TestUnaryAttemptTimeoutOnFakeClock(t *testing.T) {
	clk := retrytest.NewAutoClock()
	srv := newServer(reply{block: true}, reply{})
	// A long timeout: grpc also sends it to the server as a real-time
	// deadline, which must not end the attempt first.
	p := retry.Policy{Clock: clk, AttemptTimeout: time.Hour, BaseBackoff: time.Second}
	c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()))

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-srv.arrived // the first attempt is under way
		clk.Add(time.Hour)
	}()
	tr, err := unary(t.Context(), c, "x")
	wg.Wait()
	require.NoError(t, err)
	assert.Equal(t, []string{"attempt timed out", ""}, reasons(tr))
	assert.Zero(t, clk.Pending(), "every deadline and wait released")
}

// On a Policy.Clock, a stream attempt's time limit runs on that clock.
func TestServerStreamAttemptTimeoutOnFakeClock(t *testing.T) {
	clk := retrytest.NewAutoClock()
	srv := newServer(reply{block: true}, reply{messages: 2})
	p := retry.Policy{Clock: clk, AttemptTimeout: time.Hour, BaseBackoff: time.Second}
	c := dial(t, srv, withStreamRetry(p, retrygrpc.WithAllIdempotent()))

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-srv.arrived // the first attempt is under way
		clk.Add(time.Hour)
	}()
	var tr retry.Trace
	got, err := drain(watch(retrygrpc.WithTrace(t.Context(), &tr), t, c, "req"))
	wg.Wait()
	require.NoError(t, err)
	assert.Equal(t, "ab", got)
	assert.Equal(t, []string{"attempt timed out", ""}, reasons(tr))
	assert.Zero(t, clk.Pending(), "every timer released")
}
