package guard_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRatioBudgetRejectsBadOptions(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		o    guard.BudgetOptions
		want string
	}{
		{"mixed with MaxTokens", guard.BudgetOptions{Ratio: 0.2, MaxTokens: 10}, "BudgetOptions.MaxTokens 10 and TokenRatio 0 are a token bucket's"},
		{"mixed with TokenRatio", guard.BudgetOptions{TTL: time.Second, TokenRatio: 0.1}, "BudgetOptions.MaxTokens 0 and TokenRatio 0.1 are a token bucket's"},
		{"negative ratio", guard.BudgetOptions{Ratio: -0.2}, "BudgetOptions.Ratio -0.2 is not in (0, 1000]"},
		{"NaN ratio", guard.BudgetOptions{Ratio: math.NaN()}, "BudgetOptions.Ratio NaN is not in (0, 1000]"},
		{"huge ratio", guard.BudgetOptions{Ratio: 1001}, "BudgetOptions.Ratio 1001 is not in (0, 1000]"},
		{"negative floor", guard.BudgetOptions{MinPerSecond: -1}, "BudgetOptions.MinPerSecond -1 is not in (0, 1e+06]"},
		{"infinite floor", guard.BudgetOptions{MinPerSecond: math.Inf(1)}, "BudgetOptions.MinPerSecond +Inf is not in (0, 1e+06]"},
		{"negative TTL", guard.BudgetOptions{TTL: -time.Second}, "BudgetOptions.TTL -1s is not in [1ms, 24h0m0s]"},
		{"tiny TTL", guard.BudgetOptions{TTL: time.Microsecond}, "BudgetOptions.TTL 1µs is not in [1ms, 24h0m0s]"},
		{"huge TTL", guard.BudgetOptions{TTL: 25 * time.Hour}, "BudgetOptions.TTL 25h0m0s is not in [1ms, 24h0m0s]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := guard.NewBudget(c.o)
			require.ErrorIs(t, err, guard.ErrInvalidOptions)
			assert.ErrorContains(t, err, c.want)
			assert.Nil(t, b)
			bs, err := guard.NewBudgets(c.o, 10)
			require.ErrorIs(t, err, guard.ErrInvalidOptions, "NewBudgets checks as NewBudget does")
			assert.Nil(t, bs)
		})
	}
}

// ratioBudget is a ratio budget on a fake clock.
func ratioBudget(t *testing.T, o guard.BudgetOptions) (*guard.Budget, *retrytest.Clock) {
	t.Helper()
	clk := retrytest.NewClock()
	o.Clock = clk
	b, err := guard.NewBudget(o)
	require.NoError(t, err)
	return b, clk
}

// takeRetries takes retries from b while it allows them, up to limit, and
// returns how many it took.
func takeRetries(b *guard.Budget, limit int) int {
	n := 0
	for ; n < limit && b.AllowRetry(); n++ {
		b.Retrying()
	}
	return n
}

func TestRatioBudgetAllowsRatioOfFirstAttemptsPlusFloor(t *testing.T) {
	t.Parallel()
	// A floor of 1 a second over 10 s: 10 retries with no traffic at all.
	b, _ := ratioBudget(t, guard.BudgetOptions{Ratio: 0.5, MinPerSecond: 1, TTL: 10 * time.Second})
	assert.Equal(t, 10.0, b.Tokens(), "an empty window: the floor")
	assert.Equal(t, 10, takeRetries(b, 100), "the floor alone")
	assert.False(t, b.AllowRetry())
	// 20 first attempts allow 10 more retries.
	for range 20 {
		b.Started()
	}
	assert.Equal(t, 10.0, b.Tokens())
	assert.Equal(t, 10, takeRetries(b, 100), "ratio 0.5 of 20 first attempts")
	assert.Equal(t, 0.0, b.Tokens())
}

func TestRatioBudgetIgnoresOutcomes(t *testing.T) {
	t.Parallel()
	b, _ := ratioBudget(t, guard.BudgetOptions{MinPerSecond: 0.1, TTL: 10 * time.Second}) // a floor of one retry
	for range 100 {
		b.Failed()
	}
	assert.True(t, b.AllowRetry(), "failures take nothing from a ratio budget")
	b.Retrying()
	for range 100 {
		b.Succeeded()
	}
	assert.False(t, b.AllowRetry(), "successes give nothing back")
}

func TestRatioBudgetForgetsAfterTTL(t *testing.T) {
	t.Parallel()
	b, clk := ratioBudget(t, guard.BudgetOptions{Ratio: 0.2, MinPerSecond: 1, TTL: 16 * time.Second})
	for range 100 {
		b.Started()
	}
	assert.Equal(t, 16+20, takeRetries(b, 1000), "floor 16, plus 20% of 100")
	// Within the TTL the retries still count.
	clk.Add(8 * time.Second)
	assert.False(t, b.AllowRetry(), "half a TTL later")
	// Past it, the window holds nothing: both the first attempts and the
	// retries have expired, and the floor is back.
	clk.Add(8 * time.Second)
	assert.Equal(t, 16.0, b.Tokens())
	assert.Equal(t, 16, takeRetries(b, 1000))
}

func TestRatioBudgetSlidesBucketByBucket(t *testing.T) {
	t.Parallel()
	// TTL 16 s: one bucket a second. Retries taken at t=0 and t=8 s leave
	// the window 16 s after each.
	b, clk := ratioBudget(t, guard.BudgetOptions{Ratio: 1, MinPerSecond: 0.5, TTL: 16 * time.Second})
	assert.Equal(t, 4, takeRetries(b, 4))
	clk.Add(8 * time.Second)
	assert.Equal(t, 4, takeRetries(b, 100), "the floor of 8, 4 taken")
	clk.Add(8 * time.Second)
	assert.Equal(t, 4, takeRetries(b, 100), "the first 4 expired")
	assert.False(t, b.AllowRetry())
}

func TestRatioBudgetsKeepAWindowPerKey(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	bs, err := guard.NewBudgets(guard.BudgetOptions{Ratio: 0.2, MinPerSecond: 0.1, TTL: 10 * time.Second, Clock: clk}, 8)
	require.NoError(t, err)
	a, c := bs.Get("a"), bs.Get("c")
	assert.Equal(t, 1, takeRetries(a, 100))
	assert.False(t, a.AllowRetry())
	assert.True(t, c.AllowRetry(), "a's retries are not c's")
	assert.Same(t, a, bs.Get("a"))
}

func TestRatioBudgetOnTheRealClock(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b, err := guard.NewBudget(guard.BudgetOptions{Ratio: 0.1, MinPerSecond: 0.1, TTL: time.Second})
		require.NoError(t, err)
		bs, err := guard.NewBudgets(guard.BudgetOptions{Ratio: 0.1, MinPerSecond: 0.1, TTL: time.Second}, 4)
		require.NoError(t, err)
		for _, b := range []*guard.Budget{b, bs.Get("x")} {
			for range 20 {
				b.Started()
			}
			assert.Equal(t, 2, takeRetries(b, 100), "0.1 of 20; the floor of 0.1 is no whole retry")
			time.Sleep(time.Second + 100*time.Millisecond) // past the TTL, and the coarse clock's tick
			assert.Equal(t, 0, takeRetries(b, 100), "all expired, first attempts included")
		}
	})
}

// TestRatioBudgetGivesALowTrafficServiceItsRetries is the case the floor
// is for: a service that sees ten calls an hour, of which a few fail
// twice before they succeed. A token bucket, which only successes refill,
// refuses their retries for hours after; a ratio budget's floor allows
// them.
func TestRatioBudgetGivesALowTrafficServiceItsRetries(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		bucket, err := guard.NewBudget(guard.BudgetOptions{})
		require.NoError(t, err)
		ratio, err := guard.NewBudget(guard.BudgetOptions{Ratio: 0.2, MinPerSecond: 10, TTL: 10 * time.Second})
		require.NoError(t, err)
		for _, bc := range []struct {
			name   string
			b      *guard.Budget
			failed int // calls that failed for want of a retry
		}{{"token bucket", bucket, 3}, {"ratio budget", ratio, 0}} {
			failed := 0
			for i := range 10 { // an hour: one call each 6 minutes
				flaky := i%2 == 0 // half the calls fail twice, then succeed: the bucket refuses the last three
				op := retrytest.Script(errUnavailable, errUnavailable)
				if !flaky {
					op = retrytest.Script()
				}
				_, err := retry.Do(context.Background(), op.Call, retry.Policy{MaxAttempts: 3, Budget: bc.b})
				if err != nil {
					require.ErrorIs(t, err, retry.ErrBudgetExhausted)
					failed++
				}
				time.Sleep(6 * time.Minute)
			}
			assert.Equal(t, bc.failed, failed, "%s: calls failed for want of a retry", bc.name)
		}
	})
}

// TestRatioBudgetCountsWhatDoSends checks the counting of the one engine:
// Do tells the Budget of each first attempt and of each retry it decides,
// and a nested Do that shares the Budget counts nothing again.
func TestRatioBudgetCountsWhatDoSends(t *testing.T) {
	t.Parallel()
	b, _ := ratioBudget(t, guard.BudgetOptions{Ratio: 1, MinPerSecond: 0.1, TTL: 10 * time.Second}) // floor: one retry
	p := retry.Policy{MaxAttempts: 5, Budget: b, Clock: retrytest.NewAutoClock()}
	_, err := retry.Do(context.Background(), retrytest.Script().Call, p)
	require.NoError(t, err)
	assert.Equal(t, 2.0, b.Tokens(), "one first attempt, ratio 1, and the floor")
	tr, err := retry.Do(context.Background(), retrytest.Always(errUnavailable).Call, p)
	require.ErrorIs(t, err, retry.ErrBudgetExhausted)
	assert.Equal(t, 4, tr.Attempts(), "two first attempts and the floor: three retries")
	assert.Equal(t, 0.0, b.Tokens())

	// Nested: the inner Do makes one attempt and counts nothing.
	b2, _ := ratioBudget(t, guard.BudgetOptions{Ratio: 1, MinPerSecond: 0.1, TTL: 10 * time.Second})
	p.Budget = b2
	_, err = retry.Do(context.Background(), func(ctx context.Context) error {
		_, err := retry.Do(ctx, retrytest.Script().Call, p)
		return err
	}, p)
	require.NoError(t, err)
	assert.Equal(t, 2.0, b2.Tokens(), "the outer call's first attempt, once")
}

func TestRatioBudgetUnderConcurrentUse(t *testing.T) {
	t.Parallel()
	b, _ := ratioBudget(t, guard.BudgetOptions{Ratio: 0.5, MinPerSecond: 0.1, TTL: time.Hour})
	const workers, each = 8, 1000
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken := 0
	for range workers {
		wg.Go(func() {
			n := 0
			for range each {
				b.Started()
				if b.AllowRetry() {
					b.Retrying()
					n++
				}
			}
			mu.Lock()
			taken += n
			mu.Unlock()
		})
	}
	wg.Wait()
	// Each retry was allowed while retries+1 ≤ 0.5 × first attempts + 360;
	// racing callers may overshoot by at most one each.
	assert.LessOrEqual(t, taken, workers*each/2+360+workers)
	assert.GreaterOrEqual(t, taken, workers*each/2)
}
