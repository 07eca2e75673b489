package retry

import (
	"context"
	"sync/atomic"

	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/internal/loopvals"
)

// An HTTP client, a repository and a task queue that each retry three times
// make 27 calls to a service that is down. So a Do marks the ctx it gives
// op, and a Do that finds a live mark on its own ctx is nested inside
// another retry loop: unless its Policy sets RetryNested, it makes one
// attempt and leaves retrying to the loop outside, the one owner.
//
// The mark lives only as long as the loop that made it: a ctx that op keeps
// after Do returned (context.WithoutCancel, a goroutine or a job started
// from op, a stored ctx) carries a dead mark, and a Do on it retries as
// usual, since no loop outside will.

type nestedKey struct{}

// loopMark is the ctx of a retry loop's op: the ctx Do was given, marked.
type loopMark struct {
	context.Context
	// The outer loop's guards, so that a nested Do neither charges its
	// Budget twice nor consults its Breaker and Throttle again: the outer
	// loop admits and counts the attempt that the nested one makes.
	budget   *guard.Budget
	breaker  *guard.Breaker
	throttle *guard.Throttle
	done     atomic.Bool // set when the loop returns

	// vals is what the packages beside retry keep for the whole loop, such
	// as retryhttp's idempotency key of each write that op makes, so that
	// every attempt sends the same one.
	vals loopvals.Values
}

func (m *loopMark) Value(key any) any {
	switch key {
	case nestedKey{}:
		return m
	case loopvals.Key{}:
		if m.done.Load() {
			return nil // as outerLoop: a dead mark hides nothing and offers nothing
		}
		return &m.vals
	}
	return m.Context.Value(key)
}

// outerLoop returns the mark of the live retry loop whose op ctx is ctx,
// or nil if there is none.
func outerLoop(ctx context.Context) *loopMark {
	m, _ := ctx.Value(nestedKey{}).(*loopMark)
	if m == nil || m.done.Load() {
		return nil
	}
	return m
}

// A slot of a guard.Limiter is for one attempt to its downstream: a loop
// inside that attempt (a Do in op, a Transport below) that shares the
// Limiter must not take a second one, which would count the attempt twice
// and, with a limit of one, wait for itself. So a loop whose attempts hold
// slots marks op's ctx with its Limiter, whatever its MaxAttempts and
// whether or not it is nested, and a loop inside that finds its own
// Limiter so marked leaves it to the outer one, even with RetryNested. The
// mark is a ctx of its own, over the loopMark if there is one, so that a
// loop without a Limiter allocates no more for it.

// heldKey is the ctx key under which a loop whose attempt holds a slot of
// l answers.
type heldKey struct{ l *guard.Limiter }

// slotMark is op's ctx for a loop whose attempts hold slots of limiter.
type slotMark struct {
	context.Context
	limiter *guard.Limiter
	done    *atomic.Bool // set when the loop returns: its loopMark's, or own
	own     atomic.Bool
}

// markLoop returns ctx marked as the ctx of a loop of p's, with the flag
// that ends the mark: a loopMark, and over it a slotMark when p has a
// Limiter, the two in one allocation.
func markLoop(ctx context.Context, p *Policy) (context.Context, *atomic.Bool) {
	if p.Limiter == nil {
		m := &loopMark{Context: ctx, budget: p.Budget, breaker: p.Breaker, throttle: p.Throttle}
		return m, &m.done
	}
	both := new(struct {
		loop loopMark
		slot slotMark
	})
	m, s := &both.loop, &both.slot
	m.Context, m.budget, m.breaker, m.throttle = ctx, p.Budget, p.Breaker, p.Throttle
	s.Context, s.limiter, s.done = m, p.Limiter, &m.done
	return s, &m.done
}

// markSlots returns parent marked as the ctx of a loop whose attempts hold
// slots of l, and the flag that ends the mark: done, the loopMark's, if
// not nil.
func markSlots(parent context.Context, l *guard.Limiter, done *atomic.Bool) (context.Context, *atomic.Bool) {
	m := &slotMark{Context: parent, limiter: l, done: done}
	if done == nil {
		m.done = &m.own
	}
	return m, m.done
}

func (m *slotMark) Value(key any) any {
	if key == (heldKey{m.limiter}) && !m.done.Load() {
		return m
	}
	return m.Context.Value(key)
}

// slotHeld reports whether a live loop outside, whose op ctx is ctx, holds
// a slot of l for the attempt that this call runs in.
func slotHeld(ctx context.Context, l *guard.Limiter) bool {
	return ctx.Value(heldKey{l}) != nil
}
