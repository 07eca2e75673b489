package shed

import (
	"math"
	"net/http"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/internal/limiter"
)

// Algorithm is how a Limiter moves its limit.
type Algorithm uint8

const (
	// Gradient, the default, moves the limit with the ratio of the
	// minimum latency to the recent one, as Netflix's Gradient2 and Envoy's
	// adaptive concurrency filter do: every 25 requests, the limit becomes
	// limit×g + h, smoothed, where g = Tolerance × minimum / recent,
	// clamped to [0.5, 1], and h is √limit while g is 1 and at most 4
	// (Gradient2's queue size) once it is not. The recent latency is the
	// mean of the last two windows of 25; the minimum is measured by a
	// probe: after 20 windows in which the limit was in use, and at most
	// once every 10 s, the limit halves, so that what queued inside the
	// server drains, for as many windows (one to four) as its average needs
	// to be known within 5%; that average is the minimum until the next
	// probe (as Envoy measures its minRTT). So the limit grows by √limit
	// while latency stays within Tolerance of its minimum and the limit is
	// in use, and settles at about Tolerance × the capacity + 4 when work
	// queues inside the server.
	Gradient Algorithm = iota
	// AIMD adds one to the limit every 25 requests while their average
	// latency stays under twice the minimum (measured as Gradient does) and
	// the limit is in use, and takes off a tenth when it does not or when
	// work reports [Overloaded].
	AIMD
	// Fixed keeps the limit at InitialLimit.
	Fixed
)

// Defaults of the zero Options.
const (
	DefaultInitialLimit  = 20
	DefaultMinLimit      = 1
	DefaultMaxLimit      = 1000
	DefaultMaxQueue      = 50
	DefaultQueueTimeout  = 100 * time.Millisecond
	DefaultQueueFactor   = 1.0 / 3
	DefaultMaxRetryAfter = 30 * time.Second
	DefaultTolerance     = 1.1
	DefaultSmoothing     = limiter.DefaultSmoothing
)

// Options configures [New]. Every zero field stands for the default in
// brackets, so the zero Options is an adaptive Limiter that starts at 20
// concurrent requests, queues 50 for at most a third of the minimum
// latency, and suggests waits of at most 30 s. Whatever the Algorithm, a request of a higher [Priority]
// is served first, and any reported [Overloaded] takes a tenth off an
// adaptive limit.
type Options struct {
	// Algorithm moves the limit [Gradient].
	Algorithm Algorithm
	// InitialLimit is the limit to start from, and Fixed's limit [20].
	InitialLimit int
	// MinLimit and MaxLimit bound an adaptive limit [1, 1000].
	MinLimit, MaxLimit int
	// MaxQueue is how many requests may wait for a slot [50]; beyond it a
	// request is shed at once (or takes the place of one of a lower
	// Priority). Negative: no queue.
	MaxQueue int
	// QueueTimeout is how long a request may wait for a slot before it is
	// shed [a third of the minimum latency, at least 1 ms and at most
	// DefaultQueueTimeout, 100 ms, which it is until a latency is
	// measured]. Once the queue has stayed busy for longer than that
	// (sustained overload, not a burst), the newest are served first, and
	// a request queued may wait a twentieth of a QueueTimeout that is set
	// (the default is short enough already): the CoDel idea, with
	// Facebook's adaptive LIFO, so that the requests served are the ones
	// whose callers still wait. The default keeps an admitted request's
	// wait for a slot under its own latency: at 3× the capacity, with
	// clients that honour Retry-After, the admitted p99 stays under twice
	// the unloaded one (docs/shedding.md).
	QueueTimeout time.Duration
	// Priority gives a request's Priority [HeaderPriority].
	Priority func(*http.Request) Priority
	// MaxRetryAfter caps the wait a shed response suggests [30s]; at least
	// one second, since Retry-After counts whole seconds.
	MaxRetryAfter time.Duration
	// Clock is the time source [the real clock]: latencies, queue
	// timeouts.
	Clock retry.Clock
	// Tolerance is how many times its minimum the recent latency may be
	// before Gradient takes it as queueing [1.1]; at least 1. Netflix's
	// Gradient2 uses 1.5, which a client's bulkhead keeps
	// (guard.LimiterOptions); a server that waits for its latency to grow
	// half again before it sheds lets every admitted request wait that much
	// longer inside it.
	Tolerance float64
	// Smoothing is the weight of each new Gradient limit (0, 1] [0.2].
	Smoothing float64
}

// resolve validates o and fills its defaults.
func (o Options) resolve() (Options, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.InitialLimit, DefaultInitialLimit)
	def(&o.MinLimit, min(DefaultMinLimit, o.InitialLimit))
	def(&o.MaxLimit, max(DefaultMaxLimit, o.InitialLimit))
	def(&o.MaxQueue, DefaultMaxQueue)
	if o.MaxRetryAfter == 0 {
		o.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if o.Tolerance == 0 {
		o.Tolerance = DefaultTolerance
	}
	if o.Smoothing == 0 {
		o.Smoothing = DefaultSmoothing
	}
	if o.Priority == nil {
		o.Priority = HeaderPriority
	}
	switch {
	case o.Algorithm > Fixed:
		return o, invalid("Options.Algorithm %d is not Gradient, AIMD or Fixed", o.Algorithm)
	case o.InitialLimit < 0:
		return o, invalid("Options.InitialLimit %d is negative", o.InitialLimit)
	case o.MinLimit < 0:
		return o, invalid("Options.MinLimit %d is negative", o.MinLimit)
	case o.MaxLimit < o.MinLimit:
		return o, invalid("Options.MaxLimit %d is below MinLimit %d", o.MaxLimit, o.MinLimit)
	case o.InitialLimit < o.MinLimit || o.InitialLimit > o.MaxLimit:
		return o, invalid("Options.InitialLimit %d is outside [MinLimit %d, MaxLimit %d]", o.InitialLimit, o.MinLimit, o.MaxLimit)
	case o.QueueTimeout < 0:
		return o, invalid("Options.QueueTimeout %v is negative", o.QueueTimeout)
	case o.MaxRetryAfter < time.Second:
		return o, invalid("Options.MaxRetryAfter %v is under the one second a Retry-After can say", o.MaxRetryAfter)
	case !(o.Tolerance >= 1) || math.IsInf(o.Tolerance, 0):
		return o, invalid("Options.Tolerance %v is not a finite number of at least 1", o.Tolerance)
	case !(o.Smoothing > 0 && o.Smoothing <= 1):
		return o, invalid("Options.Smoothing %v is not in (0, 1]", o.Smoothing)
	}
	return o, nil
}

// config is o, resolved, as the engine takes it.
func (o Options) config() limiter.Config {
	q := max(o.MaxQueue, 0)
	c := limiter.Config{
		Algorithm: limiter.Algorithm(o.Algorithm), Initial: o.InitialLimit,
		Min: o.MinLimit, Max: o.MaxLimit, MaxQueue: q, QueueTimeout: o.QueueTimeout,
		Tolerance: o.Tolerance, Smoothing: o.Smoothing,
	}
	if c.QueueTimeout == 0 {
		c.QueueTimeout, c.QueueFactor = DefaultQueueTimeout, DefaultQueueFactor
	}
	return c
}
