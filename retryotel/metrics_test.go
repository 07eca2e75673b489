package retryotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryotel"
	"github.com/stormguard/retry/retrytest"
)

// 1,000 calls that fail twice then succeed are 1,000 calls, 3,000 attempts
// and 2,000 retries: counted per call, not per attempt.
func TestMetricsCountPerCall(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	p := retry.Policy{Jitter: retry.NoJitter, OnDone: s.obs.OnDone("inventory.get")}
	for range 1000 {
		_, err := retrytest.Do(context.Background(), retrytest.Script(errUnavailable, errUnavailable).Call, p)
		require.NoError(t, err)
	}
	m := s.metrics(t)
	require.Len(t, m, 5)
	ok := map[string]string{"retry.operation": "inventory.get", "retry.outcome": "ok"}
	for _, c := range []struct {
		name       string
		count, sum float64
	}{
		{retryotel.CallsName, 1, 1000},
		{retryotel.AttemptsName, 1000, 3000},
		{retryotel.RetriesName, 1000, 2000},
		{retryotel.RetryDelayName, 1000, 1000 * 0.6}, // waits of 200ms and 400ms
		{retryotel.DurationName, 1000, 1000 * 0.6},
	} {
		ps := points(t, m[c.name])
		require.Len(t, ps, 1, c.name)
		assert.Equal(t, ok, ps[0].attrs, c.name)
		assert.Equal(t, c.count, ps[0].count, "%s count", c.name)
		assert.InDelta(t, c.sum, ps[0].sum, 1e-6, "%s sum", c.name)
	}
	assert.Len(t, s.spans.Ended(), 1000, "one span per call")
}

// A call without retries records no retries and no retry delay, as in
// gRFC A96: their counts are the calls that retried.
func TestFirstSuccessRecordsNoRetries(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	hook := s.obs.OnDone("cache.get")
	for range 3 {
		tr, _ := retrytest.Do(context.Background(), retrytest.Script().Call, retry.Policy{})
		hook(context.Background(), tr, nil)
	}
	tr, _ := retrytest.Do(context.Background(), retrytest.Script(errUnavailable).Call, retry.Policy{})
	hook(context.Background(), tr, nil)
	m := s.metrics(t)
	assert.Equal(t, map[string][2]float64{"ok": {1, 4}}, byOutcome(t, m[retryotel.CallsName]))
	assert.Equal(t, map[string][2]float64{"ok": {4, 5}}, byOutcome(t, m[retryotel.AttemptsName]))
	assert.Equal(t, map[string][2]float64{"ok": {1, 1}}, byOutcome(t, m[retryotel.RetriesName]))
	assert.Equal(t, 1.0, byOutcome(t, m[retryotel.RetryDelayName])["ok"][0])
	assert.Equal(t, 4.0, byOutcome(t, m[retryotel.DurationName])["ok"][0], "every call has a duration")
}

// Each stop reason is counted under an outcome of its own.
func TestEachStopReasonHasItsOwnOutcome(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	hook := s.obs.OnDone("op")
	budget, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 2, TokenRatio: 0.1})
	require.NoError(t, err)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	fail := retrytest.Always(errUnavailable).Call
	calls := []struct {
		ctx  context.Context
		op   func(context.Context) error
		p    retry.Policy
		want string
	}{
		{context.Background(), retrytest.Script().Call, retry.Policy{}, "ok"},
		{context.Background(), retrytest.Always(retry.Permanent(errUnavailable)).Call, retry.Policy{}, "not_retried"},
		{context.Background(), fail, retry.Policy{MaxAttempts: 2}, "attempts_exhausted"},
		{context.Background(), fail, retry.Policy{MaxElapsed: 100 * time.Millisecond, BaseBackoff: time.Second}, "deadline"},
		{context.Background(), fail, retry.Policy{Budget: budget}, "budget_exhausted"},
		{canceled, fail, retry.Policy{}, "context_done"},
		{context.Background(), func(ctx context.Context) error {
			_, err := retry.Do(ctx, fail, retry.Policy{OnDone: hook}) // nested: defers to this loop
			return err
		}, retry.Policy{MaxAttempts: 2}, "deferred"},
		{context.Background(), func(context.Context) error { panic("boom") }, retry.Policy{}, "panicked"},
	}
	want := map[string][2]float64{}
	for _, c := range calls {
		c.p.OnDone = hook
		func() {
			defer func() { _ = recover() }()
			_, _ = retrytest.Do(c.ctx, c.op, c.p)
		}()
		want[c.want] = [2]float64{1, 1}
	}
	want["attempts_exhausted"] = [2]float64{1, 2} // and the outer loop of the deferred calls
	want["deferred"] = [2]float64{1, 2}           // one per attempt of the outer loop
	got := byOutcome(t, s.metrics(t)[retryotel.CallsName])
	assert.Equal(t, want, got)
}

// The metrics carry the operation and the outcome, and nothing else.
func TestMetricAttributesAreBounded(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	p := retry.Policy{MaxAttempts: 3, OnDone: s.obs.OnDone("payments.charge")}
	_, _ = retrytest.Do(context.Background(), retrytest.Always(errors.New(secret)).Call, p)
	_, _ = retrytest.Do(context.Background(), retrytest.Script(errors.New(secret)).Call, p)
	for name, data := range s.metrics(t) {
		for _, p := range points(t, data) {
			assert.Len(t, p.attrs, 2, name)
			assert.Equal(t, "payments.charge", p.attrs["retry.operation"], name)
			assert.Contains(t, []string{"ok", "attempts_exhausted"}, p.attrs["retry.outcome"], name)
		}
	}
}

// Past the cap, names are counted as "_OTHER", so that the series are
// bounded, and their spans are named "_OTHER" too, so that span names obey
// the same bound; names already known keep theirs.
func TestOperationsAreBounded(t *testing.T) {
	t.Parallel()
	s := newSink(t, retryotel.WithMaxOperations(2))
	tr, _ := retrytest.Do(context.Background(), retrytest.Script().Call, retry.Policy{})
	for _, name := range []string{"a", "b", "c", "d", "a", "e"} {
		s.obs.OnDone(name)(context.Background(), tr, nil)
	}
	got := map[string]float64{}
	for _, p := range points(t, s.metrics(t)[retryotel.CallsName]) {
		got[p.attrs["retry.operation"]] += p.sum
	}
	assert.Equal(t, map[string]float64{"a": 2, "b": 1, "_OTHER": 3}, got)
	var spanNames []string
	for _, sp := range s.spans.Ended() {
		spanNames = append(spanNames, sp.Name())
	}
	assert.Equal(t, []string{"a", "b", "_OTHER", "_OTHER", "a", "_OTHER"}, spanNames, "span names obey the cap")
}

// WithMaxOperations ignores a value that is not positive.
func TestWithMaxOperationsDefault(t *testing.T) {
	t.Parallel()
	s := newSink(t, retryotel.WithMaxOperations(0))
	tr, _ := retrytest.Do(context.Background(), retrytest.Script().Call, retry.Policy{})
	for i := range 101 {
		s.obs.OnDone(string(rune('A'+i)))(context.Background(), tr, nil)
	}
	ops := map[string]bool{}
	for _, p := range points(t, s.metrics(t)[retryotel.CallsName]) {
		ops[p.attrs["retry.operation"]] = true
	}
	assert.Len(t, ops, 101, "100 names and _OTHER")
	assert.True(t, ops["_OTHER"])
}
