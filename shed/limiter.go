package shed

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/stormguard/retry/internal/limiter"
)

// Outcome is what the work admitted by [Limiter.Acquire] showed of the
// load, given to its release func.
type Outcome uint8

const (
	// Success: the work ran; its latency feeds the algorithm.
	Success Outcome = iota
	// Overloaded: the work itself showed overload (a timeout, a
	// dependency's refusal); an adaptive limit backs off.
	Overloaded
	// Ignored: the work says nothing of the load (a client's cancel, a
	// request refused before any work); no sample.
	Ignored
)

// Limiter is a concurrency limit for a server, adaptive by default; see
// the package doc. Make one with [New]; it is safe for concurrent use.
type Limiter struct {
	eng   *limiter.Limiter
	opts  Options
	clock limiter.Clock
}

// New returns a Limiter, or an error matching [ErrInvalidOptions] that
// names the first field of o that cannot be used.
func New(o Options) (*Limiter, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	var clk limiter.Clock = clock.New()
	if o.Clock != nil {
		clk = o.Clock
	}
	return &Limiter{eng: limiter.New(o.config()), opts: o, clock: clk}, nil
}

// Acquire admits a request of priority p at once, queues it until a slot
// is free, or refuses it with an error matching [ErrShed] (read its wait
// with [RetryAfterOf]); if ctx ends while it waits, it returns ctx's
// error. Once admitted, the caller must call release exactly once, with
// what the work showed; the time from Acquire to release is a latency
// sample.
func (l *Limiter) Acquire(ctx context.Context, p Priority) (release func(Outcome), err error) {
	t, err := l.acquire(ctx, p)
	if err != nil {
		return nil, err
	}
	return func(o Outcome) { l.release(t, o) }, nil
}

// acquire is Acquire without the release func's allocation: the Handler
// keeps the start time itself.
func (l *Limiter) acquire(ctx context.Context, p Priority) (time.Time, error) {
	lv := p.level()
	if l.eng.TryAcquire(lv) {
		return l.clock.Now(), nil
	}
	reason := ""
	switch l.eng.Acquire(ctx, lv, l.clock) {
	case limiter.Admitted:
		return l.clock.Now(), nil
	case limiter.Canceled:
		return time.Time{}, context.Cause(ctx)
	case limiter.QueueFull:
		reason = "queue full"
	case limiter.Outranked:
		reason = "a higher priority is being shed"
	case limiter.TimedOut:
		reason = "queue timeout"
	case limiter.Evicted:
		reason = "evicted"
	}
	return time.Time{}, &ShedError{RetryAfter: l.retryAfter(lv), Reason: reason}
}

func (l *Limiter) release(start time.Time, o Outcome) {
	l.eng.Release(start, l.clock.Now(), limiter.Outcome(o))
}

// retryAfter is the jittered wait a shed request is told.
func (l *Limiter) retryAfter(level int) time.Duration {
	return l.eng.RetryAfter(l.clock.Now(), l.opts.MaxRetryAfter, rand.Float64(), level)
}

// Stats is a snapshot of a Limiter.
type Stats struct {
	// Limit is the current limit on requests in flight.
	Limit int
	// InFlight and Queued are the requests admitted and not yet released,
	// and those waiting for a slot.
	InFlight, Queued int
	// Admitted and Shed count requests since New: admitted at once or
	// from the queue, and refused (a full queue, a queue timeout, an
	// eviction by a higher Priority).
	Admitted, Shed uint64
	// QueueTimeouts counts the shed that waited their whole QueueTimeout.
	QueueTimeouts uint64
	// Latency is the recent latency (the last 25 requests' average) and
	// MinLatency the minimum the Gradient algorithm compares it with.
	Latency, MinLatency time.Duration
}

// Stats returns a snapshot of l's state and counts.
func (l *Limiter) Stats() Stats {
	s := l.eng.Stats()
	return Stats{
		Limit: s.Limit, InFlight: s.InFlight, Queued: s.Queued,
		Admitted: s.Admitted, Shed: s.Shed, QueueTimeouts: s.Timeouts,
		Latency: s.Latency, MinLatency: s.MinLatency,
	}
}
