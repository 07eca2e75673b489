package retryhttp_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// authorized answers 200 to "Bearer new" and 401 to anything else.
func authorized(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") == "Bearer new" {
		status(200)(w, r)
		return
	}
	status(401, "WWW-Authenticate", "Bearer")(w, r)
}

func TestConcurrent401sShareOneRefresh(t *testing.T) {
	t.Parallel()
	const n = 8
	// The server holds every first request until all n have arrived, so that
	// all of them are refused for the old token, concurrently.
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer old" {
			arrived.Done()
			<-all
		}
		authorized(w, r)
	})
	var refreshes atomic.Int32
	tr := &retryhttp.Transport{
		Policy: fakePolicy(retrytest.NewClock()),
		Refresh: func(ctx context.Context) (string, error) {
			// No pause needed for the others to pile up: all n were sent
			// before any refresh, so those that come after this one returns
			// take its result.
			refreshes.Add(1)
			return "Bearer new", nil
		},
	}
	c := srv.client(tr)

	var wg sync.WaitGroup
	for range n {
		req := get(t, srv.URL)
		wg.Go(func() {
			req.Header.Set("Authorization", "Bearer old")
			req.Header.Set("X-Request-Id", "r-1")
			resp, err := c.Do(req)
			if assert.NoError(t, err) {
				assert.Equal(t, 200, resp.StatusCode)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), refreshes.Load(), "one refresh for all the concurrent 401s")
	assert.Equal(t, 2*n, srv.hits(), "each request sent once more")
	for _, s := range srv.requests() {
		assert.Equal(t, "r-1", s.header.Get("X-Request-Id"))
	}
}

func TestRefreshRunsAtMostOncePerRequest(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(401))
	var refreshes atomic.Int32
	clk := retrytest.NewClock()
	tr := &retryhttp.Transport{
		Policy: fakePolicy(clk),
		Refresh: func(context.Context) (string, error) {
			return "Bearer " + string(rune('a'+refreshes.Add(1))), nil
		},
	}
	r := do(t, srv.client(tr), clk, get(t, srv.URL))
	require.NoError(t, r.err)
	assert.Equal(t, 401, r.resp.StatusCode, "the second 401 is returned")
	assert.Equal(t, int32(1), refreshes.Load())
	assert.Equal(t, 2, srv.hits())
	assert.Equal(t, "Bearer b", srv.requests()[1].header.Get("Authorization"))
	assert.Empty(t, r.waits, "the resend does not wait")
}

// A 401 means the server did not act on the request, so even a POST
// without a key is sent once more after a refresh; its 503 is not retried.
func TestA401IsResentOnceEvenForAKeylessPOST(t *testing.T) {
	t.Parallel()
	srv := newServer(t, authorized, status(503), authorized)
	clk := retrytest.NewClock()
	tr := &retryhttp.Transport{
		Policy:  fakePolicy(clk),
		Refresh: func(context.Context) (string, error) { return "Bearer new", nil },
	}
	r := do(t, srv.client(tr), clk, newRequest(t, http.MethodPost, srv.URL, strings.NewReader("x")))
	require.NoError(t, r.err)
	assert.Equal(t, 503, r.resp.StatusCode)
	assert.Equal(t, 2, srv.hits())
	assert.Equal(t, []string{"x", "x"}, []string{srv.requests()[0].body, srv.requests()[1].body})
}

func TestRefreshedCredentialsStayForLaterAttempts(t *testing.T) {
	t.Parallel()
	srv := newServer(t, authorized, status(503), authorized)
	clk := retrytest.NewClock()
	tr := &retryhttp.Transport{
		Policy:  fakePolicy(clk),
		Refresh: func(context.Context) (string, error) { return "Bearer new", nil },
	}
	req := get(t, srv.URL)
	req.Header.Set("Authorization", "Bearer old")
	r := do(t, srv.client(tr), clk, req)
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.resp.StatusCode)
	var got []string
	for _, s := range srv.requests() {
		got = append(got, s.header.Get("Authorization"))
	}
	assert.Equal(t, []string{"Bearer old", "Bearer new", "Bearer new"}, got)
	assert.Equal(t, []string{"503 Service Unavailable", ""}, reasons(r.trace), "the resend belongs to the first attempt")
	assert.Equal(t, "Bearer old", req.Header.Get("Authorization"), "the caller's request is not modified")
}

func TestFailedRefreshReturnsThe401(t *testing.T) {
	t.Parallel()
	srv := newServer(t, authorized)
	clk := retrytest.NewClock()
	tr := &retryhttp.Transport{
		Policy:  fakePolicy(clk),
		Refresh: func(context.Context) (string, error) { return "", errors.New("token endpoint down") },
	}
	r := do(t, srv.client(tr), clk, get(t, srv.URL))
	require.NoError(t, r.err)
	assert.Equal(t, 401, r.resp.StatusCode)
	assert.Equal(t, "status 401", readAll(t, r.resp.Body), "the 401 is returned unread")
	assert.Equal(t, 1, srv.hits())
}

func TestNo401ResendForABodyThatCannotBeRewound(t *testing.T) {
	t.Parallel()
	srv := newServer(t, authorized)
	var refreshes atomic.Int32
	tr := &retryhttp.Transport{
		Refresh: func(context.Context) (string, error) { refreshes.Add(1); return "Bearer new", nil },
	}
	req := newRequest(t, http.MethodPut, srv.URL, &closeTracker{Reader: strings.NewReader("x")})
	resp, err := srv.client(tr).Do(req)
	require.NoError(t, err)
	assert.Equal(t, 401, resp.StatusCode)
	resp.Body.Close()
	assert.Equal(t, int32(0), refreshes.Load())
	assert.Equal(t, 1, srv.hits())
}

// A request sent with the old token before a refresh finished, and refused
// after it, uses the refreshed token instead of refreshing again.
func TestA401ThatComesAfterTheRefreshUsesItsResult(t *testing.T) {
	t.Parallel()
	slowArrived, releaseSlow := make(chan struct{}), make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Request-Id") == "slow" && r.Header.Get("Authorization") == "Bearer old" {
			close(slowArrived)
			<-releaseSlow
		}
		authorized(w, r)
	})
	var refreshes atomic.Int32
	c := srv.client(&retryhttp.Transport{
		Refresh: func(context.Context) (string, error) {
			refreshes.Add(1)
			return "Bearer new", nil
		},
	})
	send := func(id string) int { // runs on two goroutines: assert, not require
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		if !assert.NoError(t, err) {
			return 0
		}
		req.Header.Set("Authorization", "Bearer old")
		req.Header.Set("X-Request-Id", id)
		resp, err := c.Do(req)
		if !assert.NoError(t, err) {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	slow := make(chan int, 1)
	go func() { slow <- send("slow") }()
	recv(t, slowArrived, "the slow request")
	assert.Equal(t, 200, send("fast"), "the fast request refreshed")
	close(releaseSlow)
	assert.Equal(t, 200, recv(t, slow, "the slow response"))
	assert.Equal(t, int32(1), refreshes.Load(), "the slow request reused the refresh")
}
