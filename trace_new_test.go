package retry_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrytest"
)

// A Trace rebuilt from its attempts reads as the one Do returned: the same
// count, attempts, waits, elapsed time and text.
func TestNewTraceMatchesDo(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 3, 64, 65, 100} {
		clk := retrytest.NewAutoClock()
		calls := 0
		tr, err := retry.Do(t.Context(), func(ctx context.Context) error {
			calls++
			if calls < n {
				return errors.New("boom")
			}
			return nil
		}, retry.Policy{MaxAttempts: -1, MaxElapsed: time.Hour, BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Clock: clk, OnDone: func(context.Context, retry.Trace, error) {}})
		require.NoError(t, err)
		got := retry.NewTrace(tr.Stop(), slices.Collect(tr.All()))
		assert.Equal(t, tr.Attempts(), got.Attempts(), "n=%d: Attempts", n)
		assert.Equal(t, slices.Collect(tr.All()), slices.Collect(got.All()), "n=%d: All", n)
		assert.Equal(t, tr.Waits(), got.Waits(), "n=%d: Waits", n)
		assert.Equal(t, tr.Elapsed(), got.Elapsed(), "n=%d: Elapsed", n)
		assert.Equal(t, tr.String(), got.String(), "n=%d: String", n)
		assert.Equal(t, tr.Last(), got.Last(), "n=%d: Last", n)
	}
}

// Numbers that do not rise are numbered in order; a gap in the head leaves
// empty attempts; a Trace keeps at most 64 however many it is given.
func TestNewTraceNumbers(t *testing.T) {
	t.Parallel()
	tr := retry.NewTrace(retry.StopExhausted, []retry.Attempt{{Reason: "a"}, {Reason: "b"}, {Number: 5, Reason: "e"}})
	assert.Equal(t, 5, tr.Attempts())
	var nums []int
	var reasons []string
	for a := range tr.All() {
		nums, reasons = append(nums, a.Number), append(reasons, a.Reason)
	}
	assert.Equal(t, []int{1, 2, 3, 4, 5}, nums)
	assert.Equal(t, []string{"a", "b", "", "", "e"}, reasons)
	assert.Equal(t, retry.StopExhausted, tr.Stop())

	many := make([]retry.Attempt, 1000)
	tr = retry.NewTrace(retry.StopSuccess, many)
	assert.Equal(t, 1000, tr.Attempts())
	kept := slices.Collect(tr.All())
	require.Len(t, kept, 64)
	assert.Equal(t, 32, kept[31].Number)
	assert.Equal(t, 969, kept[32].Number)
	assert.Equal(t, 1000, kept[63].Number)

	tr = retry.NewTrace(retry.StopExhausted, []retry.Attempt{{Number: 1}, {Number: 1 << 40, Reason: "last"}})
	assert.Equal(t, 1<<40, tr.Attempts(), "a huge gap costs no more than a Trace holds")
	assert.Equal(t, "last", tr.Last().Reason)
	assert.Len(t, slices.Collect(tr.All()), 64)

	assert.Equal(t, 0, retry.NewTrace(retry.StopNone, nil).Attempts())
}

// Add grows a Trace step by step as NewTrace builds one whole: the same
// attempts kept, a long call's middle left out; an attempt with the last
// one's Number replaces it; and a copy made before an Add is not changed
// by it.
func TestTraceAddIsNewTraceStepByStep(t *testing.T) {
	t.Parallel()
	var all []retry.Attempt
	var tr retry.Trace
	var copies []retry.Trace
	for n := 1; n <= 100; n++ {
		a := retry.Attempt{Number: n, Wait: time.Duration(n) * time.Millisecond}
		tr.Add(a)
		a.Reason = "503"
		tr.Add(a) // its outcome, once known
		all = append(all, a)
		copies = append(copies, tr)
	}
	tr.SetStop(retry.StopExhausted)
	want := retry.NewTrace(retry.StopExhausted, all)
	assert.Equal(t, want.Attempts(), tr.Attempts())
	assert.Equal(t, slices.Collect(want.All()), slices.Collect(tr.All()))
	assert.Equal(t, want.String(), tr.String())
	for i, c := range copies {
		assert.Equal(t, i+1, c.Attempts(), "copy %d", i)
		assert.Equal(t, i+1, c.Last().Number, "copy %d: its last attempt, untouched by later Adds", i)
		assert.Equal(t, "503", c.Last().Reason)
	}
}
