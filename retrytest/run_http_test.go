package retrytest_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
)

// Concurrent requests through one retrying Transport, against a real
// server on loopback, share the Transport's fake clock under Run: each
// request's first attempt gets a 503, and each Trace shows its own wait.
func TestRunConcurrentHTTPRequests(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++
		first := seen[r.URL.Path] == 1
		mu.Unlock()
		if first {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()

	const n = 50
	clk := retrytest.NewClock()
	p := retry.Policy{Clock: clk, Jitter: retry.NoJitter, MaxElapsed: time.Second}
	client := &http.Client{Transport: &retryhttp.Transport{Policy: p}}
	defer client.CloseIdleConnections()
	traces := make([]retry.Trace, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			clk.Run(func() {
				req, _ := http.NewRequest(http.MethodGet, srv.URL+"/"+string(rune('A'+i)), nil)
				req = req.WithContext(retryhttp.WithTrace(req.Context(), &traces[i]))
				resp, err := client.Do(req)
				if assert.NoError(t, err, "request %d", i) {
					assert.Equal(t, http.StatusOK, resp.StatusCode)
					resp.Body.Close()
				}
			})
		})
	}
	wg.Wait()
	for i, tr := range traces {
		assert.Equal(t, []time.Duration{200 * time.Millisecond}, tr.Waits(), "request %d", i)
		assert.Equal(t, 200*time.Millisecond, tr.Elapsed(), "request %d: its own wait only", i)
	}
	assert.Zero(t, clk.Pending())
}
