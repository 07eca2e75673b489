package retry_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// latencies returns an op whose i-th call (from 1) takes took[i-1] (the
// last one for later calls) and then returns errs[i-1] (nil past its end),
// or ends early with its ctx's error. It counts the calls that ended early.
type scripted struct {
	took     []time.Duration
	errs     []error
	calls    atomic.Int32
	canceled atomic.Int32
}

func (s *scripted) op(ctx context.Context) (int, error) {
	n := int(s.calls.Add(1))
	d := s.took[min(n, len(s.took))-1]
	select {
	case <-time.After(d):
	case <-ctx.Done():
		s.canceled.Add(1)
		return 0, ctx.Err()
	}
	if n <= len(s.errs) && s.errs[n-1] != nil {
		return 0, s.errs[n-1]
	}
	return n, nil
}

// A slow first attempt gets a copy after the hedge delay; the copy wins,
// and the first is canceled.
func TestHedgeRacesASlowAttempt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{took: []time.Duration{300 * time.Millisecond, 2 * time.Millisecond}}
		h := &retry.Hedger{Delay: 10 * time.Millisecond}
		start := time.Now()
		v, tr, err := retry.HedgeValue(context.Background(), h, s.op, nil, retry.Policy{})
		require.NoError(t, err)
		assert.Equal(t, 2, v, "the copy's value")
		assert.Equal(t, 12*time.Millisecond, time.Since(start))
		synctest.Wait()
		assert.Equal(t, int32(1), s.canceled.Load(), "the loser's ctx was canceled")

		require.Equal(t, 2, tr.Attempts())
		assert.Equal(t, retry.StopSuccess, tr.Stop())
		first, second := tr.Last(), tr.Last()
		for a := range tr.All() {
			if a.Number == 1 {
				first = a
			}
		}
		assert.False(t, first.Hedged)
		assert.ErrorIs(t, first.Err, context.Canceled)
		assert.Equal(t, "lost the race", first.Reason)
		assert.True(t, second.Hedged)
		assert.NoError(t, second.Err, "the winner")
		assert.Equal(t, 10*time.Millisecond, second.Start.Sub(first.Start), "they ran at once")
	})
}

// A call that answers before the hedge delay sends no copy.
func TestHedgeSendsNoCopyForAFastCall(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{took: []time.Duration{time.Millisecond}}
		_, tr, err := retry.HedgeValue(context.Background(), &retry.Hedger{Delay: 10 * time.Millisecond}, s.op, nil, retry.Policy{})
		require.NoError(t, err)
		assert.Equal(t, 1, tr.Attempts())
		assert.Equal(t, int32(1), s.calls.Load())
	})
}

// An error the Classifier will not retry ends the call at once, with the
// others canceled; one it would retry lets the others run.
func TestHedgeErrors(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := &retry.Hedger{Delay: 10 * time.Millisecond}
		permanent := retry.Permanent(errBadRequest)
		s := &scripted{took: []time.Duration{20 * time.Millisecond, 300 * time.Millisecond}, errs: []error{permanent}}
		start := time.Now()
		_, tr, err := retry.HedgeValue(context.Background(), h, s.op, nil, retry.Policy{})
		require.ErrorIs(t, err, errBadRequest)
		assert.Equal(t, retry.StopNotRetryable, tr.Stop())
		assert.Equal(t, 20*time.Millisecond, time.Since(start), "at once, not after the copy")
		synctest.Wait()
		assert.Equal(t, int32(1), s.canceled.Load())

		s = &scripted{took: []time.Duration{20 * time.Millisecond, 30 * time.Millisecond}, errs: []error{errUnavailable}}
		start = time.Now()
		v, tr, err := retry.HedgeValue(context.Background(), h, s.op, nil, retry.Policy{})
		require.NoError(t, err)
		assert.Equal(t, 2, v)
		assert.Equal(t, 40*time.Millisecond, time.Since(start), "the copy, started at 10ms, answered at 40ms")
		assert.Equal(t, 3, tr.Attempts(), "and a replacement for the failed first, started at 30ms, lost")
	})
}

// When every attempt fails and none is left running, Do's rules take
// over: a wait, a retry, until attempts run out.
func TestHedgeRetriesWhenAllFail(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{took: []time.Duration{time.Millisecond}, errs: []error{errUnavailable, errUnavailable, errUnavailable}}
		h := &retry.Hedger{Delay: 10 * time.Millisecond}
		_, tr, err := retry.HedgeValue(context.Background(), h, s.op, nil, retry.Policy{MaxAttempts: 3, Jitter: retry.NoJitter})
		require.ErrorIs(t, err, retry.ErrExhausted)
		assert.Equal(t, 3, tr.Attempts())
		assert.Equal(t, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}, tr.Waits())
	})
}

// Each copy costs the Budget a token; an exhausted Budget stops new copies
// and never cancels the attempts that run.
func TestHedgeBudget(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 4, TokenRatio: 0.1}) // a copy needs more than 2 tokens
		require.NoError(t, err)
		h := &retry.Hedger{Delay: time.Millisecond, MaxInFlight: 10}
		s := &scripted{took: []time.Duration{100 * time.Millisecond}}
		v, tr, err := retry.HedgeValue(context.Background(), h, s.op, nil, retry.Policy{MaxAttempts: 10, Budget: b})
		require.NoError(t, err)
		assert.Equal(t, 1, v, "the first attempt ran to its end")
		assert.Equal(t, 3, tr.Attempts(), "two copies, then the budget refused")
		assert.InDelta(t, 2.1, b.Tokens(), 1e-9, "4 − 2 copies + a success")
	})
}

// A loser that succeeds after the winner hands its value to release.
func TestHedgeReleasesALateLoser(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var released []int
		var mu sync.Mutex
		release := func(v int) { mu.Lock(); released = append(released, v); mu.Unlock() }
		h := &retry.Hedger{Delay: 10 * time.Millisecond}
		var calls atomic.Int32
		ignoresCancel := func(ctx context.Context) (int, error) {
			n := int(calls.Add(1))
			if n == 1 {
				time.Sleep(50 * time.Millisecond) // ignores its ctx, and succeeds late
				return 1, nil
			}
			time.Sleep(5 * time.Millisecond)
			return 2, nil
		}
		v, _, err := retry.HedgeValue(context.Background(), h, ignoresCancel, release, retry.Policy{})
		require.NoError(t, err)
		assert.Equal(t, 2, v)
		time.Sleep(time.Second)
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []int{1}, released, "the late loser's value was released")
	})
}

// The adaptive delay is the Quantile of the latencies the Hedger has seen,
// within its bounds; before it has seen enough, MaxDelay.
func TestHedgerAdaptsToTheObservedLatency(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := &retry.Hedger{MinDelay: time.Millisecond, MaxDelay: 500 * time.Millisecond}
		assert.Equal(t, 500*time.Millisecond, h.HedgeDelay(), "nothing seen yet")
		for i := range 100 {
			d := 10 * time.Millisecond
			if i%20 == 0 {
				d = 40 * time.Millisecond // 5% are slow
			}
			_, _, err := retry.HedgeValue(context.Background(), h, func(ctx context.Context) (int, error) {
				time.Sleep(d)
				return 0, nil
			}, nil, retry.Policy{})
			require.NoError(t, err)
		}
		assert.Equal(t, 40*time.Millisecond, h.HedgeDelay(), "p95 of 95×10ms and 5×40ms")

		fast := &retry.Hedger{MinDelay: 20 * time.Millisecond}
		for range 20 {
			_, _, _ = retry.HedgeValue(context.Background(), fast, func(context.Context) (int, error) { return 0, nil }, nil, retry.Policy{})
		}
		assert.Equal(t, 20*time.Millisecond, fast.HedgeDelay(), "never below MinDelay")
	})
}

// OnDone fires once; a panic in op reaches the caller after it.
func TestHedgeOnDoneAndPanics(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls int
		var last retry.Trace
		p := retry.Policy{OnDone: func(_ context.Context, tr retry.Trace, _ error) { calls++; last = tr }}
		h := &retry.Hedger{Delay: 10 * time.Millisecond}
		s := &scripted{took: []time.Duration{300 * time.Millisecond, time.Millisecond}}
		_, _, err := retry.HedgeValue(context.Background(), h, s.op, nil, p)
		require.NoError(t, err)
		assert.Equal(t, 1, calls)
		assert.Equal(t, 2, last.Attempts())

		assert.PanicsWithValue(t, "boom", func() {
			_, _ = retry.Hedge(context.Background(), h, func(context.Context) error { panic("boom") }, p)
		})
		assert.Equal(t, 2, calls)
		assert.Equal(t, retry.StopPanicked, last.Stop())
	})
}

// The caller's cancel ends every attempt at once.
func TestHedgeCancelEndsEveryAttempt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		s := &scripted{took: []time.Duration{time.Hour}}
		go func() {
			time.Sleep(50 * time.Millisecond)
			cancel()
		}()
		_, tr, err := retry.HedgeValue(ctx, &retry.Hedger{Delay: 10 * time.Millisecond}, s.op, nil, retry.Policy{})
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, retry.StopContextDone, tr.Stop())
		synctest.Wait()
		assert.Equal(t, int32(2), s.canceled.Load())
	})
}

func TestHedgeRejectsNil(t *testing.T) {
	t.Parallel()
	_, err := retry.Hedge(context.Background(), nil, func(context.Context) error { return nil }, retry.Policy{})
	assert.Error(t, err)
	_, err = retry.Hedge(context.Background(), &retry.Hedger{}, nil, retry.Policy{})
	assert.Error(t, err)
	_, err = retry.Hedge(context.Background(), &retry.Hedger{}, func(context.Context) error { return nil }, retry.Policy{Factor: 0.1})
	assert.ErrorIs(t, err, retry.ErrInvalidPolicy)
}

// Every value that Hedge does not return is released, exactly once: the
// values of failed attempts made moot by a later one, and of losers; the
// value of the attempt that ended the call is returned, even on failure.
func TestHedgeReleasesEveryValueItDoesNotReturn(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			name     string
			errs     []error
			want     int
			released []int
		}{
			{"success after failures", []error{errUnavailable, errUnavailable}, 3, []int{1, 2}},
			{"all fail", []error{errUnavailable, errUnavailable, errUnavailable}, 3, []int{1, 2}},
		} {
			var mu sync.Mutex
			var released []int
			var calls atomic.Int32
			op := func(context.Context) (int, error) {
				n := int(calls.Add(1))
				if n <= len(c.errs) {
					return n, c.errs[n-1] // a value that comes with its error, as a 503 response does
				}
				return n, nil
			}
			v, _, _ := retry.HedgeValue(context.Background(), &retry.Hedger{Delay: time.Hour}, op,
				func(v int) { mu.Lock(); released = append(released, v); mu.Unlock() },
				retry.Policy{MaxAttempts: 3, BaseBackoff: time.Millisecond})
			assert.Equal(t, c.want, v, c.name)
			mu.Lock()
			assert.Equal(t, c.released, released, c.name)
			mu.Unlock()
		}
	})
}

// Nested in another loop's op, Hedge still races copies but leaves
// retrying after failures to the outer loop: one retry owner.
func TestHedgeNestedDefersRetries(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{took: []time.Duration{time.Millisecond}, errs: []error{errUnavailable, errUnavailable, errUnavailable, errUnavailable}}
		var inner retry.Trace
		_, err := retry.Do(context.Background(), func(ctx context.Context) error {
			_, tr, err := retry.HedgeValue(ctx, &retry.Hedger{Delay: time.Hour}, s.op, nil, retry.Policy{})
			inner = tr
			return err
		}, retry.Policy{MaxAttempts: 2, BaseBackoff: time.Millisecond})
		require.ErrorIs(t, err, retry.ErrExhausted)
		assert.Equal(t, int32(2), s.calls.Load(), "2 outer attempts, 1 each inside")
		assert.Equal(t, retry.StopDeferred, inner.Stop())
	})
}

// hedgedShare runs calls calls through h, each attempt taking an
// exponentially distributed time (mean 10ms, from a seeded source), and
// returns the share of calls that started a hedge.
func hedgedShare(t *testing.T, h *retry.Hedger, calls int) float64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var mu sync.Mutex
	op := func(ctx context.Context) (int, error) {
		mu.Lock()
		d := time.Duration(rng.ExpFloat64() * float64(10*time.Millisecond))
		mu.Unlock()
		select {
		case <-time.After(d):
			return 0, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	hedged := 0
	for range calls {
		_, tr, err := retry.HedgeValue(context.Background(), h, op, nil, retry.Policy{})
		require.NoError(t, err)
		if tr.Attempts() > 1 {
			hedged++
		}
	}
	synctest.Wait() // the losers have seen their cancel
	return float64(hedged) / float64(calls)
}

// The adaptive delay estimates the latency of calls, the slow ones that a
// hedge cut short included, so that a Hedger at the 95th percentile hedges
// about 5% of calls on exponential latencies (timing the winning copy
// alone biases the delay low: about 10%).
func TestHedgerAtP95HedgesAboutFivePercent(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		share := hedgedShare(t, &retry.Hedger{MaxFraction: 1}, 4000)
		t.Logf("unbounded p95 Hedger: %.2f%% of calls hedged", 100*share)
		assert.InDelta(t, 0.05, share, 0.015)
		share = hedgedShare(t, &retry.Hedger{}, 4000)
		t.Logf("zero Hedger: %.2f%% of calls hedged", 100*share)
		assert.InDelta(t, 0.05, share, 0.015)
	})
}

// Once every call is slower than MaxDelay (an overloaded service), the
// zero Hedger still hedges at most 5% of calls, with a burst of 10, rather
// than doubling the load.
func TestZeroHedgerBoundsTheShareOfCallsHedged(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := &retry.Hedger{}
		op := func(ctx context.Context) (int, error) {
			select {
			case <-time.After(2 * time.Second): // past MaxDelay, 1s
				return 0, nil
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		attempts := 0
		for range 1000 {
			_, tr, err := retry.HedgeValue(context.Background(), h, op, nil, retry.Policy{})
			require.NoError(t, err)
			attempts += tr.Attempts()
		}
		synctest.Wait()
		hedges := attempts - 1000
		assert.LessOrEqual(t, hedges, 10+50, "a burst of 10, then 5% of 1,000 calls")
		assert.GreaterOrEqual(t, hedges, 50, "hedges still go, at the bound")

		unbounded := &retry.Hedger{MaxFraction: 1}
		_, tr, err := retry.HedgeValue(context.Background(), unbounded, op, nil, retry.Policy{})
		require.NoError(t, err)
		assert.Equal(t, 2, tr.Attempts(), "MaxFraction 1: no bound")
	})
}

// OnDone gets the attempts made before a panic, as Do's does.
func TestHedgeOnDoneKeepsTheAttemptsAfterAPanic(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var last retry.Trace
		p := retry.Policy{OnDone: func(_ context.Context, tr retry.Trace, _ error) { last = tr }}
		var calls atomic.Int32
		op := func(ctx context.Context) error {
			if calls.Add(1) == 1 {
				<-ctx.Done() // slow: the copy panics first
				return ctx.Err()
			}
			panic("boom")
		}
		assert.PanicsWithValue(t, "boom", func() {
			_, _ = retry.Hedge(context.Background(), &retry.Hedger{Delay: 10 * time.Millisecond}, op, p)
		})
		assert.Equal(t, retry.StopPanicked, last.Stop())
		require.Equal(t, 2, last.Attempts(), "the slow first attempt and the copy that panicked")
		assert.True(t, last.Last().Hedged)
		synctest.Wait()
	})
}

// A retry loop inside a hedged op defers to Hedge, as one inside Do's op
// defers to Do: 3 attempts in all, not 3 × 3.
func TestRetryLoopInsideAHedgedOpDefers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		op := func(ctx context.Context) error {
			_, err := retry.Do(ctx, func(context.Context) error {
				calls.Add(1)
				return errUnavailable
			}, retry.Policy{MaxAttempts: 3, BaseBackoff: time.Millisecond})
			return err
		}
		_, err := retry.Hedge(context.Background(), &retry.Hedger{Delay: time.Hour}, op, retry.Policy{MaxAttempts: 3, BaseBackoff: time.Millisecond})
		require.ErrorIs(t, err, retry.ErrExhausted)
		assert.Equal(t, int32(3), calls.Load(), "one retry owner")
	})
}
