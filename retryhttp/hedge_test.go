package retryhttp_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowFirst answers its first request only after stall (or when the
// request is canceled, which it records), and every other at once.
func slowFirst(stall time.Duration, canceled *atomic.Int32) []http.HandlerFunc {
	return []http.HandlerFunc{
		func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(stall):
				status(200)(w, r)
			case <-r.Context().Done():
				canceled.Add(1)
			}
		},
		status(200),
	}
}

// A GET whose first copy stalls gets a second after the hedge delay; the
// second answers, the first is canceled, and nothing is left open.
func TestHedgedGETTakesTheFasterCopy(t *testing.T) {
	t.Parallel()
	var canceled atomic.Int32
	srv := newServer(t, slowFirst(5*time.Second, &canceled)...)
	tr := &retryhttp.Transport{Hedger: &retry.Hedger{Delay: 5 * time.Millisecond}, AttemptHeader: "Retry-Attempt"}
	var trace retry.Trace
	req := get(t, srv.URL)
	req = req.WithContext(retryhttp.WithTrace(req.Context(), &trace))
	resp, err := srv.client(tr).Do(req)
	require.NoError(t, err)
	assert.Equal(t, "status 200", readAll(t, resp.Body), "the winner's body is readable after the hedge returned")
	assert.Equal(t, 2, srv.hits())
	assert.Equal(t, 2, trace.Attempts())
	assert.Equal(t, retry.StopSuccess, trace.Stop())
	// Under load the second copy can reach the server first (each dials a
	// connection of its own): which arrives first is not the point.
	assert.ElementsMatch(t, []string{"1", "2"}, []string{srv.requests()[0].header.Get("Retry-Attempt"), srv.requests()[1].header.Get("Retry-Attempt")})
	require.Eventually(t, func() bool { return canceled.Load() == 1 }, watchdog, time.Millisecond, "the slow copy was canceled")
}

// A request that is not safe to repeat is never hedged, however slow.
func TestKeylessPOSTIsNeverHedged(t *testing.T) {
	t.Parallel()
	var canceled atomic.Int32
	srv := newServer(t, slowFirst(30*time.Millisecond, &canceled)...)
	tr := &retryhttp.Transport{Hedger: &retry.Hedger{Delay: time.Millisecond}}
	resp, err := srv.client(tr).Post(srv.URL, "text/plain", strings.NewReader("charge"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 1, srv.hits())
}

// A keyed POST is hedged, with one key on every copy and the same body.
func TestKeyedPOSTIsHedgedWithOneKey(t *testing.T) {
	t.Parallel()
	var canceled atomic.Int32
	srv := newServer(t, slowFirst(5*time.Second, &canceled)...)
	tr := &retryhttp.Transport{Hedger: &retry.Hedger{Delay: 5 * time.Millisecond}, AutoIdempotencyKey: true, HedgeWrites: true}
	resp, err := srv.client(tr).Post(srv.URL, "text/plain", strings.NewReader("order"))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 2, srv.hits())
	first, second := srv.requests()[0], srv.requests()[1]
	assert.NotEmpty(t, first.header.Get("Idempotency-Key"))
	assert.Equal(t, first.header.Get("Idempotency-Key"), second.header.Get("Idempotency-Key"))
	assert.Equal(t, "order", second.body)
}

// A final status ends a hedged request as it ends a plain one: returned,
// unread; a retryable one is retried.
func TestHedgedStatuses(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(404))
	tr := &retryhttp.Transport{Hedger: &retry.Hedger{Delay: time.Hour}}
	resp, err := srv.client(tr).Get(srv.URL)
	require.NoError(t, err)
	assert.Equal(t, 404, resp.StatusCode)
	assert.Equal(t, "status 404", readAll(t, resp.Body))

	srv = newServer(t, status(503), status(503), status(200))
	tr = &retryhttp.Transport{Hedger: &retry.Hedger{Delay: time.Hour}, Policy: retry.Policy{BaseBackoff: time.Millisecond}}
	resp, err = srv.client(tr).Get(srv.URL)
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	resp.Body.Close()
	assert.Equal(t, 3, srv.hits())
	assert.Equal(t, int32(1), srv.conns.Load(), "the failed responses were drained: one connection")
}

// A Transport with Refresh does not hedge: its 401 handling is one
// request's at a time.
func TestTransportWithRefreshDoesNotHedge(t *testing.T) {
	t.Parallel()
	var canceled atomic.Int32
	srv := newServer(t, slowFirst(30*time.Millisecond, &canceled)...)
	tr := &retryhttp.Transport{
		Hedger:  &retry.Hedger{Delay: time.Millisecond},
		Refresh: func(context.Context, *http.Request) (string, error) { return "Bearer x", nil },
	}
	resp, err := srv.client(tr).Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 1, srv.hits())
}

// Hedged copies carry the retry loop's mark, as plain attempts do: a
// retrying Transport inside Base makes one attempt per copy and leaves
// retrying to the hedging one, so a failing server sees 3 requests, not 9.
func TestHedgedCopiesDeferToTheirLoop(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503))
	inner := &retryhttp.Transport{Base: srv.Client().Transport, Policy: retry.Policy{MaxAttempts: 3, BaseBackoff: time.Millisecond}}
	tr := &retryhttp.Transport{Base: inner, Hedger: &retry.Hedger{Delay: time.Hour}, Policy: retry.Policy{MaxAttempts: 3, BaseBackoff: time.Millisecond}}
	resp, err := srv.client(tr).Get(srv.URL)
	require.NoError(t, err)
	assert.Equal(t, 503, resp.StatusCode)
	resp.Body.Close()
	assert.Equal(t, 3, srv.hits(), "one retry owner")
}

// Only reads are hedged by default: an unkeyed PUT or DELETE, however
// slow, is not; with HedgeWrites it is.
func TestWritesAreHedgedOnlyWithHedgeWrites(t *testing.T) {
	t.Parallel()
	for _, method := range []string{http.MethodPut, http.MethodDelete} {
		for _, writes := range []bool{false, true} {
			var canceled atomic.Int32
			srv := newServer(t, slowFirst(30*time.Millisecond, &canceled)...)
			tr := &retryhttp.Transport{Hedger: &retry.Hedger{Delay: time.Millisecond}, HedgeWrites: writes}
			req, err := http.NewRequest(method, srv.URL, nil)
			require.NoError(t, err)
			resp, err := srv.client(tr).Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			want := 1
			if writes {
				want = 2
			}
			assert.Equal(t, want, srv.hits(), "%s with HedgeWrites %v", method, writes)
		}
	}
}
