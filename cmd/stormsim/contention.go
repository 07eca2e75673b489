package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry"
)

// contentionConfig is scenario B, the experiment of the AWS Architecture
// Blog post "Exponential Backoff And Jitter" (2015): N clients each update
// one row once, under optimistic concurrency. Time is in the post's
// abstract units; here one unit is one millisecond of virtual time.
type contentionConfig struct {
	Clients []int // the values of N
	Runs    int   // runs per N and strategy; the post made 100
	Seed    uint64

	Base, Cap       time.Duration // backoff before retry n is min(Cap, Base·2ⁿ), jittered
	HopMean, HopDev time.Duration // each network hop takes |Normal(HopMean, HopDev)|

	Workers int // goroutines that share the runs; results do not depend on it
}

// defaultContention is the post's setup: N = 10, 20, …, 190, 100 runs, base
// 5, cap 2000, hops of |Normal(10, 2)|.
func defaultContention() contentionConfig {
	cfg := contentionConfig{
		Runs: 100, Seed: 1,
		Base: 5 * unit, Cap: 2000 * unit,
		HopMean: 10 * unit, HopDev: 2 * unit,
		Workers: runtime.GOMAXPROCS(0),
	}
	for n := 10; n <= 190; n += 10 {
		cfg.Clients = append(cfg.Clients, n)
	}
	return cfg
}

// unit is scenario B's abstract time unit.
const unit = time.Millisecond

func (c contentionConfig) validate() error {
	switch {
	case len(c.Clients) == 0:
		return fmt.Errorf("scenario B: no client counts")
	case c.Runs < 1:
		return fmt.Errorf("scenario B: %d runs, want at least 1", c.Runs)
	case c.Base <= 0 || c.Cap < 2*c.Base:
		return fmt.Errorf("scenario B: base %v and cap %v, want 0 < 2·base ≤ cap", c.Base, c.Cap)
	case c.HopMean < 0 || c.HopDev < 0:
		return fmt.Errorf("scenario B: hop mean %v and deviation %v, want both ≥ 0", c.HopMean, c.HopDev)
	}
	for _, n := range c.Clients {
		if n < 1 {
			return fmt.Errorf("scenario B: %d clients, want at least 1", n)
		}
	}
	return nil
}

// contentionPolicy maps the post's backoff onto a retry.Policy, so that
// Policy.Wait computes it. The post waits min(cap, base·2ⁿ) before retry n;
// the library's delay is BaseBackoff·Factor^(n−1), the same with BaseBackoff =
// 2·base and Factor 2. Decorrelated jitter ignores that delay: it draws
// min(cap, uniform(base, 3·previous)) with previous = base at first, and the
// library anchors it on BaseBackoff, so for it BaseBackoff is base itself.
func contentionPolicy(cfg contentionConfig, s strategy) retry.Policy {
	base := 2 * cfg.Base
	if s.jitter == retry.DecorrelatedJitter {
		base = cfg.Base
	}
	return retry.Policy{BaseBackoff: base, Factor: 2, MaxBackoff: cfg.Cap, Jitter: s.jitter}
}

// contentionRun is what one run of scenario B measured.
type contentionRun struct {
	Calls int           // write calls, the failed ones included
	Time  time.Duration // time of the last event: the last client hears it won
}

// contentionPoint is the mean of the runs of one strategy at one N.
type contentionPoint struct {
	Strategy string
	Clients  int
	Runs     int
	Calls    float64
	Time     time.Duration
}

// simulateContention runs scenario B for every jitter and the no-backoff
// baseline, at every N, on cfg.Workers goroutines, and reports progress to
// w (nil for none). Points come grouped by strategy, in N's order.
func simulateContention(cfg contentionConfig, w io.Writer) ([]contentionPoint, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	strategies := append(jitterStrategies(), noBackoff)
	nn, runs := len(cfg.Clients), cfg.Runs
	results := make([]contentionRun, len(strategies)*nn*runs)
	// results[(si·nn + ni)·runs + r] is run r of strategy si at N number ni.
	// Workers take the runs in whatever order they get to them; each run
	// draws from its own seeded stream, so the order changes nothing.
	var next atomic.Int64
	prog := newProgress(w, "scenario B", len(results))
	var wg sync.WaitGroup
	for range max(cfg.Workers, 1) {
		wg.Go(func() {
			var sim contention
			for {
				j := int(next.Add(1) - 1)
				if j >= len(results) {
					return
				}
				si, ni, r := j/(nn*runs), j/runs%nn, j%runs
				n := cfg.Clients[ni]
				results[j] = sim.run(cfg, n, strategies[si], runRand(cfg.Seed, 'B', n, r))
				prog.Add(1)
			}
		})
	}
	wg.Wait()
	prog.Done()

	points := make([]contentionPoint, 0, len(strategies)*nn)
	for si, s := range strategies {
		for ni, n := range cfg.Clients {
			p := contentionPoint{Strategy: s.name, Clients: n, Runs: runs}
			var total time.Duration
			for _, res := range results[(si*nn+ni)*runs:][:runs] {
				p.Calls += float64(res.Calls)
				total += res.Time
			}
			p.Calls /= float64(runs)
			p.Time = total / time.Duration(runs)
			points = append(points, p)
		}
	}
	return points, nil
}

// The events of scenario B, each a message arriving somewhere.
const (
	readAtServer  uint8 = iota // a client's read reaches the row
	readReply                  // the version read reaches the client; arg is the version
	writeAtServer              // a client's write reaches the row; arg is the version it read
	writeReply                 // the verdict reaches the client; arg is 1 if the write won
)

// contention is one worker's simulator for scenario B. It keeps its memory
// from run to run.
type contention struct {
	q    queue
	lost []int           // each client's lost writes so far: its retry number
	prev []time.Duration // each client's previous wait, for DecorrelatedJitter
}

// run plays out one run with n clients. Each client reads the row's
// version, writes it back conditionally and, if another write got there
// first, waits and starts over, until its one write wins.
func (c *contention) run(cfg contentionConfig, n int, s strategy, rng *rand.Rand) contentionRun {
	c.q.reset()
	c.lost = zeroed(c.lost, n)
	c.prev = zeroed(c.prev, n)
	p := contentionPolicy(cfg, s)
	mean, dev := float64(cfg.HopMean), float64(cfg.HopDev)
	hop := func() time.Duration {
		return time.Duration(math.Abs(mean + dev*rng.NormFloat64()))
	}

	var version int64 // the row's version
	var run contentionRun
	for i := range n {
		c.q.After(hop(), readAtServer, i, 0)
	}
	for e, ok := c.q.Pop(); ok; e, ok = c.q.Pop() {
		i := int(e.client)
		switch e.kind {
		case readAtServer:
			c.q.After(hop(), readReply, i, version)
		case readReply:
			c.q.After(hop(), writeAtServer, i, e.arg)
		case writeAtServer:
			run.Calls++
			won := int64(0)
			if e.arg == version {
				version++
				won = 1
			}
			c.q.After(hop(), writeReply, i, won)
		case writeReply:
			if e.arg == 1 {
				break // this client is done
			}
			c.lost[i]++
			var wait time.Duration
			if s.jitter != nil {
				wait = p.Wait(c.lost[i], c.prev[i], rng.Float64())
			}
			c.prev[i] = wait
			c.q.After(hop()+wait, readAtServer, i, 0)
		}
	}
	run.Time = c.q.Now()
	return run
}

// zeroed returns s resized to n zeros, reusing its memory when it can.
func zeroed[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}
