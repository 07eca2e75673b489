package retryhttp_test

import (
	"context"
	"testing"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Over an *http.Transport with no AttemptTimeout or MaxElapsed, attempts
// carry the request's own ctx, which nothing ends early: closing each
// response is what frees its connection. A panic with a response unread
// still leaves no connection busy and no goroutine behind.
//
// It does not run in parallel, so that goleak checks it alone.
func TestPanicOverStdTransportLeavesNothingBehind(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) }) // last: after the server's Close

	srv := newServer(t, status(503), status(503), status(200))
	clk := retrytest.NewClock()
	var n int
	p := fakePolicy(clk)
	p.Classifier = func(ctx context.Context, a retry.Attempt) retry.Decision {
		if n++; n == 2 {
			panic("boom") // the second 503 is unread
		}
		return retryhttp.DefaultClassifier(ctx, a)
	}
	tr := &retryhttp.Transport{Policy: p}
	c := srv.client(tr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := get(t, srv.URL).WithContext(ctx)

	stop := skipWaits(clk)
	require.PanicsWithValue(t, "boom", func() { _, _ = c.Do(req) })
	stop()

	assert.NoError(t, ctx.Err(), "the caller's ctx is the caller's")
	assert.Equal(t, 2, srv.hits())
	assert.Equal(t, int32(1), srv.conns.Load(), "the first 503 was drained: its connection was reused")
	c.CloseIdleConnections()
	requireConnsClosed(t, srv)
}

// The response returned over an *http.Transport gives its connection back
// when the caller reads it, for the next request to reuse.
func TestFinalResponseOverStdTransportFreesItsConnection(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(200))
	clk := retrytest.NewClock()
	c := srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)})
	for range 2 {
		r := do(t, c, clk, get(t, srv.URL))
		require.NoError(t, r.err)
		assert.Equal(t, "status 200", readAll(t, r.resp.Body))
	}
	assert.Equal(t, 3, srv.hits())
	assert.Equal(t, int32(1), srv.conns.Load())
}
