package limiter

import (
	"context"
	"time"
)

// Clock is what a blocking Acquire needs of time; guard.Clock has it.
type Clock interface {
	Now() time.Time
	WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc)
}

// Result is how a blocking Acquire ended.
type Result uint8

const (
	// Admitted: the caller holds a slot and must Release it.
	Admitted Result = iota
	// QueueFull: no slot, and no queue place for the caller's level.
	QueueFull
	// Outranked: a higher level was shed lately, so the caller's is
	// refused at once.
	Outranked
	// TimedOut: the caller waited as long as it could.
	TimedOut
	// Evicted: the caller's queue place went to a higher level.
	Evicted
	// Canceled: the caller's ctx ended first.
	Canceled
)

// Acquire takes a slot for level, waiting in the queue if it must, and
// returns when it holds one or cannot. It waits with clk, so that a fake
// clock drives the queue's timeouts.
func (l *Limiter) Acquire(ctx context.Context, level int, clk Clock) Result {
	if l.TryAcquire(level) {
		return Admitted
	}
	if ctx.Err() != nil {
		return Canceled
	}
	if l.cfg.MaxQueue <= 0 { // no queue: refused without making a waiter
		switch l.Refuse(level, clk.Now()) {
		case Granted:
			return Admitted
		case Barred:
			return Outranked
		}
		return QueueFull
	}
	ready := make(chan bool, 1)
	w := &Waiter{Notify: func(granted bool) { ready <- granted }}
	adm, timeout := l.Enqueue(w, level, clk.Now())
	switch adm {
	case Granted:
		return Admitted
	case Refused:
		return QueueFull
	case Barred:
		return Outranked
	}
	tctx, cancel := clk.WithTimeout(ctx, timeout)
	defer cancel()
	select {
	case granted := <-ready:
		return admitted(granted)
	case <-tctx.Done():
	}
	timedOut := ctx.Err() == nil
	if l.Cancel(w, timedOut, clk.Now()) {
		if timedOut {
			return TimedOut
		}
		return Canceled
	}
	// A slot or an eviction came as the wait ended: take what it was.
	if granted := <-ready; !granted {
		return Evicted
	}
	if !timedOut {
		now := clk.Now()
		l.Release(now, now, Ignored)
		return Canceled
	}
	return Admitted
}

func admitted(granted bool) Result {
	if granted {
		return Admitted
	}
	return Evicted
}
