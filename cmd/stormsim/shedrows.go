package main

import (
	"fmt"
	"time"

	"github.com/stormguard/retry/internal/limiter"
)

// shedConfig sizes the shed scenario: one server of capacity C behind
// each control, and its clients.
type shedConfig struct {
	Capacity int
	Clients  int
	Length   time.Duration // of the overload and priority runs
	Hang     time.Duration // of the outage
	After    time.Duration // the outage run goes on for After once the server healed
	Seed     uint64
}

func defaultShedConfig() shedConfig {
	return shedConfig{Capacity: 20, Clients: 1000, Length: time.Minute, Hang: time.Minute, After: 40 * time.Second, Seed: 1}
}

// base is the load every run starts from: the server, the clients, at
// offered×C.
func (c shedConfig) base(offered float64) shedLoad {
	return shedLoad{
		Capacity: c.Capacity, Service: 10 * time.Millisecond, Clients: c.Clients,
		Offered: offered, Timeout: 250 * time.Millisecond,
		Length: c.Length, Settled: (c.Length / 6).Truncate(time.Second), Seed: c.Seed,
	}
}

// The outage: the server's workers stop for Hang, from outageFrom, under
// a load the server can take; the run goes on for After once it has
// healed.
const (
	outageFrom    = 10 * time.Second
	outageOffered = 0.8
)

func (c shedConfig) outage() shedLoad {
	l := c.base(outageOffered)
	l.HangFrom, l.Hang = outageFrom, c.Hang
	l.Length, l.Settled = outageFrom+c.Hang+max(c.After, callPatience+time.Second), outageFrom+c.Hang
	return l
}

// shedControls are the rows of the scenario: no shedding (it sends no
// Retry-After, so how clients treat one does not matter), a fixed limit
// of C and the adaptive Limiter with shed's defaults, each with clients
// that ignore Retry-After and with clients that honour it.
func shedControls(capacity int) []shedControl {
	fixed := shedDefaults()
	fixed.Algorithm, fixed.Initial = limiter.Fixed, capacity
	adaptive := shedDefaults()
	rows := []shedControl{{Name: "no shedding (unbounded queue)"}}
	for _, c := range []shedControl{
		{Name: fmt.Sprintf("fixed limit %d (= C), queue 50", capacity), Limiter: &fixed},
		{Name: "adaptive Limiter (defaults)", Limiter: &adaptive},
	} {
		plain := c
		c.Honour = true
		rows = append(rows, plain, c)
	}
	return rows
}

// comparedLimiters model three other libraries' adaptive limiters by
// feeding their default constants to this engine: their code is not
// copied, and what our knobs (Tolerance, Smoothing, MaxQueue, limits)
// cannot express is left out. With clients that honour Retry-After.
//
//   - Netflix concurrency-limits, Gradient2Limit: rttTolerance 1.5,
//     smoothing 0.2, queueSize 4 (here MaxQueue 4; Gradient2 adds it to
//     the limit as headroom, where our Gradient adds √limit), initial
//     limit 20, max 200. Not modelled: its long-term latency is an
//     exponential average of 600 samples, ours a probed minimum.
//   - Envoy adaptive concurrency filter: a 10% buffer over the minRTT
//     (Tolerance 1.1), no smoothing of the new limit (Smoothing 1), and
//     no queue: a request over the limit is refused at once. Not
//     modelled: its minRTT probe every 30 s pins the limit at 3 for 50
//     requests; ours halves it for one window every 20 busy windows.
//   - failsafe-go adaptivelimiter: initial limit 20, max 200, no queue by
//     default; it compares the p90 of a 1 s window, smoothed over 5
//     windows (Smoothing 1/3), with a long-term average, and decreases
//     once about 6·log10(limit) requests queue (Vegas' beta): about 1.3×
//     the unqueued latency at a limit of 30, so Tolerance 1.3. Not
//     modelled: the p90 (ours is the mean), its correlation of latency
//     and throughput with the limit, and its cap of 5× the requests in
//     flight.
func comparedLimiters() []shedControl {
	gradient2 := shedDefaults()
	gradient2.Max, gradient2.MaxQueue, gradient2.Tolerance = 200, 4, 1.5
	envoy := shedDefaults()
	envoy.Tolerance, envoy.Smoothing, envoy.MaxQueue = 1.1, 1, 0
	failsafe := shedDefaults()
	failsafe.Max, failsafe.MaxQueue, failsafe.Tolerance, failsafe.Smoothing = 200, 0, 1.3, 1.0/3
	return []shedControl{
		{Name: "Netflix Gradient2 constants", Limiter: &gradient2, Honour: true},
		{Name: "Envoy adaptive concurrency constants", Limiter: &envoy, Honour: true},
		{Name: "failsafe-go adaptive limiter constants", Limiter: &failsafe, Honour: true},
	}
}

// adaptiveOurs is the row the targets are for: the adaptive Limiter with
// clients that honour Retry-After.
func adaptiveOurs(capacity int) shedControl {
	c := shedControls(capacity)
	return c[len(c)-1]
}

// shedRow sums up one control in the overload at 3C.
type shedRow struct {
	Control shedControl
	// Goodput is the attempts served to a client that still waited, per
	// second, as a share of C, after Settled.
	Goodput float64
	// Arrivals is the attempts that reached the server per second, as a
	// share of C.
	Arrivals float64
	// ShedPerSuccess is the attempts refused (503) per attempt served in
	// time.
	ShedPerSuccess float64
	// P99 is the 99th percentile of the served attempts' latency, from
	// arrival at the server to the answer, queueing included; QueueP99
	// the same of their wait in the limiter's queue.
	P99, QueueP99 time.Duration
	// Calls is the share of calls that succeeded; TimedOut the attempts
	// whose client stopped waiting, per second.
	Calls, TimedOut float64
}

// settled is the seconds that sum(l.Settled, l.Length) adds up.
func settled(l shedLoad) float64 {
	return float64(int(l.Length/time.Second) - int(l.Settled/time.Second))
}

func summarize(l shedLoad, c shedControl, r *shedRecorder) shedRow {
	s := r.sum(l.Settled, l.Length)
	secs := settled(l)
	return shedRow{
		Control:        c,
		Goodput:        float64(s.Good) / secs / l.rate(),
		Arrivals:       float64(s.Arrivals) / secs / l.rate(),
		ShedPerSuccess: float64(s.Shed) / float64(max(s.Good, 1)),
		P99:            r.p99(),
		QueueP99:       p99(r.waits),
		Calls:          float64(s.Succeeded) / float64(max(s.Calls, 1)),
		TimedOut:       float64(s.TimedOut) / secs,
	}
}

// outageRow sums up one control after the outage.
type outageShedRow struct {
	Control shedControl
	// Arrivals5s is the attempts that reached the server in the first 5 s
	// after it healed, per second, as a share of C.
	Arrivals5s float64
	// Recovery is how long after the heal the calls began to succeed
	// within callPatience at 95% or more, in every second that followed;
	// Recovered is false if they never did before the run ended.
	Recovery  time.Duration
	Recovered bool
	// Goodput10s is the goodput of the first 10 s after the heal, as a
	// share of C.
	Goodput10s float64
}

func summarizeOutage(l shedLoad, c shedControl, r *shedRecorder) outageShedRow {
	heal := l.HangFrom + l.Hang
	first := r.sum(heal, heal+5*time.Second)
	ten := r.sum(heal, heal+10*time.Second)
	row := outageShedRow{Control: c,
		Arrivals5s: float64(first.Arrivals) / 5 / l.rate(),
		Goodput10s: float64(ten.Good) / 10 / l.rate(),
	}
	// Calls start until Length; those of the last callPatience may not
	// have had their time yet, and are left out.
	last := int((l.Length - callPatience) / time.Second)
	for from := int(heal / time.Second); from < last; from++ {
		ok := true
		for s := from; s < last && ok; s++ {
			b := r.Seconds[s]
			ok = b.Calls == 0 || float64(b.InTime) >= 0.95*float64(b.Calls)
		}
		if ok {
			row.Recovery, row.Recovered = time.Duration(from)*time.Second-heal, true
			break
		}
	}
	return row
}

// priorityRow sums up one control at 3C with half the clients Sheddable.
type priorityRow struct {
	Control shedControl
	// Critical is the Critical attempts served in time per second, as a
	// share of the Critical demand up to C: min(Critical calls offered
	// per second, C).
	Critical float64
	// Sheddable is the Sheddable attempts served in time, as a share of C.
	Sheddable float64
}

func summarizePriority(l shedLoad, c shedControl, r *shedRecorder) priorityRow {
	s := r.sum(l.Settled, l.Length)
	secs := settled(l)
	demand := min((1-l.SheddableShare)*l.Offered*l.rate(), l.rate())
	return priorityRow{Control: c,
		Critical:  float64(s.GoodCrit) / secs / demand,
		Sheddable: float64(s.Good-s.GoodCrit) / secs / l.rate(),
	}
}

// shedResults is everything the scenario measured.
type shedResults struct {
	Config      shedConfig
	UnloadedP99 time.Duration
	Overload    []shedRow
	Outage      []outageShedRow
	Priority    []priorityRow
	// Variable is the overload at 3C with each request's work a lognormal
	// draw of mean 10 ms, for the spreads in variableSpreads.
	Variable []variableRow
	// Samples are the runs of the adaptive Limiter with our clients,
	// for the charts: overload, outage, priority.
	Samples [3]*shedRecorder
	// NoShed and NoShedOutage are the overload and outage runs without
	// shedding, for the charts.
	NoShed, NoShedOutage *shedRecorder
}

// simulateShed runs the whole scenario.
func simulateShed(c shedConfig) (shedResults, error) {
	res := shedResults{Config: c}
	unloaded, err := runShed(c.base(0.5), shedControl{Name: "unloaded", Honour: true})
	if err != nil {
		return res, err
	}
	res.UnloadedP99 = unloaded.p99()
	ours := adaptiveOurs(c.Capacity)
	for _, ctl := range append(shedControls(c.Capacity), comparedLimiters()...) {
		l := c.base(3)
		r, err := runShed(l, ctl)
		if err != nil {
			return res, fmt.Errorf("%s: %w", ctl.Name, err)
		}
		res.Overload = append(res.Overload, summarize(l, ctl, r))
		switch {
		case ctl.is(ours):
			res.Samples[0] = r
		case ctl.Limiter == nil:
			res.NoShed = r
		}
	}
	for _, ctl := range shedControls(c.Capacity) {
		l := c.outage()
		r, err := runShed(l, ctl)
		if err != nil {
			return res, fmt.Errorf("outage, %s: %w", ctl.Name, err)
		}
		res.Outage = append(res.Outage, summarizeOutage(l, ctl, r))
		switch {
		case ctl.is(ours):
			res.Samples[1] = r
		case ctl.Limiter == nil:
			res.NoShedOutage = r
		}
	}
	for _, ctl := range shedControls(c.Capacity) {
		if ctl.Limiter != nil && !ctl.Honour {
			continue
		}
		l := c.base(3)
		l.SheddableShare = 0.5
		r, err := runShed(l, ctl)
		if err != nil {
			return res, fmt.Errorf("priority, %s: %w", ctl.Name, err)
		}
		res.Priority = append(res.Priority, summarizePriority(l, ctl, r))
		if ctl.is(ours) {
			res.Samples[2] = r
		}
	}
	for _, sigma := range variableSpreads {
		u := c.base(0.5)
		u.Spread = sigma
		un, err := runShed(u, shedControl{Name: "unloaded", Honour: true})
		if err != nil {
			return res, err
		}
		for _, ctl := range variableControls(c.Capacity) {
			l := c.base(3)
			l.Spread = sigma
			r, err := runShed(l, ctl)
			if err != nil {
				return res, fmt.Errorf("variable latency σ %v, %s: %w", sigma, ctl.Name, err)
			}
			res.Variable = append(res.Variable, variableRow{Spread: sigma, UnloadedP99: un.p99(), shedRow: summarize(l, ctl, r)})
		}
	}
	return res, nil
}

// variableSpreads are the σ of the lognormal work of the variable-latency
// rows: 0.5 (a p99 about 2.7 times the mean) and 1 (about 6 times).
var variableSpreads = []float64{0.5, 1}

// variableRow is one control in the overload with variable work.
type variableRow struct {
	Spread      float64
	UnloadedP99 time.Duration
	shedRow
}

// variableControls are the rows with variable work: a fixed limit, the
// adaptive Limiter and Gradient2's constants, with clients that honour
// Retry-After.
func variableControls(capacity int) []shedControl {
	c := shedControls(capacity)
	return []shedControl{c[2], c[4], comparedLimiters()[0]}
}
