package idempotency

import (
	"context"
	"errors"
	"time"
)

// The lease of a flight. The store granted it until end: the start of the
// Claim, or of the last Renew that succeeded, plus Lease. (The start, not
// the return: the store may have set its expiry at any moment of the call,
// so only the start is a time by which the store's lease surely runs.)
//
// The renewal is a deadline on the clock, not a wait: one timer, due a
// third of a lease after the start of the last store call, so that a
// handler slower than the lease keeps its key. A renewal that fails for
// another reason than a lost lease (the store is unreachable) is tried
// again a third of a lease later, never later than end; at end, with no
// renewal granted, the lease is lost whatever the store says: the
// handler's ctx ends with cause ErrLeaseLost, since another request may
// claim the key from then on. While a Renew call runs, the timer is due at
// end, so that a store call that hangs cannot keep the ctx alive either.
//
// Deadlines work on every clock: the real one (time.AfterFunc), a
// *clock.Mock, retrytest.Clock, and an auto-advancing clock, which moves
// time for waits only and so never fires a renewal by itself, where a wait
// would be skipped at once and start the next one: renewals without end.
//
// It needs no goroutine of its own: each firing is a timer callback. And
// on real time a request that ends before its first renewal, as most do,
// costs no timer: the sweeper holds it until then (sweep.go).

// renewal is a flight's lease and its renewal. Its fields are guarded by
// flight.mu, which is never held during a store call.
type renewal struct {
	end      time.Time     // the lease the store granted runs until then
	due      time.Time     // when the pending timer is set for
	stopped  bool          // no more renewals; the timer is released
	renewing chan struct{} // non-nil while a Renew call runs; closed when it returns

	timer   *time.Timer        // the pending timer, on the real clock
	stopTic func() bool        // the pending timer on Options.Clock: its AfterFunc's stop
	endTic  context.CancelFunc // and its context's cancel
}

// startRenewal starts the renewal of a lease granted by a Claim that
// started at claimed. A swept flight sets no timer but waits on the
// sweeper until its renewal or its HandlerTimeout, whichever comes first.
func (f *flight) startRenewal(claimed time.Time) {
	f.mu.Lock()
	f.end = claimed.Add(f.m.opts.Lease)
	due := claimed.Add(f.m.opts.Lease / 3)
	if !f.swept {
		f.armAt(due)
		f.mu.Unlock()
		return
	}
	f.due = due
	f.mu.Unlock()
	if f.lazy && f.hctx.deadline.Before(due) {
		due = f.hctx.deadline
	}
	f.m.sweep.add(f, due)
}

// armAt sets the timer for t, in place of any pending one. f.mu is held.
func (f *flight) armAt(t time.Time) {
	f.due = t
	if f.m.opts.Clock == nil {
		if f.timer == nil {
			f.timer = time.AfterFunc(time.Until(t), f.fire)
		} else {
			f.timer.Reset(time.Until(t))
		}
		return
	}
	f.disarm()
	ctx, cancel := f.m.opts.Clock.WithDeadline(context.Background(), t)
	f.stopTic, f.endTic = context.AfterFunc(ctx, f.fire), cancel
}

// disarm stops the pending timer, if any. f.mu is held.
func (f *flight) disarm() {
	if f.timer != nil {
		f.timer.Stop()
	}
	if f.endTic != nil {
		f.stopTic() // first, so that ending the context does not fire it
		f.endTic()
		f.stopTic, f.endTic = nil, nil
	}
}

// fire is the timer's callback: the lease ends, or it is time to renew.
func (f *flight) fire() {
	f.mu.Lock()
	now := f.m.now()
	switch {
	case f.stopped:
		f.mu.Unlock()
		return
	case !now.Before(f.end):
		f.lose()
		f.mu.Unlock()
		return
	case f.renewing != nil || now.Before(f.due):
		f.mu.Unlock() // a timer that was reset as it fired
		return
	}
	done := make(chan struct{})
	f.renewing = done
	f.armAt(f.end) // while the call runs
	f.mu.Unlock()

	ctx, cancel := f.m.storeCtx(f.base)
	err := f.m.store.Renew(ctx, f.key, f.token, f.m.opts.Lease)
	cancel()

	f.mu.Lock()
	defer f.mu.Unlock()
	f.renewing = nil
	close(done)
	switch {
	case f.stopped:
		return
	case err == nil:
		f.end = now.Add(f.m.opts.Lease)
	case errors.Is(err, ErrLeaseLost):
		f.lose()
		return
	}
	// After a failure too: the next try a third of a lease after this one,
	// and none past the end of the lease, when it is lost.
	next := now.Add(f.m.opts.Lease / 3)
	if f.end.Before(next) {
		next = f.end
	}
	f.armAt(next)
}

// lose ends the handler's ctx with ErrLeaseLost and stops the renewal.
// f.mu is held.
func (f *flight) lose() {
	f.stopped = true
	f.disarm()
	f.endCtx(ErrLeaseLost)
}

// stopRenewal stops the renewal and waits for a Renew call in progress,
// so that none comes after it returns. It may be called more than once.
func (f *flight) stopRenewal() {
	if f.swept {
		f.m.sweep.remove(f)
	}
	f.mu.Lock()
	if !f.stopped {
		f.stopped = true
		f.disarm()
	}
	renewing := f.renewing
	f.mu.Unlock()
	if renewing != nil {
		<-renewing // bounded by StoreTimeout
	}
}

// storeCtx bounds a store call by StoreTimeout. It runs on real time even
// with a fake Clock: it guards against a hung store, and tests make a
// store fail by returning an error, not by waiting. A MemoryStore never
// blocks, so its calls get no timer.
func (m *Middleware) storeCtx(parent context.Context) (context.Context, context.CancelFunc) {
	if m.inMemory {
		return parent, func() {}
	}
	return context.WithTimeout(parent, m.opts.StoreTimeout)
}
