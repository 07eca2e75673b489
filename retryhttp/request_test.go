package retryhttp_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sentSpy is a Base that keeps every request it is given, with a copy of
// its header as it was when sent.
type sentSpy struct {
	base http.RoundTripper

	mu      sync.Mutex
	reqs    []*http.Request
	headers []http.Header
}

func (s *sentSpy) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.headers = append(s.headers, req.Header.Clone())
	s.mu.Unlock()
	return s.base.RoundTrip(req)
}

// The requests of the attempts are shallow copies of the caller's: the
// Transport sets its key and refreshed credentials in a header of its own,
// and never modifies a header once it was sent, the caller's least of all.
func TestHeadersTheTransportSetsLeaveTheCallersRequestAlone(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(401), status(503), status(200))
	clk := retrytest.NewClock()
	spy := &sentSpy{base: srv.Client().Transport}
	tr := &retryhttp.Transport{
		Base:               spy,
		Policy:             fakePolicy(clk),
		AutoIdempotencyKey: true,
		Refresh:            func(context.Context, *http.Request) (string, error) { return "Bearer new", nil },
	}
	req := newRequest(t, http.MethodPost, srv.URL+"/orders?page=1", strings.NewReader("pay 10"))
	req.Header.Set("Authorization", "Bearer old")
	req.Header.Set("X-Request-Id", "r-1")
	wantHeader, wantURL := req.Header.Clone(), req.URL.String()

	r := do(t, &http.Client{Transport: tr}, clk, req)
	require.NoError(t, r.err)
	require.Equal(t, 200, r.resp.StatusCode)

	assert.Equal(t, wantHeader, req.Header, "the caller's header is not modified")
	assert.Equal(t, wantURL, req.URL.String(), "the caller's URL is not modified")
	spy.mu.Lock()
	defer spy.mu.Unlock()
	require.Len(t, spy.reqs, 3, "the 401, its resend, and the retry of the 503")
	key := spy.headers[0].Get("Idempotency-Key")
	assert.Regexp(t, uuidV4, key)
	wantAuth := []string{"Bearer old", "Bearer new", "Bearer new"}
	for i, sent := range spy.reqs {
		assert.Equal(t, spy.headers[i], sent.Header, "attempt %d: its header was modified after it was sent", i+1)
		assert.Equal(t, key, sent.Header.Get("Idempotency-Key"), "attempt %d: the same key", i+1)
		assert.Equal(t, wantAuth[i], sent.Header.Get("Authorization"), "attempt %d", i+1)
		assert.Equal(t, "r-1", sent.Header.Get("X-Request-Id"), "attempt %d: the caller's headers", i+1)
		assert.Equal(t, "pay 10", srv.requests()[i].body, "attempt %d: the body", i+1)
	}
}

// A request with no header at all gets one of the Transport's own when it
// must carry a key.
func TestKeyIsSentWhenTheCallerHasNoHeader(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(200))
	clk := retrytest.NewClock()
	req := newRequest(t, http.MethodPost, srv.URL, strings.NewReader("x"))
	req.Header = nil
	r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk), AutoIdempotencyKey: true}), clk, req)

	require.NoError(t, r.err)
	assert.Nil(t, req.Header)
	seen := srv.requests()
	require.Len(t, seen, 2)
	assert.Regexp(t, uuidV4, seen[0].header.Get("Idempotency-Key"))
	assert.Equal(t, seen[0].header.Get("Idempotency-Key"), seen[1].header.Get("Idempotency-Key"))
}
