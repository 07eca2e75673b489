package idempotency_test

import (
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"testing"

	"github.com/stormguard/retry/idempotency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wireReply is what a client saw of a response on the wire.
type wireReply struct {
	status   int
	length   int64    // resp.ContentLength: -1 if the response had none
	encoding []string // resp.TransferEncoding: ["chunked"] if chunked
	reused   bool     // the request went on a connection used before
	replayed bool
	body     string
}

// doWire sends a POST with key to srv on client c and reads the whole
// reply, noting how it came.
func doWire(t *testing.T, c *http.Client, url, key string) wireReply {
	t.Helper()
	var got wireReply
	trace := &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) { got.reused = ci.Reused }}
	r, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodPost, url, strings.NewReader("{}"))
	require.NoError(t, err)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Idempotency-Key", key)
	resp, err := c.Do(r)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	got.status, got.length, got.encoding, got.body = resp.StatusCode, resp.ContentLength, resp.TransferEncoding, string(b)
	got.replayed = resp.Header.Get(idempotency.ReplayedHeader) == "true"
	return got
}

// A response the middleware held until it was saved has a known length:
// it goes out with a Content-Length, first time and replay alike, never
// chunked, even past the 2 KiB that net/http buffers before it chunks a
// body whose length nobody set. The client keeps its connection across
// fresh keys and replays.
func TestResponsesGoOutWithTheirLength(t *testing.T) {
	t.Parallel()
	for _, size := range []int{38, 2048, 2049, 64 << 10} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			t.Parallel()
			body := `{"id":1,"pad":"` + strings.Repeat("x", size-len(`{"id":1,"pad":""}`)) + `"}`
			srv := serve(t, newMiddleware(t, idempotency.Options{}), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				_, _ = io.WriteString(w, body)
			}))
			c := srv.Client()
			for i, step := range []struct {
				key      string
				replayed bool
			}{{"a", false}, {"a", true}, {"b", false}, {"a", true}, {"b", true}} {
				got := doWire(t, c, srv.URL+"/orders", step.key)
				require.Equal(t, http.StatusCreated, got.status, "request %d", i)
				assert.Equal(t, step.replayed, got.replayed, "request %d: replayed", i)
				assert.Equal(t, body, got.body, "request %d", i)
				assert.Equal(t, int64(size), got.length, "request %d: Content-Length", i)
				assert.Empty(t, got.encoding, "request %d: Transfer-Encoding", i)
				assert.Equal(t, i > 0, got.reused, "request %d: the connection is reused", i)
			}
		})
	}
}

// A response past MaxResponseBytes streams as the handler writes it, so
// its length is not known when its header goes out: net/http chunks it,
// as it would without the middleware, and its replay, which has no body,
// says so with a length of 0.
func TestStreamedResponseIsChunkedAndItsReplayEmpty(t *testing.T) {
	t.Parallel()
	const limit = 1 << 10
	srv := serve(t, newMiddleware(t, idempotency.Options{MaxResponseBytes: limit}), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
		for range 8 {
			_, _ = io.WriteString(w, strings.Repeat("x", limit))
		}
	}))
	c := srv.Client()
	first := doWire(t, c, srv.URL+"/orders", "k")
	assert.Equal(t, int64(-1), first.length)
	assert.Equal(t, []string{"chunked"}, first.encoding)
	assert.Len(t, first.body, 8*limit)

	again := doWire(t, c, srv.URL+"/orders", "k")
	assert.True(t, again.replayed)
	assert.Equal(t, int64(0), again.length)
	assert.Empty(t, again.body)
	assert.True(t, again.reused)
}
