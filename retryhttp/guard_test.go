package retryhttp_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
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

// syncBuffer is a bytes.Buffer for a Logger that more than one goroutine
// writes to (a breaker's timer tells of its move to half-open on its own).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// untilHealthy answers 503 until healthy is set, then 200.
func untilHealthy(healthy *atomic.Bool) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if healthy.Load() {
			w.WriteHeader(200)
			return
		}
		w.WriteHeader(503)
	}
}

// Transport.Breakers gives each origin its own breaker: the origin that is
// down fails fast, the other is untouched, and an outer retry.Do with the
// DefaultClassifier around the client never retries the refusal.
func TestTransportBreakersPerOrigin(t *testing.T) {
	t.Parallel()
	down, up := newServer(t, status(503)), newServer(t, status(200))
	clk := retrytest.NewAutoClock()
	bs, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 3, OpenFor: time.Minute, Clock: clk}, 10)
	require.NoError(t, err)
	tr := &retryhttp.Transport{Guards: guard.Keyed{Breakers: bs}, Policy: retry.Policy{MaxAttempts: 2, Clock: clk}}
	c := down.client(tr) // both servers are loopback httptest servers: one client dials both
	for range 3 {
		code, err := getStatus(c, context.Background(), down.URL)
		require.NoError(t, err)
		require.Equal(t, 503, code)
	}
	require.Equal(t, 6, down.hits(), "3 requests of 2 attempts")
	assert.Equal(t, guard.BreakerOpen, bs.Get(down.URL).State())

	code, err := getStatus(c, context.Background(), up.URL)
	require.NoError(t, err)
	assert.Equal(t, 200, code, "the other origin's breaker is its own")

	outer := 0
	otr, err := retry.Do(context.Background(), func(ctx context.Context) error {
		outer++
		_, err := getStatus(c, ctx, down.URL)
		return err
	}, retry.Policy{Clock: retrytest.NewAutoClock()})
	require.ErrorIs(t, err, retry.ErrBreakerOpen)
	assert.Equal(t, 1, outer, "the outer Do retried a breaker's refusal")
	assert.Equal(t, retry.StopNotRetryable, otr.Stop())
	assert.Equal(t, 6, down.hits(), "an open breaker sends nothing")
}

// Transport.Throttles sheds only the requests to the origin that rejects
// them; one Policy.Throttle shared by both origins sheds the healthy one's
// too.
func TestTransportThrottlesIsolateOrigins(t *testing.T) {
	t.Parallel()
	down, up := newServer(t, status(503)), newServer(t, status(200))
	run := func(t *testing.T, tr *retryhttp.Transport) (downShed, upShed int) {
		c := down.client(tr)
		for range 200 {
			for _, srv := range []*server{down, up} {
				_, err := getStatus(c, context.Background(), srv.URL)
				if errors.Is(err, retry.ErrThrottled) {
					if srv == down {
						downShed++
					} else {
						upShed++
					}
				}
			}
		}
		return downShed, upShed
	}
	clk := retrytest.NewAutoClock()
	ts, err := guard.NewThrottles(guard.ThrottleOptions{Clock: clk}, 10)
	require.NoError(t, err)
	downShed, upShed := run(t, &retryhttp.Transport{Guards: guard.Keyed{Throttles: ts}, Policy: retry.Policy{MaxAttempts: 1, Clock: clk}})
	assert.Greater(t, downShed, 100, "the failing origin is shed")
	assert.Zero(t, upShed, "the healthy origin is not")

	shared, err := guard.NewThrottle(guard.ThrottleOptions{K: 1.1, Clock: clk})
	require.NoError(t, err)
	_, upShed = run(t, &retryhttp.Transport{Policy: retry.Policy{MaxAttempts: 1, Throttle: shared, Clock: clk}})
	assert.Positive(t, upShed, "one shared Throttle sheds the healthy origin too")
}

// A hedge never takes a half-open breaker's probe: while the probe is
// slow, the hedge delay passes and no copy is sent; the probe's success
// closes the breaker. With the breaker closed, the same request hedges.
func TestTransportHedgeNeverTakesAProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sent atomic.Int32
		var failing atomic.Bool
		release := make(chan struct{})
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			sent.Add(1)
			if failing.Load() {
				return &http.Response{StatusCode: 503, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
			}
			select { // a slow answer
			case <-release:
			case <-req.Context().Done():
				return nil, req.Context().Err()
			}
			return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("ok")), Request: req}, nil
		})
		bs, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 1, OpenFor: 10 * time.Second, Probes: 1}, 10)
		require.NoError(t, err)
		tr := &retryhttp.Transport{Base: base, Guards: guard.Keyed{Breakers: bs}, Hedger: &retry.Hedger{Delay: 10 * time.Millisecond},
			Policy: retry.Policy{MaxAttempts: 3}}
		c := &http.Client{Transport: tr}
		send := func() <-chan error {
			done := make(chan error, 1)
			go func() {
				_, err := getStatus(c, context.Background(), "http://api.test/")
				done <- err
			}()
			return done
		}

		// The control: a closed breaker lets the hedge go.
		done := send()
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, int32(2), sent.Load(), "a slow first copy is hedged")
		release <- struct{}{} // one copy answers; the other is canceled
		require.NoError(t, <-done)

		failing.Store(true)
		_, _ = getStatus(c, context.Background(), "http://api.test/")
		br := bs.Get("http://api.test")
		require.Equal(t, guard.BreakerOpen, br.State())
		failing.Store(false)
		time.Sleep(10 * time.Second)
		require.Equal(t, guard.BreakerHalfOpen, br.State())

		before := sent.Load()
		done = send()
		synctest.Wait()
		time.Sleep(time.Second) // a hundred hedge delays
		synctest.Wait()
		assert.Equal(t, before+1, sent.Load(), "only the probe was sent: no hedge took a probe")
		close(release)
		require.NoError(t, <-done)
		assert.Equal(t, guard.BreakerClosed, br.State(), "the probe's success closed it")
	})
}

// With a Logger, each change of a breaker or a throttle is written once,
// with its origin: however many requests an open breaker refuses, one
// "opened"; the move to half-open when OpenFor ends, with no request; one
// "closed"; and throttling started and stopped once each.
func TestTransportLogsGuardChangesOnce(t *testing.T) {
	t.Parallel()
	var healthy atomic.Bool
	srv := newServer(t, untilHealthy(&healthy))
	clk := retrytest.NewClock()
	bs, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 3, OpenFor: time.Minute, Probes: 2, Clock: clk}, 10)
	require.NoError(t, err)
	var buf syncBuffer
	c := srv.client(&retryhttp.Transport{Guards: guard.Keyed{Breakers: bs}, Logger: logged(&buf), Policy: retry.Policy{MaxAttempts: 1, Clock: clk}})
	for range 50 {
		_, _ = getStatus(c, context.Background(), srv.URL)
	}
	require.Equal(t, 3, srv.hits())
	opened := linesWith(buf.String(), `msg="retryhttp: circuit breaker opened"`)
	require.Len(t, opened, 1, buf.String())
	assert.Contains(t, opened[0], "level=WARN")
	assert.Contains(t, opened[0], "origin="+srv.URL)

	clk.Add(time.Minute)
	require.Eventually(t, func() bool {
		return len(linesWith(buf.String(), `msg="retryhttp: circuit breaker half-open"`)) == 1
	}, watchdog, time.Millisecond, "half-open on time, with no request")
	healthy.Store(true)
	for range 5 {
		code, err := getStatus(c, context.Background(), srv.URL)
		require.NoError(t, err)
		require.Equal(t, 200, code)
	}
	out := buf.String()
	closed := linesWith(out, `msg="retryhttp: circuit breaker closed"`)
	require.Len(t, closed, 1, out)
	assert.Contains(t, closed[0], "level=INFO")
	assert.Len(t, linesWith(out, `msg="retryhttp: circuit breaker`), 3, out)

	ts, err := guard.NewThrottles(guard.ThrottleOptions{Window: time.Minute, Clock: clk}, 10)
	require.NoError(t, err)
	buf2 := &syncBuffer{}
	healthy.Store(false)
	c = srv.client(&retryhttp.Transport{Guards: guard.Keyed{Throttles: ts}, Logger: logged(buf2), Policy: retry.Policy{MaxAttempts: 1, Clock: clk}})
	for range 100 {
		_, _ = getStatus(c, context.Background(), srv.URL)
	}
	started := linesWith(buf2.String(), `msg="retryhttp: throttling started"`)
	require.Len(t, started, 1, buf2.String())
	assert.Contains(t, started[0], "origin="+srv.URL)
	healthy.Store(true)
	clk.Add(2 * time.Minute)
	for range 10 {
		_, _ = getStatus(c, context.Background(), srv.URL)
	}
	assert.Len(t, linesWith(buf2.String(), `msg="retryhttp: throttling stopped"`), 1, buf2.String())
	assert.Len(t, linesWith(buf2.String(), `msg="retryhttp: throttling`), 2)
}

// A request that is not safe to repeat (a POST without a key) is never
// retried, but its 503s are the service failing: they open its origin's
// breaker and count against its throttle as a GET's do.
func TestTransportGuardsCountFailuresOfRequestsNotRetried(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503))
	clk := retrytest.NewAutoClock()
	bs, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 3, Clock: clk}, 10)
	require.NoError(t, err)
	ts, err := guard.NewThrottles(guard.ThrottleOptions{MinRequests: 3, Clock: clk}, 10)
	require.NoError(t, err)
	c := srv.client(&retryhttp.Transport{Guards: guard.Keyed{Breakers: bs, Throttles: ts}, Policy: retry.Policy{Clock: clk}})
	for range 3 {
		resp, err := c.Post(srv.URL, "text/plain", strings.NewReader("charge"))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 503, resp.StatusCode)
	}
	assert.Equal(t, 3, srv.hits(), "a POST without a key is not retried")
	assert.Equal(t, guard.BreakerOpen, bs.Get(srv.URL).State(), "its 503s opened the breaker")
	assert.Positive(t, ts.Get(srv.URL).RejectProbability(), "and count against the throttle")
	_, err = c.Post(srv.URL, "text/plain", strings.NewReader("charge"))
	assert.ErrorIs(t, err, retry.ErrBreakerOpen)
	assert.Equal(t, 3, srv.hits())
}
