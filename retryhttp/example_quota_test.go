package retryhttp_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry/retryhttp"
)

// ParseQuota reads what a response says of its origin's quota: here, the
// draft's RateLimit field, whose tighter policy binds.
func ExampleParseQuota() {
	h := http.Header{}
	h.Set("RateLimit", `"minute";r=0;t=12, "day";r=4000;t=50000`)
	q, ok := retryhttp.ParseQuota(h, time.Now(), time.Minute)
	fmt.Println(ok, q.Remaining, q.Reset, q.Exhausted())

	// GitHub's form: X-RateLimit-Reset above 10⁹ is a Unix time.
	now := time.Unix(1_780_000_000, 0)
	h = http.Header{}
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset", "1780000030")
	q, _ = retryhttp.ParseQuota(h, now, time.Minute)
	fmt.Println(q.Reset)
	// Output:
	// true 0 12s true
	// 30s
}

// ParseRetryAfterMillis reads retry-after-ms and x-ms-retry-after-ms,
// bounded as Retry-After is.
func ExampleParseRetryAfterMillis() {
	for _, v := range []string{"1500", "2.5", "-1", "99999999999"} {
		d, ok := retryhttp.ParseRetryAfterMillis(v, time.Minute)
		fmt.Println(v, d, ok)
	}
	// Output:
	// 1500 1.5s true
	// 2.5 2.5ms true
	// -1 0s false
	// 99999999999 1m0s true
}

// A response that says the quota is used up holds the origin until the
// reset: with HoldFailFast the next request fails at once, unsent, rather
// than meeting a 429 (HoldWait, the default, would wait the 30s).
func ExampleQuotaMode() {
	var seen atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		w.Header().Set("RateLimit", `"default";r=0;t=30`)
		fmt.Fprint(w, "the last one this window")
	}))
	defer srv.Close()
	client := &http.Client{Transport: &retryhttp.Transport{
		Quota: retryhttp.QuotaHold, // the default; QuotaSpread also paces, QuotaOff ignores quotas
		Hold:  retryhttp.HoldFailFast,
	}}

	resp, err := client.Get(srv.URL)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode)

	_, err = client.Get(srv.URL)
	fmt.Println("held:", errors.Is(err, retryhttp.ErrHostHeld))
	fmt.Println("the server saw", seen.Load())
	// Output:
	// 200
	// held: true
	// the server saw 1
}
