package guard_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stormguard/retry/guard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flakyAt returns an op whose attempts fail independently with
// probability f, from a seeded source: the same seed, the same failures.
func flakyAt(f float64, seed uint64) func(context.Context) error {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	return func(context.Context) error {
		if r.Float64() < f {
			return errUnavailable
		}
		return nil
	}
}

// failedCalls runs 10,000 calls of 4 attempts against a service whose
// attempts fail at rate f, sharing b (nil: no Budget), and returns how many
// calls failed and the attempts per call.
func failedCalls(t *testing.T, f float64, seed uint64, b *guard.Budget) (failed int, attempts float64) {
	t.Helper()
	attempts, success := attemptsPerCall(t, 10000, flakyAt(f, seed), b)
	return int(10000*(1-success) + 0.5), attempts
}

// The sizing rule in the Budget's doc, measured: the headroom maxTokens/2
// must absorb the random runs of failures of a healthy service, not only
// its average rate. At 8% failures (below the 9.1% threshold of a ratio of
// 0.1) NewBudget(10, 0.1) fails hundreds of calls of 10,000 that retries
// would have saved; NewBudget(100, 0.1) fails as few as no Budget, and
// still stops retries against a service past the threshold.
func TestBudgetSizing(t *testing.T) {
	t.Parallel()
	rates := []float64{0.02, 0.05, 0.08, 0.20}
	sizes := []float64{10, 20, 50, 100}
	const seeds = 3

	var table strings.Builder
	fmt.Fprintf(&table, "failed calls of 10,000 (4 attempts each), mean of %d seeds; attempts/call in brackets\n%-8s %-12s", seeds, "failures", "no budget")
	for _, size := range sizes {
		fmt.Fprintf(&table, " %-18s", fmt.Sprintf("NewBudget(%g, 0.1)", size))
	}
	table.WriteString("\n")
	failed := map[[2]float64]float64{}   // (rate, size) -> mean failed calls; size 0: no budget
	attempts := map[[2]float64]float64{} // (rate, size) -> mean attempts per call
	for _, f := range rates {
		for _, size := range append([]float64{0}, sizes...) {
			for seed := range uint64(seeds) {
				var b *guard.Budget
				if size > 0 {
					var err error
					b, err = guard.NewBudget(guard.BudgetOptions{MaxTokens: size, TokenRatio: 0.1})
					require.NoError(t, err)
				}
				n, a := failedCalls(t, f, seed+1, b)
				failed[[2]float64{f, size}] += float64(n) / seeds
				attempts[[2]float64{f, size}] += a / seeds
			}
		}
		fmt.Fprintf(&table, "%-8s", fmt.Sprintf("%g%%", f*100))
		for _, size := range append([]float64{0}, sizes...) {
			k := [2]float64{f, size}
			w := 18
			if size == 0 {
				w = 12
			}
			fmt.Fprintf(&table, " %-*s", w, fmt.Sprintf("%.0f [%.2f]", failed[k], attempts[k]))
		}
		table.WriteString("\n")
	}
	t.Log("\n" + table.String())

	// Too small for a healthy service's runs of failures.
	assert.Greater(t, failed[[2]float64{0.08, 10}], 100.0, "NewBudget(10, 0.1) at 8%% failures")
	// Large enough: as few failed calls as without a Budget, at every rate
	// below the threshold.
	for _, f := range rates[:3] {
		assert.LessOrEqual(t, failed[[2]float64{f, 100}], failed[[2]float64{f, 0}]+1,
			"NewBudget(100, 0.1) at %g%% failures", f*100)
	}
	// The price of the larger bucket: a dead service gets under
	// maxTokens/2 retries before the Budget refuses the rest.
	b, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 100, TokenRatio: 0.1})
	require.NoError(t, err)
	dead, _ := attemptsPerCall(t, 10000, flakyAt(1, 1), b)
	t.Logf("attempts per call against a dead service with NewBudget(100, 0.1): %.4f", dead)
	assert.LessOrEqual(t, dead, 1+50.0/10000, "NewBudget(100, 0.1) against a dead service")
	// And it still sheds load past the threshold: far fewer attempts per
	// call than 4 attempts' worth of retries.
	for _, size := range sizes {
		assert.Less(t, attempts[[2]float64{0.20, size}], attempts[[2]float64{0.20, 0}]-0.1,
			"NewBudget(%g, 0.1) at 20%% failures", size)
	}
}
