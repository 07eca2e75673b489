package retryhttp_test

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func newRequest(t *testing.T, method, url string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	require.NoError(t, err)
	return req
}

func TestIdempotentMethodsAreRetried(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, status(503), status(200))
			clk := retrytest.NewClock()
			r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)}), clk, newRequest(t, method, srv.URL, nil))
			require.NoError(t, r.err)
			assert.Equal(t, 200, r.resp.StatusCode)
			assert.Equal(t, 2, srv.hits())
		})
	}
}

func TestNonIdempotentWithoutKeyGetsOneAttempt(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"POST", "PATCH", "LOCK"} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, status(503), status(200))
			clk := retrytest.NewClock()
			req := newRequest(t, method, srv.URL, strings.NewReader(`{"order":1}`))
			r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)}), clk, req)

			require.NoError(t, r.err)
			assert.Equal(t, 503, r.resp.StatusCode, "the 503 is returned, not retried")
			assert.Equal(t, 1, srv.hits())
			assert.Empty(t, r.waits)
			why := "503 Service Unavailable; " + method + " without Idempotency-Key is not retried"
			assert.Equal(t, why, r.trace.Last().Reason, "the Trace says why")
			assert.Equal(t, retry.StopNotRetryable, r.trace.Stop())
			assert.Empty(t, srv.requests()[0].header.Get("Idempotency-Key"), "no key is made unless asked for")
		})
	}
}

func TestPOSTWithKeyIsRetriedWithTheSameKeyAndBody(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(429), status(200))
	clk := retrytest.NewClock()
	body := bytes.Repeat([]byte("order-line\n"), 1000)
	req := newRequest(t, http.MethodPost, srv.URL, bytes.NewReader(body))
	req.Header.Set("Idempotency-Key", "caller-key-1")
	r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk), AutoIdempotencyKey: true}), clk, req)

	require.NoError(t, r.err)
	assert.Equal(t, 200, r.resp.StatusCode)
	require.Equal(t, 3, srv.hits())
	for i, s := range srv.requests() {
		assert.Equal(t, []string{"caller-key-1"}, s.header.Values("Idempotency-Key"), "attempt %d: the caller's key, never replaced", i+1)
		assert.Equal(t, string(body), s.body, "attempt %d: the body byte for byte", i+1)
	}
}

func TestAutoIdempotencyKey(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(200), status(503), status(200), status(200))
	clk := retrytest.NewClock()
	c := srv.client(&retryhttp.Transport{Policy: fakePolicy(clk), AutoIdempotencyKey: true})

	for range 2 {
		r := do(t, c, clk, newRequest(t, http.MethodPost, srv.URL, strings.NewReader("pay 10")))
		require.NoError(t, r.err)
		assert.Equal(t, 200, r.resp.StatusCode, "a POST with a key is retried")
		assert.Equal(t, "status 200", readAll(t, r.resp.Body))
	}
	r := do(t, c, clk, get(t, srv.URL))
	require.NoError(t, r.err)

	seen := srv.requests()
	require.Len(t, seen, 5)
	first, second := seen[0].header.Get("Idempotency-Key"), seen[2].header.Get("Idempotency-Key")
	assert.Regexp(t, uuidV4, first)
	assert.Equal(t, first, seen[1].header.Get("Idempotency-Key"), "the same key on every attempt")
	assert.Equal(t, second, seen[3].header.Get("Idempotency-Key"))
	assert.NotEqual(t, first, second, "one key per request")
	assert.Empty(t, seen[4].header.Values("Idempotency-Key"), "an idempotent method needs no key")
}

func TestCustomIdempotencyHeader(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(200))
	clk := retrytest.NewClock()
	req := newRequest(t, http.MethodPatch, srv.URL, strings.NewReader("x"))
	req.Header.Set("X-Request-Key", "k-7")
	r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk), IdempotencyHeader: "x-request-key"}), clk, req)
	require.NoError(t, r.err)
	assert.Equal(t, 2, srv.hits())
}

// An empty or nil key is no key: a keyless POST is sent once. With
// AutoIdempotencyKey, such a request gets a real key in its place.
func TestEmptyOrNilKeyIsNoKey(t *testing.T) {
	t.Parallel()
	for name, set := range map[string]func(http.Header){
		"nil":             func(h http.Header) { h["Idempotency-Key"] = nil },
		"empty":           func(h http.Header) { h.Set("Idempotency-Key", "") },
		"blank":           func(h http.Header) { h.Set("Idempotency-Key", "  ") },
		"empty, any case": func(h http.Header) { h["idempotency-key"] = []string{""} },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, status(503), status(200))
			clk := retrytest.NewClock()
			req := newRequest(t, http.MethodPost, srv.URL, strings.NewReader("x"))
			set(req.Header)
			r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)}), clk, req)
			require.NoError(t, r.err)
			assert.Equal(t, 503, r.resp.StatusCode)
			assert.Equal(t, 1, srv.hits(), "a POST without a usable key is sent once")

			srv = newServer(t, status(503), status(200))
			req = newRequest(t, http.MethodPost, srv.URL, strings.NewReader("x"))
			set(req.Header)
			r = do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk), AutoIdempotencyKey: true}), clk, req)
			require.NoError(t, r.err)
			require.Equal(t, 2, srv.hits())
			first, second := srv.requests()[0].header.Values("Idempotency-Key"), srv.requests()[1].header.Values("Idempotency-Key")
			require.Len(t, first, 1, "one key, the made one, in place of the empty one")
			assert.NotEmpty(t, first[0])
			assert.Equal(t, first, second)
		})
	}
}

// A key under another spelling of the header's name is a key: the request
// is retried, and AutoIdempotencyKey adds no second, different one.
func TestKeyUnderAnySpellingIsSeen(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(200))
	clk := retrytest.NewClock()
	req := newRequest(t, http.MethodPost, srv.URL, strings.NewReader("x"))
	req.Header["idempotency-key"] = []string{"k1"}
	r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk), AutoIdempotencyKey: true}), clk, req)
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.resp.StatusCode)
	require.Equal(t, 2, srv.hits())
	for _, s := range srv.requests() {
		assert.Equal(t, []string{"k1"}, s.header.Values("Idempotency-Key"), "the caller's key, and only it")
	}
}

func TestBodyWithoutGetBodyGetsOneAttempt(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(200))
	clk := retrytest.NewClock()
	body := &closeTracker{Reader: strings.NewReader("stream")} // no GetBody
	req := newRequest(t, http.MethodPut, srv.URL, body)
	require.Nil(t, req.GetBody)
	r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)}), clk, req)

	require.NoError(t, r.err)
	assert.Equal(t, 503, r.resp.StatusCode)
	assert.Equal(t, 1, srv.hits())
	assert.Equal(t, "503 Service Unavailable; body cannot be replayed (no GetBody)", r.trace.Last().Reason)
	assert.True(t, body.closed.Load())
}

func TestBodyIsReplayedByteIdentical(t *testing.T) {
	t.Parallel()
	// Each response closes its connection, so that every attempt is on a
	// fresh one, where net/http would not rewind the body by itself.
	srv := newServer(t, status(502, "Connection", "close"), status(503, "Connection", "close"),
		status(504, "Connection", "close"), status(200))
	clk := retrytest.NewClock()
	body := make([]byte, 200<<10)
	for i := range body {
		body[i] = byte(i * 7)
	}
	req := newRequest(t, http.MethodPut, srv.URL, bytes.NewReader(body))
	r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)}), clk, req)

	require.NoError(t, r.err)
	require.Equal(t, 4, srv.hits())
	assert.Equal(t, int32(4), srv.conns.Load())
	for i, s := range srv.requests() {
		assert.True(t, s.body == string(body), "attempt %d sent a different body", i+1)
	}
}
