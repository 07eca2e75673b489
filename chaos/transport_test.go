package chaos_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry/chaos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingServer is a loopback server that counts the requests it serves.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func on(seed int64) *chaos.Switch {
	sw := chaos.NewSwitch(seed)
	sw.On()
	return sw
}

// A status is answered without reaching the server, with its headers.
func TestTransportStatus(t *testing.T) {
	t.Parallel()
	srv, served := countingServer(t)
	sw := on(1)
	client := &http.Client{Transport: chaos.Transport(nil, chaos.Fault{Switch: sw, Rate: 1, Status: 429, Header: http.Header{"Retry-After": {"2"}}})}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("body"))
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 429, resp.StatusCode)
	assert.Equal(t, "429 Too Many Requests", resp.Status)
	assert.Equal(t, "2", resp.Header.Get("Retry-After"))
	b, _ := io.ReadAll(resp.Body)
	assert.Empty(t, b)
	assert.Zero(t, served.Load(), "requests that reached the server")
}

// An error is returned without reaching the server, and matches both
// ErrInjected and the fault's own error.
func TestTransportErr(t *testing.T) {
	t.Parallel()
	srv, served := countingServer(t)
	client := &http.Client{Transport: chaos.Transport(nil, chaos.Fault{Switch: on(1), Rate: 1, Err: syscall.ECONNRESET})}
	defer client.CloseIdleConnections()
	resp, err := client.Get(srv.URL)
	if resp != nil {
		resp.Body.Close()
	}
	require.ErrorIs(t, err, chaos.ErrInjected)
	require.ErrorIs(t, err, syscall.ECONNRESET)
	assert.Zero(t, served.Load())
}

// Drop sends the request, and the caller gets an error as if the answer
// had been lost on the way.
func TestTransportDrop(t *testing.T) {
	t.Parallel()
	srv, served := countingServer(t)
	client := &http.Client{Transport: chaos.Transport(nil, chaos.Fault{Switch: on(1), Rate: 1, Drop: true})}
	defer client.CloseIdleConnections()
	resp, err := client.Get(srv.URL)
	if resp != nil {
		resp.Body.Close()
	}
	require.ErrorIs(t, err, chaos.ErrInjected)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, int64(1), served.Load(), "the server carried the request out")
}

// With its switch off, the Transport passes every request through.
func TestTransportOff(t *testing.T) {
	t.Parallel()
	srv, served := countingServer(t)
	sw := chaos.NewSwitch(1)
	client := &http.Client{Transport: chaos.Transport(nil, chaos.Fault{Switch: sw, Rate: 1, Status: 503})}
	defer client.CloseIdleConnections()
	for range 10 {
		resp, err := client.Get(srv.URL)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}
	assert.Equal(t, int64(10), served.Load())
}

// stub answers 200 at once, as a base under test.
type stub struct{ n atomic.Int64 }

func (s *stub) RoundTrip(req *http.Request) (*http.Response, error) {
	s.n.Add(1)
	return &http.Response{StatusCode: 200, Body: http.NoBody, Request: req}, nil
}

// Latency is added before the request is sent, and a ctx that ends
// during it ends the request with its cause, unsent.
func TestTransportLatency(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		base := &stub{}
		rt := chaos.Transport(base, chaos.Fault{Switch: on(1), Rate: 1, Latency: 200 * time.Millisecond})
		start := time.Now()
		req, _ := http.NewRequest(http.MethodGet, "http://x/", nil)
		resp, err := rt.RoundTrip(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, 200*time.Millisecond, time.Since(start))
		assert.Equal(t, int64(1), base.n.Load())

		cause := errors.New("user gave up")
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(50*time.Millisecond, func() { cancel(cause) })
		req, _ = http.NewRequestWithContext(ctx, http.MethodGet, "http://x/", nil)
		_, err = rt.RoundTrip(req)
		require.ErrorIs(t, err, cause)
		assert.Equal(t, int64(1), base.n.Load(), "sent after its ctx ended")
	})
}

// A request body that is never sent is closed, as a RoundTripper must.
func TestTransportClosesUnsentBody(t *testing.T) {
	t.Parallel()
	for _, f := range []chaos.Fault{{Rate: 1, Status: 503}, {Rate: 1, Err: errors.New("x")}} {
		f.Switch = on(1)
		body := &closeCounter{Reader: strings.NewReader("x")}
		req, _ := http.NewRequest(http.MethodPost, "http://x/", body)
		resp, _ := chaos.Transport(&stub{}, f).RoundTrip(req)
		if resp != nil {
			resp.Body.Close()
		}
		assert.Equal(t, 1, body.closed, "%s: closes", f.Validate())
	}
}

type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// Faults that can never fire (no switch, or invalid) add nothing at all:
// the base itself is returned.
func TestTransportUnarmedIsBase(t *testing.T) {
	t.Parallel()
	base := &stub{}
	assert.Same(t, base, chaos.Transport(base, chaos.Fault{Rate: 1, Status: 503}).(*stub))
	assert.Same(t, base, chaos.Transport(base, chaos.Fault{Switch: on(1), Rate: 7, Status: 503}).(*stub))
	assert.Same(t, base, chaos.Transport(base).(*stub))
	assert.Equal(t, http.DefaultTransport, chaos.Transport(nil))
}
