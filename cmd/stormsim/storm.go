package main

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
)

// stormConfig is scenario A, the outage storm: clients that lose
// the network at the same instant and come back to a server that can take
// only so much at once.
type stormConfig struct {
	Clients  int           // clients whose first attempt fails together at t=0
	Outage   time.Duration // the network is down during [0, Outage)
	Capacity int           // attempts the server accepts per window; it fails the rest
	Window   time.Duration // the server's fixed rate windows, aligned on t=0

	// Policy is the clients' retry policy; each row sets its Jitter and
	// Budget. The simulator honours MaxAttempts, BaseBackoff, Factor and
	// MaxBackoff; MaxAttempts must be set, since nothing else ends a client.
	Policy retry.Policy

	// BudgetTokens and BudgetRatio size the guard.Budget that all clients
	// share in the "with budget" rows, a fresh one per run.
	BudgetTokens, BudgetRatio float64

	Runs int    // runs per row; only the jitters' draws differ between runs
	Seed uint64 // run r of every row draws from the same seeded stream
}

// defaultStorm is the outage storm. The clients use the zero Policy's waits
// (200ms doubling to 5s) with 10 attempts instead of 4: with NoJitter they
// come back at 0.2s, 0.6s, 1.4s, 3s, 6.2s, 11.2s and 16.2s, and the server
// lets 4 of 18 through in each spike, so the slowest needs 8 attempts. With
// 4, most would give up and the table would measure the policy, not the
// jitter. The budget is the zero Budget's size: 10 tokens, ratio 0.1.
func defaultStorm() stormConfig {
	return stormConfig{
		Clients:      18,
		Outage:       time.Second,
		Capacity:     4,
		Window:       10 * time.Millisecond,
		Policy:       retry.Policy{MaxAttempts: 10},
		BudgetTokens: 10,
		BudgetRatio:  0.1,
		Runs:         100,
		Seed:         1,
	}
}

func (c stormConfig) validate() error {
	switch {
	case c.Clients < 1:
		return fmt.Errorf("scenario A: %d clients, want at least 1", c.Clients)
	case c.Outage < 0:
		return fmt.Errorf("scenario A: outage %v is negative", c.Outage)
	case c.Capacity < 0:
		return fmt.Errorf("scenario A: capacity %d is negative", c.Capacity)
	case c.Window <= 0:
		return fmt.Errorf("scenario A: window %v, want a positive duration", c.Window)
	case c.Policy.MaxAttempts < 1:
		return fmt.Errorf("scenario A: MaxAttempts %d, want at least 1", c.Policy.MaxAttempts)
	case c.Runs < 1:
		return fmt.Errorf("scenario A: %d runs, want at least 1", c.Runs)
	}
	if err := c.Policy.Validate(); err != nil {
		return fmt.Errorf("scenario A: %w", err)
	}
	if _, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: c.BudgetTokens, TokenRatio: c.BudgetRatio}); err != nil {
		return fmt.Errorf("scenario A: %w", err)
	}
	return nil
}

// stormRun is what one run of scenario A measured.
type stormRun struct {
	Calls    int           // attempts made, those that failed during the outage included
	Peak     int           // most arrivals in one window; all arrivals come after the outage
	Done     time.Duration // when the last client succeeded or gave up
	GaveUp   int           // clients that ran out of attempts or budget
	Arrivals []int         // arrivals at the server per window, from t=0
}

// stormRow sums up the runs of one strategy, with or without a budget.
type stormRow struct {
	Strategy string
	Budget   bool
	Runs     int
	Peak     float64       // mean peak arrivals per window
	MaxPeak  int           // the highest peak of any run
	Calls    float64       // mean calls
	Done     time.Duration // mean time until every client is done
	GaveUp   float64       // mean clients that gave up
	Sample   stormRun      // run 0, drawn in the arrivals chart
}

// simulateStorm runs scenario A for every jitter, without then with a
// budget. It takes a few milliseconds: no progress is shown.
func simulateStorm(cfg stormConfig) ([]stormRow, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var rows []stormRow
	var q queue
	for _, s := range jitterStrategies() {
		for _, withBudget := range []bool{false, true} {
			row := stormRow{Strategy: s.name, Budget: withBudget, Runs: cfg.Runs}
			var done time.Duration
			for r := range cfg.Runs {
				p := cfg.Policy
				p.Jitter = s.jitter
				if withBudget {
					p.Budget, _ = guard.NewBudget(guard.BudgetOptions{MaxTokens: cfg.BudgetTokens, TokenRatio: cfg.BudgetRatio}) // validated above
				}
				run := runStorm(&q, cfg, p, runRand(cfg.Seed, 'A', cfg.Clients, r))
				if r == 0 {
					row.Sample = run
				}
				row.Peak += float64(run.Peak)
				row.MaxPeak = max(row.MaxPeak, run.Peak)
				row.Calls += float64(run.Calls)
				row.GaveUp += float64(run.GaveUp)
				done += run.Done
			}
			n := float64(cfg.Runs)
			row.Peak, row.Calls, row.GaveUp = row.Peak/n, row.Calls/n, row.GaveUp/n
			row.Done = done / time.Duration(cfg.Runs)
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// runStorm runs scenario A once with policy p (Jitter and Budget set).
// Each event is one client's attempt number arg, and it plays out the way
// retry.Do plays an attempt out: on success the client is done; on failure
// the budget hears of it, the client gives up if its attempts or the budget
// are used up, and otherwise it waits p.Wait(n, previous wait, u), the
// library's own formula, and tries again. Answers are instantaneous: the
// network's latency would only shift every client alike.
func runStorm(q *queue, cfg stormConfig, p retry.Policy, rng *rand.Rand) stormRun {
	q.reset()
	led := ledger{budget: p.Budget}
	prev := make([]time.Duration, cfg.Clients)
	for c := range cfg.Clients {
		q.After(0, 0, c, 1)
	}
	var run stormRun
	for e, ok := q.Pop(); ok; e, ok = q.Pop() {
		n := int(e.arg)
		run.Calls++
		if e.at >= cfg.Outage { // the attempt reaches the server
			w := int(e.at / cfg.Window)
			for len(run.Arrivals) <= w {
				run.Arrivals = append(run.Arrivals, 0)
			}
			run.Arrivals[w]++
			run.Peak = max(run.Peak, run.Arrivals[w])
			if run.Arrivals[w] <= cfg.Capacity {
				led.Succeeded()
				run.Done = e.at
				continue
			}
		}
		if !led.Failed(n == p.MaxAttempts) {
			run.GaveUp++
			run.Done = e.at
			continue
		}
		wait := p.Wait(n, prev[e.client], rng.Float64())
		prev[e.client] = wait
		q.After(wait, 0, int(e.client), int64(n+1))
	}
	return run
}

// runRand returns the random stream of run r of a scenario at n clients.
// It does not depend on the strategy: every strategy starts from the same
// draws (common random numbers), which makes their differences less noisy.
func runRand(seed uint64, scenario byte, n, r int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(scenario)<<56|uint64(n)<<32|uint64(r)))
}
