package main

import (
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stormOnce runs scenario A once with jitter j and, if budget, the
// configured shared budget.
func stormOnce(t *testing.T, cfg stormConfig, j retry.Jitter, budget bool) stormRun {
	t.Helper()
	require.NoError(t, cfg.validate())
	p := cfg.Policy
	p.Jitter = j
	if budget {
		var err error
		p.Budget, err = guard.NewBudget(guard.BudgetOptions{MaxTokens: cfg.BudgetTokens, TokenRatio: cfg.BudgetRatio})
		require.NoError(t, err)
	}
	var q queue
	return runStorm(&q, cfg, p, runRand(cfg.Seed, 'A', cfg.Clients, 0))
}

func TestStormOneClientNoFailureMakesOneCall(t *testing.T) {
	t.Parallel()
	cfg := defaultStorm()
	cfg.Clients, cfg.Outage = 1, 0
	for _, s := range jitterStrategies() {
		for _, budget := range []bool{false, true} {
			got := stormOnce(t, cfg, s.jitter, budget)
			assert.Equal(t, stormRun{Calls: 1, Peak: 1, Arrivals: []int{1}}, got, "%s, budget %v", s.name, budget)
		}
	}
}

// TestStormWaitsAsThePolicySays follows one client through the outage
// with NoJitter: its attempts come at the cumulative waits of the zero
// Policy (0, 0.2s, 0.6s, then 1.4s, after the network is back).
func TestStormWaitsAsThePolicySays(t *testing.T) {
	t.Parallel()
	cfg := defaultStorm()
	cfg.Clients = 1
	got := stormOnce(t, cfg, retry.NoJitter, false)
	assert.Equal(t, 4, got.Calls)
	assert.Equal(t, 1400*time.Millisecond, got.Done)
	assert.Equal(t, 0, got.GaveUp)
	assert.Equal(t, 1, got.Arrivals[140], "the arrival is not in the window of 1.4s")
}

// TestStormNoJitterArrivesInLockstep checks the outage storm by hand: all
// 18 clients come back at the same instants, the server takes 4 each time,
// and the rest go round again, 8 attempts for the last ones.
func TestStormNoJitterArrivesInLockstep(t *testing.T) {
	t.Parallel()
	got := stormOnce(t, defaultStorm(), retry.NoJitter, false)
	spikes := map[int]int{}
	for w, n := range got.Arrivals {
		if n > 0 {
			spikes[w] = n
		}
	}
	// Windows of 10ms: 1.4s, 3.0s, 6.2s, 11.2s and 16.2s.
	assert.Equal(t, map[int]int{140: 18, 300: 14, 620: 10, 1120: 6, 1620: 2}, spikes)
	assert.Equal(t, 18, got.Peak)
	assert.Equal(t, 18*3+18+14+10+6+2, got.Calls)
	assert.Equal(t, 16200*time.Millisecond, got.Done)
	assert.Equal(t, 0, got.GaveUp)
}

// TestStormJitterFlattensTheSpikes is the point of the whole library: the
// same storm with any jitter stays under the server's capacity on average
// and is over many seconds sooner, because nobody waits for a spike.
func TestStormJitterFlattensTheSpikes(t *testing.T) {
	t.Parallel()
	cfg := defaultStorm()
	cfg.Runs = 20
	rows, err := simulateStorm(cfg)
	require.NoError(t, err)
	byName := map[string]stormRow{}
	for _, r := range rows {
		if !r.Budget {
			byName[r.Strategy] = r
		}
	}
	noJitter := byName["NoJitter"]
	assert.Equal(t, 18.0, noJitter.Peak)
	for _, name := range []string{"BandJitter(0.3)", "FullJitter", "EqualJitter", "DecorrelatedJitter"} {
		r := byName[name]
		assert.LessOrEqual(t, r.Peak, float64(cfg.Capacity), "%s: mean peak", name)
		assert.Less(t, r.Done, noJitter.Done/2, "%s: all done after", name)
		assert.Less(t, r.Calls, noJitter.Calls, "%s: calls", name)
		assert.Zero(t, r.GaveUp, "%s: gave up", name)
	}
}

// TestStormBudgetStopsRetriesDuringAnOutage: every attempt fails while the
// network is down, so the shared budget (10 tokens, retries only above 5)
// lets 4 retries through in all and every client gives up: 22 calls where
// the clients alone would make far more.
func TestStormBudgetStopsRetriesDuringAnOutage(t *testing.T) {
	t.Parallel()
	cfg := defaultStorm()
	for _, s := range jitterStrategies() {
		got := stormOnce(t, cfg, s.jitter, true)
		assert.Equal(t, 18+4, got.Calls, s.name)
		assert.Equal(t, 18, got.GaveUp, s.name)
		assert.Zero(t, got.Peak, s.name)
	}
}

// TestStormBudgetIdleWhenAllIsWell: no outage and room for everyone, so
// nothing fails and the budget changes nothing.
func TestStormBudgetIdleWhenAllIsWell(t *testing.T) {
	t.Parallel()
	cfg := defaultStorm()
	cfg.Outage, cfg.Capacity = 0, 18
	got := stormOnce(t, cfg, retry.FullJitter, true)
	assert.Equal(t, stormRun{Calls: 18, Peak: 18, Arrivals: []int{18}}, got)
}

func TestStormClientsGiveUpAfterMaxAttempts(t *testing.T) {
	t.Parallel()
	cfg := defaultStorm()
	cfg.Outage, cfg.Policy.MaxAttempts = time.Hour, 3
	got := stormOnce(t, cfg, retry.FullJitter, false)
	assert.Equal(t, 18*3, got.Calls)
	assert.Equal(t, 18, got.GaveUp)
	assert.Empty(t, got.Arrivals)
}

func TestStormIsDeterministicForASeed(t *testing.T) {
	t.Parallel()
	cfg := defaultStorm()
	cfg.Runs = 5
	first, err := simulateStorm(cfg)
	require.NoError(t, err)
	again, err := simulateStorm(cfg)
	require.NoError(t, err)
	assert.Equal(t, first, again)

	cfg.Seed++
	other, err := simulateStorm(cfg)
	require.NoError(t, err)
	assert.NotEqual(t, first, other, "the seed changed nothing")
}

func TestStormConfigValidation(t *testing.T) {
	t.Parallel()
	cases := map[string]func(*stormConfig){
		"no clients":       func(c *stormConfig) { c.Clients = 0 },
		"negative outage":  func(c *stormConfig) { c.Outage = -time.Second },
		"negative cap":     func(c *stormConfig) { c.Capacity = -1 },
		"zero window":      func(c *stormConfig) { c.Window = 0 },
		"no attempt limit": func(c *stormConfig) { c.Policy.MaxAttempts = 0 },
		"no runs":          func(c *stormConfig) { c.Runs = 0 },
		"bad policy":       func(c *stormConfig) { c.Policy.Factor = 0.5 },
		"bad budget":       func(c *stormConfig) { c.BudgetRatio = -0.1 },
	}
	for name, breakIt := range cases {
		cfg := defaultStorm()
		breakIt(&cfg)
		_, err := simulateStorm(cfg)
		assert.Error(t, err, name)
	}
}
