package retryhttp_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// staleAfterFailure stores what o answers to a GET of url with the request
// header pairs kv, takes o down, and reports whether the same request is
// then answered stale; the caller accepts any age.
func staleAfterFailure(t *testing.T, tr *retryhttp.Transport, o *origin, url string, kv ...string) bool {
	t.Helper()
	o.setDown(false)
	_, _, err := fetch(t, t.Context(), tr, url, kv...)
	require.NoError(t, err)
	o.setDown(true)
	resp, _, err := fetch(t, retryhttp.WithStaleIfError(t.Context(), time.Hour), tr, url, kv...)
	require.NoError(t, err)
	return retryhttp.IsStale(resp)
}

// What RFC 9111 forbids a shared cache to store, or to serve stale, is
// never stored: the failure reaches the caller as it would without a
// cache.
func TestStaleStoresOnlyWhatItMay(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		header []string // the response's
		req    []string // the request's
		status int
		method string
	}{
		{name: "no-store", header: []string{"Cache-Control", "stale-if-error=60, no-store"}},
		{name: "no-store in mixed case", header: []string{"Cache-Control", "No-Store"}},
		{name: "no-store on a second line", header: []string{"Cache-Control", "max-age=5", "Cache-Control", "no-store"}},
		{name: "no-cache", header: []string{"Cache-Control", "no-cache"}},
		{name: "must-revalidate", header: []string{"Cache-Control", "must-revalidate, stale-if-error=60"}},
		{name: "proxy-revalidate", header: []string{"Cache-Control", "proxy-revalidate"}},
		{name: "private", header: []string{"Cache-Control", "private"}},
		{name: "Set-Cookie", header: []string{"Set-Cookie", "session=abc"}},
		{name: "Vary: *", header: []string{"Vary", "*"}},
		{name: "request no-store", req: []string{"Cache-Control", "no-store"}},
		{name: "Range", req: []string{"Range", "bytes=0-1"}},
		{name: "404", status: http.StatusNotFound},
		{name: "206", status: http.StatusPartialContent},
		{name: "Authorization", req: []string{"Authorization", "Bearer a"}},
		{name: "Cookie", req: []string{"Cookie", "session=abc"}},
		{name: "POST", method: http.MethodPost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					for i := 0; i+1 < len(tc.header); i += 2 {
						w.Header().Add(tc.header[i], tc.header[i+1])
					}
					w.WriteHeader(cmpOr(tc.status, http.StatusOK))
					_, _ = io.WriteString(w, "v1")
				})
				tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(h), Stale: newStaleCache(t, retryhttp.StaleOptions{})}
				req, err := http.NewRequestWithContext(t.Context(), cmpOr(tc.method, http.MethodGet), "http://api.test/", nil)
				require.NoError(t, err)
				for i := 0; i+1 < len(tc.req); i += 2 {
					req.Header.Add(tc.req[i], tc.req[i+1])
				}
				resp, err := tr.RoundTrip(req)
				require.NoError(t, err)
				assert.Equal(t, "v1", readAll(t, resp.Body), "the caller's body, untouched")
				n, size := tr.Stale.Len()
				assert.Zero(t, n, "stored")
				assert.Zero(t, size)
			})
		})
	}
}

func cmpOr[T comparable](v, or T) T {
	var zero T
	if v == zero {
		return or
	}
	return v
}

// A response that names request fields in Vary answers only a request with
// the same values of them; each set of values is an entry of its own.
func TestStaleRespectsVary(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		o := newOrigin("v1", "Vary", "Accept-Language, accept")
		tr := staleTransport(t, o, retryhttp.StaleOptions{})
		tr.Policy = retry.Policy{MaxAttempts: 1}
		require.True(t, staleAfterFailure(t, tr, o, "http://api.test/", "Accept-Language", "en", "Accept", "text/html"))
		o.setDown(true)
		for _, kv := range [][]string{
			{"Accept-Language", "fr", "Accept", "text/html"},
			{"Accept-Language", "en"},
			{"Accept", "text/html"},
			{},
		} {
			resp, _, err := fetch(t, retryhttp.WithStaleIfError(t.Context(), time.Hour), tr, "http://api.test/", kv...)
			require.NoError(t, err)
			assert.False(t, retryhttp.IsStale(resp), "%v differs in a field that Vary names", kv)
		}
		require.True(t, staleAfterFailure(t, tr, o, "http://api.test/", "Accept-Language", "fr", "Accept", "text/html"))
		n, _ := tr.Stale.Len()
		assert.Equal(t, 2, n, "a variant each")
		assert.True(t, staleAfterFailure(t, tr, o, "http://api.test/", "Accept-Language", "en", "Accept", "text/html", "X-Other", "1"),
			"a field Vary does not name does not matter")
	})
}

// A response made for one credential is never served to another: without
// PerCredential it is not stored at all; with it, it is stored under its
// credential and served only to the same one. An answer stored for no
// credential is not served to a request that carries one either.
func TestStaleNeverSharesACredentialsResponse(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		o := newOrigin("alice's")
		tr := staleTransport(t, o, retryhttp.StaleOptions{})
		tr.Policy = retry.Policy{MaxAttempts: 1}
		assert.False(t, staleAfterFailure(t, tr, o, "http://api.test/me", "Authorization", "Bearer alice"))
		n, _ := tr.Stale.Len()
		assert.Zero(t, n, "not stored without PerCredential")
	})
	synctest.Test(t, func(t *testing.T) {
		o := newOrigin("alice's")
		tr := staleTransport(t, o, retryhttp.StaleOptions{PerCredential: true})
		tr.Policy = retry.Policy{MaxAttempts: 1}
		require.True(t, staleAfterFailure(t, tr, o, "http://api.test/me", "Authorization", "Bearer alice"))
		o.setDown(true)
		for _, kv := range [][]string{
			{"Authorization", "Bearer bob"},
			{"Authorization", "Bearer alice", "Cookie", "s=1"},
			{"Cookie", "Bearer alice"},
			{},
		} {
			resp, body, err := fetch(t, retryhttp.WithStaleIfError(t.Context(), time.Hour), tr, "http://api.test/me", kv...)
			require.NoError(t, err)
			assert.False(t, retryhttp.IsStale(resp), "%v got alice's answer", kv)
			assert.Equal(t, "down", body)
		}
		resp, body, err := fetch(t, retryhttp.WithStaleIfError(t.Context(), time.Hour), tr, "http://api.test/me", "Authorization", "Bearer alice")
		require.NoError(t, err)
		assert.True(t, retryhttp.IsStale(resp))
		assert.Equal(t, "alice's", body)

		require.True(t, staleAfterFailure(t, tr, o, "http://api.test/public"))
		o.setDown(true)
		resp, _, err = fetch(t, retryhttp.WithStaleIfError(t.Context(), time.Hour), tr, "http://api.test/public", "Authorization", "Bearer bob")
		require.NoError(t, err)
		assert.False(t, retryhttp.IsStale(resp), "an anonymous answer is not a credential's")
	})
}

// The cache holds at most MaxBytes, evicting the least recently used
// entry, where serving an entry stale counts as a use.
func TestStaleEvictsLeastRecentlyUsedByBytes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		o := newOrigin(bytesOf(1000))
		tr := staleTransport(t, o, retryhttp.StaleOptions{MaxBytes: 3500, MaxEntryBytes: 1500})
		tr.Policy = retry.Policy{MaxAttempts: 1}
		ctx := retryhttp.WithStaleIfError(t.Context(), time.Hour)
		for _, p := range []string{"/a", "/b", "/c"} {
			_, _, err := fetch(t, ctx, tr, "http://api.test"+p)
			require.NoError(t, err)
		}
		n, size := tr.Stale.Len()
		assert.Equal(t, 3, n)
		assert.LessOrEqual(t, size, int64(3500))

		o.setDown(true)
		resp, _, err := fetch(t, ctx, tr, "http://api.test/a") // /a is used: /b is now the oldest
		require.NoError(t, err)
		require.True(t, retryhttp.IsStale(resp))
		o.setDown(false)
		_, _, err = fetch(t, ctx, tr, "http://api.test/d")
		require.NoError(t, err)
		n, size = tr.Stale.Len()
		assert.Equal(t, 3, n, "one evicted to make room")
		assert.LessOrEqual(t, size, int64(3500))

		o.setDown(true)
		for p, want := range map[string]bool{"/a": true, "/b": false, "/c": true, "/d": true} {
			resp, _, err := fetch(t, ctx, tr, "http://api.test"+p)
			require.NoError(t, err)
			assert.Equal(t, want, retryhttp.IsStale(resp), "%s stored", p)
		}
	})
}

// A response larger than MaxEntryBytes is not stored, and reaches the
// caller whole, its length known or not; nor is one whose reader stopped
// before its end.
func TestStaleEntryTooBigPassesThrough(t *testing.T) {
	t.Parallel()
	big := bytesOf(64 << 10)
	for _, length := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if length {
					w.Header().Set("Content-Length", "65536")
				}
				for i := 0; i < len(big); i += 1000 {
					_, _ = io.WriteString(w, big[i:min(i+1000, len(big))])
				}
			})
			tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(h),
				Stale: newStaleCache(t, retryhttp.StaleOptions{MaxEntryBytes: 8 << 10})}
			resp, body, err := fetch(t, t.Context(), tr, "http://api.test/")
			require.NoError(t, err)
			assert.Equal(t, big, body, "length known: %v", length)
			assert.Equal(t, map[bool]int64{true: 65536, false: -1}[length], resp.ContentLength)
			n, _ := tr.Stale.Len()
			assert.Zero(t, n, "too big to store")
		})
	}
	synctest.Test(t, func(t *testing.T) {
		o := newOrigin(bytesOf(4000))
		tr := staleTransport(t, o, retryhttp.StaleOptions{})
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://api.test/", nil)
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		_, err = io.ReadFull(resp.Body, make([]byte, 100))
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		n, _ := tr.Stale.Len()
		assert.Zero(t, n, "a body closed before its end is not stored")
	})
}

// The cache starts no goroutine and needs no clock but the Transport's: in
// a synctest bubble, whose goroutines must all end, time moves only by
// sleeps, and an entry ages with them.
func TestStaleCacheIsPassive(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		o := newOrigin("v1", "Cache-Control", "stale-if-error=5")
		tr := staleTransport(t, o, retryhttp.StaleOptions{})
		tr.Policy = retry.Policy{MaxAttempts: 1}
		_, _, err := fetch(t, context.Background(), tr, "http://api.test/")
		require.NoError(t, err)
		synctest.Wait() // nothing left running: no sweeper, no timer
		o.setDown(true)
		time.Sleep(6 * time.Second)
		resp, _, err := fetch(t, context.Background(), tr, "http://api.test/")
		require.NoError(t, err)
		assert.False(t, retryhttp.IsStale(resp))
	})
}

// Many requests share one cache at once, storing, evicting and serving
// from it, while the origin goes up and down: the cache stays within its
// bounds, and every answer is either the origin's or a stored one, whole.
func TestStaleCacheUnderConcurrentUse(t *testing.T) {
	t.Parallel()
	o := newOrigin(bytesOf(500), "Cache-Control", "stale-if-error=60")
	tr := staleTransport(t, o, retryhttp.StaleOptions{MaxBytes: 8 << 10, MaxEntryBytes: 2 << 10})
	tr.Policy = retry.Policy{MaxAttempts: 1}
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 50 {
				if g == 0 && i%10 == 0 {
					o.setDown(i%20 == 0)
				}
				resp, body, err := fetch(t, t.Context(), tr, "http://api.test/"+string(rune('a'+(g+i)%12)))
				if !assert.NoError(t, err) {
					return
				}
				if resp.StatusCode == http.StatusOK || retryhttp.IsStale(resp) {
					assert.Len(t, body, 500)
				}
			}
		}()
	}
	for range 8 {
		recv(t, done, "a worker")
	}
	n, size := tr.Stale.Len()
	assert.LessOrEqual(t, size, int64(8<<10))
	assert.LessOrEqual(t, n, 12)
}

// Empty answers count too: each entry counts as 512 bytes at least, so
// that a million 204s to a million URLs cannot grow the cache past
// MaxBytes in memory.
func TestStaleCountsEmptyAnswers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(status(http.StatusNoContent)),
			Stale: newStaleCache(t, retryhttp.StaleOptions{MaxBytes: 4096})}
		for i := range 100 {
			_, _, err := fetch(t, t.Context(), tr, "http://api.test/"+strconv.Itoa(i))
			require.NoError(t, err)
		}
		n, size := tr.Stale.Len()
		assert.Equal(t, 8, n)
		assert.Equal(t, int64(4096), size)
	})
}
