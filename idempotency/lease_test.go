package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stormguard/retry"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// renewLog is a Store that reports each Renew, once it has returned, on
// renewed, and fails Renew, without reaching the store, while fail is set.
// after, if set, runs once the store has answered: time passing while the
// reply travels.
type renewLog struct {
	idempotency.Store
	fail    atomic.Bool
	after   func()
	renewed chan error
}

func newRenewLog(s idempotency.Store) *renewLog {
	return &renewLog{Store: s, renewed: make(chan error, 1024)}
}

var errUnreachable = errors.New("store unreachable")

func (l *renewLog) Renew(ctx context.Context, key, token string, lease time.Duration) error {
	err := errUnreachable
	if !l.fail.Load() {
		err = l.Store.Renew(ctx, key, token, lease)
	}
	if l.after != nil {
		l.after()
	}
	l.renewed <- err
	return err
}

// memStore is a MemoryStore on clk (nil: the real clock).
func memStore(t *testing.T, clk retry.Clock) *idempotency.MemoryStore {
	t.Helper()
	var opts idempotency.MemoryOptions
	if clk != nil {
		opts.Clock = clk
	}
	s, err := idempotency.NewMemoryStore(opts)
	require.NoError(t, err)
	return s
}

// ctxHandler hands the ctx of each run with an X-Wait header to the test,
// then waits for release, whatever its ctx does; each run answers 201 and
// its number.
type ctxHandler struct {
	ctxs    chan context.Context
	release chan struct{}
	runs    atomic.Int32
}

func newCtxHandler() *ctxHandler {
	return &ctxHandler{ctxs: make(chan context.Context, 8), release: make(chan struct{})}
}

func (h *ctxHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := h.runs.Add(1)
	if r.Header.Get("X-Wait") != "" {
		h.ctxs <- r.Context()
		<-h.release // a handler that does not watch its ctx: the worst case
	}
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte{byte('0' + n)})
}

// keyed is a POST with an Idempotency-Key, for a handler called directly.
func keyed(key string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader("{}"))
	r.Header.Set("Idempotency-Key", key)
	r.Header.Set("X-Wait", "1")
	return r
}

func TestLeaseIsRenewedWhileTheHandlerRuns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		clk  interface {
			retry.Clock
			Add(time.Duration)
		}
	}{
		{"retrytest.Clock", retrytest.NewClock()},
		{"clock.Mock", clock.NewMock()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := tc.clk
			store := newRenewLog(memStore(t, clk))
			o := newOrders()
			srv := serve(t, newMiddleware(t, idempotency.Options{Store: store, Lease: 3 * time.Second, Clock: clk}), o)
			rq := req{key: "k", body: "{}", header: waiting}

			first := doAsync(srv, rq)
			recv(t, o.started, "the handler")
			for range 10 { // 10s: more than three leases
				clk.Add(time.Second) // Lease/3
				require.NoError(t, recv(t, store.renewed, "a renewal"))
			}
			requireProblem(t, do(t, srv, req{key: "k", body: "{}"}), http.StatusConflict, true)

			close(o.release)
			require.Equal(t, http.StatusCreated, recv(t, first, "the first reply").status)
			assert.Equal(t, "true", do(t, srv, rq).header.Get(idempotency.ReplayedHeader))
			assert.Equal(t, 1, o.ran("k"))
			assert.Empty(t, o.errs, "the handler's ctx did not end")
			assert.Empty(t, store.renewed, "one renewal per Lease/3, no more")
		})
	}
	t.Run("real clock", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			store := newRenewLog(memStore(t, nil))
			h := newCtxHandler()
			mw := newMiddleware(t, idempotency.Options{Store: store, Lease: 3 * time.Second})
			w := httptest.NewRecorder()
			done := make(chan struct{})
			go func() { mw.Handler(h).ServeHTTP(w, keyed("k")); close(done) }()
			ctx := <-h.ctxs
			time.Sleep(10*time.Second + time.Millisecond)
			synctest.Wait()
			assert.Len(t, store.renewed, 10, "one renewal per Lease/3")
			assert.NoError(t, ctx.Err())
			close(h.release)
			<-done
			assert.Equal(t, http.StatusCreated, w.Code)
		})
	})
}

func TestPendingRenewalIsReleasedWhenTheHandlerEnds(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	o := newOrders()
	srv := serve(t, newMiddleware(t, idempotency.Options{Lease: 3 * time.Second, Clock: clk}), o)
	first := doAsync(srv, req{key: "k", body: "{}", header: waiting})
	recv(t, o.started, "the handler")
	assert.Positive(t, clk.Pending(), "a renewal deadline is set")
	close(o.release)
	require.Equal(t, http.StatusCreated, recv(t, first, "the reply").status)
	assert.Zero(t, clk.Pending(), "no renewal deadline is left")
}

func TestLeaseEndsTheHandlerWhenRenewalsFail(t *testing.T) {
	t.Parallel()
	// The store cannot be reached: each renewal fails with an error that
	// is not ErrLeaseLost. One Lease after the claim started, the store
	// may give the key to a retry, so the handler's ctx ends then.
	synctest.Test(t, func(t *testing.T) {
		store := newRenewLog(memStore(t, nil))
		store.fail.Store(true)
		h := newCtxHandler()
		mw := newMiddleware(t, idempotency.Options{Store: store, Lease: 3 * time.Second})
		w := httptest.NewRecorder()
		done := make(chan struct{})
		go func() { mw.Handler(h).ServeHTTP(w, keyed("k")); close(done) }()
		ctx := <-h.ctxs
		time.Sleep(3*time.Second - time.Millisecond)
		synctest.Wait()
		assert.Len(t, store.renewed, 2, "renewals tried at 1s and 2s")
		require.NoError(t, ctx.Err(), "alive within the lease")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.Error(t, ctx.Err(), "ended at the end of the lease")
		assert.ErrorIs(t, context.Cause(ctx), idempotency.ErrLeaseLost)
		close(h.release)
		<-done
	})
}

func TestLeaseIsMeasuredFromTheStartOfTheCallThatGrantedIt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := newRenewLog(memStore(t, nil))
		// The first renewal, at 1s, succeeds, but its reply takes 1.5s to
		// come back; every later one fails. The store granted the lease
		// from the call's start: until 1s + 3s, not 2.5s + 3s.
		var calls atomic.Int32
		store.after = func() {
			if calls.Add(1) == 1 {
				time.Sleep(1500 * time.Millisecond)
				store.fail.Store(true)
			}
		}
		h := newCtxHandler()
		mw := newMiddleware(t, idempotency.Options{Store: store, Lease: 3 * time.Second})
		w := httptest.NewRecorder()
		done := make(chan struct{})
		start := time.Now()
		go func() { mw.Handler(h).ServeHTTP(w, keyed("k")); close(done) }()
		ctx := <-h.ctxs
		<-ctx.Done()
		assert.Equal(t, 4*time.Second, time.Since(start), "the lease ends 3s after the start of the renewal that granted it")
		assert.ErrorIs(t, context.Cause(ctx), idempotency.ErrLeaseLost)
		close(h.release)
		<-done
	})
}

func TestHungRenewalDoesNotKeepTheHandlerAlive(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := newRenewLog(memStore(t, nil))
		store.after = func() { time.Sleep(time.Minute) } // every reply takes a minute
		h := newCtxHandler()
		mw := newMiddleware(t, idempotency.Options{Store: store, Lease: 3 * time.Second, StoreTimeout: time.Hour})
		w := httptest.NewRecorder()
		done := make(chan struct{})
		start := time.Now()
		go func() { mw.Handler(h).ServeHTTP(w, keyed("k")); close(done) }()
		ctx := <-h.ctxs
		<-ctx.Done()
		assert.Equal(t, 3*time.Second, time.Since(start), "the lease ends while its renewal hangs")
		assert.ErrorIs(t, context.Cause(ctx), idempotency.ErrLeaseLost)
		close(h.release)
		<-done
	})
}

func TestExpiredLeaseThatNobodyTookStillSavesTheResult(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	store := newRenewLog(memStore(t, clk))
	store.fail.Store(true)
	o := newOrders()
	srv := serve(t, newMiddleware(t, idempotency.Options{Store: store, Lease: 3 * time.Second, Clock: clk}), o)

	first := doAsync(srv, req{key: "k", body: "{}", header: waiting})
	recv(t, o.started, "the handler")
	for range 2 {
		clk.Add(time.Second)
		require.ErrorIs(t, recv(t, store.renewed, "a failed renewal"), errUnreachable)
	}
	clk.Add(time.Second) // the lease runs out; nobody claims the key
	// The handler returns as its ctx ends, and answers 201 all the same.
	got := recv(t, first, "the first reply")
	require.Equal(t, http.StatusCreated, got.status, "the result is saved: body %s", got.body)
	require.Len(t, o.errs, 1)
	assert.ErrorIs(t, o.errs[0], idempotency.ErrLeaseLost, "the handler's ctx ended with the lease")

	again := do(t, srv, req{key: "k", body: "{}"})
	assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader), "the retry gets the result")
	assert.Equal(t, got.body, again.body)
	assert.Equal(t, 1, o.ran("k"), "the handler ran once")
}

// The same past MaxResponseBytes: the body passes the bound once the lease
// is lost, so none of it is sent, but the claim is settled as for a small
// one: the status and headers are saved, and the retry gets them.
func TestExpiredLeaseThatNobodyTookSavesAResponsePastMaxResponseBytes(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	store := newRenewLog(memStore(t, clk))
	store.fail.Store(true)
	o := newOrders()
	srv := serve(t, newMiddleware(t, idempotency.Options{Store: store, Lease: 3 * time.Second, Clock: clk, MaxResponseBytes: 8}), o)

	first := doAsync(srv, req{key: "k", body: "{}", header: waiting})
	recv(t, o.started, "the handler")
	for range 2 {
		clk.Add(time.Second)
		require.ErrorIs(t, recv(t, store.renewed, "a failed renewal"), errUnreachable)
	}
	clk.Add(time.Second) // the lease runs out; nobody claims the key
	got := recv(t, first, "the first reply")
	require.Equal(t, http.StatusCreated, got.status, "the result is saved: body %s", got.body)
	assert.Equal(t, "true", got.header.Get(idempotency.BodyOmittedHeader), "the body was not sent")
	assert.Equal(t, "/orders/1", got.header.Get("Location"))

	again := do(t, srv, req{key: "k", body: "{}"})
	assert.Equal(t, http.StatusCreated, again.status)
	assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader), "the retry gets the result: status %d %s", again.status, again.body)
	assert.Equal(t, "/orders/1", again.header.Get("Location"))
	assert.Equal(t, 1, o.ran("k"), "the handler ran once")
}

func TestRenewalOnAnAutoClockIsNoHotLoop(t *testing.T) {
	t.Parallel()
	// An auto clock moves time for waits only. A renewal that waited would
	// move it by a third of a lease at once, renew, wait again, without
	// end; as a deadline, it fires only when something moves time past it.
	clk := retrytest.NewAutoClock()
	start := clk.Now()
	store := newRenewLog(memStore(t, clk))
	o := newOrders()
	srv := serve(t, newMiddleware(t, idempotency.Options{Store: store, Lease: 3 * time.Second, Clock: clk}), o)

	first := doAsync(srv, req{key: "k", body: "{}", header: waiting})
	recv(t, o.started, "the handler")
	requireProblem(t, do(t, srv, req{key: "k", body: "{}"}), http.StatusConflict, true)
	close(o.release)
	require.Equal(t, http.StatusCreated, recv(t, first, "the first reply").status)
	assert.Equal(t, start, clk.Now(), "renewals did not move the clock")
	assert.Empty(t, store.renewed, "nothing moved time: no renewal")
	assert.Empty(t, o.errs)
	assert.Zero(t, clk.Pending())
}

func TestRenewalOnAnAutoClockFollowsTheWaitsOfOthers(t *testing.T) {
	t.Parallel()
	// A handler that retries a call on the same auto clock, as a test of a
	// service does, moves time past a renewal: the renewal happens then.
	clk := retrytest.NewAutoClock()
	store := newRenewLog(memStore(t, clk))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wait, cancel := clk.WithTimeout(r.Context(), 2500*time.Millisecond) // as retry.Do waits
		<-wait.Done()
		cancel()
		select { // not recv: FailNow belongs to the test's goroutine
		case err := <-store.renewed:
			if err == nil && r.Context().Err() == nil {
				w.WriteHeader(http.StatusCreated)
				return
			}
		case <-time.After(watchdog):
		}
		w.WriteHeader(http.StatusInternalServerError)
	})
	srv := serve(t, newMiddleware(t, idempotency.Options{Store: store, Lease: 3 * time.Second, Clock: clk}), h)
	assert.Equal(t, http.StatusCreated, do(t, srv, req{key: "k", body: "{}"}).status)
}

func TestCrashedHolderIsTakenOverAfterTheLeaseNotTheTTL(t *testing.T) {
	t.Parallel()
	storeClk := clock.NewMock()
	mem := memStore(t, storeClk)
	const lease = 10 * time.Second
	// Process A hangs in its handler and never renews (its clock never
	// moves): to the store it is as good as dead. Process B shares the store.
	a := newMiddleware(t, idempotency.Options{Store: mem, Lease: lease, Clock: clock.NewMock()})
	b := newMiddleware(t, idempotency.Options{Store: mem, Lease: lease, Clock: storeClk})
	oA, oB := newOrders(), newOrders()
	srvA, srvB := serve(t, a, oA), serve(t, b, oB)
	rq := req{key: "k", body: "{}"}

	hungA := doAsync(srvA, req{key: "k", body: "{}", header: waiting})
	recv(t, oA.started, "A's handler")
	storeClk.Add(lease - time.Millisecond)
	requireProblem(t, do(t, srvB, rq), http.StatusConflict, true)

	storeClk.Add(time.Millisecond)
	taken := do(t, srvB, rq)
	require.Equal(t, http.StatusCreated, taken.status, "B takes the key over one lease after A's claim")
	assert.Equal(t, 1, oB.ran("k"))

	// A wakes up: its result must not replace B's.
	close(oA.release)
	requireProblem(t, recv(t, hungA, "A's reply"), http.StatusConflict, true)
	replay := do(t, srvA, rq)
	assert.Equal(t, "true", replay.header.Get(idempotency.ReplayedHeader))
	assert.Equal(t, taken.body, replay.body, "the result kept is B's, whichever process asks")
}

func TestLostLeaseNeverOverwritesTheWinner(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	store := newRenewLog(memStore(t, clk))
	h := newCtxHandler()
	srv := serve(t, newMiddleware(t, idempotency.Options{Store: store, Lease: 3 * time.Second, Clock: clk}), h)
	rq := req{key: "k", body: "{}"}

	loser := doAsync(srv, req{key: "k", body: "{}", header: waiting})
	ctx := recv(t, h.ctxs, "the first handler")
	store.fail.Store(true)
	for range 2 { // two failed renewals, then the lease runs out
		clk.Add(time.Second)
		require.ErrorIs(t, recv(t, store.renewed, "a failed renewal"), errUnreachable)
	}
	clk.Add(time.Second)
	recv(t, ctx.Done(), "the end of the handler's ctx")
	assert.ErrorIs(t, context.Cause(ctx), idempotency.ErrLeaseLost, "the handler's ctx ended with ErrLeaseLost")

	winner := do(t, srv, rq)
	require.Equal(t, http.StatusCreated, winner.status, "a retry takes the expired key over")
	require.Equal(t, "2", winner.body)

	// The first handler ignores its ctx and answers 201: its result is not
	// saved over the winner's, and its client is sent to get the winner's.
	close(h.release)
	requireProblem(t, recv(t, loser, "the first reply"), http.StatusConflict, true)
	again := do(t, srv, rq)
	assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
	assert.Equal(t, winner.body, again.body, "the winner's result stands")
}

func TestDefaultLeaseShrinksToAShortTTL(t *testing.T) {
	t.Parallel()
	storeClk := clock.NewMock()
	mem := memStore(t, storeClk)
	// A never renews (its clock never moves); B sees the store's time.
	a := newMiddleware(t, idempotency.Options{Store: mem, TTL: 300 * time.Millisecond, Clock: clock.NewMock()})
	b := newMiddleware(t, idempotency.Options{Store: mem, TTL: 300 * time.Millisecond, Clock: storeClk})
	oA, oB := newOrders(), newOrders()
	srvA, srvB := serve(t, a, oA), serve(t, b, oB)
	hung := doAsync(srvA, req{key: "k", body: "{}", header: waiting})
	recv(t, oA.started, "A's handler")
	storeClk.Add(300*time.Millisecond - time.Millisecond)
	requireProblem(t, do(t, srvB, req{key: "k", body: "{}"}), http.StatusConflict, true)
	storeClk.Add(time.Millisecond)
	assert.Equal(t, http.StatusCreated, do(t, srvB, req{key: "k", body: "{}"}).status, "the lease is the TTL, 300ms")
	close(oA.release)
	recv(t, hung, "A's reply")
}

func TestExplicitLeaseAboveTTLIsRefused(t *testing.T) {
	t.Parallel()
	_, err := idempotency.New(idempotency.Options{TTL: 300 * time.Millisecond, Lease: time.Second})
	require.ErrorIs(t, err, idempotency.ErrInvalidOptions)
	assert.Contains(t, err.Error(), "Lease 1s is above TTL 300ms")
	_, err = idempotency.New(idempotency.Options{TTL: time.Second, Lease: time.Second})
	assert.NoError(t, err, "a Lease equal to the TTL is allowed")
}

func TestResultIsKeptForTheTTL(t *testing.T) {
	t.Parallel()
	clk := clock.NewMock()
	o := newOrders()
	srv := serve(t, newMiddleware(t, idempotency.Options{TTL: time.Hour, Clock: clk}), o)
	rq := req{key: "k", body: "{}"}
	do(t, srv, rq)
	clk.Add(time.Hour - time.Millisecond)
	assert.Equal(t, "true", do(t, srv, rq).header.Get(idempotency.ReplayedHeader))
	clk.Add(time.Millisecond)
	assert.Empty(t, do(t, srv, rq).header.Get(idempotency.ReplayedHeader), "after the TTL the key is new")
	assert.Equal(t, 2, o.ran("k"))
}
