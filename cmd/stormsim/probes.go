package main

import (
	"time"

	"github.com/stormguard/retry/guard"
)

// probeLoad is the breaker with retries: the hard outage's callers, 3
// attempts per call and no Budget, against a backend that fails every
// attempt for the whole 2 minutes. The backend answers in 100 ms, so the
// probes of a half-open round are in flight together: one failing first
// does not hide that the others were sent.
func probeLoad(seed uint64) load {
	l := outageLoad(seed)
	l.Length, l.DownUntil = 2*time.Minute, 2*time.Minute
	return l
}

// breakerNoBudget is the breaker scenario's control: a Budget would stop
// the retries itself, and hide whether the Breaker does.
var breakerNoBudget = control{Name: "Breaker, no Budget", Breaker: &guard.BreakerOptions{}}

// probeResult is what reached the backend in the breaker scenario.
type probeResult struct {
	Probes     int   // BreakerOptions.Probes in force
	Closed     int   // attempts sent while closed: before it first opened
	WhileOpen  int   // attempts sent while open: the target is 0
	Rounds     []int // attempts sent in each half-open round: the target is Probes each
	Retries    int   // of the half-open attempts, those that were not a call's first
	Refused    int   // calls the Breaker refused
	TotalCalls int
}

// simulateProbes runs the breaker scenario and splits what reached the
// backend by the Breaker's state as each attempt was sent. A half-open
// round is the half-open attempts less than OpenFor apart.
func simulateProbes(l load) (probeResult, error) {
	run, err := runGuarded(l, breakerNoBudget, true)
	if err != nil {
		return probeResult{}, err
	}
	res := probeResult{Probes: 3} // BreakerOptions' default
	if n := breakerNoBudget.Breaker.Probes; n > 0 {
		res.Probes = n
	}
	openFor := 10 * time.Second // BreakerOptions' default
	lastHalf := time.Duration(-1)
	for _, a := range run.Arrivals {
		switch a.State {
		case guard.BreakerClosed:
			res.Closed++
		case guard.BreakerOpen:
			res.WhileOpen++
		case guard.BreakerHalfOpen:
			if lastHalf < 0 || a.At-lastHalf >= openFor {
				res.Rounds = append(res.Rounds, 0)
			}
			res.Rounds[len(res.Rounds)-1]++
			if a.Attempt > 1 {
				res.Retries++
			}
			lastHalf = a.At
		}
	}
	for _, b := range run.Buckets {
		res.Refused += b.BreakerOpen
		res.TotalCalls += b.Calls
	}
	return res, nil
}
