package queue_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/examples/outside/internal/queue"
	"github.com/stormguard/retry/guard"
)

// A broker's "overloaded, retry after 10s" holds back the next publish to
// the same topic, from another call, until the 10s are over, and not a
// publish to another topic.
func TestHoldHoldsBackTheTopicOnly(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := newBroker()
		b.script("orders", &queue.OverloadedError{After: 10 * time.Second})
		holds := new(guard.Holds)
		p := newPublisher(t, b, queue.Options{Policy: flat(1), Guards: guard.Keyed{Holds: holds}})

		start := time.Now()
		_, err := p.Publish(t.Context(), "orders", []byte("first"))
		require.ErrorIs(t, err, retry.ErrExhausted)
		assert.Equal(t, start.Add(10*time.Second), holds.Until("orders"))

		var wg sync.WaitGroup
		var held retry.Trace
		var heldErr error
		wg.Go(func() { held, heldErr = p.Publish(t.Context(), "orders", []byte("second")) })
		synctest.Wait() // the second publish waits on the hold
		_, err = p.Publish(t.Context(), "payments", []byte("other"))
		require.NoError(t, err)
		assert.Len(t, b.published("orders"), 1, "the second publish is held back")
		assert.Len(t, b.published("payments"), 1, "another topic is not held")
		assert.Equal(t, start, b.published("payments")[0].at)

		wg.Wait()
		require.NoError(t, heldErr)
		assert.Equal(t, 1, held.Attempts(), "a wait in a hold is not an attempt")
		got := b.published("orders")
		require.Len(t, got, 2)
		assert.Equal(t, "second", got[1].msg)
		assert.Equal(t, start.Add(10*time.Second), got[1].at, "sent when the hold was over")
		assert.True(t, holds.Until("orders").IsZero(), "its answer cleared the hold")
	})
}

// A publish that could not outwait a hold before its deadline stops at
// once, unsent, with an error that says so.
func TestHoldPastTheDeadlineFailsAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := newBroker()
		b.script("orders", &queue.OverloadedError{After: 10 * time.Second})
		p := newPublisher(t, b, queue.Options{Policy: flat(1)})
		_, err := p.Publish(t.Context(), "orders", []byte("first"))
		require.ErrorIs(t, err, retry.ErrExhausted)

		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		start := time.Now()
		tr, err := p.Publish(ctx, "orders", []byte("second"))
		require.ErrorIs(t, err, guard.ErrHeld)
		assert.ErrorIs(t, err, retry.ErrDeadline)
		var he *guard.HeldError
		require.ErrorAs(t, err, &he)
		assert.Equal(t, 10*time.Second, he.Left)
		assert.Equal(t, retry.StopDeadline, tr.Stop())
		assert.Equal(t, 0, tr.Attempts())
		assert.Zero(t, time.Since(start), "it did not wait")
		assert.Len(t, b.published("orders"), 1)
	})
}

// A broker's wait is capped at MaxRetryAfter, for the hold and for the
// retry alike.
func TestRetryAfterIsCapped(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := newBroker()
		b.script("orders", &queue.OverloadedError{After: time.Hour})
		holds := new(guard.Holds)
		pol := flat(2)
		var heldUntil time.Time
		pol.OnRetry = func(context.Context, retry.Attempt, time.Duration) { heldUntil = holds.Until("orders") }
		p := newPublisher(t, b, queue.Options{Policy: pol, Guards: guard.Keyed{Holds: holds}, MaxRetryAfter: 5 * time.Second})

		start := time.Now()
		tr, err := p.Publish(t.Context(), "orders", []byte("m"))
		require.NoError(t, err)
		assert.Equal(t, start.Add(5*time.Second), heldUntil, "the hold")
		assert.Equal(t, []time.Duration{5*time.Second + 100*time.Millisecond}, tr.Waits(), "the cap, then the backoff")
		assert.Equal(t, start.Add(5100*time.Millisecond), b.published("orders")[1].at)
	})
}
