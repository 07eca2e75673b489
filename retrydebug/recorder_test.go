package retrydebug_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrydebug"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// only returns the single operation of s.
func only(t *testing.T, s retrydebug.Snapshot) retrydebug.Operation {
	t.Helper()
	require.Len(t, s.Operations, 1)
	return s.Operations[0]
}

// The totals count calls, attempts, retries per call, stops and give-ups.
func TestRecorderTotals(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 0)
	for range 5 {
		rec.Record("inventory.get", succeeded(t))
	}
	for range 3 {
		rec.Record("inventory.get", retried(t, 2))
	}
	rec.Record("inventory.get", retried(t, 9)) // 9 retries: counted as "7+"
	rec.Record("inventory.get", exhausted(t, 4))
	rec.Record("inventory.get", notRetried(t))

	op := only(t, rec.Snapshot())
	assert.Equal(t, "inventory.get", op.Name)
	assert.False(t, op.Other)
	assert.EqualValues(t, 11, op.Calls)
	assert.EqualValues(t, 5+3*3+10+4+1, op.Attempts)
	assert.EqualValues(t, op.Attempts-op.Calls, op.Retries)
	assert.Equal(t, []int64{6, 0, 3, 1, 0, 0, 0, 1}, op.RetriesPerCall)
	assert.Equal(t, map[string]int64{"ok": 9, "attempts exhausted": 1, "not retried": 1}, op.Stops)
	assert.EqualValues(t, 1, op.GaveUp, "only exhaustion gave up: a permanent error is not retried, it does not give up")
}

// Every reason that matches retry.ErrGaveUp counts as a give-up, and no
// other does.
func TestRecorderGaveUpIsErrGaveUp(t *testing.T) {
	t.Parallel()
	budget, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 2, TokenRatio: 0.1})
	require.NoError(t, err)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	breaker, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1})
	require.NoError(t, err)
	_, _ = retry.Do(context.Background(), retrytest.Always(errUnavailable).Call, retry.Policy{MaxAttempts: 1, Breaker: breaker})
	throttle, err := guard.NewThrottle(guard.ThrottleOptions{MinRequests: 1, MaxReject: 1})
	require.NoError(t, err)
	cases := []struct {
		name string
		ctx  context.Context
		p    retry.Policy
	}{
		{"exhausted", context.Background(), retry.Policy{MaxAttempts: 2}},
		{"deadline", context.Background(), retry.Policy{MaxElapsed: 100 * time.Millisecond, BaseBackoff: time.Second}},
		{"budget", context.Background(), retry.Policy{Budget: budget}},
		{"context done", canceled, retry.Policy{}},
		{"breaker open", context.Background(), retry.Policy{Breaker: breaker}},
		{"throttled", context.Background(), retry.Policy{MaxAttempts: 1000, Throttle: throttle}},
		{"not retried", context.Background(), retry.Policy{Classifier: func(context.Context, retry.Attempt) retry.Decision { return retry.Decision{} }}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := retrydebug.NewRecorder(0, 0)
			tr, err := retrytest.Do(c.ctx, retrytest.Always(errUnavailable).Call, c.p)
			rec.Record("op", tr)
			op := only(t, rec.Snapshot())
			want := errorsIs(err, retry.ErrGaveUp)
			assert.Equal(t, want, op.GaveUp == 1, "GaveUp = %d for %v", op.GaveUp, tr.Stop())
			assert.Equal(t, want, op.Recent[0].GaveUp)
			assert.Equal(t, tr.Stop().String(), op.Recent[0].Stop)
		})
	}
}

// The ring keeps the last calls, newest first, and no more.
func TestRecorderRingIsBounded(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(3, 0)
	for n := 1; n <= 7; n++ {
		rec.Record("op", retried(t, n-1)) // call n makes n attempts
	}
	op := only(t, rec.Snapshot())
	assert.EqualValues(t, 7, op.Calls, "totals count every call")
	var attempts []int
	for _, c := range op.Recent {
		attempts = append(attempts, c.Attempts)
	}
	assert.Equal(t, []int{7, 6, 5}, attempts, "the last 3 calls, newest first")
	assert.False(t, op.Recent[0].Time.Before(op.Recent[1].Time))
}

// A call keeps its waits in order, and says when it waited more often
// than it keeps.
func TestRecorderKeepsWaits(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 0)
	rec.Record("short", retried(t, 3))
	rec.Record("long", trace(t, retrytest.Always(errUnavailable).Call,
		retry.Policy{MaxAttempts: 30, BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond}))
	s := rec.Snapshot()
	long, short := s.Operations[0].Recent[0], s.Operations[1].Recent[0]

	assert.Equal(t, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}, short.Waits)
	assert.False(t, short.WaitsTruncated)
	assert.Equal(t, 1400*time.Millisecond, short.Elapsed)
	assert.Equal(t, "ok", short.Stop)

	assert.Equal(t, 30, long.Attempts)
	assert.Len(t, long.Waits, 16)
	assert.True(t, long.WaitsTruncated, "29 waits, 16 kept")
	assert.Equal(t, "attempts exhausted", long.Stop)
}

// Past the cap, calls of new names share one overflow bucket, whose recent
// calls keep their own names; names already known keep their operations.
func TestRecorderOperationsAreBounded(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(4, 2)
	hook := rec.OnDone("a")
	rec.Record("b", succeeded(t))
	for i := range 1000 {
		rec.Record(fmt.Sprintf("user/%d", i), succeeded(t))
	}
	hook(context.Background(), retried(t, 1), nil)
	rec.Record("b", succeeded(t))

	s := rec.Snapshot()
	require.Len(t, s.Operations, 3, "2 named, 1 overflow, whatever the number of names")
	a, b, other := s.Operations[0], s.Operations[1], s.Operations[2]
	assert.Equal(t, "a", a.Name)
	assert.EqualValues(t, 1, a.Calls)
	assert.Equal(t, "b", b.Name)
	assert.EqualValues(t, 2, b.Calls)
	assert.True(t, other.Other)
	assert.Equal(t, "(other operations)", other.Name)
	assert.EqualValues(t, 1000, other.Calls)
	require.Len(t, other.Recent, 4)
	assert.Equal(t, "user/999", other.Recent[0].Name)
	assert.Equal(t, "user/996", other.Recent[3].Name)
}

// The zero Recorder works, with its documented defaults: 50 calls per
// operation, 100 operations.
func TestZeroRecorder(t *testing.T) {
	t.Parallel()
	var rec retrydebug.Recorder
	tr := succeeded(t)
	for i := range 101 {
		rec.Record(fmt.Sprint(i), tr)
	}
	for range 60 {
		rec.Record("0", tr)
	}
	s := rec.Snapshot()
	require.Len(t, s.Operations, 101)
	assert.Len(t, s.Operations[0].Recent, 50)
	assert.True(t, s.Operations[100].Other)

	// NewRecorder takes values below 1 as the defaults.
	neg := retrydebug.NewRecorder(-1, -5)
	for range 60 {
		neg.Record("op", tr)
	}
	assert.Len(t, only(t, neg.Snapshot()).Recent, 50)
}

// Percentiles of elapsed time are within the histogram's 6.25%, and never
// above the largest call.
func TestRecorderElapsedPercentiles(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 0)
	for i := 1; i <= 100; i++ {
		rec.Record("op", took(t, time.Duration(i)*time.Millisecond))
	}
	e := only(t, rec.Snapshot()).Elapsed
	for _, c := range []struct {
		name      string
		got, want time.Duration
	}{{"p50", e.P50, 50 * time.Millisecond}, {"p95", e.P95, 95 * time.Millisecond}, {"p99", e.P99, 99 * time.Millisecond}} {
		assert.InEpsilon(t, float64(c.want), float64(c.got), 0.0625, "%s = %v, want about %v", c.name, c.got, c.want)
		assert.LessOrEqual(t, c.got, 100*time.Millisecond, c.name)
	}
	assert.Equal(t, 100*time.Millisecond, e.Max)

	// Calls whose Trace measured no time read as 0, and a lone outlier
	// moves p99 only once it is more than 1% of the calls.
	rec = retrydebug.NewRecorder(0, 0)
	for range 99 {
		rec.Record("op", succeeded(t))
	}
	rec.Record("op", took(t, time.Hour))
	e = only(t, rec.Snapshot()).Elapsed
	assert.Zero(t, e.P50)
	assert.Zero(t, e.P99)
	assert.Equal(t, time.Hour, e.Max)
	rec.Record("op", took(t, time.Hour))
	assert.InEpsilon(t, float64(time.Hour), float64(only(t, rec.Snapshot()).Elapsed.P99), 0.0625)

	// Past the histogram's range, calls read as the longest one.
	rec = retrydebug.NewRecorder(0, 0)
	rec.Record("op", took(t, 3*time.Hour))
	rec.Record("op", took(t, 5*time.Hour))
	e = only(t, rec.Snapshot()).Elapsed
	assert.Equal(t, 5*time.Hour, e.P50)
	assert.Equal(t, 5*time.Hour, e.P99)
}

// Registered Budgets show their tokens; a name registered again is
// replaced, nil removes it, and the list is capped.
func TestRecorderBudgets(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 2)
	b1, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1})
	require.NoError(t, err)
	b2, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 4, TokenRatio: 0.1})
	require.NoError(t, err)
	rec.Budget("payments", b1)
	rec.Budget("search", b1)
	rec.Budget("payments", b2)
	rec.Budget("third", b2) // past the cap of 2
	_, _ = retrytest.Do(context.Background(), retrytest.Always(errUnavailable).Call, retry.Policy{Budget: b2})
	assert.Equal(t, []retrydebug.BudgetTokens{{Name: "payments", Tokens: b2.Tokens()}, {Name: "search", Tokens: 10}}, rec.Snapshot().Budgets)
	assert.Less(t, b2.Tokens(), 4.0)

	rec.Budget("payments", nil)
	rec.Budget("third", b2)
	assert.Equal(t, []retrydebug.BudgetTokens{{Name: "search", Tokens: 10}, {Name: "third", Tokens: b2.Tokens()}}, rec.Snapshot().Budgets)
}

// Calls that made no attempt, on a ctx that had ended before Do began, add
// no retries: they do not cancel the real retries of other calls.
func TestRecorderRetriesNeverNegative(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 0)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	rec.Record("op", retried(t, 2))
	for range 3 {
		tr, err := retrytest.Do(canceled, retrytest.Always(errUnavailable).Call, retry.Policy{})
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, tr.Attempts())
		rec.Record("op", tr)
	}

	op := only(t, rec.Snapshot())
	assert.EqualValues(t, 4, op.Calls)
	assert.EqualValues(t, 3, op.Attempts)
	assert.EqualValues(t, 2, op.Retries, "Retries = %d, want the 2 real retries", op.Retries)
	_, body := get(t, rec, "/")
	assert.Contains(t, body, ">0.50<", "retries/call is 2 retries over 4 calls")
}
