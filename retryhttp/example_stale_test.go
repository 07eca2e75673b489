package retryhttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
)

// A Transport with a StaleCache answers a GET that failed for good with the
// last good response, when the origin allowed it with stale-if-error or
// the caller asks with WithStaleIfError; IsStale tells it apart.
func ExampleNewStaleCache() {
	var down atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Cache-Control", "max-age=5, stale-if-error=300")
		fmt.Fprint(w, "prices v1")
	}))
	defer srv.Close()

	cache, err := retryhttp.NewStaleCache(retryhttp.StaleOptions{MaxBytes: 8 << 20, MaxEntryBytes: 256 << 10})
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: &retryhttp.Transport{
		Policy: retry.Policy{MaxAttempts: 2, BaseBackoff: time.Millisecond},
		Stale:  cache,
	}}
	show := func(ctx context.Context) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := client.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Printf("%d %q stale=%v\n", resp.StatusCode, b, retryhttp.IsStale(resp))
	}
	show(context.Background())
	down.Store(true)
	show(context.Background())
	show(retryhttp.WithStaleIfError(context.Background(), -1)) // this read must be current
	// Output:
	// 200 "prices v1" stale=false
	// 200 "prices v1" stale=true
	// 503 "" stale=false
}

// WithStaleIfError is the caller's own fallback: an origin that sent no
// stale-if-error is down, and a read that accepts an answer up to a
// minute old gets the last good one, its Age saying how old.
func ExampleWithStaleIfError() {
	clk := retrytest.NewClock()
	var down atomic.Bool
	origin := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		fmt.Fprint(w, "v1")
	})
	cache, _ := retryhttp.NewStaleCache(retryhttp.StaleOptions{})
	tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(origin), Stale: cache,
		Policy: retry.Policy{MaxAttempts: 1, Clock: clk}}
	get := func(ctx context.Context) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example/item", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Printf("%d %q stale=%v age=%q\n", resp.StatusCode, b, retryhttp.IsStale(resp), resp.Header.Get("Age"))
	}
	get(context.Background())
	down.Store(true)
	clk.Add(40 * time.Second)
	get(context.Background())
	get(retryhttp.WithStaleIfError(context.Background(), time.Minute))
	// Output:
	// 200 "v1" stale=false age=""
	// 502 "" stale=false age=""
	// 200 "v1" stale=true age="40"
}
