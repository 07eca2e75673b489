package queue_test

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/examples/outside/internal/queue"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrydebug"
	"github.com/stormguard/retry/retrytest"
)

// flaky is a broker that is overloaded once, with a wait, then
// unreachable once, then takes the message.
type flaky struct{ calls int }

func (f *flaky) Publish(ctx context.Context, topic string, msg []byte) error {
	f.calls++
	switch f.calls {
	case 1:
		return &queue.OverloadedError{After: time.Second}
	case 2:
		return queue.ErrUnavailable
	}
	return nil
}

// A Publisher with guards per topic, whose calls a retrydebug.Recorder
// shows. The broker's wait comes before the backoff of the first retry.
func ExamplePublisher() {
	rec := retrydebug.NewRecorder(0, 0)
	p, err := queue.New(&flaky{}, queue.Options{
		Policy: retry.Policy{
			BaseBackoff: 100 * time.Millisecond,
			Jitter:      retry.NoJitter, // in a fleet, leave the FullJitter default
			Clock:       retrytest.NewAutoClock(),
			OnDone:      func(_ context.Context, t retry.Trace, _ error) { rec.Record("queue.publish", t) },
		},
		Guards: guard.Keyed{
			Budgets:   new(guard.Budgets),
			Breakers:  new(guard.Breakers),
			Throttles: new(guard.Throttles),
			Holds:     new(guard.Holds),
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()

	t, err := p.Publish(context.Background(), "orders", []byte(`{"order":1}`))
	fmt.Println(t, err)
	for a := range t.All() {
		fmt.Printf("attempt %d after %v: %s\n", a.Number, a.Wait, cmp.Or(a.Reason, "sent"))
	}
	op := rec.Snapshot().Operations[0]
	fmt.Println(op.Name, op.Calls, op.Attempts)
	// Output:
	// 3 attempts, waits [1.1s 200ms], 1.3s, ok <nil>
	// attempt 1 after 0s: overloaded
	// attempt 2 after 1.1s: unavailable
	// attempt 3 after 200ms: sent
	// queue.publish 1 3
}
