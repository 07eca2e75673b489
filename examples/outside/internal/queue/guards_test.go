package queue_test

import (
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

// changes collects what a watcher hears.
type changes struct {
	mu   sync.Mutex
	list []guard.Change
}

func (c *changes) add(ch guard.Change) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, ch)
}

func (c *changes) get() []guard.Change {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]guard.Change(nil), c.list...)
}

// A topic's breaker opens after its calls fail, and then refuses the
// topic's calls without sending them, while another topic's go through;
// after OpenFor a probe that succeeds closes it. The test's own watcher and
// the Publisher's log both see each change.
func TestBreakerOpensPerTopicAndRefusesWithoutSending(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		breakers, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 2, FailureRatio: 0.5, OpenFor: time.Minute, Probes: 1}, 16)
		require.NoError(t, err)
		var seen changes
		stop, err := breakers.Watch(seen.add)
		require.NoError(t, err)
		defer stop()
		var log logBuffer
		b := newBroker()
		b.fail("orders", queue.ErrUnavailable)
		p := newPublisher(t, b, queue.Options{Policy: flat(2), Guards: guard.Keyed{Breakers: breakers}, Logger: log.logger()})

		for range 2 {
			_, err := p.Publish(t.Context(), "orders", []byte("m"))
			require.ErrorIs(t, err, retry.ErrExhausted)
		}
		assert.Equal(t, guard.BreakerOpen, breakers.Get("orders").State())
		assert.Len(t, b.published("orders"), 4)

		tr, err := p.Publish(t.Context(), "orders", []byte("m"))
		require.ErrorIs(t, err, retry.ErrBreakerOpen)
		assert.ErrorIs(t, err, retry.ErrGaveUp)
		assert.Equal(t, retry.StopBreakerOpen, tr.Stop())
		assert.Equal(t, 0, tr.Attempts())
		assert.Len(t, b.published("orders"), 4, "a refused call is not sent")

		_, err = p.Publish(t.Context(), "payments", []byte("m"))
		require.NoError(t, err, "another topic's breaker is closed")

		b.fail("orders", nil)
		time.Sleep(time.Minute)
		synctest.Wait() // the watched breaker's timer has moved it to half-open
		_, err = p.Publish(t.Context(), "orders", []byte("m"))
		require.NoError(t, err, "the probe")
		assert.Equal(t, guard.BreakerClosed, breakers.Get("orders").State())

		want := []guard.Change{
			{Key: "orders", Breaker: true, From: guard.BreakerClosed, To: guard.BreakerOpen},
			{Key: "orders", Breaker: true, From: guard.BreakerOpen, To: guard.BreakerHalfOpen},
			{Key: "orders", Breaker: true, From: guard.BreakerHalfOpen, To: guard.BreakerClosed},
		}
		assert.Equal(t, want, seen.get())
		assert.Equal(t, `level=WARN msg="queue: breaker changed" topic=orders from=closed to=open
level=INFO msg="queue: breaker changed" topic=orders from=open to=half-open
level=INFO msg="queue: breaker changed" topic=orders from=half-open to=closed
`, log.String())
	})
}

// A topic whose broker rejects most publishes has them shed on the client
// by its throttle, unsent, and the Publisher logs that it started to shed.
func TestThrottleShedsAnOverloadedTopic(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		throttles, err := guard.NewThrottles(guard.ThrottleOptions{K: 1.01, MinRequests: 4, MaxReject: 1, Rand: func() float64 { return 0 }}, 16)
		require.NoError(t, err)
		var log logBuffer
		b := newBroker()
		b.fail("orders", &queue.OverloadedError{})
		p := newPublisher(t, b, queue.Options{Policy: flat(1), Guards: guard.Keyed{Throttles: throttles}, Logger: log.logger()})

		for range 4 {
			_, err := p.Publish(t.Context(), "orders", []byte("m"))
			require.ErrorIs(t, err, retry.ErrExhausted)
		}
		tr, err := p.Publish(t.Context(), "orders", []byte("m"))
		require.ErrorIs(t, err, retry.ErrThrottled)
		assert.ErrorIs(t, err, retry.ErrGaveUp)
		assert.Equal(t, retry.StopThrottled, tr.Stop())
		assert.Equal(t, 0, tr.Attempts())
		assert.Len(t, b.published("orders"), 4, "a shed publish is not sent")
		assert.Equal(t, "level=WARN msg=\"queue: throttle changed\" topic=orders shedding=true\n", log.String())

		_, err = p.Publish(t.Context(), "payments", []byte("m"))
		require.NoError(t, err, "another topic's throttle does not shed")
	})
}

// Each topic's budget limits its own retries: one topic that keeps
// failing spends its tokens, not the others'.
func TestBudgetPerTopic(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		budgets, err := guard.NewBudgets(guard.BudgetOptions{MaxTokens: 4}, 16)
		require.NoError(t, err)
		b := newBroker()
		b.fail("orders", queue.ErrUnavailable)
		b.script("payments", queue.ErrUnavailable)
		p := newPublisher(t, b, queue.Options{Policy: flat(5), Guards: guard.Keyed{Budgets: budgets}})

		tr, err := p.Publish(t.Context(), "orders", []byte("m"))
		require.ErrorIs(t, err, retry.ErrBudgetExhausted)
		assert.ErrorIs(t, err, queue.ErrUnavailable)
		assert.Equal(t, retry.StopBudget, tr.Stop())
		assert.Equal(t, 2, tr.Attempts(), "a budget of 4 tokens allows retries while more than 2 are left")
		assert.InDelta(t, 2.0, budgets.Get("orders").Tokens(), 1e-9)

		tr, err = p.Publish(t.Context(), "payments", []byte("m"))
		require.NoError(t, err, "the payments budget is untouched by orders")
		assert.Equal(t, 2, tr.Attempts())
		assert.InDelta(t, 3.1, budgets.Get("payments").Tokens(), 1e-9, "a failure takes a token, a success gives back 0.1")
	})
}

// A Policy's own guard wins over the keyed one, and is shared by every
// topic: WithGuards fills only what the Policy lacks.
func TestPolicyGuardIsSharedByEveryTopic(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		shared, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1, OpenFor: time.Minute})
		require.NoError(t, err)
		b := newBroker()
		b.fail("orders", queue.ErrUnavailable)
		pol := flat(1)
		pol.Breaker = shared
		p := newPublisher(t, b, queue.Options{Policy: pol, Guards: guard.Keyed{Breakers: new(guard.Breakers)}})

		_, err = p.Publish(t.Context(), "orders", []byte("m"))
		require.ErrorIs(t, err, retry.ErrExhausted)
		_, err = p.Publish(t.Context(), "payments", []byte("m"))
		require.ErrorIs(t, err, retry.ErrBreakerOpen, "one breaker for every topic")
	})
}
