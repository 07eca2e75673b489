package retryhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// post sends a POST of body to url on c with ctx and returns an error for
// any status but 2xx, as an op inside retry.Do would.
func post(ctx context.Context, c *http.Client, url, body string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode >= 300 {
		return errors.New(resp.Status)
	}
	return nil
}

// keysOf returns the idempotency key each request carried, in order.
func keysOf(srv *server) []string {
	var keys []string
	for _, s := range srv.requests() {
		keys = append(keys, s.header.Get("Idempotency-Key"))
	}
	return keys
}

// An outer retry.Do makes a new request on each attempt; the Transport,
// deferring to it, still sends the key of the first attempt: the key
// belongs to the logical call, so the server runs the write once.
func TestAutoKeyIsTheOuterLoopsKey(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(502), status(201))
	c := srv.client(&retryhttp.Transport{AutoIdempotencyKey: true})
	tr, err := retrytest.Do(context.Background(), func(ctx context.Context) error {
		return post(ctx, c, srv.URL+"/orders", `{"ref":1}`)
	}, retry.Policy{})

	require.NoError(t, err)
	assert.Equal(t, 3, tr.Attempts(), "the outer loop retried")
	keys := keysOf(srv)
	require.Len(t, keys, 3, "one request per outer attempt")
	assert.Regexp(t, uuidV4, keys[0])
	assert.Equal(t, []string{keys[0], keys[0], keys[0]}, keys, "every outer attempt sends the first one's key")
}

// Two different writes in one op are two logical writes: each keeps its own
// key across the outer attempts. Writes differ by method, URL or body.
func TestAutoKeyPerWriteInsideOneOp(t *testing.T) {
	t.Parallel()
	// The first pass: a, b and c succeed, d fails; the second pass repeats all four.
	srv := newServer(t, status(201), status(201), status(201), status(503), status(201))
	c := srv.client(&retryhttp.Transport{AutoIdempotencyKey: true})
	tr, err := retrytest.Do(context.Background(), func(ctx context.Context) error {
		if err := post(ctx, c, srv.URL+"/orders", "a"); err != nil {
			return err
		}
		if err := post(ctx, c, srv.URL+"/orders", "b"); err != nil { // another body
			return err
		}
		if err := post(ctx, c, srv.URL+"/refunds", "a"); err != nil { // another URL
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPatch, srv.URL+"/orders", strings.NewReader("a")) // another method
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			return errors.New(resp.Status)
		}
		return nil
	}, retry.Policy{})

	require.NoError(t, err)
	assert.Equal(t, 2, tr.Attempts())
	keys := keysOf(srv)
	require.Len(t, keys, 8)
	first, second := keys[:4], keys[4:]
	assert.Equal(t, first, second, "each write sends the key it sent on the first pass")
	seen := map[string]bool{}
	for _, k := range first {
		assert.Regexp(t, uuidV4, k)
		seen[k] = true
	}
	assert.Len(t, seen, 4, "four different writes, four keys: %v", first)
}

// A retry.Do around a client of two stacked Transports, only the inner one
// making keys: the outer Transport does not retry a POST it sees without a
// key, the outer loop does, and the inner Transport sends one key on every
// outer attempt.
func TestAutoKeyThroughStackedTransportsInsideAnOuterLoop(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(503), status(201))
	inner := &retryhttp.Transport{Base: srv.Client().Transport, AutoIdempotencyKey: true}
	c := &http.Client{Transport: &retryhttp.Transport{Base: inner}}
	_, err := retrytest.Do(context.Background(), func(ctx context.Context) error {
		return post(ctx, c, srv.URL+"/orders", "x")
	}, retry.Policy{})
	require.NoError(t, err)
	keys := keysOf(srv)
	require.Len(t, keys, 3)
	assert.Regexp(t, uuidV4, keys[0])
	assert.Equal(t, []string{keys[0], keys[0], keys[0]}, keys)
}

// Stacked Transports without an outer loop: the outer one retries, the
// inner one makes the key, and the outer one's loop keeps it.
func TestAutoKeyOfAnInnerTransportIsTheOuterTransportsKey(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(503), status(201))
	clk := retrytest.NewClock()
	inner := &retryhttp.Transport{Base: srv.Client().Transport, AutoIdempotencyKey: true}
	// The outer Transport keys the POST under a header of its own, so it
	// retries it; the inner one, which reads Idempotency-Key, sees none.
	outer := &retryhttp.Transport{Base: inner, Policy: fakePolicy(clk), AutoIdempotencyKey: true, IdempotencyHeader: "X-Outer-Key"}
	r := do(t, &http.Client{Transport: outer}, clk, newRequest(t, http.MethodPost, srv.URL, strings.NewReader("x")))
	require.NoError(t, r.err)
	assert.Equal(t, 201, r.resp.StatusCode)
	keys := keysOf(srv)
	require.Len(t, keys, 3)
	assert.Regexp(t, uuidV4, keys[0])
	assert.Equal(t, []string{keys[0], keys[0], keys[0]}, keys, "the inner Transport's key, the same on each of the outer one's attempts")
}

// Once the outer loop has returned, its mark is dead: a request on a ctx
// kept from it is a call of its own, with a key of its own.
func TestAutoKeyAfterTheOuterLoopReturned(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(201))
	c := srv.client(&retryhttp.Transport{AutoIdempotencyKey: true})
	var kept context.Context
	_, err := retrytest.Do(context.Background(), func(ctx context.Context) error {
		kept = ctx
		return post(ctx, c, srv.URL, "x")
	}, retry.Policy{})
	require.NoError(t, err)
	require.NoError(t, post(kept, c, srv.URL, "x"))
	keys := keysOf(srv)
	require.Len(t, keys, 2)
	assert.NotEqual(t, keys[0], keys[1])
}

// A body without GetBody cannot be read before it is sent: the write is
// known by method, URL and length, so an outer attempt that sends it again
// still sends its key.
func TestAutoKeyForABodyWithoutGetBody(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(201))
	c := srv.client(&retryhttp.Transport{AutoIdempotencyKey: true})
	_, err := retrytest.Do(context.Background(), func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, io.NopCloser(strings.NewReader("stream")))
		if err != nil {
			return err
		}
		require.Nil(t, req.GetBody)
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			return errors.New(resp.Status)
		}
		return nil
	}, retry.Policy{})
	require.NoError(t, err)
	keys := keysOf(srv)
	require.Len(t, keys, 2)
	assert.Regexp(t, uuidV4, keys[0])
	assert.Equal(t, keys[0], keys[1])
}

// A retry.Hedge around the client: its copies and its retries are one
// logical call, and send one key.
func TestAutoKeyInsideAHedge(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(201))
	c := srv.client(&retryhttp.Transport{AutoIdempotencyKey: true})
	_, err := retry.Hedge(context.Background(), &retry.Hedger{}, func(ctx context.Context) error {
		return post(ctx, c, srv.URL, "x")
	}, retry.Policy{Clock: retrytest.NewAutoClock()})
	require.NoError(t, err)
	keys := keysOf(srv)
	require.Len(t, keys, 2)
	assert.Regexp(t, uuidV4, keys[0])
	assert.Equal(t, keys[0], keys[1])
}
