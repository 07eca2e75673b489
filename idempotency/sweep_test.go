package idempotency_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry/idempotency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests run on real time, outside testing/synctest: a request that
// ends before its first deadline sets no timer of its own there (see the
// middleware's sweeper), and one still running at it must be given its
// renewals and its HandlerTimeout all the same. They wait for events, not
// for durations; the leases are long enough that a loaded machine does not
// lose one.

// renewCounter is a Store that counts the renewals of each store key.
type renewCounter struct {
	idempotency.Store
	mu sync.Mutex
	n  map[string]int
}

func (c *renewCounter) Renew(ctx context.Context, key, token string, lease time.Duration) error {
	c.mu.Lock()
	c.n[key]++
	c.mu.Unlock()
	return c.Store.Renew(ctx, key, token, lease)
}

func (c *renewCounter) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

func TestSlowHandlersAmongFastOnesKeepTheirLease(t *testing.T) {
	t.Parallel()
	const lease = 600 * time.Millisecond
	store := &renewCounter{Store: memStore(t, nil), n: map[string]int{}}
	h := newCtxHandler()
	m := newMiddleware(t, idempotency.Options{Store: store, Lease: lease})
	handler := m.Handler(h)

	const slow, fast = 4, 40
	var wg sync.WaitGroup
	codes := make(chan int, slow+fast)
	serveOne := func(r *http.Request) {
		defer wg.Done()
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		codes <- w.Code
	}
	var ctxs []context.Context
	for i := range slow + fast {
		wg.Add(1)
		r := keyed("k" + strconv.Itoa(i))
		if i%(1+fast/slow) != 0 {
			r.Header.Del("X-Wait") // answers at once
		} else {
			go serveOne(r)
			ctxs = append(ctxs, recv(t, h.ctxs, "a slow handler"))
			continue
		}
		go serveOne(r)
	}
	// Every slow handler is renewed, again and again, and none loses its
	// key; the fast ones never are.
	deadline := time.After(watchdog)
	for {
		n := store.counts()
		renewed := 0
		for _, c := range n {
			if c >= 2 {
				renewed++
			}
		}
		if renewed == slow {
			break
		}
		select {
		case <-deadline:
			require.FailNowf(t, "timed out", "renewals per key %v, want %d keys with 2 or more", n, slow)
		case <-time.After(lease / 6):
		}
	}
	assert.Len(t, store.counts(), slow, "only the slow handlers are renewed")
	for i, ctx := range ctxs {
		assert.NoError(t, ctx.Err(), "slow handler %d", i)
	}
	close(h.release)
	wg.Wait()
	close(codes)
	for c := range codes {
		assert.Equal(t, http.StatusCreated, c)
	}
}

// The HandlerTimeout of a handler that outlives its first deadline ends
// its ctx, and every ctx made from it, with context.DeadlineExceeded, as a
// context.WithTimeout does: when the timeout comes before the first
// renewal and after it.
func TestHandlerTimeoutOnRealTime(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		lease, timeout time.Duration
	}{
		{"before the first renewal", 10 * time.Second, 50 * time.Millisecond},
		{"after renewals", 300 * time.Millisecond, 400 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			type seen struct {
				ctx, derived    context.Context
				deadline        time.Time
				hasDeadline     bool
				afterFuncCalled chan struct{}
			}
			got := make(chan seen, 1)
			m := newMiddleware(t, idempotency.Options{Lease: tc.lease, HandlerTimeout: tc.timeout})
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx := r.Context()
				derived, cancel := context.WithTimeout(ctx, time.Hour)
				defer cancel()
				s := seen{ctx: ctx, derived: derived, afterFuncCalled: make(chan struct{})}
				s.deadline, s.hasDeadline = ctx.Deadline()
				context.AfterFunc(ctx, func() { close(s.afterFuncCalled) })
				got <- s
				select {
				case <-derived.Done():
				case <-time.After(watchdog):
				}
				w.WriteHeader(http.StatusServiceUnavailable) // did nothing: retryable
			}))
			before := time.Now()
			rec := serveDirect(h, req{key: "k", body: "{}"})
			after := time.Now()
			s := <-got
			assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
			require.True(t, s.hasDeadline, "the handler's ctx has a deadline")
			assert.False(t, s.deadline.Before(before.Add(tc.timeout)), "deadline %v, want HandlerTimeout after the request came", s.deadline)
			assert.False(t, s.deadline.After(after.Add(tc.timeout)), "deadline %v, want HandlerTimeout after the request came", s.deadline)
			assert.Equal(t, context.DeadlineExceeded, s.ctx.Err())
			assert.Equal(t, context.DeadlineExceeded, context.Cause(s.ctx))
			assert.Equal(t, context.DeadlineExceeded, s.derived.Err(), "a ctx made from the handler's")
			recv(t, s.afterFuncCalled, "context.AfterFunc on the handler's ctx")
		})
	}
}

// A handler that returns before its first deadline, as most do, leaves
// nothing behind: its ctx ends as the request is answered, and the next
// request with a deadline of its own still gets it.
func TestFastHandlersLeaveTheSweeperEmpty(t *testing.T) {
	t.Parallel()
	m := newMiddleware(t, idempotency.Options{Lease: 300 * time.Millisecond, HandlerTimeout: 200 * time.Millisecond})
	var last context.Context
	fast := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		last = r.Context()
		w.WriteHeader(http.StatusCreated)
	}))
	for i := range 100 {
		require.Equal(t, http.StatusCreated, serveDirect(fast, req{key: "f" + strconv.Itoa(i)}).Code)
		assert.Equal(t, context.Canceled, last.Err(), "the ctx of a run that returned")
	}
	ended := make(chan error, 1)
	slow := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(watchdog):
		}
		ended <- context.Cause(r.Context())
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	serveDirect(slow, req{key: "s"})
	assert.Equal(t, context.DeadlineExceeded, <-ended, "the slow handler's timeout")
}

// A Middleware made outside testing/synctest and used on real time, then
// in the bubbles of two tests in turn, gives each bubble's handlers their
// renewals on the bubble's clock, whatever fires on real time meanwhile:
// each bubble's time is its own.
func TestMiddlewareSharedByRealTimeAndBubbles(t *testing.T) {
	t.Parallel()
	const lease = 300 * time.Millisecond
	store := newRenewLog(memStore(t, nil))
	m := newMiddleware(t, idempotency.Options{Store: store, Lease: lease})
	fast := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) }))
	for i := range 2 {
		// A request on real time, whose first deadline (Lease/3) passes
		// on real time while the bubble's handler runs.
		require.Equal(t, http.StatusCreated, serveDirect(fast, req{key: "real-" + strconv.Itoa(i)}).Code)
		passed := make(chan struct{})
		time.AfterFunc(lease/3+lease/6, func() { close(passed) })
		synctest.Test(t, func(t *testing.T) {
			h := newCtxHandler()
			w := httptest.NewRecorder()
			done := make(chan struct{})
			go func() { m.Handler(h).ServeHTTP(w, keyed("bubble-"+strconv.Itoa(i))); close(done) }()
			ctx := <-h.ctxs
			<-passed // on real time; the bubble's clock stands still
			assert.Empty(t, store.renewed, "bubble %d: no renewal before its time", i)
			time.Sleep(2*lease/3 + time.Millisecond)
			synctest.Wait()
			require.Len(t, store.renewed, 2, "bubble %d: renewals at Lease/3 and 2*Lease/3", i)
			require.NoError(t, <-store.renewed)
			require.NoError(t, <-store.renewed)
			assert.NoError(t, ctx.Err())
			close(h.release)
			<-done
			assert.Equal(t, http.StatusCreated, w.Code)
		})
	}
}
