package idempotency_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stormguard/retry/idempotency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// charge is a handler that charges a card, then does a step that honours
// its ctx (a database commit, a call to a ledger): if ctx ends before that
// step, it answers 500, as a real handler whose call failed with
// context.Canceled would, and the charge is already made.
type charge struct {
	charges atomic.Int32
	started chan struct{}
	release chan struct{}
	cause   chan error // the cause of the ctx, when it ended before release
}

func newCharge() *charge {
	return &charge{started: make(chan struct{}, 4), release: make(chan struct{}), cause: make(chan error, 4)}
}

func (c *charge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := c.charges.Add(1)
	c.started <- struct{}{}
	select {
	case <-c.release:
	case <-r.Context().Done():
		c.cause <- context.Cause(r.Context())
		http.Error(w, "ledger call failed", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, "charge %d", n)
}

// departing serves h behind m, and closes gone when the client of the
// first request has left (its request's ctx ended while it was served)
// and done once that request's ServeHTTP has returned.
func departing(t *testing.T, m *idempotency.Middleware, h http.Handler) (srvURL string, client *http.Client, gone, done <-chan struct{}) {
	t.Helper()
	g, d := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	mh := m.Handler(h)
	srv := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
		if !first.CompareAndSwap(false, true) {
			mh.ServeHTTP(w, r)
			return
		}
		stop := context.AfterFunc(r.Context(), func() { close(g) })
		mh.ServeHTTP(w, r)
		if !stop() {
			close(d) // the ctx ended while served: the client left
			return
		}
		close(g) // never happens when the test works: unblock it anyway
		close(d)
	})
	return srv.URL, srv.Client(), g, d
}

// postGivingUp sends a keyed POST whose client gives up once the handler
// has started, as a client's attempt timeout does.
func postGivingUp(t *testing.T, url string, client *http.Client, started <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/charges", strings.NewReader(`{"amount":100}`))
	require.NoError(t, err)
	r.Header.Set("Idempotency-Key", "k")
	errc := make(chan error, 1)
	go func() {
		resp, err := client.Do(r)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	recv(t, started, "the handler")
	cancel()
	require.ErrorIs(t, recv(t, errc, "the client to give up"), context.Canceled)
}

func postKeyed(t *testing.T, url string, client *http.Client) reply {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, url+"/charges", strings.NewReader(`{"amount":100}`))
	require.NoError(t, err)
	r.Header.Set("Idempotency-Key", "k")
	resp, err := client.Do(r)
	require.NoError(t, err)
	return readReply(t, resp)
}

func TestClientDepartureDoesNotCancelAClaimedHandler(t *testing.T) {
	t.Parallel()
	c := newCharge()
	url, client, gone, done := departing(t, newMiddleware(t, idempotency.Options{}), c)

	postGivingUp(t, url, client, c.started)
	recv(t, gone, "the server to see the client leave")
	// The client is gone; the handler is still at work, and finishes.
	close(c.release)
	recv(t, done, "the first request to end")
	select {
	case err := <-c.cause:
		require.Failf(t, "the handler's ctx ended", "cause %v", err)
	default:
	}

	again := postKeyed(t, url, client)
	assert.Equal(t, http.StatusCreated, again.status)
	assert.Equal(t, "charge 1", again.body, "the retry gets the result of the run its client left")
	assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
	assert.Equal(t, int32(1), c.charges.Load(), "the card was charged once")
}

func TestCancelOnDisconnectEndsTheHandlerWithItsClient(t *testing.T) {
	t.Parallel()
	c := newCharge()
	url, client, gone, done := departing(t, newMiddleware(t, idempotency.Options{CancelOnDisconnect: true}), c)

	postGivingUp(t, url, client, c.started)
	recv(t, gone, "the server to see the client leave")
	assert.ErrorIs(t, recv(t, c.cause, "the handler's ctx to end"), context.Canceled)
	recv(t, done, "the first request to end")

	// The opt-out's documented cost: the handler answered 500, the key
	// was released, and the retry charges again.
	close(c.release)
	again := postKeyed(t, url, client)
	assert.Equal(t, http.StatusCreated, again.status)
	assert.Empty(t, again.header.Get(idempotency.ReplayedHeader))
	assert.Equal(t, int32(2), c.charges.Load())
}

func TestHandlerTimeoutEndsTheDetachedCtx(t *testing.T) {
	t.Parallel()
	clk := clock.NewMock()
	const timeout = 30 * time.Second
	// A lease long enough that no renewal comes within the timeout.
	m := newMiddleware(t, idempotency.Options{Clock: clk, Lease: time.Hour, HandlerTimeout: timeout})
	var (
		mu       sync.Mutex
		deadline time.Time
		has      bool
	)
	c := newCharge()
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		deadline, has = r.Context().Deadline()
		mu.Unlock()
		c.ServeHTTP(w, r)
	}))
	start := clk.Now()
	codes := make(chan int, 1)
	go func() {
		rec := serveDirect(h, req{key: "k", body: "{}"})
		codes <- rec.Code
	}()
	recv(t, c.started, "the handler")
	clk.Add(timeout - time.Millisecond)
	select {
	case err := <-c.cause:
		require.Failf(t, "the ctx ended before HandlerTimeout", "cause %v", err)
	default:
	}
	clk.Add(time.Millisecond)
	assert.ErrorIs(t, recv(t, c.cause, "the handler's ctx to end"), context.DeadlineExceeded)
	assert.Equal(t, http.StatusInternalServerError, recv(t, codes, "the answer"))
	mu.Lock()
	defer mu.Unlock()
	require.True(t, has, "the handler's ctx has a deadline")
	assert.Equal(t, start.Add(timeout), deadline, "at HandlerTimeout on Options.Clock")
}

func TestNegativeHandlerTimeoutIsRefused(t *testing.T) {
	t.Parallel()
	_, err := idempotency.New(idempotency.Options{HandlerTimeout: -time.Second})
	require.ErrorIs(t, err, idempotency.ErrInvalidOptions)
	assert.Contains(t, err.Error(), "HandlerTimeout")
	assert.False(t, errors.Is(err, context.DeadlineExceeded))
}
