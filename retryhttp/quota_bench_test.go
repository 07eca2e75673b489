package retryhttp_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stormguard/retry/retryhttp"
)

// BenchmarkParseQuota is the cost of reading a response's quota: for a
// response without one (two map lookups), the draft's RateLimit with one
// policy and with two and their RateLimit-Policy, and GitHub's
// X-RateLimit pair with a Unix time.
func BenchmarkParseQuota(b *testing.B) {
	now := time.Unix(1_780_000_000, 0)
	cases := []struct {
		name string
		h    http.Header
	}{
		{"none", header("Content-Type", "application/json", "Date", "Tue, 01 Dec 2026 23:00:00 GMT")},
		{"RateLimit", header("RateLimit", `"default";r=50;t=30`)},
		{"RateLimit-two-policies", header("RateLimit", `"minute";r=50;t=30, "day";r=4000`,
			"RateLimit-Policy", `"minute";q=100;w=60, "day";q=5000;w=86400`)},
		{"X-RateLimit", header("X-RateLimit-Remaining", "4999", "X-RateLimit-Reset", "1780000030")},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				retryhttp.ParseQuota(c.h, now, time.Minute)
			}
		})
	}
}

// BenchmarkQuotaRoundTrip is a whole RoundTrip over an in-memory Base
// whose answers carry a RateLimit field that leaves requests: with
// QuotaOff, with QuotaHold (the field is read), and with QuotaSpread
// (read, and a pace set and its turn taken, at an interval too short to
// wait: 1s over 10⁶ requests).
func BenchmarkQuotaRoundTrip(b *testing.B) {
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		h := http.Header{"Ratelimit": {`"default";r=1000000;t=1`}}
		return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
	})
	for _, mode := range []retryhttp.QuotaMode{retryhttp.QuotaOff, retryhttp.QuotaHold, retryhttp.QuotaSpread} {
		b.Run(mode.String(), func(b *testing.B) {
			tr := &retryhttp.Transport{Base: base, Quota: mode}
			req, _ := http.NewRequest(http.MethodGet, "http://api.test/", nil)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := tr.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}
