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
