package retryhttp_test

import (
	"context"
	"io"
	"net/http"
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

// A server that trickles the body of a response the Transport discards
// cannot hold the call: a drain lasts at most 250ms, with default settings.
func TestDrainIsBoundedInTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		h := trickleOnce(&calls, 20, 100*time.Millisecond) // 2s of body
		tr := &retryhttp.Transport{
			Base:   retrytest.HandlerTransport(h),
			Policy: retry.Policy{BaseBackoff: time.Millisecond, Jitter: retry.NoJitter},
		}
		start := time.Now()
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 250*time.Millisecond+time.Millisecond, time.Since(start), "the drain's 250ms and the 1ms wait")
		time.Sleep(3 * time.Second) // the trickling handler ends on its own
	})
}

// A body that would not end within 64 KiB is not read past that: one known
// to be longer is closed unread, and one of unknown length (chunked) is
// closed once 64 KiB have been read. A server could stretch either without
// end.
func TestLongOrEndlessBodiesAreCutAt64KiB(t *testing.T) {
	t.Parallel()
	for name, tt := range map[string]struct {
		length  string
		maxRead int32 // in KiB
	}{"unknown": {"", 64}, "long": {"1000000", 0}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				var calls, written atomic.Int32
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if calls.Add(1) > 1 {
						_, _ = io.WriteString(w, "ok")
						return
					}
					if tt.length != "" {
						w.Header().Set("Content-Length", tt.length)
					}
					w.WriteHeader(http.StatusServiceUnavailable)
					for {
						if _, err := w.Write(make([]byte, 1024)); err != nil {
							return // the client closed the body
						}
						written.Add(1)
					}
				})
				tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(h), Policy: retry.Policy{BaseBackoff: time.Millisecond}}
				start := time.Now()
				resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
				require.NoError(t, err)
				resp.Body.Close()
				assert.LessOrEqual(t, time.Since(start), time.Millisecond)
				assert.LessOrEqual(t, written.Load(), tt.maxRead, "KiB of the body read")
				synctest.Wait()
				assert.Equal(t, int32(2), calls.Load())
			})
		})
	}
}

// A server that trickles a chunked body holds the drain no longer than a
// known length's: 250ms.
func TestChunkedDrainIsBoundedInTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) > 1 {
				_, _ = io.WriteString(w, "ok")
				return
			}
			w.WriteHeader(http.StatusServiceUnavailable) // no Content-Length
			for range 20 {
				if _, err := w.Write([]byte{'x'}); err != nil {
					return
				}
				time.Sleep(100 * time.Millisecond) // 2s of body
			}
		})
		tr := &retryhttp.Transport{
			Base:   retrytest.HandlerTransport(h),
			Policy: retry.Policy{BaseBackoff: time.Millisecond, Jitter: retry.NoJitter},
		}
		start := time.Now()
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		assert.Equal(t, "ok", readAll(t, resp.Body))
		assert.Equal(t, 250*time.Millisecond+time.Millisecond, time.Since(start), "the drain's 250ms and the 1ms wait")
		time.Sleep(3 * time.Second) // the trickling handler ends on its own
	})
}

// On the 401 path too: a trickled 401 body holds the request no longer
// than its MaxElapsed allows.
func TestDrainOfA401IsBounded(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "Bearer new" {
				_, _ = io.WriteString(w, "ok")
				return
			}
			trickle(w, http.StatusUnauthorized, 20, 100*time.Millisecond)
		})
		tr := &retryhttp.Transport{
			Base:    retrytest.HandlerTransport(h),
			Policy:  retry.Policy{AttemptTimeout: 100 * time.Millisecond, MaxElapsed: 300 * time.Millisecond},
			Refresh: func(context.Context, *http.Request) (string, error) { return "Bearer new", nil },
		}
		req := get(t, "http://svc.test/")
		req.Header.Set("Authorization", "Bearer old")
		start := time.Now()
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 200, resp.StatusCode)
		assert.LessOrEqual(t, time.Since(start), 300*time.Millisecond)
		time.Sleep(3 * time.Second)
	})
}

// A Budget shared by every origin is shared fate: one failing host uses up
// the retries of all. Budgets gives each origin its own.
func TestBudgetsPerOriginIsolateAFailingHost(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, tr *retryhttp.Transport) int {
		down := newServer(t, status(503))
		flaky := newServer(t, status(503), status(200))
		clk := retrytest.NewAutoClock()
		tr.Policy.Clock = clk
		for range 10 {
			resp, err := down.client(tr).Get(down.URL)
			require.NoError(t, err)
			resp.Body.Close()
		}
		tr.Base = flaky.Client().Transport
		resp, err := (&http.Client{Transport: tr}).Get(flaky.URL)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	shared, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1})
	require.NoError(t, err)
	assert.Equal(t, 503, run(t, &retryhttp.Transport{Policy: retry.Policy{Budget: shared}}), "the shared budget refused the flaky host's retry")
	perOrigin, err := guard.NewBudgets(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1}, 100)
	require.NoError(t, err)
	assert.Equal(t, 200, run(t, &retryhttp.Transport{Guards: guard.Keyed{Budgets: perOrigin}}), "its own budget let it retry")
}
