package retryhttp_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
)

// canned is a Base that answers every request at once with a copy of its
// response: what the Transport itself costs, without a network.
type canned struct {
	status int
	header http.Header
	body   string
}

func (c *canned) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: c.status, Header: c.header.Clone(), Request: req,
		Body: io.NopCloser(strings.NewReader(c.body)), ContentLength: int64(len(c.body))}, nil
}

// benchRequest is the GET of every benchmark.
func benchRequest() *http.Request {
	req := httptest.NewRequest(http.MethodGet, "http://api.test/items/1?view=full", nil)
	req.Header.Set("Accept", "application/json")
	return req
}

// benchGET sends benchRequest through tr and reads each body to its end;
// every response must be stale or none.
func benchGET(b *testing.B, tr *retryhttp.Transport, stale bool) {
	req := benchRequest()
	b.ReportAllocs()
	for b.Loop() {
		resp, err := tr.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if retryhttp.IsStale(resp) != stale {
			b.Fatalf("IsStale = %v, want %v", !stale, stale)
		}
	}
}

// BenchmarkStale measures a GET of a 1 KiB response: without a cache; with
// one that stores it (each success replaces the entry); and a failure
// answered from the cache (one attempt, then the lookup).
//
//	go test -run '^$' -bench BenchmarkStale -benchmem ./retryhttp
func BenchmarkStale(b *testing.B) {
	ok := &canned{status: http.StatusOK, body: strings.Repeat("x", 1024), header: http.Header{
		"Content-Type": {"application/json"}, "Cache-Control": {"max-age=60, stale-if-error=600"}, "Vary": {"Accept"}}}
	cache := func(b *testing.B) *retryhttp.StaleCache {
		c, err := retryhttp.NewStaleCache(retryhttp.StaleOptions{})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	p := retry.Policy{MaxAttempts: 1}
	b.Run("no cache", func(b *testing.B) {
		benchGET(b, &retryhttp.Transport{Base: ok, Policy: p}, false)
	})
	b.Run("store", func(b *testing.B) {
		benchGET(b, &retryhttp.Transport{Base: ok, Policy: p, Stale: cache(b)}, false)
	})
	b.Run("serve stale", func(b *testing.B) {
		tr := &retryhttp.Transport{Base: ok, Policy: p, Stale: cache(b)}
		resp, err := tr.RoundTrip(benchRequest())
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body) // stored
		resp.Body.Close()
		tr.Base = &canned{status: http.StatusServiceUnavailable, header: http.Header{}}
		benchGET(b, tr, true)
	})
}
