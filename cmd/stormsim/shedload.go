package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/internal/limiter"
	"github.com/stormguard/retry/shed"
)

// shedLoad is one run of the shed scenario: the server, its clients, and
// what goes wrong.
type shedLoad struct {
	Capacity int           // C: requests the server works on at once
	Service  time.Duration // each request's work
	Clients  int
	Offered  float64       // calls per second the clients ask for, in units of C (see rate)
	Timeout  time.Duration // a client stops waiting for an attempt after it
	Length   time.Duration // calls start during [0, Length)
	Settled  time.Duration // the steady-state measures start then
	Hang     time.Duration // the server's workers stop for Hang from HangFrom (the outage)
	HangFrom time.Duration
	// SheddableShare is the share of the clients whose calls are
	// shed.Sheddable; the others' are shed.Critical.
	SheddableShare float64
	// Spread, if not 0, makes each request's work a lognormal draw of
	// mean Service and this σ, not Service exactly.
	Spread float64
	Seed   uint64
}

// rate is C in requests per second: Capacity requests every Service.
func (l shedLoad) rate() float64 { return float64(l.Capacity) / l.Service.Seconds() }

// every is the pace of one client: Clients of them offer Offered×C.
func (l shedLoad) every() time.Duration {
	return time.Duration(float64(l.Clients) / (l.Offered * l.rate()) * float64(time.Second))
}

func (l shedLoad) validate() error {
	switch {
	case l.Capacity < 1 || l.Clients < 1:
		return fmt.Errorf("capacity %d, %d clients: want at least 1 of each", l.Capacity, l.Clients)
	case l.Service <= 0 || l.Timeout <= 0 || l.Length <= 0:
		return fmt.Errorf("service %v, timeout %v, length %v: want positive durations", l.Service, l.Timeout, l.Length)
	case !(l.Offered > 0):
		return fmt.Errorf("offered %v×C: want a positive load", l.Offered)
	case l.Settled < 0 || l.Settled >= l.Length || l.Hang < 0 || l.HangFrom < 0:
		return fmt.Errorf("settled %v, hang %v from %v: want them within the run", l.Settled, l.Hang, l.HangFrom)
	case l.SheddableShare < 0 || l.SheddableShare > 1:
		return fmt.Errorf("sheddable share %v: want one in [0, 1]", l.SheddableShare)
	}
	return nil
}

// shedControl is what a row puts in front of the server, and whether its
// clients honour Retry-After.
type shedControl struct {
	Name string
	// Limiter is the engine's configuration, nil for no shedding (every
	// request joins the server's unbounded queue).
	Limiter *limiter.Config
	// Honour: the clients hold back after a 503 with a Retry-After, as
	// retryhttp's Transport does by default (guard.Holds, HoldWait), and
	// wait at least that long before retrying the call (Decision.RetryAfter).
	// Otherwise a 503 is retried with the backoff alone.
	Honour bool
	// MaxRetryAfter caps the suggested waits [shed.DefaultMaxRetryAfter].
	MaxRetryAfter time.Duration
}

// shedDefaults is the engine's configuration for the zero shed.Options:
// its documented defaults, as shed.New resolves them.
func shedDefaults() limiter.Config {
	return limiter.Config{
		Algorithm: limiter.Gradient, Initial: shed.DefaultInitialLimit,
		Min: shed.DefaultMinLimit, Max: shed.DefaultMaxLimit,
		MaxQueue: shed.DefaultMaxQueue, QueueTimeout: shed.DefaultQueueTimeout, QueueFactor: shed.DefaultQueueFactor,
		Tolerance: shed.DefaultTolerance, Smoothing: shed.DefaultSmoothing,
	}
}

var (
	errOverloaded = errors.New("stormsim: 503 Service Unavailable")
	errTimedOut   = fmt.Errorf("stormsim: no answer in time: %w", context.DeadlineExceeded)
)

// serverKey is the one origin the clients' Holds keep.
const serverKey = "server"

// runShed runs load l once with control c.
func runShed(l shedLoad, c shedControl) (*shedRecorder, error) {
	if err := l.validate(); err != nil {
		return nil, err
	}
	s := newVsim()
	rng := rand.New(rand.NewPCG(l.Seed, uint64('S')<<56))
	rec := newShedRecorder(l)
	v := &shedServer{s: s, l: l, rng: rand.New(rand.NewPCG(l.Seed, uint64('R')<<56)), rec: rec, draws: rand.New(rand.NewPCG(l.Seed, uint64('W')<<56)),
		maxWait: c.MaxRetryAfter, critical: func(level int) bool { return level >= criticalLevel }}
	if v.maxWait == 0 {
		v.maxWait = shed.DefaultMaxRetryAfter
	}
	if c.Limiter != nil {
		v.lim = limiter.New(*c.Limiter)
	}
	every := l.every()
	for i := range l.Clients {
		level := criticalLevel
		if float64(i) < l.SheddableShare*float64(l.Clients) {
			level = sheddableLevel
		}
		// Each client is a process of its own: its own Budget (the zero
		// BudgetOptions) and, if it honours Retry-After, its own Holds.
		budget, err := guard.NewBudget(guard.BudgetOptions{})
		if err != nil {
			return nil, err
		}
		holds := &guard.Holds{Rand: rng.Float64}
		p := retry.Policy{Clock: s, Jitter: seeded{retry.FullJitter, rng}, Budget: budget}
		op := func(ctx context.Context) error {
			if c.Honour {
				if err := holds.Wait(ctx, s, serverKey, false); err != nil {
					return err
				}
			}
			sent := holds.Epoch()
			x := v.send(level)
			switch x.got {
			case answerOK:
				holds.Clear(serverKey, sent)
				return nil
			case answerShed:
				if c.Honour {
					holds.Hold(serverKey, s.Now(), x.retryAfter)
					return retry.RetryAfter(errOverloaded, x.retryAfter)
				}
				return errOverloaded
			}
			return errTimedOut
		}
		start := time.Duration(rng.Int64N(int64(every)))
		s.Caller(start, l.Length, func(t time.Duration) time.Duration {
			_, err := retry.Do(context.Background(), op, p)
			rec.call(t, s.Elapsed(), err == nil, level >= criticalLevel)
			// The next call at the next slot of the client's pace: a slot
			// missed while a call ran (or waited out a hold) is a call
			// that failed, as a user who gave up, so the clients never
			// send more than Offered calls.
			now := s.Elapsed()
			for t += every; t < now && t < l.Length; t += every {
				rec.call(t, t, false, level >= criticalLevel)
			}
			return t
		})
	}
	for t := time.Second; t <= l.Length; t += time.Second {
		s.At(t-1, func() { rec.sample(t-1, v.lim) })
	}
	s.run()
	return rec, nil
}

// The engine's levels of the two priorities the scenario uses: shed's
// Priorities counted from the lowest, Sheddable, which is level 0.
const (
	sheddableLevel = 0
	criticalLevel  = int(shed.Critical - shed.Sheddable)
)

// is reports whether c is the row o.
func (c shedControl) is(o shedControl) bool { return c.Name == o.Name && c.Honour == o.Honour }
