package shed_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/internal/loadgen"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/shed"
)

// roundTripFunc is a RoundTripper made of a func.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The loopback proof over HTTP, in real time: a server whose handler does
// 20 requests at once, 5 ms each (more on a machine too slow for that; see
// loadgen.Prove), behind an adaptive Limiter (the zero Options), and 200
// clients, each a retryhttp.Transport of its own (its own holds, as 200
// processes would have), that offer about 3 times what it can serve. The
// references are measured on this machine: the capacity before and after,
// and the unloaded latency on a twin server at the same time. Overloaded,
// the server still serves at least 0.9 of its capacity, the attempts it
// serves take at most 3 times the unloaded p99, and the handler never has
// more requests inside than the Limiter's limit.
// The timing targets are checked where the machine leaves the Limiter in
// charge, not under the race detector (see loadgen.Check).
//
// The clients do not share a Transport: a Transport holds back every
// request to an origin once the origin asks one of them to (see
// retryhttp's Hold), so one Transport shared by the 200 stops them all at
// the first shed, and serves a small share of the capacity.
func TestLoopbackHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: about 7 seconds")
	}
	srv := loadgen.NewServer(20, loadgen.MinWork)
	var limited atomic.Pointer[http.Handler]
	start := func(time.Duration) *shed.Limiter { // the zero Options: no tuning to the work
		l := newLimiter(t, shed.Options{})
		h := l.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if srv.Serve(r.Context()) == nil {
				w.WriteHeader(http.StatusOK)
			}
		}))
		limited.Store(&h)
		return l
	}
	twin := loadgen.NewServer(20, loadgen.MinWork)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/twin" {
			if twin.Serve(r.Context()) == nil {
				w.WriteHeader(http.StatusOK)
			}
			return
		}
		if srv.Raw() {
			w.WriteHeader(http.StatusOK)
			return
		}
		(*limited.Load()).ServeHTTP(w, r)
	}))
	defer ts.Close()
	base := &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512}
	defer base.CloseIdleConnections()

	rec, twinRec := &loadgen.Recorder{}, &loadgen.Recorder{}
	timed := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		start := time.Now()
		resp, err := base.RoundTrip(r)
		if err == nil && (resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusServiceUnavailable) {
			rc := rec
			if r.URL.Path == "/twin" {
				rc = twinRec
			}
			rc.Attempt(start, resp.StatusCode == http.StatusOK)
		}
		return resp, err
	})
	clients := make([]*http.Client, loadgen.Clients+srv.Slots())
	for i := range clients {
		clients[i] = &http.Client{Transport: &retryhttp.Transport{Base: timed, Policy: retry.Policy{}}}
	}
	get := func(ctx context.Context, c *http.Client, url string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	twinClient := &http.Client{Transport: &retryhttp.Transport{Base: timed, Policy: retry.Policy{}}}
	r := loadgen.Prove(t.Context(), loadgen.Stack{
		Server: srv, Start: start, Rec: rec,
		Call: func(ctx context.Context, i int) { get(ctx, clients[i], ts.URL) },
		Twin: twin, TwinRec: twinRec,
		TwinCall: func(ctx context.Context, _ int) { get(ctx, twinClient, ts.URL+"/twin") },
	})

	loadgen.Check(t, r, srv)
}
