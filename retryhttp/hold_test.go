package retryhttp_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// throttled serves two hosts in-process: "a.test" answers 429 with
// Retry-After: 2 for its first 2s, then 200; "b.test" always answers 200.
// It counts what each host saw while a was throttling.
type throttled struct {
	start              time.Time
	aDuring, aAfter, b atomic.Int32
}

func (s *throttled) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Host == "b.test" {
		s.b.Add(1)
		_, _ = io.WriteString(w, "b")
		return
	}
	if time.Since(s.start) < 2*time.Second {
		s.aDuring.Add(1)
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	s.aAfter.Add(1)
	_, _ = io.WriteString(w, "a")
}

// 1,000 GETs to a host that throttles for 2s, one every 2ms: with a hold,
// the first 429 holds back the others, and the host sees a handful in its
// window instead of a thousand; afterwards all complete. A second host
// served by the same Transport is never delayed.
func TestHoldBacksOffTheWholeClient(t *testing.T) {
	t.Parallel()
	for _, mode := range []retryhttp.HoldMode{retryhttp.HoldWait, retryhttp.HoldOff} {
		synctest.Test(t, func(t *testing.T) {
			srv := &throttled{start: time.Now()}
			tr := &retryhttp.Transport{
				Base:   retrytest.HandlerTransport(srv),
				Policy: retry.Policy{MaxAttempts: 5},
				Hold:   mode,
			}
			var wg sync.WaitGroup
			var ok atomic.Int32
			var slowestB time.Duration
			var mu sync.Mutex
			for i := range 1000 {
				time.Sleep(2 * time.Millisecond)
				wg.Go(func() {
					resp, err := tr.RoundTrip(get(t, "http://a.test/"))
					if assert.NoError(t, err) {
						if resp.StatusCode == 200 {
							ok.Add(1)
						}
						resp.Body.Close()
					}
				})
				if i%100 == 0 {
					wg.Go(func() {
						start := time.Now()
						resp, err := tr.RoundTrip(get(t, "http://b.test/"))
						if assert.NoError(t, err) {
							resp.Body.Close()
						}
						mu.Lock()
						slowestB = max(slowestB, time.Since(start))
						mu.Unlock()
					})
				}
			}
			wg.Wait()
			assert.Equal(t, int32(1000), ok.Load(), "all complete")
			assert.Equal(t, int32(10), srv.b.Load())
			assert.Zero(t, slowestB, "host b is never delayed")
			if mode == retryhttp.HoldWait {
				assert.LessOrEqual(t, srv.aDuring.Load(), int32(24), "a few dozen at most in the window")
				t.Logf("HoldWait: the throttled host saw %d requests in its 2s window, %d after", srv.aDuring.Load(), srv.aAfter.Load())
			} else {
				assert.GreaterOrEqual(t, srv.aDuring.Load(), int32(990), "without a hold, each request learns for itself")
				t.Logf("HoldOff: the throttled host saw %d requests in its 2s window, %d after", srv.aDuring.Load(), srv.aAfter.Load())
			}
		})
	}
}

// HoldFailFast: new attempts to a held host fail at once with ErrHostHeld,
// which is not retried; a normal answer clears the hold.
func TestHoldFailFastAndClear(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var throttle atomic.Bool
		throttle.Store(true)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if throttle.Load() {
				w.Header().Set("Retry-After", "10")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			_, _ = io.WriteString(w, "ok")
		})
		tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(h), Policy: retry.Policy{MaxAttempts: 1}, Hold: retryhttp.HoldFailFast}
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 503, resp.StatusCode, "the first request learns of the throttle")

		var trace retry.Trace
		req := get(t, "http://svc.test/")
		req = req.WithContext(retryhttp.WithTrace(req.Context(), &trace))
		_, err = tr.RoundTrip(req)
		require.ErrorIs(t, err, retryhttp.ErrHostHeld)
		assert.Equal(t, "host held back (Retry-After)", trace.Last().Reason)

		throttle.Store(false)
		time.Sleep(10 * time.Second)
		resp, err = tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err, "the hold has ended")
		resp.Body.Close()

		// Only an answer to a request sent after the hold began clears it:
		// a slow request, in flight when a fresh 503 set the hold, comes
		// back 200, and the hold stands.
		throttle.Store(false)
		slow := make(chan error, 1)
		slowH := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				time.Sleep(time.Second)
				_, _ = io.WriteString(w, "ok")
				return
			}
			h(w, r)
		})
		tr = &retryhttp.Transport{Base: retrytest.HandlerTransport(slowH), Policy: retry.Policy{MaxAttempts: 1}, Hold: retryhttp.HoldFailFast}
		go func() {
			resp, err := tr.RoundTrip(get(t, "http://svc.test/slow"))
			if err == nil {
				resp.Body.Close()
			}
			slow <- err
		}()
		synctest.Wait() // the slow request is in the handler
		throttle.Store(true)
		resp, err = tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		_, err = tr.RoundTrip(get(t, "http://svc.test/"))
		require.ErrorIs(t, err, retryhttp.ErrHostHeld, "held")
		require.NoError(t, <-slow)
		throttle.Store(false)
		_, err = tr.RoundTrip(get(t, "http://svc.test/"))
		require.ErrorIs(t, err, retryhttp.ErrHostHeld, "the 200 of a request sent before the hold began does not clear it")
		time.Sleep(9 * time.Second)
		resp, err = tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err, "the hold's time is up: a probe goes")
		resp.Body.Close()
		for range 2 * guard.HoldProbes {
			resp, err = tr.RoundTrip(get(t, "http://svc.test/"))
			require.NoError(t, err, "the probe's 200 cleared the hold")
			resp.Body.Close()
		}
	})
}

// A request that cannot wait for the hold (its MaxElapsed comes first)
// gives up at once instead of waiting into a certain failure.
func TestHoldLongerThanTheDeadlineGivesUpAtOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
		})
		tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(h), Policy: retry.Policy{MaxAttempts: 1}}
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		resp.Body.Close()

		req := get(t, "http://svc.test/")
		req = req.WithContext(retryhttp.WithPolicy(req.Context(), retry.Policy{MaxElapsed: 5 * time.Second}))
		start := time.Now()
		_, err = tr.RoundTrip(req)
		require.ErrorIs(t, err, retryhttp.ErrHostHeld)
		assert.Zero(t, time.Since(start))
		assert.Equal(t, int32(1), calls.Load(), "the held request was not sent")

		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		req = get(t, "http://svc.test/").WithContext(ctx)
		start = time.Now()
		resp, err = tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.GreaterOrEqual(t, time.Since(start), 30*time.Second, "one that can wait, waits")
	})
}

// slowAndThrottle serves svc.test: /slow answers 200 after 50ms, /throttle
// answers 429 with a Retry-After of 10s, and / answers 200.
var slowAndThrottle = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/slow":
		time.Sleep(50 * time.Millisecond)
	case "/throttle":
		w.Header().Set("Retry-After", "10")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	_, _ = io.WriteString(w, "ok")
})

// A hedged copy that its host's hold keeps from being sent (HoldFailFast,
// or HoldWait with a deadline before the hold's end) does not end the
// request: the first copy goes on and answers, and no other copy starts
// while the host is held.
func TestHeldHedgeCopyDoesNotEndTheRequest(t *testing.T) {
	t.Parallel()
	for _, mode := range []retryhttp.HoldMode{retryhttp.HoldFailFast, retryhttp.HoldWait} {
		synctest.Test(t, func(t *testing.T) {
			tr := &retryhttp.Transport{
				Base:   retrytest.HandlerTransport(slowAndThrottle),
				Hedger: &retry.Hedger{Delay: 10 * time.Millisecond},
				Hold:   mode,
			}
			type res struct {
				resp  *http.Response
				err   error
				trace retry.Trace
			}
			done := make(chan res, 1)
			go func() {
				var r res
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				req := get(t, "http://svc.test/slow").WithContext(retryhttp.WithTrace(ctx, &r.trace))
				r.resp, r.err = tr.RoundTrip(req)
				if r.err == nil {
					_, _ = io.ReadAll(r.resp.Body)
					r.resp.Body.Close()
				}
				done <- r
			}()
			synctest.Wait() // the first copy is in the handler
			resp, err := tr.RoundTrip(get(t, "http://svc.test/throttle"))
			require.NoError(t, err)
			resp.Body.Close() // the host is held for 10s
			r := <-done
			require.NoError(t, r.err, "mode %d", mode)
			assert.Equal(t, 200, r.resp.StatusCode)
			assert.Equal(t, 2, r.trace.Attempts(), "no more copies while the host is held")
			assert.Contains(t, reasons(r.trace), "host held back (Retry-After); copy not sent")
		})
	}
}

// Hedged copies of one request read its origin at once; with a host held,
// each copy looks its origin up (run with -race).
func TestHedgedCopiesShareTheOriginSafely(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Host == "b.test" {
				w.Header().Set("Retry-After", "10")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			slowAndThrottle(w, r)
		})
		tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(h), Hedger: &retry.Hedger{Delay: 10 * time.Millisecond}}
		b := get(t, "http://b.test/")
		resp, err := tr.RoundTrip(b.WithContext(retryhttp.WithPolicy(b.Context(), retry.Policy{MaxAttempts: 1})))
		require.NoError(t, err)
		resp.Body.Close() // another host is held
		var trace retry.Trace
		req := get(t, "http://a.test/slow")
		resp, err = tr.RoundTrip(req.WithContext(retryhttp.WithTrace(req.Context(), &trace)))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 2, trace.Attempts())
		time.Sleep(time.Second) // the loser's handler ends
	})
}

// A hedged request weighs a hold against its own deadline (ctx and
// MaxElapsed), not AttemptTimeout: it waits out a 2s hold and succeeds.
func TestHedgedHoldIsWeighedAgainstTheRequestsDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		srv := &throttled{start: time.Now()}
		tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(srv), Hedger: &retry.Hedger{Delay: time.Hour}, Policy: retry.Policy{MaxAttempts: 1}}
		resp, err := tr.RoundTrip(get(t, "http://a.test/"))
		require.NoError(t, err)
		resp.Body.Close() // a.test is held for 2s
		req := get(t, "http://a.test/")
		req = req.WithContext(retryhttp.WithPolicy(req.Context(), retry.Policy{MaxAttempts: 3, AttemptTimeout: 500 * time.Millisecond, MaxElapsed: 10 * time.Second}))
		start := time.Now()
		resp, err = tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
		resp.Body.Close()
		assert.GreaterOrEqual(t, time.Since(start), 2*time.Second, "it waited out the hold")
	})
}

// 200 requests held back by a host that keeps answering 429: when the
// hold ends, a few probes go, their 429 renews the hold, and the others
// wait again, so the host sees a handful of requests, not the queue.
func TestReleasedHoldSendsProbesNotTheQueue(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var during atomic.Int32
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if time.Since(start) < 5*time.Second {
				during.Add(1)
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			_, _ = io.WriteString(w, "ok")
		})
		tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(h), Policy: retry.Policy{MaxAttempts: 10, MaxElapsed: time.Minute}}
		req := get(t, "http://svc.test/")
		resp, err := tr.RoundTrip(req.WithContext(retryhttp.WithPolicy(req.Context(), retry.Policy{MaxAttempts: 1})))
		require.NoError(t, err)
		resp.Body.Close() // the hold begins
		var wg sync.WaitGroup
		var ok atomic.Int32
		for range 200 {
			wg.Go(func() {
				resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
				if assert.NoError(t, err) {
					if resp.StatusCode == 200 {
						ok.Add(1)
					}
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		assert.Equal(t, int32(200), ok.Load(), "all complete once the host serves")
		assert.LessOrEqual(t, during.Load(), int32(1+5*guard.HoldProbes+guard.HoldProbes), "a few probes per hold, not the queue")
		t.Logf("the throttling host saw %d requests in its 5s window", during.Load())
	})
}

// No hold outlasts MaxRetryAfter, however long the Retry-After: a request
// that may wait two minutes gets through within one.
func TestHoldIsCappedAtMaxRetryAfter(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var first atomic.Bool
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if first.CompareAndSwap(false, true) {
				w.Header().Set("Retry-After", "2147483647")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			_, _ = io.WriteString(w, "ok")
		})
		tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(h), MaxRetryAfter: time.Minute}
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		assert.Equal(t, 503, resp.StatusCode, "a Retry-After past the cap is not waited for")
		resp.Body.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		start := time.Now()
		resp, err = tr.RoundTrip(get(t, "http://svc.test/").WithContext(ctx))
		require.NoError(t, err)
		resp.Body.Close()
		assert.LessOrEqual(t, time.Since(start), time.Minute)
	})
}
