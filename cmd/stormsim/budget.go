package main

import (
	"context"
	"errors"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
)

// ledger keeps a shared *guard.Budget up to date with what simulated
// clients do, and asks it whether a retry may go ahead.
//
// The Budget's token arithmetic is unexported: only retry.Do moves tokens.
// Rather than copy the gRFC A6 bucket here, and test a copy, the ledger
// reports every simulated attempt through a real, instantaneous retry.Do
// call whose op returns the attempt's outcome. Do then takes or gives back
// tokens and applies the "more than half full" rule itself, in the same
// order as in a real loop: record the failure, stop if the attempts are used
// up, else ask the budget. Nothing sleeps: the probe's wait is zero, and the
// simulator computes the real wait with Policy.Wait on virtual time.
type ledger struct {
	budget *guard.Budget // nil: no budget, every retry is allowed
}

var (
	errAttempt = errors.New("stormsim: simulated attempt failed")
	errAllowed = errors.New("stormsim: budget allowed the retry")
)

// Succeeded records a successful attempt: the budget gets tokenRatio back.
func (l ledger) Succeeded() {
	if l.budget == nil {
		return
	}
	l.probe(1, func(int) error { return nil })
}

// Failed records a failed attempt and reports whether the budget lets the
// client retry. last says the client has no attempts left: Do records the
// failure then and asks nothing, as a real loop does.
func (l ledger) Failed(last bool) (retryAllowed bool) {
	if l.budget == nil {
		return !last
	}
	if last {
		l.probe(1, func(int) error { return errAttempt })
		return false
	}
	// Attempt 1 is the simulated failure. Do reaches attempt 2 only if the
	// budget allowed a retry; that attempt ends the probe with a Permanent
	// error, which Do neither retries nor charges to the budget.
	err := l.probe(2, func(n int) error {
		if n == 1 {
			return errAttempt
		}
		return retry.Permanent(errAllowed)
	})
	return errors.Is(err, errAllowed)
}

func (l ledger) probe(attempts int, op func(n int) error) error {
	n := 0
	_, err := retry.Do(context.Background(), func(context.Context) error {
		n++
		return op(n)
	}, retry.Policy{MaxAttempts: attempts, Jitter: noWait{}, Budget: l.budget})
	return err
}

// noWait is a Jitter that makes the probe's wait zero: the simulator, not
// the probe, decides how long a client waits.
type noWait struct{}

func (noWait) Wait(retry.Step, float64) time.Duration { return 0 }
