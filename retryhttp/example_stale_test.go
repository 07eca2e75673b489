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
