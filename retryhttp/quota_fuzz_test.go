package retryhttp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
)

// hostileSeeds are values a broken or hostile server might send: each
// seed of the fuzz targets below puts one in every field, so that they
// run as tests with every `go test`.
var hostileSeeds = []string{
	"", "0", "1", "-1", "+5", "1.5", "1e3", "NaN", "Inf", "-Inf", "0x10",
	"999999999", "1000000000", "1000000001", "1000000000.5", "1780000030",
	"99999999999999999999999999999999", "18446744073709551616", "9223372036854775807",
	"5, 6", "5,5", ",", " 7 ", "\t", "soon",
	`"default";r=0;t=30`, `default;r=0;t=30`, `"a";r=50;t=30, "b";r=0;t=5`,
	`"a";r=-1;t=5`, `"a";r=0;t=-5`, `"a";r=0;t=1000000000000000`, `"a";r=0;t=999999999999999`,
	`"a";r=0;t=5,`, `("a" "b");r=0;t=5`, `"a;r=0`, `"a";r=0;t="5"`, `"a";r=0;t=?1`,
	`"a";r=0;t=@1780000030`, `"a";r=0;t=%"x"`, `"a";r=0;pk=:AAA=:`, `limit=100, remaining=0, reset=5`,
	`"day";q=100;w=86400`, `"a";q=1;w=0`, `"a";q=1;w=-5`, `"\"";r=0;t=5`, `"é";r=0;t=5`,
}

// FuzzParseQuota checks ParseQuota and ParseRetryAfterMillis against
// their docs for any header values and any positive limit: they never
// panic, every duration is in [0, limit], nothing is claimed when they
// say nothing, a quota is used up only with a reset to wait for, and the
// spaces around a structured field change nothing.
func FuzzParseQuota(f *testing.F) {
	for i, s := range hostileSeeds {
		other := hostileSeeds[(i*7+3)%len(hostileSeeds)]
		f.Add(s, other, s, other, s, int64(time.Minute))
		f.Add(other, s, "0", s, other, int64(i)*int64(time.Second))
	}
	f.Fuzz(func(t *testing.T, rateLimit, policy, remaining, reset, millis string, limit int64) {
		lim := time.Duration(limit)
		if lim <= 0 { // the docs require a positive limit; MaxRetryAfter makes one
			lim = time.Minute
		}
		h := http.Header{}
		for key, v := range map[string]string{"RateLimit": rateLimit, "RateLimit-Policy": policy,
			"X-RateLimit-Remaining": remaining, "X-RateLimit-Reset": reset} {
			if v != "" {
				h.Set(key, v)
			}
		}
		q, ok := retryhttp.ParseQuota(h, parseNow, lim)
		if q.Remaining < 0 || q.Reset < 0 || q.Reset > lim || q.Interval < 0 || q.Interval > lim {
			t.Fatalf("ParseQuota(%v, limit %v) = %+v: out of range", h, lim, q)
		}
		if !ok && q != (retryhttp.QuotaState{}) {
			t.Fatalf("ParseQuota(%v) = %+v, false: claims a quota it did not read", h, q)
		}
		if q.Exhausted() && q.Reset <= 0 {
			t.Fatalf("ParseQuota(%v) = %+v: used up with no reset", h, q)
		}
		if rateLimit != "" {
			padded := h.Clone()
			padded.Set("RateLimit", "  "+rateLimit+" ")
			if p, pok := retryhttp.ParseQuota(padded, parseNow, lim); p != q || pok != ok {
				t.Fatalf("ParseQuota with RateLimit %q = %+v, %v; unpadded %+v, %v", padded.Get("RateLimit"), p, pok, q, ok)
			}
		}
		d, ok := retryhttp.ParseRetryAfterMillis(millis, lim)
		if d < 0 || d > lim || !ok && d != 0 {
			t.Fatalf("ParseRetryAfterMillis(%q, limit %v) = %v, %v: out of range", millis, lim, d, ok)
		}
		if ok && strings.TrimSpace(millis) != millis && d != mustMillis(t, strings.TrimSpace(millis), lim) {
			t.Fatalf("ParseRetryAfterMillis(%q) = %v: padding changed it", millis, d)
		}
	})
}

func mustMillis(t *testing.T, v string, lim time.Duration) time.Duration {
	d, ok := retryhttp.ParseRetryAfterMillis(v, lim)
	if !ok {
		t.Fatalf("ParseRetryAfterMillis(%q) is not ok, padded it was", v)
	}
	return d
}

// FuzzTransportHostileQuota sends, through a Transport, a request whose
// answer (a 429, or a 200) carries hostile quota and retry-after-ms
// headers, then a second request with a ten-minute deadline: whatever
// the headers say, neither waits longer than MaxRetryAfter (a second
// here), and neither panics. Time is synctest's.
func FuzzTransportHostileQuota(f *testing.F) {
	for i, s := range hostileSeeds {
		other := hostileSeeds[(i*5+1)%len(hostileSeeds)]
		f.Add(s, "0", other, s, i%2 == 0, uint8(i%3))
	}
	f.Fuzz(func(t *testing.T, rateLimit, remaining, reset, millis string, refuse bool, mode uint8) {
		const maxRetryAfter = time.Second
		synctest.Test(t, func(t *testing.T) {
			first := true
			base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
				h := http.Header{}
				code := http.StatusOK
				if first {
					first = false
					setIf(h, "RateLimit", rateLimit)
					setIf(h, "X-RateLimit-Remaining", remaining)
					setIf(h, "X-RateLimit-Reset", reset)
					setIf(h, "Retry-After-Ms", millis)
					if refuse {
						code = http.StatusTooManyRequests
					}
				}
				return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
			})
			tr := &retryhttp.Transport{Base: base, Policy: retry.Policy{MaxAttempts: 2, Jitter: retry.NoJitter, BaseBackoff: time.Millisecond},
				MaxRetryAfter: maxRetryAfter, Quota: retryhttp.QuotaMode(mode % 3)}
			for range 2 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.test/", nil)
				start := time.Now()
				resp, err := tr.RoundTrip(req)
				if err == nil {
					resp.Body.Close()
				}
				cancel()
				// A retry waits for the cap and a probe's share of the
				// spread at most, plus the backoff.
				if took := time.Since(start); took > 2*maxRetryAfter {
					t.Fatalf("a request took %v, more than MaxRetryAfter allows (%v)", took, maxRetryAfter)
				}
			}
		})
	})
}

func setIf(h http.Header, key, v string) {
	if v != "" {
		h.Set(key, v)
	}
}
