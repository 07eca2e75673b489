package retryhttp_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An outer retry.Do around a retryhttp client never retries less than the
// client alone: nested, the Transport makes one attempt and hands a
// retryable status back as an error, so an op that checks only the error
// still has it retried, after the response's Retry-After.
func TestOuterLoopAroundTheClientStillRetries(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503, "Retry-After", "3"), status(503), status(200))
	clk := retrytest.NewAutoClock()
	c := srv.client(&retryhttp.Transport{Policy: retry.Policy{MaxAttempts: 3, Clock: clk}})
	start := clk.Now()
	tr, err := retry.Do(context.Background(), func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err // the only check: a status the client would retry is an error here
		}
		resp.Body.Close()
		return nil
	}, retry.Policy{Clock: clk, Jitter: retry.NoJitter})
	require.NoError(t, err)
	assert.Equal(t, 3, srv.hits(), "as many attempts as the client alone makes")
	assert.Equal(t, 3, tr.Attempts())
	assert.Equal(t, 3*time.Second+200*time.Millisecond, tr.Waits()[0], "the Retry-After reached the outer loop")
	assert.Equal(t, 3*time.Second+600*time.Millisecond, clk.Now().Sub(start))
	assert.Equal(t, int32(1), srv.conns.Load(), "the handed-back responses were drained: one connection")

	var se *retryhttp.StatusError
	for a := range tr.All() {
		if a.Number < 3 {
			require.ErrorAs(t, a.Err, &se)
			assert.Equal(t, 503, se.StatusCode)
			var stop *retry.StopError
			require.ErrorAs(t, a.Err, &stop)
			assert.Equal(t, retry.StopDeferred, stop.Stop)
		}
	}
}

// A request that must not be repeated is not made repeatable by an outer
// loop: its retryable status comes back as the response it is, and an op
// that checks only the error does not send the POST again.
func TestOuterLoopGetsTheResponseOfAKeylessPOST(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(201))
	c := srv.client(&retryhttp.Transport{})
	var status int
	_, err := retrytest.Do(context.Background(), func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader("charge"))
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		status = resp.StatusCode
		return nil
	}, retry.Policy{})
	require.NoError(t, err)
	assert.Equal(t, 503, status)
	assert.Equal(t, 1, srv.hits())
}

// The last retryable response is kept when the next wait stops fitting,
// whether an OnRetry used up the slack or the drain would: the Transport
// decides to give up before it drains, and returns the response unread.
func TestLastResponseKeptWhenTheWaitStopsFitting(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(200))
	clk := retrytest.NewClock()
	p := fakePolicy(clk)
	p.MaxElapsed = time.Second
	p.OnRetry = func(context.Context, retry.Attempt, time.Duration) { clk.Add(900 * time.Millisecond) } // 100ms left for a 200ms wait
	r := do(t, srv.client(&retryhttp.Transport{Policy: p}), clk, get(t, srv.URL))
	require.NoError(t, r.err, "the docs promise the last response, not an error")
	require.NotNil(t, r.resp)
	assert.Equal(t, 503, r.resp.StatusCode)
	assert.Equal(t, "status 503", readAll(t, r.resp.Body), "unread")
	assert.Equal(t, retry.StopDeadline, r.trace.Stop())
	assert.Equal(t, 1, srv.hits())
}

// A 503 whose body drains slowly: the drain is cut to leave room for the
// wait, and the retry happens within MaxElapsed.
func TestSlowDrainLeavesRoomForTheRetry(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		h := trickleOnce(&calls, 100, 10*time.Millisecond) // 1s of body
		tr := &retryhttp.Transport{
			Base:   retrytest.HandlerTransport(h),
			Policy: retry.Policy{MaxElapsed: 600 * time.Millisecond, BaseBackoff: 100 * time.Millisecond, Jitter: retry.NoJitter},
		}
		start := time.Now()
		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode)
		resp.Body.Close()
		assert.Equal(t, int32(2), calls.Load())
		assert.Less(t, time.Since(start), 600*time.Millisecond)
		time.Sleep(2 * time.Second) // the trickling handler ends on its own
	})
}

// trickleOnce answers its first request 503 with a body of n bytes, one
// every gap, and the others 200 at once; it counts them in calls.
func trickleOnce(calls *atomic.Int32, n int, gap time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) > 1 {
			_, _ = io.WriteString(w, "ok")
			return
		}
		trickle(w, http.StatusServiceUnavailable, n, gap)
	}
}

// trickle answers code with a body of n bytes, one every gap.
func trickle(w http.ResponseWriter, code, n int, gap time.Duration) {
	w.Header().Set("Content-Length", strconv.Itoa(n))
	w.WriteHeader(code)
	for range n {
		if _, err := w.Write([]byte{'x'}); err != nil {
			return
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		time.Sleep(gap)
	}
}

// AttemptTimeout and MaxElapsed bound only the wait for the response head:
// a slow Classifier turns neither a final response nor a kept retryable
// one into "attempt timed out".
func TestTimeoutsBoundOnlyTheWaitForHeaders(t *testing.T) {
	t.Parallel()
	for _, code := range []int{404, 503} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Length", "4")
					w.WriteHeader(code)
					_, _ = io.WriteString(w, "body")
				})
				slow := func(ctx context.Context, a retry.Attempt) retry.Decision {
					time.Sleep(time.Second) // far past AttemptTimeout
					return retryhttp.DefaultClassifier(ctx, a)
				}
				tr := &retryhttp.Transport{
					Base:   retrytest.HandlerTransport(h),
					Policy: retry.Policy{MaxAttempts: 1, AttemptTimeout: 100 * time.Millisecond, MaxElapsed: 200 * time.Millisecond, Classifier: slow},
				}
				resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
				require.NoError(t, err)
				assert.Equal(t, code, resp.StatusCode)
				assert.Equal(t, "body", readAll(t, resp.Body), "the body stays readable")
			})
		})
	}
}

// Where the connection dies must not decide the outcome: a response head
// cut at any byte is retried for a request that is safe to repeat.
func TestResponseHeadCutAnywhereIsRetried(t *testing.T) {
	t.Parallel()
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n"
	for cut := 1; cut < len(head); cut++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		served := make(chan struct{})
		go func() {
			defer close(served)
			for i := 0; ; i++ {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				buf := make([]byte, 4096)
				_, _ = conn.Read(buf)
				if i == 0 {
					_, _ = conn.Write([]byte(head[:cut]))
				} else {
					_, _ = conn.Write([]byte(head + "ok"))
				}
				conn.Close()
			}
		}()
		base := &http.Transport{DisableKeepAlives: true}
		clk := retrytest.NewAutoClock()
		var tr retry.Trace
		req := get(t, "http://"+ln.Addr().String())
		req = req.WithContext(retryhttp.WithTrace(req.Context(), &tr))
		resp, err := (&retryhttp.Transport{Base: base, Policy: retry.Policy{Clock: clk}}).RoundTrip(req)
		if assert.NoError(t, err, "cut at byte %d: %q", cut, head[:cut]) {
			assert.Equal(t, "ok", readAll(t, resp.Body))
			assert.Equal(t, 2, tr.Attempts(), "cut at byte %d", cut)
		}
		ln.Close()
		<-served
		base.CloseIdleConnections()
	}
}

// A request that ends on a status the Transport did not retry says which
// and why in its Trace, default or custom.
func TestTraceSaysWhichFinalStatus(t *testing.T) {
	t.Parallel()
	for code, want := range map[int]string{
		404: "1 attempt, 404 Not Found: not retried",
		500: "1 attempt, 500 Internal Server Error: not retried",
		409: "1 attempt, 409 Conflict: not retried",
		200: "1 attempt, ok",
	} {
		srv := newServer(t, status(code))
		clk := retrytest.NewClock()
		r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)}), clk, get(t, srv.URL))
		require.NoError(t, r.err)
		assert.Equal(t, want, r.trace.String())
	}
	srv := newServer(t, status(418))
	clk := retrytest.NewClock()
	p := fakePolicy(clk)
	p.Classifier = func(context.Context, retry.Attempt) retry.Decision {
		return retry.Decision{Reason: "teapot: by contract"}
	}
	r := do(t, srv.client(&retryhttp.Transport{Policy: p}), clk, get(t, srv.URL))
	require.NoError(t, r.err)
	assert.Equal(t, "1 attempt, teapot: by contract: not retried", r.trace.String())
}

// GetBody failing on a retry: no attempt is counted that the server never
// saw, and the last response is returned.
func TestGetBodyFailureKeepsTheLastResponse(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(200))
	clk := retrytest.NewClock()
	req := newRequest(t, http.MethodPut, srv.URL, strings.NewReader("x"))
	req.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("spool file gone") }
	r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)}), clk, req)
	require.NoError(t, r.err)
	assert.Equal(t, 503, r.resp.StatusCode)
	assert.Equal(t, "status 503", readAll(t, r.resp.Body))
	assert.Equal(t, 1, srv.hits())
	assert.Equal(t, 1, r.trace.Attempts(), "only attempts that were sent")
	assert.Equal(t, "503 Service Unavailable; GetBody failed", r.trace.Last().Reason)
	assert.Empty(t, r.waits)
}

// A Transport that defers to an outer loop did not give up: it logs no
// warning for each outer attempt.
func TestNestedTransportDoesNotLogGivingUp(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503))
	var buf strings.Builder
	c := srv.client(&retryhttp.Transport{Logger: logged(&buf)})
	_, err := retrytest.Do(context.Background(), func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}, retry.Policy{MaxAttempts: 3})
	require.ErrorIs(t, err, retry.ErrExhausted)
	assert.Equal(t, 3, srv.hits())
	assert.NotContains(t, buf.String(), "giving up")
}
