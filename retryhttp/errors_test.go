package retryhttp_test

import (
	"context"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDroppedConnectionIsRetriedForGET(t *testing.T) {
	t.Parallel()
	for _, reset := range []bool{false, true} {
		name := map[bool]string{false: "closed", true: "reset"}[reset]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, hangUp(reset), status(200))
			clk := retrytest.NewClock()
			r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)}), clk, get(t, srv.URL))
			require.NoError(t, r.err)
			assert.Equal(t, 200, r.resp.StatusCode)
			assert.Equal(t, 2, srv.hits())
			assert.Contains(t, []string{"connection reset", "connection closed before response"}, reasons(r.trace)[0])
		})
	}
}

func TestDroppedConnectionIsNotRetriedForKeylessPOST(t *testing.T) {
	t.Parallel()
	for _, reset := range []bool{false, true} {
		name := map[bool]string{false: "closed", true: "reset"}[reset]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, hangUp(reset), status(200))
			clk := retrytest.NewClock()
			req := newRequest(t, http.MethodPost, srv.URL, strings.NewReader("charge card"))
			r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)}), clk, req)

			require.Error(t, r.err)
			assert.Nil(t, r.resp)
			assert.Equal(t, 1, srv.hits(), "the server may have acted on it: never sent twice")
			assert.Contains(t, r.trace.Last().Reason, "; POST without Idempotency-Key is not retried")
			assert.Equal(t, retry.StopNotRetryable, r.trace.Stop())
			assert.False(t, retry.DefaultClassifier(context.Background(), retry.Attempt{Err: r.err}).Retry, "marked permanent for an outer retry loop")
		})
	}
}

// net/http replays a request itself when a reused keep-alive connection
// turns out dead, but only if the request is replayable by its rules: a
// keyless POST is not, so it still reaches the server once.
func TestKeylessPOSTOnADeadReusedConnectionIsSentOnce(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(200), hangUp(false), status(200))
	clk := retrytest.NewClock()
	c := srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)})
	first := do(t, c, clk, get(t, srv.URL))
	require.NoError(t, first.err)
	readAll(t, first.resp.Body) // the connection goes back to the pool

	r := do(t, c, clk, newRequest(t, http.MethodPost, srv.URL, strings.NewReader("x")))
	require.Error(t, r.err)
	assert.Equal(t, 2, srv.hits())
	assert.Equal(t, int32(1), srv.conns.Load(), "the POST went out on the reused connection")
}

func TestConnectionRefusedIsRetried(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())

	base := &http.Transport{}
	defer base.CloseIdleConnections()
	clk := retrytest.NewClock()
	p := fakePolicy(clk)
	p.MaxAttempts = 3
	r := do(t, &http.Client{Transport: &retryhttp.Transport{Base: base, Policy: p}}, clk, get(t, url))

	require.ErrorIs(t, r.err, retry.ErrExhausted)
	require.ErrorIs(t, r.err, syscall.ECONNREFUSED)
	assert.Equal(t, []string{"connection refused", "connection refused", "connection refused"}, reasons(r.trace))
}

func TestTLSCertificateErrorIsNotRetried(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake errors are the point
	srv.StartTLS()
	defer srv.Close()
	base := &http.Transport{} // does not trust the test certificate
	defer base.CloseIdleConnections()
	clk := retrytest.NewClock()
	r := do(t, &http.Client{Transport: &retryhttp.Transport{Base: base, Policy: fakePolicy(clk)}}, clk, get(t, srv.URL))

	var unknown x509.UnknownAuthorityError
	require.ErrorAs(t, r.err, &unknown)
	assert.Equal(t, 1, r.trace.Attempts())
	assert.Equal(t, "TLS certificate error", r.trace.Last().Reason)
	assert.False(t, retry.DefaultClassifier(context.Background(), retry.Attempt{Err: r.err}).Retry)
}
