package idempotency_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLeaseIsRenewedWhileTheHandlerRuns(t *testing.T) {
	t.Parallel()
	// retrytest.Clock sends each renewal's wait once its timer is set, so
	// the test moves time by exactly that and never races the renewer.
	clk := retrytest.NewClock()
	o := newOrders()
	srv := serve(t, newMiddleware(t, idempotency.Options{Lease: 3 * time.Second, Clock: clk}), o)
	rq := req{key: "k", body: "{}", header: waiting}

	first := doAsync(srv, rq)
	recv(t, o.started, "the handler")
	for range 10 { // 10s: more than three leases
		d := recv(t, clk.Waits(), "a renewal wait")
		require.Equal(t, time.Second, d, "renewed every Lease/3")
		clk.Add(d)
	}
	recv(t, clk.Waits(), "the wait after the last renewal") // so that renewal is done
	requireProblem(t, do(t, srv, rq), http.StatusConflict, true)

	close(o.release)
	require.Equal(t, http.StatusCreated, recv(t, first, "the first reply").status)
	assert.Equal(t, "true", do(t, srv, rq).header.Get(idempotency.ReplayedHeader))
	assert.Equal(t, 1, o.ran("k"))
	assert.Empty(t, o.errs, "the handler's ctx did not end")
	assert.Zero(t, clk.Pending(), "no renewal timer is left")
}

func TestCrashedHolderIsTakenOverAfterTheLeaseNotTheTTL(t *testing.T) {
	t.Parallel()
	storeClk := clock.NewMock()
	mem, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{Clock: storeClk})
	require.NoError(t, err)
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

// flakyRenew is a Store whose Renew fails, without reaching the store,
// while fail is set.
type flakyRenew struct {
	idempotency.Store
	fail atomic.Bool
}

func (f *flakyRenew) Renew(ctx context.Context, key, token string, lease time.Duration) error {
	if f.fail.Load() {
		return errors.New("store unreachable")
	}
	return f.Store.Renew(ctx, key, token, lease)
}

func TestLostLeaseNeverOverwritesTheWinner(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	mem, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{Clock: clk})
	require.NoError(t, err)
	store := &flakyRenew{Store: mem}
	o := newOrders()
	srv := serve(t, newMiddleware(t, idempotency.Options{Store: store, Lease: 3 * time.Second, Clock: clk}), o)
	rq := req{key: "k", body: "{}"}

	loser := doAsync(srv, req{key: "k", body: "{}", header: waiting})
	recv(t, o.started, "the first handler")
	store.fail.Store(true)
	for range 3 { // three failed renewals: the lease runs out
		clk.Add(recv(t, clk.Waits(), "a renewal wait"))
	}
	recv(t, clk.Waits(), "the wait after the third renewal")

	winner := do(t, srv, rq)
	require.Equal(t, http.StatusCreated, winner.status, "a retry takes the expired key over")

	// The store is back; the first request's next renewal finds its lease
	// lost, its handler's ctx ends, and its result is not saved.
	store.fail.Store(false)
	clk.Add(time.Second)
	requireProblem(t, recv(t, loser, "the first reply"), http.StatusConflict, true)
	require.Len(t, o.errs, 1)
	assert.ErrorIs(t, o.errs[0], idempotency.ErrLeaseLost, "the handler's ctx ended with ErrLeaseLost")

	again := do(t, srv, rq)
	assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
	assert.Equal(t, winner.body, again.body, "the winner's result stands")
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
