package guard

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry/internal/limiter"
)

// Defaults of a zero field of [LimiterOptions].
const (
	// defaultLimiterMax is resilience4j's bulkhead default
	// (maxConcurrentCalls).
	defaultLimiterMax          = 25
	defaultLimiterQueueTimeout = 100 * time.Millisecond
)

// LimiterOptions configures [NewLimiter]. A zero field stands for the
// default in brackets, so the zero LimiterOptions is a fixed limit of 25
// attempts in flight, with 25 more waiting at most 100ms for a slot.
type LimiterOptions struct {
	// Max is the most attempts in flight at once [25]. An Adaptive limit
	// moves between 1 and Max.
	Max int
	// MaxQueue is how many attempts may wait for a slot [Max]; beyond it an
	// attempt is refused at once. Negative: no queue, a full limiter
	// refuses at once.
	MaxQueue int
	// QueueTimeout is how long an attempt may wait for a slot before it is
	// refused [100ms]. Once the queue has stayed busy for longer than that
	// (sustained overload, not a burst), an attempt queued may wait a
	// twentieth of it: the CoDel idea, as package shed applies it.
	QueueTimeout time.Duration
	// Adaptive lets the limit follow the downstream's latency, below Max
	// [false: the limit is Max]. It starts at Max and moves by the
	// Gradient algorithm of package shed (Netflix's Gradient2, Envoy's
	// adaptive concurrency): down when the latency of the recent attempts
	// grows past 1.5 times its minimum, by a tenth when attempts fail in a
	// way worth a retry, and back up while latency stays near its minimum.
	Adaptive bool
	// Clock is the time source of the queue's timeouts and of an Adaptive
	// limit's latencies [real time].
	Clock Clock
}

// Limiter is a bulkhead: a limit on the attempts in flight to one
// downstream service, so that a slow one cannot take every goroutine,
// connection and buffer of its callers, and its callers stop piling work
// on it when it slows down (the client half of the limit that package
// shed keeps on a server, on the same engine).
//
// An attempt holds a slot from just before it is sent until its outcome
// is known, never across the wait between attempts. A full Limiter queues
// the attempt, up to MaxQueue of them, each for at most QueueTimeout or
// until its ctx ends; an attempt it refuses is never sent, counts as
// nothing for the Budget, the Breaker and the Throttle, and retry.Do stops
// with retry.StopLimited and an error matching retry.ErrLimited and
// retry.ErrGaveUp. A loop takes slots through a [Call] ([Call.Limit]).
//
// Share one Limiter per downstream service ([Limiters] keeps one per key).
// The zero Limiter is ready to use, with the defaults of a zero
// [LimiterOptions]. A Limiter is safe for concurrent use. A fixed limit
// (not Adaptive) admits and releases an attempt with a few atomic
// operations and no lock or clock read while a slot is free and nobody
// waits.
type Limiter struct {
	st   atomic.Pointer[limiterState]
	once sync.Once // makes st for the zero Limiter
}

// limiterState is a Limiter's engine and what a Call needs of it,
// immutable once published.
type limiterState struct {
	eng      *limiter.Limiter
	clk      limiter.Clock
	adaptive bool
	refused  atomic.Uint64 // refused at once by Admit, which does not queue
}

// NewLimiter returns a Limiter with the options o, or an error matching
// [ErrInvalidOptions] that names the first option that cannot be used.
func NewLimiter(o LimiterOptions) (*Limiter, error) {
	st, err := o.state()
	if err != nil {
		return nil, err
	}
	l := new(Limiter)
	l.st.Store(st)
	return l, nil
}

// state validates o and makes the engine it configures.
func (o LimiterOptions) state() (*limiterState, error) {
	switch {
	case o.Max < 0:
		return nil, invalid("LimiterOptions.Max %d is negative", o.Max)
	case o.QueueTimeout < 0:
		return nil, invalid("LimiterOptions.QueueTimeout %v is negative", o.QueueTimeout)
	}
	if o.Max == 0 {
		o.Max = defaultLimiterMax
	}
	if o.MaxQueue == 0 {
		o.MaxQueue = o.Max
	}
	if o.QueueTimeout == 0 {
		o.QueueTimeout = defaultLimiterQueueTimeout
	}
	c := limiter.Config{
		Algorithm: limiter.Fixed, Initial: o.Max, Min: 1, Max: o.Max,
		MaxQueue: max(o.MaxQueue, 0), QueueTimeout: o.QueueTimeout,
		Tolerance: limiter.DefaultTolerance, Smoothing: limiter.DefaultSmoothing,
		NoSamples: !o.Adaptive, // a fixed limit keeps no latencies: no lock to release
	}
	if o.Adaptive {
		c.Algorithm = limiter.Gradient
	}
	return &limiterState{eng: limiter.New(c), clk: queueClock{o.Clock}, adaptive: o.Adaptive}, nil
}

// state returns l's engine, made with the defaults for the zero Limiter.
func (l *Limiter) state() *limiterState {
	if st := l.st.Load(); st != nil {
		return st
	}
	l.once.Do(func() {
		if l.st.Load() == nil {
			st, _ := LimiterOptions{}.state() // the zero options are valid
			l.st.Store(st)
		}
	})
	return l.st.Load()
}

// LimiterStats is a snapshot of a [Limiter].
type LimiterStats struct {
	// Limit is the current limit on attempts in flight: Max, or where an
	// Adaptive limit stands.
	Limit int
	// InFlight and Queued are the attempts holding a slot, and those
	// waiting for one.
	InFlight, Queued int
	// Admitted and Refused count attempts since the Limiter was made:
	// given a slot, at once or from the queue, and refused one (a full
	// queue, a queue timeout).
	Admitted, Refused uint64
}

// Stats returns a snapshot of l's state and counts.
func (l *Limiter) Stats() LimiterStats {
	st := l.state()
	s := st.eng.Stats()
	return LimiterStats{Limit: s.Limit, InFlight: s.InFlight, Queued: s.Queued,
		Admitted: s.Admitted, Refused: s.Shed + st.refused.Load()}
}

// idle reports whether l holds no attempt and queues none: a Limiters may
// forget it without letting more than its limit through.
func (l *Limiter) idle() bool {
	s := l.state().eng.Stats()
	return s.InFlight == 0 && s.Queued == 0
}

// take takes a slot: at once if one is free, else, if wait, from the
// queue while ctx lives. It reports whether it did, and when (for an
// adaptive limit's latency; zero for a fixed one).
func (st *limiterState) take(ctx context.Context, wait bool) (time.Time, bool) {
	if !st.eng.TryAcquire(0) {
		if !wait {
			st.refused.Add(1)
			return time.Time{}, false
		}
		if st.eng.Acquire(ctx, 0, st.clk) != limiter.Admitted {
			return time.Time{}, false
		}
	}
	if st.adaptive {
		return st.clk.Now(), true
	}
	return time.Time{}, true
}

// give gives back a slot taken at start, with what the attempt showed of
// the load: an attempt worth a retry (a 503, a timeout) is an overload
// for an adaptive limit, a cancel by its caller says nothing.
func (st *limiterState) give(start time.Time, o Outcome) {
	var now time.Time
	if st.adaptive || st.eng.Waiting() {
		now = st.clk.Now()
	}
	lo := limiter.Ignored
	switch o {
	case OutcomeSuccess:
		lo = limiter.Success
	case OutcomeFailure:
		lo = limiter.Overloaded
	}
	st.eng.Release(start, now, lo)
}

// queueClock is the Clock a Limiter's queue waits on. A queue timeout is a
// deadline, not a wait between attempts, so it is set with the Clock's
// WithDeadline on context.Background(), as the Clock's contract asks, and
// ends early when the waiter's ctx does.
type queueClock struct{ clk Clock }

func (q queueClock) Now() time.Time { return now(q.clk) }

func (q queueClock) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if q.clk == nil {
		return context.WithTimeout(parent, d)
	}
	timer, stopTimer := q.clk.WithDeadline(context.Background(), q.clk.Now().Add(d))
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(timer, cancel)
	return ctx, func() { stop(); stopTimer(); cancel() }
}
