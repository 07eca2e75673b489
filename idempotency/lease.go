package idempotency

import (
	"context"
	"errors"
	"time"
)

// The lease renewal of a flight: every Lease/3 while the handler runs, so
// that a handler slower than the lease keeps its key. A renewal that fails
// for another reason than a lost lease is tried again at the next tick:
// the lease outlives two missed renewals. When the store says the lease is
// lost, the handler's ctx ends with ErrLeaseLost and renewal stops.
//
// It needs no goroutine of its own: each tick is a timer callback, so a
// request that ends before its first renewal, as most do, costs one timer.

func (f *flight) startRenewal() {
	f.mu.Lock()
	f.arm()
	f.mu.Unlock()
}

// arm sets the next tick. f.mu is held.
func (f *flight) arm() {
	every := f.m.opts.Lease / 3
	if f.m.opts.Clock == nil {
		if f.timer == nil {
			f.timer = time.AfterFunc(every, f.tick)
		} else {
			f.timer.Reset(every)
		}
		return
	}
	ctx, cancel := f.m.opts.Clock.WithTimeout(context.Background(), every)
	f.stopTic, f.endTic = context.AfterFunc(ctx, f.tick), cancel
}

// disarm stops the pending tick, if any. f.mu is held.
func (f *flight) disarm() {
	if f.timer != nil {
		f.timer.Stop()
	}
	if f.endTic != nil {
		f.stopTic() // first, so that ending the context does not run the tick
		f.endTic()
		f.stopTic, f.endTic = nil, nil
	}
}

func (f *flight) tick() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	f.disarm() // releases a fired context of Options.Clock
	ctx, cancel := f.m.storeCtx(f.base)
	err := f.m.store.Renew(ctx, f.key, f.token, f.m.opts.Lease)
	cancel()
	if errors.Is(err, ErrLeaseLost) {
		f.stopped = true
		f.cancel(ErrLeaseLost)
		return
	}
	f.arm()
}

// stopRenewal stops the renewal and waits for one in progress, so that
// none comes after it returns. It may be called more than once.
func (f *flight) stopRenewal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.stopped {
		f.stopped = true
		f.disarm()
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
