package queue_test

import (
	"context"
	"errors"
	"fmt"
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

// flat is a Policy whose waits are exactly its backoffs, so that tests can
// name them: 100ms, then 200ms, 400ms, … Time is synctest's.
func flat(attempts int) retry.Policy {
	return retry.Policy{MaxAttempts: attempts, BaseBackoff: 100 * time.Millisecond, Jitter: retry.NoJitter}
}

// A publish that fails twice, the second time with a broker's wait,
// succeeds at the third attempt, after the backoff and then the broker's
// wait plus the backoff.
func TestPublishRetriesTransientFailures(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := newBroker()
		b.script("orders", queue.ErrUnavailable, &queue.OverloadedError{After: 2 * time.Second})
		pol := flat(4)
		var retried []string
		pol.OnRetry = func(_ context.Context, a retry.Attempt, wait time.Duration) {
			retried = append(retried, fmt.Sprintf("attempt %d (%s), then %v", a.Number, a.Reason, wait))
		}
		p := newPublisher(t, b, queue.Options{Policy: pol})

		start := time.Now()
		tr, err := p.Publish(t.Context(), "orders", []byte("m1"))
		require.NoError(t, err)
		assert.Equal(t, retry.StopSuccess, tr.Stop())
		assert.Equal(t, 3, tr.Attempts())
		assert.Equal(t, []time.Duration{100 * time.Millisecond, 2200 * time.Millisecond}, tr.Waits())
		assert.Equal(t, 2300*time.Millisecond, time.Since(start), "fake time passed")
		assert.Equal(t, 2300*time.Millisecond, tr.Elapsed())
		assert.Equal(t, []string{"attempt 1 (unavailable), then 100ms", "attempt 2 (overloaded), then 2.2s"}, retried)
		assert.Equal(t, "3 attempts, waits [100ms 2.2s], 2.3s, ok", tr.String())
		assert.Len(t, b.published("orders"), 3)
	})
}

// An error the Classifier will not retry ends the call at once, and comes
// back as it is.
func TestPublishStopsAtAPermanentError(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := newBroker()
		b.fail("orders", fmt.Errorf("schema v3: %w", queue.ErrBadMessage))
		p := newPublisher(t, b, queue.Options{Policy: flat(4)})

		tr, err := p.Publish(t.Context(), "orders", []byte("bad"))
		require.ErrorIs(t, err, queue.ErrBadMessage)
		var se *retry.StopError
		assert.False(t, errors.As(err, &se), "the error is the attempt's, as it is: %v", err)
		assert.Equal(t, retry.StopNotRetryable, tr.Stop())
		assert.Equal(t, 1, tr.Attempts())
		assert.Equal(t, "bad message", tr.Last().Reason)
		assert.Len(t, b.published(""), 1)
	})
}

// A broker that keeps failing uses up MaxAttempts: the error matches
// ErrExhausted, ErrGaveUp and the last attempt's error.
func TestPublishExhaustsMaxAttempts(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := newBroker()
		b.fail("orders", queue.ErrUnavailable)
		p := newPublisher(t, b, queue.Options{Policy: flat(3)})

		tr, err := p.Publish(t.Context(), "orders", []byte("m"))
		require.ErrorIs(t, err, retry.ErrExhausted)
		assert.ErrorIs(t, err, retry.ErrGaveUp)
		assert.ErrorIs(t, err, queue.ErrUnavailable)
		var se *retry.StopError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, 3, se.Attempts)
		assert.Equal(t, retry.StopExhausted, tr.Stop())
		assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, tr.Waits())
		assert.Len(t, b.published(""), 3)
	})
}

// A next wait that would pass MaxElapsed ends the call at once with
// ErrDeadline, rather than after sleeping into it.
func TestPublishGivesUpBeforeAWaitPastMaxElapsed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := newBroker()
		b.script("orders", &queue.OverloadedError{After: 5 * time.Second})
		pol := flat(4)
		pol.MaxElapsed = 3 * time.Second
		p := newPublisher(t, b, queue.Options{Policy: pol})

		start := time.Now()
		tr, err := p.Publish(t.Context(), "orders", []byte("m"))
		require.ErrorIs(t, err, retry.ErrDeadline)
		assert.Equal(t, retry.StopDeadline, tr.Stop())
		assert.Equal(t, 1, tr.Attempts())
		assert.Zero(t, time.Since(start), "it did not sleep")
	})
}

// A cancel mid-wait is seen at once: the error matches the ctx's error
// and the last attempt's, and no attempt follows.
func TestPublishCanceledWhileWaiting(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := newBroker()
		b.fail("orders", queue.ErrUnavailable)
		pol := flat(4)
		pol.BaseBackoff = time.Minute
		p := newPublisher(t, b, queue.Options{Policy: pol})

		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		tr, err := p.Publish(ctx, "orders", []byte("m"))
		require.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, queue.ErrUnavailable)
		assert.NotErrorIs(t, err, retry.ErrGaveUp)
		assert.Equal(t, retry.StopContextDone, tr.Stop())
		assert.Equal(t, time.Second, time.Since(start))
		assert.Len(t, b.published(""), 1)

		tr, err = p.Publish(ctx, "orders", []byte("m"))
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 0, tr.Attempts(), "a ctx that ended first: nothing sent")
		assert.Len(t, b.published(""), 1)
	})
}

// An AttemptTimeout ends an attempt that hangs, and the attempt is
// retried.
func TestPublishTimesOutAHangingAttempt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		hung := 0
		c := clientFunc(func(ctx context.Context, topic string, msg []byte) error {
			if hung++; hung == 1 {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		})
		pol := flat(3)
		pol.AttemptTimeout = time.Second
		p := newPublisher(t, c, queue.Options{Policy: pol})

		tr, err := p.Publish(t.Context(), "orders", []byte("m"))
		require.NoError(t, err)
		assert.Equal(t, 2, tr.Attempts())
		first, _ := firstAttempt(tr)
		assert.Equal(t, "attempt timed out", first.Reason)
		assert.Equal(t, time.Second, first.Duration)
	})
}

func TestNewRefusesWhatItCannotUse(t *testing.T) {
	t.Parallel()
	_, err := queue.New(nil, queue.Options{})
	assert.Error(t, err, "no Client")
	_, err = queue.New(newBroker(), queue.Options{MaxRetryAfter: -time.Second})
	assert.Error(t, err, "negative MaxRetryAfter")
	_, err = queue.New(newBroker(), queue.Options{Policy: retry.Policy{BaseBackoff: -1}})
	assert.ErrorIs(t, err, retry.ErrInvalidPolicy)
}

// clientFunc is a Client made of a func.
type clientFunc func(ctx context.Context, topic string, msg []byte) error

func (f clientFunc) Publish(ctx context.Context, topic string, msg []byte) error {
	return f(ctx, topic, msg)
}

// firstAttempt returns the first attempt of tr.
func firstAttempt(tr retry.Trace) (retry.Attempt, bool) {
	for a := range tr.All() {
		return a, true
	}
	return retry.Attempt{}, false
}

// One Publisher serves many goroutines at once, over topics that share
// its guards and holds: each topic fails a few publishes, one of them with
// a wait that holds the topic back, and every message gets through.
func TestPublishConcurrently(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := newBroker()
		topics := []string{"orders", "payments", "audit"}
		for _, topic := range topics {
			b.script(topic, queue.ErrUnavailable, queue.ErrUnavailable, &queue.OverloadedError{After: time.Second}, queue.ErrUnavailable)
		}
		keyed := guard.Keyed{Budgets: new(guard.Budgets), Breakers: new(guard.Breakers), Throttles: new(guard.Throttles)}
		p := newPublisher(t, b, queue.Options{Policy: retry.Policy{MaxAttempts: 10}, Guards: keyed})

		var wg sync.WaitGroup
		errs := make([]error, 60)
		for i := range errs {
			wg.Go(func() {
				_, errs[i] = p.Publish(t.Context(), topics[i%len(topics)], fmt.Appendf(nil, "m%d", i))
			})
		}
		wg.Wait()
		sent := map[string]bool{}
		for _, pub := range b.published("") {
			sent[pub.msg] = true
		}
		for i, err := range errs {
			require.NoError(t, err, "m%d", i)
			assert.True(t, sent[fmt.Sprintf("m%d", i)], "m%d succeeded unsent", i)
		}
		assert.Len(t, b.published(""), len(errs)+4*len(topics), "one attempt more per failure")
	})
}
