package retryhttp_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryhttp"
)

// Breakers and Throttles give each origin a breaker and a throttle of its
// own: an origin that is down fails fast, without a request sent, and the
// others are not touched.
func ExampleTransport_breakers() {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	defer down.Close()
	breakers, _ := guard.NewBreakers(guard.BreakerOptions{MinCalls: 2}, 1000)
	throttles, _ := guard.NewThrottles(guard.ThrottleOptions{}, 1000)
	client := &http.Client{Transport: &retryhttp.Transport{
		Policy: retry.Policy{MaxAttempts: 1},
		Guards: guard.Keyed{Breakers: breakers, Throttles: throttles},
	}}
	for range 2 {
		resp, err := client.Get(down.URL)
		if err == nil {
			resp.Body.Close()
		}
	}
	_, err := client.Get(down.URL)
	fmt.Println(errors.Is(err, retry.ErrBreakerOpen), breakers.Get(down.URL).State())
	// Output:
	// true open
}
