package retryhttp_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ctxSpy is a Base that records the ctx of every attempt it sends.
type ctxSpy struct {
	base http.RoundTripper
	mu   sync.Mutex
	ctxs []context.Context
}

func (s *ctxSpy) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.ctxs = append(s.ctxs, req.Context())
	s.mu.Unlock()
	return s.base.RoundTrip(req)
}

func (s *ctxSpy) attempts() []context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]context.Context(nil), s.ctxs...)
}

// Each attempt's ctx ends when its response is drained for a retry, and the
// final attempt's only when the caller closes the body.
func TestAttemptCtxEndsWhenItsResponseIsDone(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(200))
	clk := retrytest.NewClock()
	spy := &ctxSpy{base: srv.Client().Transport}
	r := do(t, &http.Client{Transport: &retryhttp.Transport{Base: spy, Policy: fakePolicy(clk)}}, clk, get(t, srv.URL))
	require.NoError(t, r.err)

	ctxs := spy.attempts()
	require.Len(t, ctxs, 2)
	assert.Error(t, ctxs[0].Err(), "the retried attempt was released")
	assert.NoError(t, ctxs[1].Err(), "the final attempt lives while its body is open")
	assert.Equal(t, "status 200", readAll(t, r.resp.Body))
	assert.Error(t, ctxs[1].Err(), "closing the body released it")
}

func TestBodilessResponseIsReleasedAtOnce(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(200))
	spy := &ctxSpy{base: srv.Client().Transport}
	resp, err := (&http.Client{Transport: &retryhttp.Transport{Base: spy}}).Head(srv.URL)
	require.NoError(t, err)
	assert.Equal(t, http.NoBody, resp.Body)
	assert.Error(t, spy.attempts()[0].Err())
}

// The body of a 101 Switching Protocols response is the connection: it
// stays writable through the Transport.
func TestSwitchingProtocolsBodyStaysWritable(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_ = rw.Flush()
		line, _ := rw.ReadString('\n')
		_, _ = rw.WriteString(line)
		_ = rw.Flush()
	})
	req := get(t, srv.URL)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo")
	resp, err := srv.client(&retryhttp.Transport{}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)

	rw, ok := resp.Body.(io.ReadWriteCloser)
	require.True(t, ok, "the upgraded body is writable")
	_, err = io.WriteString(rw, "ping\n")
	require.NoError(t, err)
	line, err := bufio.NewReader(rw).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "ping\n", line)
}

func TestLargeRetriedBodyIsNotReadToTheEnd(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 4<<20)
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(503)
		_, _ = io.WriteString(w, big)
	}, status(200))
	clk := retrytest.NewClock()
	r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)}), clk, get(t, srv.URL))
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.resp.StatusCode)
	assert.Equal(t, int32(2), srv.conns.Load(), "cut off after 64KiB: the connection was closed, not drained")
}

type idleCloser struct {
	http.RoundTripper
	closed int
}

func (c *idleCloser) CloseIdleConnections() { c.closed++ }

func TestCloseIdleConnectionsReachesBase(t *testing.T) {
	t.Parallel()
	base := &idleCloser{}
	(&http.Client{Transport: &retryhttp.Transport{Base: base}}).CloseIdleConnections()
	assert.Equal(t, 1, base.closed)
}

// A retried answer without a Content-Length (chunked) is drained too, so
// that its connection serves the next attempt: 50 requests, each retried
// once after a chunked 503, open one connection, not 51.
func TestChunkedRetriedBodiesAreDrainedForReuse(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := newServer(t, func(w http.ResponseWriter, _ *http.Request) {
		if hits.Add(1)%2 == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = http.NewResponseController(w).Flush() // no Content-Length: chunked
			_, _ = io.WriteString(w, strings.Repeat("busy ", 100))
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	c := srv.client(&retryhttp.Transport{Policy: retry.Policy{Clock: retrytest.NewAutoClock()}})
	for range 50 {
		resp, err := c.Get(srv.URL)
		require.NoError(t, err)
		assert.Equal(t, "ok", readAll(t, resp.Body))
	}
	assert.Equal(t, int32(100), hits.Load())
	assert.LessOrEqual(t, srv.conns.Load(), int32(5), "the chunked 503s were drained: their connections were reused")
}
