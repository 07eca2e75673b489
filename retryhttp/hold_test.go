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
	"github.com/stormguard/retry/internal/holds"
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
		for range 2 * holds.Probes {
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
