package chaos_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/chaos"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chaos.Transport below a retryhttp.Transport: every attempt is drawn for,
// the Budget stops the retries of a dependency that always fails, and the
// Breaker then stops the calls, before any more attempts are sent.
func TestSeamRetryhttpGuards(t *testing.T) {
	t.Parallel()
	srv, served := countingServer(t)
	sw := on(1)
	br, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 4, FailureRatio: 0.5, OpenFor: time.Hour})
	require.NoError(t, err)
	budget, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 4, TokenRatio: 0.1})
	require.NoError(t, err)
	client := &http.Client{Transport: &retryhttp.Transport{
		Base:   chaos.Transport(nil, chaos.Fault{Switch: sw, Rate: 1, Status: http.StatusServiceUnavailable}),
		Policy: retry.Policy{MaxAttempts: 3, Budget: budget, Breaker: br, Clock: retrytest.NewAutoClock()},
	}}
	defer client.CloseIdleConnections()

	var refused int
	for range 10 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			require.ErrorIs(t, err, retry.ErrBreakerOpen)
			refused++
			continue
		}
		resp.Body.Close()
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	}
	// The first call makes 2 attempts (4 tokens, 3 after the first
	// failure, 2 after the second: no more retries); the next three make 1
	// each; the fourth failed call opens the breaker, which refuses the
	// other six unsent.
	assert.Equal(t, 6, refused, "calls refused by the breaker")
	assert.Equal(t, []chaos.FaultStats{{Name: "503", Requests: 5, Injected: 5}}, sw.Stats().Faults, "attempts sent")
	assert.Zero(t, served.Load(), "requests that reached the server")
	assert.Equal(t, guard.BreakerOpen, br.State())
}

// chaos.Handler in front of the idempotency middleware, answering 503s and
// losing answers after the order was made, with a client that retries
// under one key per order: every order is made once, and every client
// hears of its own.
func TestSeamIdempotencyNoDuplicates(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		made = map[string]int{} // item → times made
	)
	orders := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		item, _ := io.ReadAll(r.Body)
		mu.Lock()
		made[string(item)]++
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(item)
	})
	mw, err := idempotency.New(idempotency.Options{})
	require.NoError(t, err)
	sw := on(35)
	srv := httptest.NewServer(chaos.Handler(mw.Handler(orders),
		chaos.Fault{Switch: sw, Rate: 0.2, Status: http.StatusServiceUnavailable},
		chaos.Fault{Switch: sw, Rate: 0.3, Drop: true},
	))
	defer srv.Close()
	client := &http.Client{Transport: &retryhttp.Transport{
		Policy:             retry.Policy{MaxAttempts: 20, Clock: retrytest.NewAutoClock()},
		AutoIdempotencyKey: true,
	}}
	defer client.CloseIdleConnections()

	const n = 60
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			item := fmt.Sprint("item-", i)
			resp, err := client.Post(srv.URL+"/orders", "text/plain", bytes.NewBufferString(item))
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusCreated || string(body) != item {
				errs[i] = fmt.Errorf("%s: %d %q", item, resp.StatusCode, body)
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.Len(t, made, n)
	for item, times := range made {
		assert.Equal(t, 1, times, "%s made", item)
	}
	for _, f := range sw.Stats().Faults {
		assert.Positive(t, f.Injected, "%s never injected: the test proves nothing", f.Name)
	}
}
