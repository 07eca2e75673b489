package guard_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewBudgetRejectsBadArguments(t *testing.T) {
	t.Parallel()
	cases := []struct{ maxTokens, ratio float64 }{
		{-1, 0.1}, {math.NaN(), 0.1}, {math.Inf(1), 0.1},
		{10, -0.1}, {10, math.NaN()}, {10, math.Inf(1)},
		{10, 11}, {0.05, 0}, // a default ratio of 0.1 above a bucket of 0.05 is clamped: 0.05 is allowed
	}
	for _, c := range cases[:len(cases)-1] {
		b, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: c.maxTokens, TokenRatio: c.ratio})
		assert.ErrorIs(t, err, guard.ErrInvalidOptions, "NewBudget(%v, %v)", c.maxTokens, c.ratio)
		assert.Nil(t, b)
	}
	_, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 11})
	assert.EqualError(t, err, "guard: invalid options: BudgetOptions.TokenRatio 11 is above MaxTokens 10")
	b, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 10})
	require.NoError(t, err)
	assert.Equal(t, 10.0, b.Tokens())
	// A zero field is its default, as in every Options of this package.
	b, err = guard.NewBudget(guard.BudgetOptions{})
	require.NoError(t, err)
	assert.Equal(t, 10.0, b.Tokens(), "the default bucket")
	b, err = guard.NewBudget(guard.BudgetOptions{MaxTokens: 0.05})
	require.NoError(t, err, "the default ratio is clamped to a small bucket")
	b.Failed()
	b.Succeeded()
	assert.InDelta(t, 0.05, b.Tokens(), 1e-12)
}

// attemptsPerCall runs calls sequential Do calls of op, each with up to four
// attempts, and returns the mean attempts per call and the share of calls
// that succeeded in the end. Time is synctest's, so the waits cost nothing.
func attemptsPerCall(t *testing.T, calls int, op func(context.Context) error, b *guard.Budget) (attempts, success float64) {
	t.Helper()
	var total, ok int
	synctest.Test(t, func(t *testing.T) {
		for range calls {
			tr, err := retry.Do(context.Background(), op, retry.Policy{MaxAttempts: 4, Budget: b})
			total += tr.Attempts()
			if err == nil {
				ok++
			}
		}
	})
	return float64(total) / float64(calls), float64(ok) / float64(calls)
}

func TestBudgetStopsRetriesAgainstADeadService(t *testing.T) {
	t.Parallel()
	down := retrytest.Always(errUnavailable).Call
	without, _ := attemptsPerCall(t, 10000, down, nil)
	assert.Equal(t, 4.0, without)

	b, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1})
	require.NoError(t, err)
	with, _ := attemptsPerCall(t, 10000, down, b)
	assert.LessOrEqual(t, with, 1.01, "attempts per call with a budget")
	t.Logf("attempts per call against a dead service: %.4f with NewBudget(10, 0.1), %.1f without", with, without)
	assert.Equal(t, 0.0, b.Tokens(), "a dead service drains the bucket")
}

func TestBudgetBarelyBindsAtFivePercentFailures(t *testing.T) {
	t.Parallel()
	flaky := func(seed uint64) func(context.Context) error {
		r := rand.New(rand.NewPCG(seed, seed))
		return func(context.Context) error {
			if r.Float64() < 0.05 {
				return errUnavailable
			}
			return nil
		}
	}
	_, without := attemptsPerCall(t, 10000, flaky(5), nil)
	b, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1})
	require.NoError(t, err)
	_, with := attemptsPerCall(t, 10000, flaky(5), b)
	assert.InDelta(t, without, with, 0.005, "final success rate %.4f with the budget, %.4f without", with, without)
}

func TestBudgetRefusalIsReportedAndKeepsTheLastError(t *testing.T) {
	t.Parallel()
	b, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 2, TokenRatio: 0.1}) // a retry needs more than 1 token
	require.NoError(t, err)
	op := retrytest.Always(errUnavailable)
	tr, err := retrytest.Do(context.Background(), op.Call, retry.Policy{Budget: b})
	require.ErrorIs(t, err, retry.ErrBudgetExhausted)
	require.ErrorIs(t, err, errUnavailable)
	assert.EqualError(t, err, "retry: gave up after 1 attempt, retry budget exhausted: "+errUnavailable.Error())
	assert.Equal(t, retry.StopBudget, tr.Stop())
	assert.Equal(t, 1, op.Calls())
}

func TestBudgetNeverRefusesAFirstAttempt(t *testing.T) {
	t.Parallel()
	var b guard.Budget // the zero Budget: 10 tokens, ratio 0.1
	for range 20 {
		_, _ = retrytest.Do(context.Background(), retrytest.Always(errUnavailable).Call, retry.Policy{Budget: &b})
	}
	require.Equal(t, 0.0, b.Tokens())
	op := retrytest.Script()
	_, err := retry.Do(context.Background(), op.Call, retry.Policy{Budget: &b})
	require.NoError(t, err)
	assert.Equal(t, 1, op.Calls())
	assert.InDelta(t, 0.1, b.Tokens(), 1e-9, "a success gives back tokenRatio")
}

func TestBudgetRefillsToItsCap(t *testing.T) {
	t.Parallel()
	var b guard.Budget
	_, _ = retrytest.Do(context.Background(), retrytest.Always(errUnavailable).Call, retry.Policy{MaxAttempts: 3, Budget: &b})
	assert.InDelta(t, 7, b.Tokens(), 1e-9, "three failed attempts take three tokens")
	for range 100 {
		_, _ = retry.Do(context.Background(), retrytest.Script().Call, retry.Policy{Budget: &b})
	}
	assert.Equal(t, 10.0, b.Tokens())
}

func TestPermanentErrorsDoNotDrainTheBudget(t *testing.T) {
	t.Parallel()
	var b guard.Budget
	for range 50 {
		_, err := retry.Do(context.Background(), retrytest.Always(retry.Permanent(errBadRequest)).Call, retry.Policy{Budget: &b})
		require.ErrorIs(t, err, errBadRequest)
	}
	assert.Equal(t, 10.0, b.Tokens(), "a 400 says nothing about the service's health")
}

func TestBudgetUnderConcurrentUse(t *testing.T) {
	t.Parallel()
	b, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 100, TokenRatio: 0.5})
	require.NoError(t, err)
	synctest.Test(t, func(t *testing.T) {
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 0))
				for range 500 {
					_, err := retry.Do(context.Background(), func(context.Context) error {
						if r.Float64() < 0.3 {
							return errUnavailable
						}
						return nil
					}, retry.Policy{Budget: b})
					if err != nil && !errors.Is(err, errUnavailable) {
						t.Errorf("unexpected error %v", err)
					}
				}
			})
		}
		wg.Wait()
	})
	tokens := b.Tokens()
	assert.GreaterOrEqual(t, tokens, 0.0)
	assert.LessOrEqual(t, tokens, 100.0)
}

func TestNewBudgetsRejectsBadArguments(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tokens, ratio float64
		keys          int
	}{{-1, 0.1, 10}, {10, -1, 10}, {10, 0.1, 0}, {10, 0.1, -3}} {
		_, err := guard.NewBudgets(guard.BudgetOptions{MaxTokens: c.tokens, TokenRatio: c.ratio}, c.keys)
		assert.ErrorIs(t, err, guard.ErrInvalidOptions, "NewBudgets(%v, %v, %d)", c.tokens, c.ratio, c.keys)
	}
}

// Budgets gives each key its own bucket, the same one every time, and
// holds no more than maxKeys: no traffic pattern can grow it.
func TestBudgetsKeepsOneBudgetPerKeyWithinItsBound(t *testing.T) {
	t.Parallel()
	bs, err := guard.NewBudgets(guard.BudgetOptions{MaxTokens: 4, TokenRatio: 0.5}, 3)
	require.NoError(t, err)
	a := bs.Get("a")
	assert.Same(t, a, bs.Get("a"))
	assert.NotSame(t, a, bs.Get("b"))
	for range 4 {
		_, _ = retrytest.Do(context.Background(), retrytest.Always(errUnavailable).Call, retry.Policy{Budget: a})
	}
	assert.Equal(t, 0.0, a.Tokens(), "a's failures drained a's bucket")
	assert.Equal(t, 4.0, bs.Get("b").Tokens(), "and not b's")

	for i := range 1000 {
		bs.Get(fmt.Sprint("host-", i))
	}
	assert.Equal(t, 4.0, bs.Get("a").Tokens(), "a forgotten key comes back with a full bucket")

	var zero guard.Budgets
	assert.Equal(t, 10.0, zero.Get("x").Tokens(), "the zero Budgets is NewBudgets(10, 0.1, 1024)")
}

// A Budgets bounded at maxKeys never holds more, whatever the keys.
func TestBudgetsMemoryIsBounded(t *testing.T) {
	t.Parallel()
	bs, err := guard.NewBudgets(guard.BudgetOptions{MaxTokens: 4, TokenRatio: 0.5}, 8)
	require.NoError(t, err)
	first := bs.Get("first")
	for i := range 1000 {
		bs.Get(fmt.Sprint("k", i))
	}
	// Each new key evicts one of 8 at random: the first survives 992 of
	// them with a chance of (7/8)^992, about 1e-58.
	assert.NotSame(t, first, bs.Get("first"), "with 1000 keys through a bound of 8, the first was forgotten")
}
