package main

import (
	"time"

	"github.com/stormguard/retry/guard"
)

// outageLoad is the hard outage: 1,000 callers, one call each per 10 s
// (100 calls/s), 3 attempts per call, a backend that answers in 100 ms and
// fails everything for the first 60 s, then serves everything. Calls go on
// for 5 minutes after it heals: two Throttle windows and a little more.
func outageLoad(seed uint64) load {
	return load{
		Clients:   1000,
		Every:     10 * time.Second,
		Length:    6 * time.Minute,
		Attempts:  3,
		Latency:   100 * time.Millisecond,
		DownUntil: time.Minute,
		Bucket:    100 * time.Millisecond,
		Seed:      seed,
	}
}

// The controls of the guarded scenarios: the library's defaults, then the
// constants of three other libraries fed to this library's Throttle (see
// compare.go).
var (
	noControl  = control{Name: "no control"}
	budgetOnly = control{Name: "Budget", Budget: true}
	// ratioOnly is a ratio budget with Finagle's RetryBudget defaults.
	ratioOnly      = control{Name: "ratio Budget (0.2, 10/s, 10s)", Ratio: &guard.BudgetOptions{Ratio: 0.2, MinPerSecond: 10, TTL: 10 * time.Second}}
	budgetThrottle = control{Name: "Budget + Throttle", Budget: true, Throttle: &guard.ThrottleOptions{}}
	budgetBreaker  = control{Name: "Budget + Breaker", Budget: true, Breaker: &guard.BreakerOptions{}}
	// budgetThrottleTight sheds a little more than the defaults: enough
	// for an outage to leak under 0.1 attempts per call, little enough to
	// recover within two windows (see docs/storms.md).
	budgetThrottleTight = control{Name: "Budget + Throttle, MaxReject 0.91", Budget: true, Throttle: &guard.ThrottleOptions{MaxReject: 0.91}}
	// allGuards is the setup docs/storms.md advises: the three together.
	allGuards = control{Name: "Budget + Throttle + Breaker", Budget: true, Throttle: &guard.ThrottleOptions{}, Breaker: &guard.BreakerOptions{}}
)

// guardControls are the rows of the hard outage and the overload.
func guardControls() []control {
	return append([]control{noControl, budgetOnly, ratioOnly, budgetThrottle, budgetBreaker, budgetThrottleTight, allGuards}, comparedControls()...)
}

// outageRow sums up one control in the hard outage.
type outageRow struct {
	Control control
	// PerCall is the attempts the backend received per call started
	// during the outage.
	PerCall float64
	// Recovery is how long after the backend healed the calls began to
	// succeed at 95% or more in every second that followed; Recovered is
	// false if they never did.
	Recovery  time.Duration
	Recovered bool
	// Target is the recovery the issue asks of this control (2 Windows for a
	// Throttle, OpenFor plus a probe round for a Breaker), or 0.
	Target time.Duration
}

// simulateOutage runs the hard outage runs times per control, run r with
// seed l.Seed+r, and returns the means, and run 0 of each control for the
// charts.
func simulateOutage(l load, controls []control, runs int) ([]outageRow, []guardRun, error) {
	rows := make([]outageRow, 0, len(controls))
	samples := make([]guardRun, 0, len(controls))
	for _, c := range controls {
		row := outageRow{Control: c, Target: recoveryTarget(c, l), Recovered: true}
		sample, err := eachSeed(l, c, runs, func(lr load, run guardRun) {
			var calls, sent int
			for i, b := range run.Buckets {
				if time.Duration(i)*l.Bucket < l.DownUntil {
					calls += b.Calls
					sent += b.Sent
				}
			}
			row.PerCall += float64(sent) / float64(max(calls, 1))
			rec, ok := recovery(run, lr)
			row.Recovery += rec
			row.Recovered = row.Recovered && ok
		})
		if err != nil {
			return nil, nil, err
		}
		samples = append(samples, sample)
		n := max(runs, 1)
		row.PerCall /= float64(n)
		row.Recovery /= time.Duration(n)
		rows = append(rows, row)
	}
	return rows, samples, nil
}

// eachSeed runs load l with control c runs times (at least once), run r
// with seed l.Seed+r, passes each run to add, and returns run 0, for the
// charts.
func eachSeed(l load, c control, runs int, add func(lr load, run guardRun)) (guardRun, error) {
	var first guardRun
	for r := range max(runs, 1) {
		lr := l
		lr.Seed += uint64(r)
		run, err := runGuarded(lr, c, false)
		if err != nil {
			return guardRun{}, err
		}
		if r == 0 {
			first = run
		}
		add(lr, run)
	}
	return first, nil
}

// recoveryTarget is how soon after the backend heals c should have
// recovered: within two of its Throttle's windows, or its Breaker's OpenFor
// plus one probe round (the backend's latency), to the series' resolution.
func recoveryTarget(c control, l load) time.Duration {
	switch {
	case c.Throttle != nil:
		w := c.Throttle.Window
		if w == 0 {
			w = 2 * time.Minute // ThrottleOptions' default
		}
		return 2 * w
	case c.Breaker != nil:
		openFor := c.Breaker.OpenFor
		if openFor == 0 {
			openFor = 10 * time.Second // BreakerOptions' default
		}
		return openFor + l.Latency + l.Bucket
	}
	return 0
}

// recovery returns the earliest T after the backend healed, on the
// series' grid, such that the calls started in each second from T on
// succeeded at 95% or more; ok is false if there is none.
func recovery(run guardRun, l load) (time.Duration, bool) {
	perSecond := int(time.Second / l.Bucket)
	last := int(l.Length / l.Bucket) // calls start before Length
	first := int(l.DownUntil / l.Bucket)
	for from := first; from+perSecond <= last; from++ {
		ok := true
		for w := from; w+perSecond <= last && ok; w += perSecond {
			var calls, succeeded int
			for _, b := range run.Buckets[w : w+perSecond] {
				calls += b.Calls
				succeeded += b.Succeeded
			}
			ok = calls == 0 || float64(succeeded) >= 0.95*float64(calls)
		}
		if ok {
			return time.Duration(from-first) * l.Bucket, true
		}
	}
	return 0, false
}
