package retryhttp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// origin is an in-process server whose answers a test switches: up, it
// answers 200 with its body and headers; down, 503 with "down".
type origin struct {
	mu     sync.Mutex
	down   bool
	body   string
	header http.Header // set on every 200
	hits   int
	seen   []http.Header
}

func newOrigin(body string, kv ...string) *origin {
	o := &origin{body: body, header: http.Header{}}
	for i := 0; i+1 < len(kv); i += 2 {
		o.header.Add(kv[i], kv[i+1])
	}
	return o
}

func (o *origin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	o.hits++
	o.seen = append(o.seen, r.Header.Clone())
	down, body := o.down, o.body
	for k, vs := range o.header {
		w.Header()[k] = vs
	}
	o.mu.Unlock()
	if down {
		w.Header().Del("Cache-Control")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "down")
		return
	}
	_, _ = io.WriteString(w, body)
}

func (o *origin) setDown(down bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down = down
}

func (o *origin) setBody(body string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.body = body
}

func (o *origin) hitCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.hits
}

// newStaleCache returns a cache with opts, or fails the test.
func newStaleCache(t *testing.T, opts retryhttp.StaleOptions) *retryhttp.StaleCache {
	t.Helper()
	c, err := retryhttp.NewStaleCache(opts)
	require.NoError(t, err)
	return c
}

// staleTransport is a Transport over o with a fresh StaleCache and the
// policy's defaults on the bubble's clock.
func staleTransport(t *testing.T, o http.Handler, opts retryhttp.StaleOptions) *retryhttp.Transport {
	t.Helper()
	return &retryhttp.Transport{Base: retrytest.HandlerTransport(o), Stale: newStaleCache(t, opts)}
}

// fetch sends a GET for url with ctx on tr, reads the body, and returns the
// response (body closed), the body and the error.
func fetch(t *testing.T, ctx context.Context, tr http.RoundTripper, url string, kv ...string) (*http.Response, string, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Add(kv[i], kv[i+1])
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return nil, "", err
	}
	return resp, readAll(t, resp.Body), nil
}

// When the origin fails for good, a GET is answered with the response the
// origin allowed to be served stale, with its age in Age, and the Trace,
// the Summary and IsStale say so.
func TestStaleServedWhenAttemptsRunOut(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		o := newOrigin("v1", "Cache-Control", "max-age=0, stale-if-error=60", "Content-Type", "text/plain",
			"Connection", "X-Hop", "X-Hop", "1", "Keep-Alive", "timeout=5")
		tr := staleTransport(t, o, retryhttp.StaleOptions{})
		tr.Policy = retry.Policy{Jitter: retry.NoJitter} // waits of 200ms, 400ms, 800ms
		var sums []retryhttp.Summary
		tr.OnDone = func(_ context.Context, s retryhttp.Summary) { sums = append(sums, s) }
		resp, body, err := fetch(t, t.Context(), tr, "http://api.test/item")
		require.NoError(t, err)
		assert.Equal(t, "v1", body)
		assert.False(t, retryhttp.IsStale(resp), "a fresh answer is not stale")

		o.setDown(true)
		time.Sleep(30 * time.Second)
		var trace retry.Trace
		resp, body, err = fetch(t, retryhttp.WithTrace(t.Context(), &trace), tr, "http://api.test/item")
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "v1", body)
		assert.True(t, retryhttp.IsStale(resp))
		// 30s resident, plus the 1.4s of waits of the stale call, which are
		// not the stored response's age: the wait ran after it was stored.
		assert.Equal(t, "31", resp.Header.Get("Age"), "30s since stored, then 1.4s of retries")
		assert.Equal(t, "text/plain", resp.Header.Get("Content-Type"))
		for _, f := range []string{"Connection", "X-Hop", "Keep-Alive"} {
			assert.Empty(t, resp.Header.Values(f), "hop-by-hop %s kept", f)
		}
		assert.Equal(t, int64(2), resp.ContentLength)
		assert.Equal(t, 1+4, o.hitCount(), "every attempt went to the origin first")

		assert.Equal(t, retry.StopStale, trace.Stop(), "WithTrace's Trace")
		assert.Equal(t, 4, trace.Attempts())
		require.Len(t, sums, 2)
		s := sums[1]
		assert.Equal(t, retry.StopStale, s.Trace.Stop())
		assert.Equal(t, retryhttp.StaleAnswer{Failed: retry.StopExhausted, Age: s.Stale.Age}, s.Stale)
		assert.Equal(t, 31*time.Second, s.Stale.Age.Truncate(time.Second))
		assert.Equal(t, http.StatusOK, s.Status)
		assert.NoError(t, s.Err)
		assert.Equal(t, retryhttp.StaleAnswer{}, sums[0].Stale, "the first call was not stale")
		assert.Contains(t, s.Trace.String(), "served stale (503 Service Unavailable)")
	})
}

// The Age header counts the origin's own Age and the delay of the response
// (RFC 9111 §4.2.3), and a stale-if-error of N serves a response until it
// is N past its freshness lifetime, not after.
func TestStaleAgeAndItsLimit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		o := newOrigin("v1", "Cache-Control", "max-age=10, stale-if-error=60", "Age", "5")
		tr := staleTransport(t, o, retryhttp.StaleOptions{})
		tr.Policy = retry.Policy{MaxAttempts: 1}
		_, _, err := fetch(t, t.Context(), tr, "http://api.test/")
		require.NoError(t, err)
		o.setDown(true)

		time.Sleep(20 * time.Second)
		resp, _, err := fetch(t, t.Context(), tr, "http://api.test/")
		require.NoError(t, err)
		assert.True(t, retryhttp.IsStale(resp))
		assert.Equal(t, "25", resp.Header.Get("Age"), "5s old when received, 20s since")

		time.Sleep(45 * time.Second) // 70s old: 60s past its 10s of freshness
		resp, _, err = fetch(t, t.Context(), tr, "http://api.test/")
		require.NoError(t, err)
		assert.True(t, retryhttp.IsStale(resp), "exactly N past freshness is still allowed")

		time.Sleep(time.Second)
		resp, body, err := fetch(t, t.Context(), tr, "http://api.test/")
		require.NoError(t, err)
		assert.False(t, retryhttp.IsStale(resp), "71s old: past stale-if-error")
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "the failure, as without a cache")
		assert.Equal(t, "down", body)
	})
}

// Without the origin's permission a stored response is served only when
// the caller asks, up to the age it accepts; a caller can also refuse one
// that the origin allowed.
func TestStaleIfErrorAskedByTheCaller(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		o := newOrigin("v1") // no stale-if-error
		tr := staleTransport(t, o, retryhttp.StaleOptions{})
		tr.Policy = retry.Policy{MaxAttempts: 1}
		_, _, err := fetch(t, t.Context(), tr, "http://api.test/")
		require.NoError(t, err)
		o.setDown(true)
		time.Sleep(30 * time.Second)

		resp, _, err := fetch(t, t.Context(), tr, "http://api.test/")
		require.NoError(t, err)
		assert.False(t, retryhttp.IsStale(resp), "the origin did not allow it, and the caller did not ask")

		resp, body, err := fetch(t, retryhttp.WithStaleIfError(t.Context(), time.Minute), tr, "http://api.test/")
		require.NoError(t, err)
		assert.True(t, retryhttp.IsStale(resp))
		assert.Equal(t, "v1", body)

		resp, _, err = fetch(t, retryhttp.WithStaleIfError(t.Context(), 10*time.Second), tr, "http://api.test/")
		require.NoError(t, err)
		assert.False(t, retryhttp.IsStale(resp), "older than the caller accepts")

		resp, _, err = fetch(t, t.Context(), tr, "http://api.test/", "Cache-Control", "stale-if-error=60")
		require.NoError(t, err)
		assert.True(t, retryhttp.IsStale(resp), "the request's own stale-if-error asks too")
	})
	synctest.Test(t, func(t *testing.T) {
		o := newOrigin("v1", "Cache-Control", "stale-if-error=600")
		tr := staleTransport(t, o, retryhttp.StaleOptions{})
		tr.Policy = retry.Policy{MaxAttempts: 1}
		_, _, err := fetch(t, t.Context(), tr, "http://api.test/")
		require.NoError(t, err)
		o.setDown(true)
		resp, _, err := fetch(t, retryhttp.WithStaleIfError(t.Context(), 0), tr, "http://api.test/")
		require.NoError(t, err)
		assert.False(t, retryhttp.IsStale(resp), "refused by the caller, whatever the origin allows")
	})
}

// A new success replaces the stored response, and MaxAge bounds how old an
// entry may be served whatever the origin allows.
func TestStaleKeepsTheLatestWithinMaxAge(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		o := newOrigin("v1", "Cache-Control", "stale-if-error=86400")
		tr := staleTransport(t, o, retryhttp.StaleOptions{MaxAge: time.Hour})
		tr.Policy = retry.Policy{MaxAttempts: 1}
		_, _, err := fetch(t, t.Context(), tr, "http://api.test/")
		require.NoError(t, err)
		o.setBody("v2")
		_, _, err = fetch(t, t.Context(), tr, "http://api.test/")
		require.NoError(t, err)
		n, _ := tr.Stale.Len()
		assert.Equal(t, 1, n, "one entry per URL")

		o.setDown(true)
		resp, body, err := fetch(t, t.Context(), tr, "http://api.test/")
		require.NoError(t, err)
		assert.True(t, retryhttp.IsStale(resp))
		assert.Equal(t, "v2", body)

		time.Sleep(time.Hour + time.Second)
		resp, _, err = fetch(t, t.Context(), tr, "http://api.test/")
		require.NoError(t, err)
		assert.False(t, retryhttp.IsStale(resp), "past MaxAge")
		n, _ = tr.Stale.Len()
		assert.Zero(t, n, "dropped when looked up")
	})
}

// IsStale cannot be fooled by headers: a response from the network is
// never stale, whatever it says.
func TestIsStaleIsNotAHeader(t *testing.T) {
	t.Parallel()
	assert.False(t, retryhttp.IsStale(nil))
	synctest.Test(t, func(t *testing.T) {
		o := newOrigin("v1", "Age", "100", "Warning", `110 - "Response is Stale"`)
		tr := staleTransport(t, o, retryhttp.StaleOptions{})
		resp, _, err := fetch(t, t.Context(), tr, "http://api.test/")
		require.NoError(t, err)
		assert.False(t, retryhttp.IsStale(resp))
	})
}

// IsStale still reports a stale answer once an http.Client with a Timeout
// has wrapped its body.
func TestIsStaleThroughAClient(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		o := newOrigin("v1", "Cache-Control", "stale-if-error=60")
		tr := staleTransport(t, o, retryhttp.StaleOptions{})
		tr.Policy = retry.Policy{MaxAttempts: 1}
		client := &http.Client{Transport: tr, Timeout: time.Minute}
		resp, err := client.Get("http://api.test/")
		require.NoError(t, err)
		readAll(t, resp.Body)
		o.setDown(true)
		resp, err = client.Get("http://api.test/")
		require.NoError(t, err)
		assert.Equal(t, "v1", readAll(t, resp.Body))
		assert.True(t, retryhttp.IsStale(resp))
	})
}

// A HEAD is stored and served apart from a GET: each answers its own
// method.
func TestStaleHeadApartFromGet(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		o := newOrigin("v1", "Cache-Control", "stale-if-error=60", "Content-Length", "2")
		tr := staleTransport(t, o, retryhttp.StaleOptions{})
		tr.Policy = retry.Policy{MaxAttempts: 1}
		head := func() (*http.Response, string) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodHead, "http://api.test/", nil)
			require.NoError(t, err)
			resp, err := tr.RoundTrip(req)
			require.NoError(t, err)
			return resp, readAll(t, resp.Body)
		}
		head()
		o.setDown(true)
		resp, _, err := fetch(t, t.Context(), tr, "http://api.test/")
		require.NoError(t, err)
		assert.False(t, retryhttp.IsStale(resp), "no GET was stored")
		resp, body := head()
		assert.True(t, retryhttp.IsStale(resp))
		assert.Empty(t, body, "a HEAD has no body")
		assert.Equal(t, int64(2), resp.ContentLength, "the HEAD's length, as it came")
	})
}

// Bad options are refused with an error that says so.
func TestNewStaleCacheRejectsBadOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []retryhttp.StaleOptions{
		{MaxBytes: -1},
		{MaxEntryBytes: -1},
		{MaxAge: -time.Second},
		{MaxBytes: 100, MaxEntryBytes: 101},
	} {
		c, err := retryhttp.NewStaleCache(o)
		assert.ErrorIs(t, err, retryhttp.ErrInvalidStaleOptions, "%+v", o)
		assert.Nil(t, c)
	}
	c, err := retryhttp.NewStaleCache(retryhttp.StaleOptions{MaxBytes: 100})
	require.NoError(t, err, "MaxEntryBytes defaults to at most MaxBytes")
	assert.NotNil(t, c)
}

// bytesOf returns a string of n bytes.
func bytesOf(n int) string { return strings.Repeat("x", n) }

// On a fake clock the Age of a stale answer is the time that clock moved
// since the response was received, whatever the server's Date says (a
// real clock's time, not comparable with a fake one), and a new response
// starts again from its own age.
func TestStaleAgeOnAFakeClock(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	o := newOrigin("v1", "Cache-Control", "stale-if-error=600", "Age", "2")
	srv := newServer(t, o.ServeHTTP)
	tr := &retryhttp.Transport{Policy: retry.Policy{MaxAttempts: 1, Clock: clk},
		Stale: newStaleCache(t, retryhttp.StaleOptions{})}
	client := srv.client(tr)
	ageAfter := func(d time.Duration) string {
		t.Helper()
		o.setDown(false)
		_, _, err := fetch(t, t.Context(), client.Transport, srv.URL)
		require.NoError(t, err)
		o.setDown(true)
		clk.Add(d)
		resp, _, err := fetch(t, t.Context(), client.Transport, srv.URL)
		require.NoError(t, err)
		require.True(t, retryhttp.IsStale(resp))
		return resp.Header.Get("Age")
	}
	assert.Equal(t, "12", ageAfter(10*time.Second), "2s old when received, 10s since")
	assert.Equal(t, "7", ageAfter(5*time.Second), "the new response's own age")
}
