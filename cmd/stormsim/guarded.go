package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
)

// The guarded scenarios (hard outage, overload, light failure, breaker
// with retries) model one service whose Clients callers share one Policy
// towards one backend: one Budget, one Throttle, one Breaker, as the
// library advises ("share one per downstream service"). Every call is a
// real retry.Do on the simulator's clock (see vsim), so the Budget,
// Throttle and Breaker are the library's own, asked by Do itself.

// control is what a row puts in the callers' shared Policy.
type control struct {
	Name     string
	Budget   bool                   // the A6 token bucket, the zero Budget's size
	Ratio    *guard.BudgetOptions   // a ratio budget instead, on the simulator's clock; nil: none
	Throttle *guard.ThrottleOptions // nil: no Throttle
	Breaker  *guard.BreakerOptions  // nil: no Breaker
}

// load is how the callers call, and how the backend answers.
type load struct {
	Clients  int           // callers; each calls once per Every, at a phase of its own
	Every    time.Duration // between two calls of a caller
	Length   time.Duration // callers start calls during [0, Length)
	Attempts int           // MaxAttempts of each call; waits are the zero Policy's, FullJitter
	Latency  time.Duration // the backend answers each attempt after it

	DownUntil time.Duration // the backend fails every attempt during [0, DownUntil)
	Capacity  int           // attempts the backend accepts per Slot; 0: no limit
	Slot      time.Duration // the backend's capacity windows, aligned on t=0
	FailRatio float64       // share of attempts the backend fails at random

	Bucket time.Duration // resolution of the time series
	Seed   uint64
}

func (l load) validate() error {
	switch {
	case l.Clients < 1:
		return fmt.Errorf("%d clients, want at least 1", l.Clients)
	case l.Every <= 0 || l.Length <= 0 || l.Bucket <= 0:
		return fmt.Errorf("every %v, length %v, bucket %v: want positive durations", l.Every, l.Length, l.Bucket)
	case l.Attempts < 1:
		return fmt.Errorf("%d attempts, want at least 1", l.Attempts)
	case l.Latency < 0 || l.DownUntil < 0:
		return fmt.Errorf("latency %v, outage %v: want no negative duration", l.Latency, l.DownUntil)
	case l.Capacity < 0 || l.Capacity > 0 && l.Slot <= 0:
		return fmt.Errorf("capacity %d per %v: want a positive capacity per positive slot, or 0", l.Capacity, l.Slot)
	case l.FailRatio < 0 || l.FailRatio > 1:
		return fmt.Errorf("fail ratio %v, want one in [0, 1]", l.FailRatio)
	}
	return nil
}

// bucket is what happened in one Bucket of virtual time.
type bucket struct {
	Calls       int // calls started in the bucket
	Succeeded   int // of those, calls that succeeded
	Throttled   int // of those, calls the Throttle stopped
	BreakerOpen int // of those, calls the Breaker stopped
	Budgeted    int // of those, calls the Budget stopped
	Sent        int // attempts that reached the backend in the bucket
	Accepted    int // of those, attempts the backend served
	RejectP     float64
	State       guard.BreakerState // at the end of the bucket
}

// arrival is one attempt reaching the backend, for the breaker scenario.
type arrival struct {
	At      time.Duration
	Attempt int
	State   guard.BreakerState // the Breaker's state as the attempt was sent
}

// guardRun is what one run of one control measured.
type guardRun struct {
	Control  control
	Buckets  []bucket
	Arrivals []arrival // when asked for
}

// errUnavailable is the backend's failure: an overload-class error, which
// the DefaultClassifier retries and the Throttle does not count as an
// accept.
var errUnavailable = errors.New("stormsim: 503 Service Unavailable")

// runGuarded runs load l once with control c, and returns its time series.
func runGuarded(l load, c control, keepArrivals bool) (guardRun, error) {
	if err := l.validate(); err != nil {
		return guardRun{}, err
	}
	s := newVsim()
	rng := rand.New(rand.NewPCG(l.Seed, uint64('G')<<56))
	p := retry.Policy{MaxAttempts: l.Attempts, Clock: s, Jitter: seeded{retry.FullJitter, rng}}
	var th *guard.Throttle
	var br *guard.Breaker
	var err error
	if c.Budget {
		p.Budget, _ = guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1}) // the zero Budget's size
	}
	if c.Ratio != nil {
		o := *c.Ratio
		o.Clock = s
		if p.Budget, err = guard.NewBudget(o); err != nil {
			return guardRun{}, fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	if c.Throttle != nil {
		o := *c.Throttle
		o.Clock = s
		// Its own seeded stream: the refusals repeat from the seed. One
		// caller runs at a time (vsim), so the stream needs no lock.
		o.Rand = rand.New(rand.NewPCG(l.Seed, uint64('T')<<56)).Float64
		if th, err = guard.NewThrottle(o); err != nil {
			return guardRun{}, fmt.Errorf("%s: %w", c.Name, err)
		}
		p.Throttle = th
	}
	if c.Breaker != nil {
		o := *c.Breaker
		o.Clock = s
		if br, err = guard.NewBreaker(o); err != nil {
			return guardRun{}, fmt.Errorf("%s: %w", c.Name, err)
		}
		p.Breaker = br
	}
	if err := p.Validate(); err != nil {
		return guardRun{}, err
	}

	run := guardRun{Control: c, Buckets: make([]bucket, int((l.Length+l.Latency*time.Duration(l.Attempts))/l.Bucket)+64)}
	at := func(d time.Duration) *bucket {
		i := int(d / l.Bucket)
		for i >= len(run.Buckets) {
			run.Buckets = append(run.Buckets, bucket{})
		}
		return &run.Buckets[i]
	}
	slotUsed, slot := 0, time.Duration(-1)
	attempt := func(n int) error {
		now := s.Elapsed()
		b := at(now)
		b.Sent++
		if keepArrivals {
			a := arrival{At: now, Attempt: n}
			if br != nil {
				a.State = br.State()
			}
			run.Arrivals = append(run.Arrivals, a)
		}
		ok := now >= l.DownUntil
		if ok && l.Capacity > 0 {
			if cur := now / l.Slot; cur != slot {
				slot, slotUsed = cur, 0
			}
			slotUsed++
			ok = slotUsed <= l.Capacity
		}
		if ok && l.FailRatio > 0 {
			ok = rng.Float64() >= l.FailRatio
		}
		if ok {
			b.Accepted++
		}
		if l.Latency > 0 {
			s.sleep(l.Latency)
		}
		if !ok {
			return errUnavailable
		}
		return nil
	}
	call := func(start time.Duration) {
		n := 0
		_, err := retry.Do(context.Background(), func(context.Context) error {
			n++
			return attempt(n)
		}, p)
		b := at(start)
		b.Calls++
		switch {
		case err == nil:
			b.Succeeded++
		case errors.Is(err, retry.ErrThrottled):
			b.Throttled++
		case errors.Is(err, retry.ErrBreakerOpen):
			b.BreakerOpen++
		case errors.Is(err, retry.ErrBudgetExhausted):
			b.Budgeted++
		}
	}
	// Each caller is a goroutine that sleeps between its calls (vsim.Caller).
	for range l.Clients {
		start := time.Duration(rng.Int64N(int64(l.Every)))
		s.Caller(start, l.Length, func(t time.Duration) time.Duration {
			call(t)
			return t + l.Every
		})
	}
	for t := l.Bucket; t <= l.Length; t += l.Bucket {
		s.At(t-1, func() {
			b := at(t - 1)
			if th != nil {
				b.RejectP = th.RejectProbability()
			}
			if br != nil {
				b.State = br.State()
			}
		})
	}
	s.run()
	return run, nil
}

// seeded is a Jitter that draws from the run's own seeded stream instead
// of the one Do passes, so that the waits are the same in every run.
type seeded struct {
	j   retry.Jitter
	rng *rand.Rand
}

func (s seeded) Wait(st retry.Step, _ float64) time.Duration { return s.j.Wait(st, s.rng.Float64()) }
