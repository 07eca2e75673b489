package retry_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openedBreaker returns a Breaker that one failed call has opened.
func openedBreaker(t *testing.T) *guard.Breaker {
	t.Helper()
	br, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1})
	require.NoError(t, err)
	_, err = retry.Do(context.Background(), func(context.Context) error { return errUnavailable }, retry.Policy{MaxAttempts: 1, Breaker: br})
	require.ErrorIs(t, err, errUnavailable)
	require.Equal(t, guard.BreakerOpen, br.State())
	return br
}

// A call that an open breaker refuses costs no allocation: its ctx is
// never marked, and its error, alike for every such call, is made once.
func TestRefusalByAnOpenBreakerDoesNotAllocate(t *testing.T) {
	br := openedBreaker(t)
	th, err := guard.NewThrottle(guard.ThrottleOptions{})
	require.NoError(t, err)
	b, err := guard.NewBudget(guard.BudgetOptions{})
	require.NoError(t, err)
	p := retry.Policy{Breaker: br, Throttle: th, Budget: b}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	op := func(context.Context) error {
		t.Error("op called through an open breaker")
		return nil
	}
	assert.Zero(t, testing.AllocsPerRun(100, func() { retry.Do(ctx, op, p) }), "Do")
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		_, _, _ = retry.DoValue(ctx, func(context.Context) (int, error) { return 0, op(ctx) }, p)
	}), "DoValue")
	var tr retry.Trace
	var doErr error
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		tr, doErr = retry.Do(ctx, op, p)
		if !errors.Is(doErr, retry.ErrBreakerOpen) || !errors.Is(doErr, retry.ErrGaveUp) {
			t.Error("the refusal does not match ErrBreakerOpen and ErrGaveUp")
		}
	}), "Do, and errors.Is of its sentinels")
	assert.Equal(t, retry.StopBreakerOpen, tr.Stop())
	assert.Zero(t, tr.Attempts())
}

// The shared error of a refusal before the first attempt is the error Do
// always returned for one: a *StopError with its Stop, no attempts and no
// last error, matching its sentinel, ErrGaveUp and nothing else, and
// marked Permanent for an outer loop; a refusal after attempts still has
// its own, with the last attempt's error.
func TestRefusalErrorsKeepTheirShape(t *testing.T) {
	br := openedBreaker(t)
	_, err := retry.Do(context.Background(), func(context.Context) error { return nil }, retry.Policy{Breaker: br})
	var se *retry.StopError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, retry.StopError{Stop: retry.StopBreakerOpen}, *se)
	assert.EqualError(t, err, "retry: circuit breaker open before the first attempt")
	assert.ErrorIs(t, err, retry.ErrBreakerOpen)
	assert.ErrorIs(t, err, retry.ErrGaveUp)
	assert.NotErrorIs(t, err, retry.ErrThrottled)
	assert.NotErrorIs(t, err, retry.ErrExhausted)
	assert.NotErrorIs(t, err, context.Canceled)
	assert.False(t, retry.DefaultClassifier(context.Background(), retry.Attempt{Err: err}).Retry, "an outer loop retries a refusal")

	// Refused by a Throttle that sheds everything: its own sentinel.
	th, err := guard.NewThrottle(guard.ThrottleOptions{MinRequests: 1, MaxReject: 1, Rand: func() float64 { return 0 }})
	require.NoError(t, err)
	_, err = retry.Do(context.Background(), func(context.Context) error { return errUnavailable }, retry.Policy{MaxAttempts: 1, Throttle: th})
	require.ErrorIs(t, err, errUnavailable)
	tr, err := retry.Do(context.Background(), func(context.Context) error { return nil }, retry.Policy{Throttle: th})
	assert.Equal(t, retry.StopThrottled, tr.Stop())
	require.ErrorAs(t, err, &se)
	assert.Equal(t, retry.StopError{Stop: retry.StopThrottled}, *se)
	assert.ErrorIs(t, err, retry.ErrThrottled)
	assert.NotErrorIs(t, err, retry.ErrBreakerOpen)

	// A retry refused after a failure: its own error, with that failure.
	br2, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1, CountAttempts: true})
	require.NoError(t, err)
	tr, err = retry.Do(context.Background(), func(context.Context) error { return errUnavailable }, retry.Policy{Breaker: br2, BaseBackoff: 1, MaxBackoff: 1})
	assert.Equal(t, retry.StopBreakerOpen, tr.Stop())
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 1, se.Attempts)
	assert.ErrorIs(t, err, errUnavailable)
	assert.ErrorIs(t, err, retry.ErrBreakerOpen)
}
