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

// QuotaSpread spaces out the requests left over the window: after an
// answer that leaves 9 requests of 10 for the next 10s, 9 requests sent
// at once reach the server 10s/9 apart, and none is refused. QuotaHold
// sends them at once, which the quota allows too.
func TestQuotaSpreadPacesTheRequestsLeft(t *testing.T) {
	t.Parallel()
	for _, mode := range []retryhttp.QuotaMode{retryhttp.QuotaSpread, retryhttp.QuotaHold} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				srv := &windowed{limit: 10, window: 10 * time.Second}
				tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(srv), Quota: mode}
				resp, err := tr.RoundTrip(get(t, "http://api.test/"))
				require.NoError(t, err)
				resp.Body.Close()
				var wg sync.WaitGroup
				for range 9 {
					wg.Go(func() {
						resp, err := tr.RoundTrip(get(t, "http://api.test/"))
						if assert.NoError(t, err) {
							assert.Equal(t, 200, resp.StatusCode)
							resp.Body.Close()
						}
					})
				}
				wg.Wait()
				assert.Zero(t, srv.over.Load(), "none refused")
				sent := srv.sent[1:]
				require.Len(t, sent, 9)
				if mode == retryhttp.QuotaHold {
					assert.Equal(t, sent[0], sent[8], "all at once")
					return
				}
				// The turns were taken at once, at the first answer's pace:
				// its reset, 10s, over the 9 requests it left.
				for i := 1; i < len(sent); i++ {
					assert.Equal(t, 10*time.Second/9, sent[i].Sub(sent[i-1]), "gap %d", i)
				}
			})
		})
	}
}

// pacedBy answers every request with a 200 and the RateLimit field v.
func pacedBy(v string, calls *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("RateLimit", v)
		_, _ = io.WriteString(w, "ok")
	})
}

// A hostile pace (one request a day) is bounded: no request waits for its
// turn longer than MaxRetryAfter, and one whose turn is further fails at
// once. One whose turn comes after its deadline fails at once, with the
// held error, and takes no turn: the next request gets it. Under
// HoldFailFast, a request that would wait fails at once.
func TestQuotaSpreadIsBounded(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(pacedBy(`"day";r=1;t=86400`, &calls)),
			Quota: retryhttp.QuotaSpread, MaxRetryAfter: 10 * time.Second}
		send := func(ctx context.Context) (time.Duration, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
			require.NoError(t, err)
			start := time.Now()
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
			}
			return time.Since(start), err
		}
		took, err := send(context.Background())
		require.NoError(t, err)
		assert.Zero(t, took, "nothing paces the first request")

		took, err = send(context.Background())
		require.NoError(t, err)
		assert.Zero(t, took, "the first turn is free")

		took, err = send(context.Background())
		require.NoError(t, err)
		assert.Equal(t, 10*time.Second, took, "a day's pace, capped at MaxRetryAfter")

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		took, err = send(retryhttp.WithPolicy(ctx, retry.Policy{}))
		cancel()
		var held *guard.HeldError
		require.ErrorAs(t, err, &held, "its turn is after its deadline")
		assert.Equal(t, 10*time.Second, held.Left)
		assert.Zero(t, took, "failed at once")

		took, err = send(context.Background())
		require.NoError(t, err)
		assert.Equal(t, 10*time.Second, took, "the turn the request before did not take")

		// Two at once: the first takes the next turn, 10s away; the
		// second's would be 20s away, past the cap, and it fails at once
		// rather than going with the first.
		first := make(chan time.Duration, 1)
		go func() {
			took, err := send(context.Background())
			assert.NoError(t, err)
			first <- took
		}()
		synctest.Wait()
		took, err = send(context.Background())
		require.ErrorAs(t, err, &held, "a turn past MaxRetryAfter")
		assert.Equal(t, 20*time.Second, held.Left)
		assert.Zero(t, took)
		assert.Equal(t, 10*time.Second, <-first)

		tr.Hold = retryhttp.HoldFailFast
		_, err = send(context.Background())
		require.ErrorIs(t, err, retryhttp.ErrHostHeld, "HoldFailFast: no waiting for a turn")
		assert.Equal(t, int32(5), calls.Load())
	})
}

// A pace ends with its window: after the reset, requests go as they come.
func TestQuotaSpreadEndsWithTheWindow(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		fields := []string{`"a";r=2;t=4`, `"a";r=1;t=4`}
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if n := calls.Add(1); n <= 2 {
				w.Header().Set("RateLimit", fields[n-1])
			}
			_, _ = io.WriteString(w, "ok")
		})
		tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(h), Quota: retryhttp.QuotaSpread}
		for range 2 {
			resp, err := tr.RoundTrip(get(t, "http://api.test/"))
			require.NoError(t, err)
			resp.Body.Close()
		}
		time.Sleep(5 * time.Second) // past the window
		start := time.Now()
		for range 3 {
			resp, err := tr.RoundTrip(get(t, "http://api.test/"))
			require.NoError(t, err)
			resp.Body.Close()
		}
		assert.Zero(t, time.Since(start), "no pace after the window")
	})
}
