package retryotel_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retryotel"
	"github.com/stormguard/retry/retrytest"
)

// flakyAPI answers /users/{id}/orders with a 503, then 200, and /down with
// 503 always.
type flakyAPI struct {
	mu     sync.Mutex
	orders int
}

func (f *flakyAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path == "/down" {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	f.orders++
	if f.orders%2 == 1 {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	_, _ = io.WriteString(w, "[]")
}

// One line wires an Observer to a retryhttp.Transport: requests are named
// by route, or by method and origin, and no path, query or header reaches
// a metric or a span.
func TestRecordHTTP(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	client := &http.Client{Transport: &retryhttp.Transport{
		Base:   retrytest.HandlerTransport(&flakyAPI{}),
		Policy: retry.Policy{MaxAttempts: 3, Clock: retrytest.NewAutoClock()},
		OnDone: s.obs.RecordHTTP,
	}}
	do := func(ctx context.Context, url string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := client.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
	}
	route := retryhttp.WithRoute(context.Background(), "GET /users/{id}/orders")
	do(route, "http://api.example/users/8412/orders?key="+secret)
	do(route, "http://api.example/users/8413/orders?key="+secret)
	do(context.Background(), "http://api.example/down?token="+secret)

	calls := map[[2]string]float64{}
	for _, p := range points(t, s.metrics(t)[retryotel.CallsName]) {
		calls[[2]string{p.attrs["retry.operation"], p.attrs["retry.outcome"]}] += p.sum
	}
	assert.Equal(t, map[[2]string]float64{
		{"GET /users/{id}/orders", "ok"}: 2,
		{"GET", "attempts_exhausted"}:    1,
	}, calls)

	spans := s.spans.Ended()
	require.Len(t, spans, 3)
	assert.Equal(t, "GET /users/{id}/orders", spans[0].Name())
	assert.Equal(t, "200", attrs(spans[0].Attributes())["http.response.status_code"])
	assert.Equal(t, "GET", spans[2].Name(), "no route: named by its method, as the semantic conventions say")
	assert.Equal(t, "api.example", attrs(spans[2].Attributes())["server.address"])
	assert.Equal(t, "GET", attrs(spans[2].Attributes())["http.request.method"])
	assert.Equal(t, "503", attrs(spans[2].Attributes())["http.response.status_code"])
	assert.Equal(t, "503 Service Unavailable", attrs(spans[2].Events()[2].Attributes)["retry.attempt.reason"])
	for _, sp := range spans {
		assertNoSecret(t, sp)
		assert.NotContains(t, sp.Name(), "8412")
	}
}

// Past the cap, HTTP names are counted as "_OTHER", in the metrics and in
// the spans alike; requests without a route are named by their method, so
// that the hosts they go to do not use up the cap.
func TestRecordHTTPOverflow(t *testing.T) {
	t.Parallel()
	s := newSink(t, retryotel.WithMaxOperations(2))
	tr, _ := retrytest.Do(context.Background(), retrytest.Script().Call, retry.Policy{})
	for _, sum := range []retryhttp.Summary{
		{Method: "GET", Origin: "https://a.example", Status: 200, Trace: tr},
		{Method: "GET", Origin: "https://b.example", Status: 200, Trace: tr},
		{Route: "orders.list", Method: "GET", Origin: "https://a.example", Status: 200, Trace: tr},
		{Route: "POST /x", Method: "POST", Origin: "https://a.example", Status: 200, Trace: tr},
		{Method: "GET", Origin: "https://c.example", Status: 200, Trace: tr},
	} {
		s.obs.RecordHTTP(context.Background(), sum)
	}
	got := map[string]float64{}
	for _, p := range points(t, s.metrics(t)[retryotel.CallsName]) {
		got[p.attrs["retry.operation"]] += p.sum
	}
	assert.Equal(t, map[string]float64{"GET": 3, "orders.list": 1, "_OTHER": 1}, got)
	var names []string
	for _, sp := range s.spans.Ended() {
		names = append(names, sp.Name())
		assert.Equal(t, sp.Name(), attrs(sp.Attributes())["retry.operation"])
	}
	assert.Equal(t, []string{"GET", "GET", "orders.list", "_OTHER", "GET"}, names, "span names obey the cap too")
}

// Calls to a thousand per-tenant hosts are one operation, "GET": no host
// becomes a metric attribute's value. A method the semantic conventions do
// not know is "HTTP" as the operation and the span name, and "_OTHER" as
// http.request.method, so that made-up methods cannot grow the series.
func TestRecordHTTPNamesAreBounded(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	tr, _ := retrytest.Do(context.Background(), retrytest.Script().Call, retry.Policy{})
	for i := range 1000 {
		s.obs.RecordHTTP(context.Background(), retryhttp.Summary{Method: "POST", Origin: fmt.Sprintf("https://tenant-%04d.example:8443", i), Status: 201, Trace: tr})
	}
	for _, m := range []string{"PURGE", "get", "X-" + secret} {
		s.obs.RecordHTTP(context.Background(), retryhttp.Summary{Method: m, Origin: "https://api.example", Status: 405, Trace: tr})
	}
	got := map[string]float64{}
	for _, p := range points(t, s.metrics(t)[retryotel.CallsName]) {
		got[p.attrs["retry.operation"]] += p.sum
		for _, v := range p.attrs {
			assert.NotContains(t, v, "tenant")
		}
	}
	assert.Equal(t, map[string]float64{"POST": 1000, "HTTP": 3}, got)

	spans := s.spans.Ended()
	require.Len(t, spans, 1003)
	assert.Equal(t, "POST", spans[42].Name())
	assert.Equal(t, "tenant-0042.example", attrs(spans[42].Attributes())["server.address"], "the host is a span attribute: spans are not series")
	for _, sp := range spans[1000:] {
		assert.Equal(t, "HTTP", sp.Name())
		assert.Equal(t, "_OTHER", attrs(sp.Attributes())["http.request.method"])
		assertNoSecret(t, sp)
	}
}
