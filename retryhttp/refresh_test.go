package retryhttp_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"

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
		Refresh: func(ctx context.Context, _ *http.Request) (string, error) {
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
		Refresh: func(context.Context, *http.Request) (string, error) {
			return "Bearer " + string(rune('a'+refreshes.Add(1))), nil
		},
	}
	req := get(t, srv.URL)
	req.Header.Set("Authorization", "Bearer a")
	r := do(t, srv.client(tr), clk, req)
	require.NoError(t, r.err)
	assert.Equal(t, 401, r.resp.StatusCode, "the second 401 is returned")
	assert.Equal(t, int32(1), refreshes.Load())
	require.Equal(t, 2, srv.hits())
	assert.Equal(t, "Bearer b", srv.requests()[1].header.Get("Authorization"))
	assert.Empty(t, r.waits, "the resend does not wait")
}

// Some gateways forward a request before they authenticate it, and some
// handlers check permissions after their side effects: a 401 does not prove
// that nothing happened, so a POST without a key is not sent again. The
// refresh still runs, and the caller's next request carries its result.
func TestA401ToAKeylessPOSTIsNotSentAgain(t *testing.T) {
	t.Parallel()
	srv := newServer(t, authorized)
	var refreshes atomic.Int32
	clk := retrytest.NewClock()
	tr := &retryhttp.Transport{
		Policy:  fakePolicy(clk),
		Refresh: func(context.Context, *http.Request) (string, error) { refreshes.Add(1); return "Bearer new", nil },
	}
	post := func() result {
		req := newRequest(t, http.MethodPost, srv.URL, strings.NewReader("x"))
		req.Header.Set("Authorization", "Bearer old")
		return do(t, srv.client(tr), clk, req)
	}
	r := post()
	require.NoError(t, r.err)
	assert.Equal(t, 401, r.resp.StatusCode)
	assert.Equal(t, 1, srv.hits(), "sent once")
	assert.Equal(t, int32(1), refreshes.Load())

	r = post()
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.resp.StatusCode, "the next request carries the new credential")
	assert.Equal(t, 2, srv.hits())
	assert.Equal(t, int32(1), refreshes.Load())
}

func TestRefreshedCredentialsStayForLaterAttempts(t *testing.T) {
	t.Parallel()
	srv := newServer(t, authorized, status(503), authorized)
	clk := retrytest.NewClock()
	tr := &retryhttp.Transport{
		Policy:  fakePolicy(clk),
		Refresh: func(context.Context, *http.Request) (string, error) { return "Bearer new", nil },
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
		Refresh: func(context.Context, *http.Request) (string, error) { return "", errors.New("token endpoint down") },
	}
	req := get(t, srv.URL)
	req.Header.Set("Authorization", "Bearer old")
	r := do(t, srv.client(tr), clk, req)
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
		Refresh: func(context.Context, *http.Request) (string, error) { refreshes.Add(1); return "Bearer new", nil },
	}
	req := newRequest(t, http.MethodPut, srv.URL, &closeTracker{Reader: strings.NewReader("x")})
	req.Header.Set("Authorization", "Bearer old")
	resp, err := srv.client(tr).Do(req)
	require.NoError(t, err)
	assert.Equal(t, 401, resp.StatusCode)
	resp.Body.Close()
	assert.Equal(t, int32(1), refreshes.Load(), "renewed for the next request")
	assert.Equal(t, 1, srv.hits(), "but this one cannot be sent again")
}

// A request that carried no credential had none refused: Refresh does not
// run, and its 401 is returned.
func TestNoRefreshForARequestWithoutCredentials(t *testing.T) {
	t.Parallel()
	srv := newServer(t, authorized)
	var refreshes atomic.Int32
	tr := &retryhttp.Transport{
		Refresh: func(context.Context, *http.Request) (string, error) { refreshes.Add(1); return "Bearer new", nil },
	}
	resp, err := srv.client(tr).Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 401, resp.StatusCode)
	assert.Zero(t, refreshes.Load())
	assert.Empty(t, srv.requests()[0].header.Get("Authorization"))
}

// http.Client strips Authorization when a redirect leaves the host. The
// host it lands on answers 401: that is no reason to renew a credential,
// and the one the Transport holds is never sent there.
func TestRedirectToAnotherHostGetsNoCredential(t *testing.T) {
	t.Parallel()
	other := newServer(t, status(401, "WWW-Authenticate", "Bearer"))
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) // another host, as http.Client sees it
	var refreshes atomic.Int32
	home := newServer(t,
		func(w http.ResponseWriter, r *http.Request) { authorized(w, r) }, // 401 for the old token
		func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, otherURL+"/landing", http.StatusFound)
		})
	tr := &retryhttp.Transport{
		Base:    other.Client().Transport,
		Refresh: func(context.Context, *http.Request) (string, error) { refreshes.Add(1); return "Bearer new", nil },
	}
	req := get(t, home.URL)
	req.Header.Set("Authorization", "Bearer old")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 401, resp.StatusCode, "the other host's 401 stands")
	assert.Equal(t, int32(1), refreshes.Load(), "one refresh, for the home host's 401")
	require.Equal(t, 2, home.hits())
	assert.Equal(t, "Bearer new", home.requests()[1].header.Get("Authorization"))
	for _, s := range other.requests() {
		assert.Empty(t, s.header.Get("Authorization"), "no credential reaches the other host")
	}
}

// One Transport, two hosts: each origin has its own credentials, and
// Refresh learns which request it serves. A host that answers 401 never
// learns the credential made for another.
func TestCredentialsAreScopedToTheirOrigin(t *testing.T) {
	t.Parallel()
	var hostA string
	a := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer new-for-"+hostA {
			status(200)(w, r)
			return
		}
		status(401)(w, r)
	})
	hostA = strings.TrimPrefix(a.URL, "http://")
	hostile := newServer(t, status(401)) // wants whatever credential it can get
	var mu sync.Mutex
	var refreshedFor []string
	tr := &retryhttp.Transport{
		Refresh: func(_ context.Context, req *http.Request) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			refreshedFor = append(refreshedFor, req.URL.Host)
			return "Bearer new-for-" + req.URL.Host, nil
		},
	}
	c := &http.Client{Transport: tr}
	send := func(url string) int {
		req := get(t, url)
		req.Header.Set("Authorization", "Bearer old")
		resp, err := c.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, 200, send(a.URL))
	assert.Equal(t, 401, send(hostile.URL))
	assert.Equal(t, 401, send(hostile.URL))
	assert.Equal(t, 200, send(a.URL), "A keeps its own credential")

	hostileHost := strings.TrimPrefix(hostile.URL, "http://")
	assert.Equal(t, []string{hostA, hostileHost}, refreshedFor, "one refresh per origin, each for its own")
	for _, s := range hostile.requests() {
		assert.NotContains(t, s.header.Get("Authorization"), hostA, "A's credential reached another host")
	}
}

// A host that always answers 401 cannot drive the token endpoint: a 401 to
// a request that carried the newest credential does not refresh at once,
// and refreshes of one origin are spaced, the spacing doubling after each
// failure (a new credential refused at once, or a Refresh error).
func TestRefreshStormIsSpaced(t *testing.T) {
	t.Parallel()
	for name, fail := range map[string]bool{"refused credentials": false, "refresh errors": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, status(401))
			clk := retrytest.NewClock()
			start := clk.Now()
			var refreshedAt []time.Duration
			n := 0
			tr := &retryhttp.Transport{
				Policy: fakePolicy(clk),
				Refresh: func(context.Context, *http.Request) (string, error) {
					refreshedAt = append(refreshedAt, clk.Now().Sub(start))
					if fail {
						return "", errors.New("token endpoint says no")
					}
					n++
					return "Bearer " + strconv.Itoa(n), nil
				},
			}
			c := srv.client(tr)
			for range 30 { // a burst
				req := get(t, srv.URL)
				req.Header.Set("Authorization", "Bearer old")
				resp, err := c.Do(req)
				require.NoError(t, err)
				resp.Body.Close()
			}
			assert.Equal(t, []time.Duration{0}, refreshedAt, "one refresh for the burst")
			assert.LessOrEqual(t, srv.hits(), 31, "the burst's requests carry the new credential at once")

			for range 60 { // then one request a second for a minute
				clk.Add(time.Second)
				req := get(t, srv.URL)
				req.Header.Set("Authorization", "Bearer old")
				resp, err := c.Do(req)
				require.NoError(t, err)
				resp.Body.Close()
			}
			assert.Equal(t, []time.Duration{0, 10 * time.Second, 30 * time.Second}, refreshedAt, "5s doubled per failure: 10s, 20s, 40s")
		})
	}
}

// A Refresh that ignores its ctx cannot hold a request past MaxElapsed:
// the request gives up waiting and returns its 401.
func TestSlowRefreshIsBoundedByMaxElapsed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tr := &retryhttp.Transport{
			Base:   retrytest.HandlerTransport(http.HandlerFunc(authorized)),
			Policy: retry.Policy{MaxElapsed: 300 * time.Millisecond},
			Refresh: func(context.Context, *http.Request) (string, error) {
				time.Sleep(1500 * time.Millisecond) // ignores its ctx
				return "Bearer new", nil
			},
		}
		req := get(t, "http://api.test/")
		req.Header.Set("Authorization", "Bearer old")
		start := time.Now()
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		assert.Equal(t, 401, resp.StatusCode)
		resp.Body.Close()
		assert.LessOrEqual(t, time.Since(start), 300*time.Millisecond)
		time.Sleep(2 * time.Second) // the refresh ends on its own, in fake time
	})
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
		Refresh: func(context.Context, *http.Request) (string, error) {
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
