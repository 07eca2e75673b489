package retryhttp_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// windowed serves a quota of limit requests per fixed window, and says so
// on every answer, in the draft's RateLimit field or, with legacy, in
// X-RateLimit-Remaining and an X-RateLimit-Reset that is a Unix time
// (GitHub's form). A request beyond the quota gets a 429 with no
// Retry-After: only the quota says when to come back. Each answer takes
// 5ms, so that requests overlap.
type windowed struct {
	limit  int
	window time.Duration
	legacy bool

	mu       sync.Mutex
	start    time.Time
	used     int
	ok, over atomic.Int32
	sent     []time.Time // when each request arrived
}

func (s *windowed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	now := time.Now()
	if s.start.IsZero() {
		s.start = now
	}
	for !now.Before(s.start.Add(s.window)) {
		s.start, s.used = s.start.Add(s.window), 0
	}
	s.sent = append(s.sent, now)
	refused := s.used >= s.limit
	if !refused {
		s.used++
	}
	left, end := s.limit-s.used, s.start.Add(s.window)
	s.mu.Unlock()

	reset := int((end.Sub(now) + time.Second - 1) / time.Second) // whole seconds, rounded up
	if s.legacy {
		w.Header().Set("X-RateLimit-Remaining", strconv.Itoa(left))
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(end.Add(time.Second-1).Unix(), 10)) // rounded up
	} else {
		w.Header().Set("RateLimit", `"default";r=`+strconv.Itoa(left)+`;t=`+strconv.Itoa(reset))
		w.Header().Set("RateLimit-Policy", `"default";q=`+strconv.Itoa(s.limit)+`;w=`+strconv.Itoa(int(s.window/time.Second)))
	}
	time.Sleep(5 * time.Millisecond)
	if refused {
		s.over.Add(1)
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	s.ok.Add(1)
	_, _ = io.WriteString(w, "ok")
}

// 100 requests from two clients that share a Transport, to a server that
// takes 10 every 10s: once an answer says the quota is used up, the others
// wait for the reset instead of being sent to a 429, and all of them are
// served. Without quotas (QuotaOff), most are refused, and many of them
// for good.
func TestQuotaUsedUpByOneClientHoldsTheOthers(t *testing.T) {
	t.Parallel()
	for _, legacy := range []bool{false, true} {
		for _, mode := range []retryhttp.QuotaMode{retryhttp.QuotaHold, retryhttp.QuotaOff} {
			t.Run(mode.String()+map[bool]string{false: " RateLimit", true: " X-RateLimit"}[legacy], func(t *testing.T) {
				t.Parallel()
				synctest.Test(t, func(t *testing.T) {
					time.Sleep(time.Until(parseNow)) // to 2026: X-RateLimit-Reset is a Unix time above 10⁹
					srv := &windowed{limit: 10, window: 10 * time.Second, legacy: legacy}
					tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(srv), Quota: mode,
						Policy: retry.Policy{MaxAttempts: 4}}
					clients := []*http.Client{{Transport: tr}, {Transport: tr}}
					var wg sync.WaitGroup
					var served atomic.Int32
					for i := range 100 {
						time.Sleep(10 * time.Millisecond)
						wg.Go(func() {
							resp, err := clients[i%2].Get("http://api.test/")
							if assert.NoError(t, err) {
								if resp.StatusCode == 200 {
									served.Add(1)
								}
								resp.Body.Close()
							}
						})
					}
					wg.Wait()
					t.Logf("%v: %d requests served, %d refused with a 429", mode, srv.ok.Load(), srv.over.Load())
					if mode == retryhttp.QuotaHold {
						assert.Equal(t, int32(100), served.Load(), "all served")
						// Only the requests in flight when the quota ran out
						// (a 5ms answer) meet a 429.
						assert.LessOrEqual(t, srv.over.Load(), int32(10), "a 429 only for a request in flight")
					} else {
						assert.Greater(t, srv.over.Load(), int32(100), "each request learns for itself")
						assert.Less(t, served.Load(), int32(100))
					}
				})
			})
		}
	}
}

// quotaThenOK answers its first request with a 200 that says the quota is
// used up, in headers kv, and every later one with a plain 200.
func quotaThenOK(calls *atomic.Int32, kv ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			for i := 0; i+1 < len(kv); i += 2 {
				w.Header().Set(kv[i], kv[i+1])
			}
		}
		_, _ = io.WriteString(w, "ok")
	})
}

// X-RateLimit-Reset above 10⁹ is a Unix time, at or below a delay in
// seconds; one in the past, or more than a month away, is ignored, and
// one within a month holds no longer than MaxRetryAfter. The hold is seen through HoldFailFast's
// *guard.HeldError, which says how long it has left.
func TestQuotaResetEpochOrDelay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		reset func(now time.Time) string
		held  time.Duration // 0: not held
	}{
		{"delay", func(time.Time) string { return "30" }, 30 * time.Second},
		{"epoch", func(now time.Time) string { return strconv.FormatInt(now.Unix()+30, 10) }, 30 * time.Second},
		{"epoch in the past", func(now time.Time) string { return strconv.FormatInt(now.Unix()-30, 10) }, 0},
		{"just above 10^9: 2001", func(time.Time) string { return "1000000001" }, 0},
		{"a day ahead, capped", func(now time.Time) string { return strconv.FormatInt(now.Unix()+86400, 10) }, time.Minute},
		{"a day's delay, capped", func(time.Time) string { return "86400" }, time.Minute},
		{"10^9 is a delay of 31 years: ignored", func(time.Time) string { return "1000000000" }, 0},
		{"a century ahead: ignored", func(now time.Time) string { return strconv.FormatInt(now.Unix()+100*365*86400, 10) }, 0},
		{"garbage", func(time.Time) string { return "soon" }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				// synctest's clock starts in 2000, whose Unix times are
				// below 10⁹ (delays, then): move it to 2026, on a whole
				// second, so that a Unix time in seconds is exact.
				time.Sleep(time.Until(parseNow))
				var calls atomic.Int32
				h := quotaThenOK(&calls, "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", tt.reset(time.Now()))
				tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(h), Hold: retryhttp.HoldFailFast}
				resp, err := tr.RoundTrip(get(t, "http://api.test/"))
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, 200, resp.StatusCode, "the answer that used the quota up is the caller's")

				resp, err = tr.RoundTrip(get(t, "http://api.test/"))
				if tt.held == 0 {
					require.NoError(t, err, "not held")
					resp.Body.Close()
					assert.Equal(t, int32(2), calls.Load())
					return
				}
				var held *guard.HeldError
				require.ErrorAs(t, err, &held)
				require.ErrorIs(t, err, retryhttp.ErrHostHeld)
				assert.Equal(t, tt.held, held.Left)
				assert.Equal(t, int32(1), calls.Load(), "a held request is not sent")
			})
		})
	}
}

// A request that cannot wait for the reset (its MaxElapsed, or its ctx's
// deadline, comes first) fails at once with the held error rather than
// sleeping into its deadline; the Trace and OnDone's Summary say it was
// held, as for a Retry-After's hold, and it is never sent.
func TestQuotaResetAfterTheDeadlineFailsAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		h := quotaThenOK(&calls, "RateLimit", `"default";r=0;t=30`)
		var summaries []retryhttp.Summary
		tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(h),
			OnDone: func(_ context.Context, s retryhttp.Summary) { summaries = append(summaries, s) }}
		resp, err := tr.RoundTrip(get(t, "http://api.test/"))
		require.NoError(t, err)
		resp.Body.Close()

		for _, bound := range []string{"MaxElapsed", "ctx deadline"} {
			req := get(t, "http://api.test/")
			ctx := req.Context()
			if bound == "MaxElapsed" {
				ctx = retryhttp.WithPolicy(ctx, retry.Policy{MaxElapsed: 5 * time.Second})
			} else {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
			}
			var trace retry.Trace
			req = req.WithContext(retryhttp.WithTrace(ctx, &trace))
			start := time.Now()
			_, err = tr.RoundTrip(req)
			require.ErrorIs(t, err, retryhttp.ErrHostHeld, bound)
			assert.Zero(t, time.Since(start), "%s: failed at once, not at the deadline", bound)
			assert.Equal(t, "host held back (Retry-After)", trace.Last().Reason, bound)
			s := summaries[len(summaries)-1]
			assert.ErrorIs(t, s.Err, retryhttp.ErrHostHeld, bound)
			assert.Equal(t, 1, s.Trace.Attempts(), bound)
			assert.Equal(t, "host held back (Retry-After)", s.Trace.Last().Reason, bound)
		}
		assert.Equal(t, int32(1), calls.Load(), "no held request was sent")

		// A request that can wait, waits for the reset, then goes as a
		// probe, and its 200 clears the hold.
		start := time.Now()
		resp, err = tr.RoundTrip(get(t, "http://api.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 30*time.Second, time.Since(start))
		start = time.Now()
		for range 2 * guard.HoldProbes {
			resp, err = tr.RoundTrip(get(t, "http://api.test/"))
			require.NoError(t, err)
			resp.Body.Close()
		}
		assert.Zero(t, time.Since(start), "the probe's answer cleared the hold")
	})
}

// Under an outer retry.Do (one retry owner), a 429 whose quota is used up
// is retried by the outer loop after the quota's reset, carried as
// retry.RetryAfter; that retry is the hold's probe, not refused by it.
// Meanwhile another request to the origin waits for the hold rather than
// being sent to the 429.
func TestQuotaUnderAnOuterRetryLoop(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				w.Header().Set("RateLimit", `"default";r=0;t=2`)
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			_, _ = io.WriteString(w, "ok")
		})
		tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(h)}
		client := &http.Client{Transport: tr}
		var waits []time.Duration
		p := retry.Policy{MaxAttempts: 3, Jitter: retry.NoJitter, BaseBackoff: 100 * time.Millisecond,
			OnRetry: func(_ context.Context, _ retry.Attempt, wait time.Duration) { waits = append(waits, wait) }}
		other := make(chan time.Duration, 1)
		_, err := retry.Do(context.Background(), func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				if calls.Load() == 1 { // the 429 set the hold: another request now waits for it
					go func() {
						start := time.Now()
						resp, err := client.Get("http://api.test/other")
						if err == nil {
							resp.Body.Close()
						}
						other <- time.Since(start)
					}()
				}
				return err
			}
			defer resp.Body.Close()
			return nil
		}, p)
		require.NoError(t, err)
		assert.Equal(t, []time.Duration{2*time.Second + 100*time.Millisecond}, waits, "the outer loop waited for the reset")
		assert.GreaterOrEqual(t, <-other, 2*time.Second, "the other request waited for the hold")
		assert.Equal(t, int32(3), calls.Load(), "the 429, the outer retry and the other request: nothing sent into the hold")
	})
}

// Requests held back by a quota are not sent, so they count as nothing
// for the Breaker: a quota used up never opens it. The answer that used it
// up, a 200, is a success.
func TestQuotaHeldRequestsDoNotOpenTheBreaker(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		br, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 5, FailureRatio: 0.5})
		require.NoError(t, err)
		var calls atomic.Int32
		h := quotaThenOK(&calls, "RateLimit", `"default";r=0;t=30`)
		tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(h), Hold: retryhttp.HoldFailFast,
			Policy: retry.Policy{Breaker: br}}
		resp, err := tr.RoundTrip(get(t, "http://api.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		for range 20 {
			_, err := tr.RoundTrip(get(t, "http://api.test/"))
			require.ErrorIs(t, err, retryhttp.ErrHostHeld)
		}
		assert.Equal(t, guard.BreakerClosed, br.State(), "held requests are not failures")
		time.Sleep(30 * time.Second)
		resp, err = tr.RoundTrip(get(t, "http://api.test/"))
		require.NoError(t, err, "the reset has come: a probe goes")
		resp.Body.Close()
		assert.Equal(t, int32(2), calls.Load())
	})
}

// QuotaOff ignores quotas, and HoldOff keeps no holds, quotas' included;
// a retryconfig policy's "quota" takes the place of the Transport's.
func TestQuotaOffAndConfigured(t *testing.T) {
	t.Parallel()
	cfg, err := retryconfig.Parse([]byte(`{"policies": {"default": {"quota": "off"}, "strict": {"quota": "hold"}}}`))
	require.NoError(t, err)
	cfgOff := retryconfig.NewLive(cfg)
	tests := []struct {
		name string
		tr   *retryhttp.Transport
		ctx  func(context.Context) context.Context
		held bool
	}{
		{"QuotaHold", &retryhttp.Transport{}, nil, true},
		{"QuotaOff", &retryhttp.Transport{Quota: retryhttp.QuotaOff}, nil, false},
		{"HoldOff", &retryhttp.Transport{Hold: retryhttp.HoldOff}, nil, false},
		{"configured off", &retryhttp.Transport{Policies: cfgOff}, nil, false},
		{"configured hold over the Transport's off", &retryhttp.Transport{Policies: cfgOff, Quota: retryhttp.QuotaOff},
			func(ctx context.Context) context.Context { return retryhttp.WithPolicyName(ctx, "strict") }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				tr := tt.tr
				tr.Base = retrytest.HandlerTransport(quotaThenOK(&calls, "RateLimit", `"default";r=0;t=30`))
				tr.Hold = max(tr.Hold, retryhttp.HoldFailFast) // see a hold as an error
				for range 2 {
					req := get(t, "http://api.test/")
					if tt.ctx != nil {
						req = req.WithContext(tt.ctx(req.Context()))
					}
					resp, err := tr.RoundTrip(req)
					if err != nil {
						require.True(t, tt.held, "held: %v", err)
						require.ErrorIs(t, err, retryhttp.ErrHostHeld)
						return
					}
					resp.Body.Close()
				}
				assert.False(t, tt.held, "not held")
			})
		})
	}
}

// Hedged reads are held by a used-up quota too: each copy waits for the
// hold before it is sent, so the reset is waited for once and no copy goes
// into the hold.
func TestQuotaHoldsHedgedRequests(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		h := quotaThenOK(&calls, "RateLimit", `"default";r=0;t=3`)
		tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(h), Hedger: &retry.Hedger{Delay: time.Millisecond, MaxFraction: 1}}
		resp, err := tr.RoundTrip(get(t, "http://api.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		start := time.Now()
		resp, err = tr.RoundTrip(get(t, "http://api.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.GreaterOrEqual(t, time.Since(start), 3*time.Second, "waited for the reset")
		assert.LessOrEqual(t, calls.Load(), int32(1+guard.HoldProbes), "the copies went as probes, after the reset")
	})
}
