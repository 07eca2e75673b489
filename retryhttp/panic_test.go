package retryhttp_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// A panic in Base, in GetBody or in a hook of the user's reaches the caller
// of RoundTrip, and leaves nothing behind: no attempt timer armed, no
// attempt ctx alive, no response body open, no connection busy, no
// goroutine running. Each case panics mid-request, after one retry, with a
// response, a timer and a connection in play.
//
// The cases do not run in parallel, so that goleak can check each one on
// its own.
func TestPanicsPropagateAndReleaseEverything(t *testing.T) {
	tests := []struct {
		name string
		// second answers the second attempt; the first gets a 503.
		second http.HandlerFunc
		// arm makes the Transport panic with "boom" on the second attempt.
		arm func(tr *retryhttp.Transport, req *http.Request)
	}{
		{"Classify", status(503), func(tr *retryhttp.Transport, _ *http.Request) {
			var n int
			tr.Policy.Classifier = func(ctx context.Context, a retry.Attempt) retry.Decision {
				if n++; n == 2 {
					panic("boom")
				}
				return retryhttp.DefaultClassifier(ctx, a)
			}
		}},
		{"OnRetry", status(503), func(tr *retryhttp.Transport, _ *http.Request) {
			tr.Policy.OnRetry = func(_ context.Context, a retry.Attempt, _ time.Duration) {
				if a.Number == 2 {
					panic("boom")
				}
			}
		}},
		{"Jitter", status(503), func(tr *retryhttp.Transport, _ *http.Request) {
			tr.Policy.Jitter = panicOnRetry{2}
		}},
		{"Logger", status(503), func(tr *retryhttp.Transport, _ *http.Request) {
			tr.Logger = slog.New(panicOnAttempt{2})
		}},
		{"Base, before it sends", status(503), func(tr *retryhttp.Transport, _ *http.Request) {
			tr.Base.(*bodySpy).base = panicOnCall(tr.Base.(*bodySpy).base, 2, false)
		}},
		// Base gets a response and drops it: only the end of the attempt's
		// ctx can free that response's connection.
		{"Base, after its response", status(503), func(tr *retryhttp.Transport, _ *http.Request) {
			tr.Base.(*bodySpy).base = panicOnCall(tr.Base.(*bodySpy).base, 2, true)
		}},
		{"GetBody", status(503), func(_ *retryhttp.Transport, req *http.Request) {
			req.Method = http.MethodPut
			req.Body = io.NopCloser(strings.NewReader("x"))
			req.ContentLength = 1
			req.GetBody = func() (io.ReadCloser, error) { panic("boom") }
		}},
		{"Refresh", status(401), func(tr *retryhttp.Transport, req *http.Request) {
			req.Header.Set("Authorization", "Bearer old")
			tr.Refresh = func(context.Context, *http.Request) (string, error) { panic("boom") }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Registered first, so that it runs last: after the server's
			// Close, which ends the server's goroutines.
			leaks := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, leaks) })

			srv := newServer(t, status(503), tt.second, status(200))
			clk := retrytest.NewClock()
			p := fakePolicy(clk)
			p.AttemptTimeout = time.Minute // a timer armed on each attempt
			spy := &bodySpy{base: srv.Client().Transport}
			tr := &retryhttp.Transport{Base: spy, Policy: p}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req := get(t, srv.URL).WithContext(ctx)
			tt.arm(tr, req)

			stop := skipWaits(clk)
			require.PanicsWithValue(t, "boom", func() { _, _ = tr.RoundTrip(req) })
			stop()

			assert.NoError(t, ctx.Err(), "the caller's ctx is the caller's")
			assert.GreaterOrEqual(t, srv.hits(), 1)
			spy.requireReleased(t)
			srv.Client().CloseIdleConnections()
			requireConnsClosed(t, srv)
			before := clk.Now()
			assert.Zero(t, clk.Pending(), "a timer was left armed on the clock")
			_ = before
		})
	}
}

// bodySpy is a Base that records the ctx of every attempt and whether the
// body of each response it returned was closed.
type bodySpy struct {
	base http.RoundTripper

	mu     sync.Mutex
	ctxs   []context.Context
	bodies []*closeSpy
}

func (s *bodySpy) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.ctxs = append(s.ctxs, req.Context())
	s.mu.Unlock()
	resp, err := s.base.RoundTrip(req)
	if err == nil {
		b := &closeSpy{ReadCloser: resp.Body}
		resp.Body = b
		s.mu.Lock()
		s.bodies = append(s.bodies, b)
		s.mu.Unlock()
	}
	return resp, err
}

// requireReleased checks that every attempt's ctx has ended and that every
// response the Transport got has been closed.
func (s *bodySpy) requireReleased(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotEmpty(t, s.ctxs)
	for i, ctx := range s.ctxs {
		assert.Error(t, ctx.Err(), "the ctx of attempt %d is still alive", i+1)
	}
	for i, b := range s.bodies {
		assert.True(t, b.closed(), "response %d was left open", i+1)
	}
}

type closeSpy struct {
	io.ReadCloser
	mu sync.Mutex
	n  int
}

func (c *closeSpy) Close() error {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.ReadCloser.Close()
}

func (c *closeSpy) closed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n > 0
}

// panicOnCall returns a Base that panics on its n-th call, before sending
// or, with late, after base has returned a response, which it drops.
func panicOnCall(base http.RoundTripper, n int, late bool) http.RoundTripper {
	var calls int
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if calls++; calls != n {
			return base.RoundTrip(req)
		}
		if late {
			if _, err := base.RoundTrip(req); err != nil {
				return nil, err
			}
		}
		panic("boom")
	})
}

// panicOnRetry is a Jitter that waits 1ms, but panics before retry at.
type panicOnRetry struct{ at int }

func (j panicOnRetry) Wait(s retry.Step, _ float64) time.Duration {
	if s.N == j.at {
		panic("boom")
	}
	return time.Millisecond
}

// panicOnAttempt is a slog.Handler that panics on a record about attempt
// at.
type panicOnAttempt struct{ at int64 }

func (panicOnAttempt) Enabled(context.Context, slog.Level) bool { return true }
func (h panicOnAttempt) WithAttrs([]slog.Attr) slog.Handler     { return h }
func (h panicOnAttempt) WithGroup(string) slog.Handler          { return h }

func (h panicOnAttempt) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "attempt" && a.Value.Int64() == h.at {
			panic("boom")
		}
		return true
	})
	return nil
}

// skipWaits ends each wait that Do starts on clk at once, until stop is
// called.
func skipWaits(clk *retrytest.Clock) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case d := <-clk.Waits():
				clk.Add(d)
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

// requireConnsClosed waits until the server has seen every connection
// closed. After the client's CloseIdleConnections, a connection stays open
// only if a response on it was never closed.
func requireConnsClosed(t *testing.T, s *server) {
	t.Helper()
	require.Eventually(t, func() bool { return s.open.Load() == 0 }, watchdog, time.Millisecond,
		"%d connections still open", s.open.Load())
}
