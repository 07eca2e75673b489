package retrydebug_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/stormguard/retry/retrydebug"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Many goroutines record through every entry point while others read: the
// totals come out exact (and -race finds no race).
func TestRecorderIsSafeForConcurrentUse(t *testing.T) {
	t.Parallel()
	const workers, perWorker = 8, 300
	rec := retrydebug.NewRecorder(16, 12)
	ok, retried2, gaveUp := succeeded(t), retried(t, 2), exhausted(t, 3)
	hook := rec.OnDone("shared")

	var wg sync.WaitGroup
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = rec.Snapshot()
				resp, _ := get(t, rec, "/debug/retries?op=shared")
				assert.Equal(t, http.StatusOK, resp.StatusCode)
			}
		})
	}
	for w := range workers {
		wg.Go(func() {
			b, err := newBudget()
			if !assert.NoError(t, err) {
				return
			}
			rec.Budget(fmt.Sprint("budget ", w%3), b)
			for i := range perWorker {
				hook(context.Background(), ok, nil)
				rec.Record(fmt.Sprint("name ", (w*perWorker+i)%20), retried2) // 20 names, 12 kept
				rec.RecordHTTP(context.Background(), retryhttp.Summary{Method: "GET", Origin: fmt.Sprint("https://h", i%2), Status: 503, Trace: gaveUp})
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()

	var calls, attempts, gaveUps int64
	s := rec.Snapshot()
	for _, op := range s.Operations {
		calls += op.Calls
		attempts += op.Attempts
		gaveUps += op.GaveUp
		assert.LessOrEqual(t, len(op.Recent), 16)
	}
	const n = workers * perWorker
	assert.EqualValues(t, 3*n, calls)
	assert.EqualValues(t, n*(1+3+3), attempts)
	assert.EqualValues(t, n, gaveUps)
	require.Len(t, s.Operations, 13, "12 names and the overflow bucket")
	assert.Len(t, s.Budgets, 3)
}
