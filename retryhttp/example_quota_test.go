package retryhttp_test

import (
	"fmt"
	"net/http"
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

// A Transport that spreads the requests left in a quota over its window,
// rather than only holding them back when it is used up.
func ExampleQuotaMode() {
	tr := &retryhttp.Transport{Quota: retryhttp.QuotaSpread}
	client := &http.Client{Transport: tr}
	_ = client
	fmt.Println(tr.Quota)
	// Output: spread
}
