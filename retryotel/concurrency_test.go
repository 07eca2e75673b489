package retryotel_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retryotel"
	"github.com/stormguard/retry/retrytest"
)

// Many goroutines record through both entry points, and with new names,
// at once: the totals come out exact (and -race finds no race).
func TestObserverIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	const workers, perWorker = 8, 200
	s := newSink(t, retryotel.WithMaxOperations(5))
	ok, _ := retrytest.Do(context.Background(), retrytest.Script().Call, retry.Policy{})
	retried, _ := retrytest.Do(context.Background(), retrytest.Script(errUnavailable).Call, retry.Policy{})
	hook := s.obs.OnDone("shared")
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				hook(context.Background(), ok, nil)
				s.obs.OnDone(fmt.Sprint("name ", (w+i)%10))(context.Background(), retried, nil)
				s.obs.RecordHTTP(context.Background(), retryhttp.Summary{Method: "GET", Origin: fmt.Sprint("https://h", i%3), Trace: retried})
			}
		})
	}
	wg.Wait()
	m := s.metrics(t)
	var calls, attempts, ops float64
	for _, p := range points(t, m[retryotel.CallsName]) {
		calls += p.sum
		ops++
	}
	for _, p := range points(t, m[retryotel.AttemptsName]) {
		attempts += p.sum
	}
	const n = workers * perWorker
	assert.Equal(t, float64(3*n), calls)
	assert.Equal(t, float64(n*(1+2+2)), attempts)
	assert.Equal(t, 6.0, ops, "5 names and _OTHER")
	assert.Len(t, s.spans.Ended(), 3*n)
}
