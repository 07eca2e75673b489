package retry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTraceString(t *testing.T) {
	t.Parallel()
	secret := errors.New("GET https://user:hunter2@api.example/?token=abc: 503")
	cases := []struct {
		name string
		errs []error
		p    retry.Policy
		want string
	}{
		{"at once", nil, retry.Policy{}, "1 attempt, ok"},
		{"two failures", []error{errUnavailable, errUnavailable}, retry.Policy{Jitter: retry.NoJitter}, "3 attempts, waits [200ms 400ms], 600ms, ok"},
		{"exhausted", []error{secret, secret}, retry.Policy{MaxAttempts: 2, Jitter: retry.NoJitter}, "2 attempts, waits [200ms], 200ms, attempts exhausted (error)"},
		{"permanent", []error{retry.Permanent(secret)}, retry.Policy{}, "1 attempt, permanent: not retried"},
		{"not retried by the classifier", []error{secret}, retry.Policy{Classifier: func(context.Context, retry.Attempt) retry.Decision {
			return retry.Decision{Reason: "404 Not Found"}
		}}, "1 attempt, 404 Not Found: not retried"},
		{"deadline", []error{errUnavailable, errUnavailable}, retry.Policy{Jitter: retry.NoJitter, MaxElapsed: 500 * time.Millisecond}, "2 attempts, waits [200ms], 200ms, deadline (error)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tr, _ := retrytest.Do(context.Background(), retrytest.Script(c.errs...).Call, c.p)
			assert.Equal(t, c.want, tr.String())
			assert.NotContains(t, tr.String(), "hunter2")
		})
	}
}

func TestTraceLogValueHoldsNoErrorText(t *testing.T) {
	t.Parallel()
	secret := errors.New("Authorization: Bearer s3cr3t")
	tr, err := retrytest.Do(context.Background(), retrytest.Always(secret).Call, retry.Policy{MaxAttempts: 3, Jitter: retry.NoJitter})
	require.ErrorIs(t, err, secret)

	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("gave up", "trace", tr)
	assert.NotContains(t, buf.String(), "s3cr3t")

	var line struct {
		Trace struct {
			Attempts int      `json:"attempts"`
			Waits    []string `json:"waits"`
			Elapsed  int64    `json:"elapsed"`
			Stop     string   `json:"stop"`
			Reasons  []string `json:"reasons"`
		} `json:"trace"`
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &line))
	assert.Equal(t, 3, line.Trace.Attempts)
	assert.Equal(t, []string{"200ms", "400ms"}, line.Trace.Waits, "waits read as in String")
	assert.Equal(t, int64(600*time.Millisecond), line.Trace.Elapsed)
	assert.Equal(t, "attempts exhausted", line.Trace.Stop)
	assert.Equal(t, []string{"error", "error", "error"}, line.Trace.Reasons)
}

func TestZeroTrace(t *testing.T) {
	t.Parallel()
	var tr retry.Trace
	assert.Equal(t, 0, tr.Attempts())
	assert.Nil(t, tr.Waits())
	assert.Equal(t, time.Duration(0), tr.Elapsed())
	assert.Equal(t, retry.Attempt{}, tr.Last())
	for range tr.All() {
		t.Fatal("a zero Trace has no attempts")
	}
}

func TestTraceAllStopsWhenAsked(t *testing.T) {
	t.Parallel()
	tr, _ := retrytest.Do(context.Background(), retrytest.Script(errUnavailable, errUnavailable).Call, retry.Policy{})
	var seen []int
	for a := range tr.All() {
		seen = append(seen, a.Number)
		if a.Number == 2 {
			break
		}
	}
	assert.Equal(t, []int{1, 2}, seen)
}

// A loop without a count limit keeps a bounded Trace: the first 32 attempts
// and the last 32, however long it runs, while Attempts counts them all.
func TestTraceIsBoundedUnderAnUnlimitedCount(t *testing.T) {
	t.Parallel()
	const calls = 10_000
	op := retrytest.Script(slices.Repeat([]error{errUnavailable}, calls-1)...)
	p := retry.Policy{MaxAttempts: -1, MaxElapsed: 24 * time.Hour, BaseBackoff: time.Millisecond, Factor: 1, Jitter: retry.NoJitter}
	tr, err := retrytest.Do(context.Background(), op.Call, p)
	require.NoError(t, err)
	assert.Equal(t, calls, tr.Attempts())

	var numbers []int
	for a := range tr.All() {
		numbers = append(numbers, a.Number)
	}
	want := append(seq(1, 32), seq(calls-31, calls)...)
	assert.Equal(t, want, numbers, "the head and the tail, in order")
	assert.Equal(t, calls, tr.Last().Number)
	assert.Len(t, tr.Waits(), 63)
	assert.Equal(t, time.Duration(calls-1)*time.Millisecond, tr.Elapsed(), "Elapsed still spans the whole call")
	assert.Contains(t, tr.String(), "1ms … 1ms")

	// Between the bounds the Trace is whole.
	for _, n := range []int{33, 64, 65, 100} {
		op := retrytest.Script(slices.Repeat([]error{errUnavailable}, n-1)...)
		tr, err := retrytest.Do(context.Background(), op.Call, p)
		require.NoError(t, err)
		var got []int
		for a := range tr.All() {
			got = append(got, a.Number)
		}
		if n <= 64 {
			assert.Equal(t, seq(1, n), got, "%d attempts", n)
		} else {
			assert.Equal(t, append(seq(1, 32), seq(n-31, n)...), got, "%d attempts", n)
		}
	}
}

func seq(from, to int) []int {
	var s []int
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// Elapsed spans the Classifier and OnRetry too, even when the first
// attempt's start was not read: it counts from the end of the first attempt.
func TestTraceElapsedCountsSlowHooks(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	op := retrytest.Script(errUnavailable)
	tr, err := retrytest.Do(context.Background(), op.Call, retry.Policy{
		Clock:   clk,
		Jitter:  retry.NoJitter,
		OnRetry: func(context.Context, retry.Attempt, time.Duration) { clk.Add(time.Second) },
	})
	require.NoError(t, err)
	assert.Equal(t, time.Second+200*time.Millisecond, tr.Elapsed(), "1s in OnRetry, then the 200ms wait")
}

// A call refused before its first attempt reads as such in logs.
func TestTraceOfARefusedCall(t *testing.T) {
	t.Parallel()
	b, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1})
	require.NoError(t, err)
	p := retry.Policy{MaxAttempts: 1, Breaker: b}
	_, _ = retry.Do(context.Background(), func(context.Context) error { return errUnavailable }, p)
	tr, _ := retry.Do(context.Background(), func(context.Context) error { return nil }, p)
	assert.Equal(t, "0 attempts, circuit breaker open", tr.String())
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("call", "trace", tr)
	assert.Contains(t, buf.String(), `trace.stop="circuit breaker open"`)
}
