package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each way of giving up is one StopError that errors.As finds, with the
// attempts, the wait that did not fit and the last error, and that matches
// ErrGaveUp; a ctx that ended is not giving up, and a refused error comes
// back as it is.
func TestStopErrorSaysWhyAndAfterWhat(t *testing.T) {
	t.Parallel()
	budget, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 2, TokenRatio: 0.1})
	require.NoError(t, err)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name     string
		ctx      context.Context
		op       func(context.Context) error
		p        retry.Policy
		stop     retry.StopReason
		attempts int
		wait     time.Duration
		gaveUp   bool
	}{
		{"exhausted", context.Background(), retrytest.Always(errUnavailable).Call, retry.Policy{MaxAttempts: 2}, retry.StopExhausted, 2, 0, true},
		{"deadline", context.Background(), retrytest.Always(errUnavailable).Call,
			retry.Policy{Jitter: retry.NoJitter, MaxElapsed: 500 * time.Millisecond}, retry.StopDeadline, 2, 400 * time.Millisecond, true},
		{"budget", context.Background(), retrytest.Always(errUnavailable).Call, retry.Policy{Budget: budget}, retry.StopBudget, 1, 0, true},
		{"ctx ended", canceled, retrytest.Always(errUnavailable).Call, retry.Policy{}, retry.StopContextDone, 0, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := retrytest.Do(c.ctx, c.op, c.p)
			var stop *retry.StopError
			require.ErrorAs(t, err, &stop)
			assert.Equal(t, c.stop, stop.Stop)
			assert.Equal(t, c.stop, tr.Stop())
			assert.Equal(t, c.attempts, stop.Attempts)
			assert.Equal(t, c.wait, stop.Wait)
			assert.Equal(t, c.gaveUp, errors.Is(err, retry.ErrGaveUp), "errors.Is(%v, ErrGaveUp)", err)
			if c.attempts > 0 {
				assert.ErrorIs(t, stop.Err, errUnavailable)
			}
		})
	}

	_, err = retrytest.Do(context.Background(), retrytest.Always(retry.Permanent(errBadRequest)).Call, retry.Policy{})
	var stop *retry.StopError
	assert.False(t, errors.As(err, &stop), "a refused error comes back as it is")
	assert.NotErrorIs(t, err, retry.ErrGaveUp)
}

// ErrDeadline matches context.DeadlineExceeded only when the ctx's deadline,
// not MaxElapsed, was in the way: code that maps DeadlineExceeded to a 504
// or to gRPC's DEADLINE_EXCEEDED keeps working, and MaxElapsed stays ours.
func TestDeadlineOfMaxElapsedIsNotTheCtxs(t *testing.T) {
	t.Parallel()
	_, err := retrytest.Do(context.Background(), retrytest.Always(errUnavailable).Call,
		retry.Policy{Jitter: retry.NoJitter, MaxElapsed: 300 * time.Millisecond})
	require.ErrorIs(t, err, retry.ErrDeadline)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
}

// The Classifier gets the failed Attempt, so "retry this error at most
// twice" is one comparison.
func TestClassifierSeesTheAttempt(t *testing.T) {
	t.Parallel()
	errConflict := errors.New("409 conflict")
	var seen []retry.Attempt
	p := retry.Policy{MaxAttempts: 10, Jitter: retry.NoJitter, Classifier: func(ctx context.Context, a retry.Attempt) retry.Decision {
		seen = append(seen, a)
		if errors.Is(a.Err, errConflict) {
			return retry.Decision{Retry: a.Number < 2, Reason: "409 conflict"} // once, then give up
		}
		return retry.DefaultClassifier(ctx, a)
	}}
	op := retrytest.Always(errConflict)
	tr, err := retrytest.Do(context.Background(), op.Call, p)
	require.Equal(t, errConflict, err)
	assert.Equal(t, 2, op.Calls())
	assert.Equal(t, "2 attempts, waits [200ms], 200ms, 409 conflict: not retried", tr.String())
	require.Len(t, seen, 2)
	assert.Equal(t, 2, seen[1].Number)
	assert.Equal(t, 200*time.Millisecond, seen[1].Wait)
	assert.False(t, seen[1].Start.IsZero(), "a retry's start is on the Attempt")
	assert.Empty(t, seen[1].Reason, "not decided yet")
}

// StopReason has a text for every value, and a fallback beyond them.
func TestStopReasonString(t *testing.T) {
	t.Parallel()
	for s := retry.StopNone; s <= retry.StopStale; s++ {
		assert.NotContains(t, s.String(), "StopReason(", "%d", s)
	}
	assert.Equal(t, "StopReason(200)", retry.StopReason(200).String())
}

// GaveUp holds for exactly the reasons ErrGaveUp matches: a StopError of
// each reason matches ErrGaveUp when, and only when, its reason gave up.
func TestStopReasonGaveUp(t *testing.T) {
	t.Parallel()
	want := map[retry.StopReason]bool{retry.StopExhausted: true, retry.StopDeadline: true, retry.StopBudget: true,
		retry.StopThrottled: true, retry.StopBreakerOpen: true}
	for s := retry.StopNone; s <= retry.StopStale; s++ {
		assert.Equal(t, want[s], s.GaveUp(), "%v.GaveUp()", s)
		err := &retry.StopError{Stop: s}
		assert.Equal(t, want[s], errors.Is(err, retry.ErrGaveUp), "StopError{%v} matches ErrGaveUp", s)
	}
	assert.Equal(t, "served stale", retry.StopStale.String())
}
