package idempotency_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stormguard/retry/idempotency"
	"github.com/stretchr/testify/require"
)

// watchdog bounds how long a test waits for something that happens at once
// when the code works; it is never reached then, so it costs no time.
const watchdog = 10 * time.Second

// orders is a handler that creates one order per request it runs, and
// counts its runs for each Idempotency-Key.
type orders struct {
	status  int           // the status it answers [201]
	release chan struct{} // runs of requests with an X-Wait header wait for it (or their ctx)
	started chan struct{} // gets a value as each such run starts

	mu   sync.Mutex
	last int
	runs map[string]int
	errs []error // the cause of the ctx of each run that waited and saw it end
}

func newOrders() *orders {
	return &orders{
		status:  http.StatusCreated,
		runs:    make(map[string]int),
		release: make(chan struct{}),
		started: make(chan struct{}, 16),
	}
}

// waiting is the header that makes a run of orders wait for its release.
var waiting = []string{"X-Wait", "1"}

func (o *orders) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var cause error
	if r.Header.Get("X-Wait") != "" {
		o.started <- struct{}{}
		select {
		case <-o.release:
		case <-r.Context().Done():
			cause = context.Cause(r.Context())
		}
	}
	o.mu.Lock()
	o.last++
	id := o.last
	o.runs[r.Header.Get("Idempotency-Key")]++
	if cause != nil {
		o.errs = append(o.errs, cause)
	}
	o.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", fmt.Sprintf("/orders/%d", id))
	w.WriteHeader(o.status)
	fmt.Fprintf(w, `{"id":%d,"request":%q}`, id, body)
}

// ran returns how many times the handler ran for key.
func (o *orders) ran(key string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.runs[key]
}

// total returns how many orders were created.
func (o *orders) total() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.last
}

// serve starts a loopback server with h behind m, closed when the test ends.
func serve(t *testing.T, m *idempotency.Middleware, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(m.Handler(h))
	t.Cleanup(srv.Close)
	return srv
}

// newMiddleware is idempotency.New that fails the test on an error.
func newMiddleware(t *testing.T, opts idempotency.Options) *idempotency.Middleware {
	t.Helper()
	m, err := idempotency.New(opts)
	require.NoError(t, err)
	return m
}

// req describes a request for do.
type req struct {
	method string // [POST]
	path   string // [/orders]
	key    string // the Idempotency-Key header, sent as is; "" for none
	body   string
	header []string // more header pairs
}

// reply is what a request got back.
type reply struct {
	status int
	header http.Header
	body   string
}

// do sends rq to srv and reads the whole reply.
func do(t *testing.T, srv *httptest.Server, rq req) reply {
	t.Helper()
	r, err := doRaw(srv, rq)
	require.NoError(t, err)
	return r
}

// doAsync is do on another goroutine: the reply comes on the channel, with
// status -1 and the error as body if the request failed, for the test
// goroutine to judge.
func doAsync(srv *httptest.Server, rq req) <-chan reply {
	ch := make(chan reply, 1)
	go func() {
		r, err := doRaw(srv, rq)
		if err != nil {
			r = reply{status: -1, body: err.Error()}
		}
		ch <- r
	}()
	return ch
}

func doRaw(srv *httptest.Server, rq req) (reply, error) {
	if rq.method == "" {
		rq.method = http.MethodPost
	}
	if rq.path == "" {
		rq.path = "/orders"
	}
	r, err := http.NewRequest(rq.method, srv.URL+rq.path, strings.NewReader(rq.body))
	if err != nil {
		return reply{}, err
	}
	if rq.key != "" {
		r.Header.Set("Idempotency-Key", rq.key)
	}
	r.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(rq.header); i += 2 {
		r.Header.Set(rq.header[i], rq.header[i+1])
	}
	resp, err := srv.Client().Do(r)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}, err
}

// recv receives from ch, or fails the test if nothing comes in time.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(watchdog):
		require.FailNowf(t, "timed out", "waiting for %s", what)
		panic("unreachable")
	}
}

// problem is an RFC 9457 body.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
}

// requireProblem checks that rp is a problem+json answer with status, and
// a Retry-After exactly when retryAfter is set.
func requireProblem(t *testing.T, rp reply, status int, retryAfter bool) problem {
	t.Helper()
	require.Equal(t, status, rp.status, "status; body %s", rp.body)
	require.Equal(t, "application/problem+json", rp.header.Get("Content-Type"))
	var p problem
	require.NoError(t, json.Unmarshal([]byte(rp.body), &p), "body %s", rp.body)
	require.Equal(t, status, p.Status)
	require.Equal(t, http.StatusText(status), p.Title)
	require.NotEmpty(t, p.Detail)
	if retryAfter {
		require.Equal(t, "1", rp.header.Get("Retry-After"))
	} else {
		require.Empty(t, rp.header.Get("Retry-After"))
	}
	return p
}

// withoutDate returns h without the Date header, which net/http sets anew
// on every response.
func withoutDate(h http.Header) http.Header {
	h = h.Clone()
	h.Del("Date")
	return h
}

// serveFunc starts a loopback server with f, closed when the test ends.
func serveFunc(t *testing.T, f http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv
}

// serveDirect serves rq with h in this goroutine, without a network: for
// tests under testing/synctest or of what a panic does.
func serveDirect(h http.Handler, rq req) *httptest.ResponseRecorder {
	r := newRequest(rq)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// newRequest is rq as a server-side request.
func newRequest(rq req) *http.Request {
	if rq.method == "" {
		rq.method = http.MethodPost
	}
	if rq.path == "" {
		rq.path = "/orders"
	}
	r := httptest.NewRequest(rq.method, rq.path, strings.NewReader(rq.body))
	if rq.key != "" {
		r.Header.Set("Idempotency-Key", rq.key)
	}
	r.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(rq.header); i += 2 {
		r.Header.Set(rq.header[i], rq.header[i+1])
	}
	return r
}
