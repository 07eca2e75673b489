package retrydebug_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrydebug"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One line wires a Recorder to retry.Do: every call is recorded under the
// name, whatever its outcome.
func TestOnDoneRecordsDo(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 0)
	p := retry.Policy{MaxAttempts: 3}
	p.OnDone = rec.OnDone("inventory.get")

	_, _ = retrytest.Do(context.Background(), retrytest.Script(errUnavailable).Call, p)
	_, _ = retrytest.Do(context.Background(), retrytest.Always(errUnavailable).Call, p)
	assert.Panics(t, func() {
		_, _ = retrytest.Do(context.Background(), func(context.Context) error { panic("boom") }, p)
	})

	op := only(t, rec.Snapshot())
	assert.Equal(t, "inventory.get", op.Name)
	assert.EqualValues(t, 3, op.Calls)
	assert.EqualValues(t, 2+3+1, op.Attempts)
	assert.Equal(t, map[string]int64{"ok": 1, "attempts exhausted": 1, "panicked": 1}, op.Stops)
	assert.EqualValues(t, 1, op.GaveUp)
}

// flakyAPI answers /users/{id}/orders with two 503s, then 200, and /down
// with 503 always. It records the attempt headers it saw.
type flakyAPI struct {
	mu       sync.Mutex
	orders   int
	attempts []string
}

func (f *flakyAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts = append(f.attempts, r.Header.Get("Retry-Attempt"))
	if r.URL.Path == "/down" {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	f.orders++
	if f.orders%3 != 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	_, _ = io.WriteString(w, "[]")
}

// One line wires a Recorder to a retryhttp.Transport: a request is named by
// its route, or by method and origin, never by its path, query or headers.
func TestRecordHTTPNamesRequestsSafely(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 0)
	api := &flakyAPI{}
	client := &http.Client{Transport: &retryhttp.Transport{
		Base:          retrytest.HandlerTransport(api),
		Policy:        retry.Policy{MaxAttempts: 3, Clock: retrytest.NewAutoClock()},
		AttemptHeader: "Retry-Attempt",
		OnDone:        rec.RecordHTTP,
	}}
	do := func(ctx context.Context, url string) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := client.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		return resp.StatusCode
	}
	route := retryhttp.WithRoute(context.Background(), "GET /users/{id}/orders")
	assert.Equal(t, http.StatusOK, do(route, "http://api.example/users/8412/orders?key="+secret))
	assert.Equal(t, http.StatusOK, do(route, "http://api.example/users/8413/orders?key="+secret))
	assert.Equal(t, http.StatusServiceUnavailable, do(context.Background(), "http://API.example:80/down?token="+secret))

	s := rec.Snapshot()
	require.Len(t, s.Operations, 2)
	byRoute, byOrigin := s.Operations[0], s.Operations[1]
	assert.Equal(t, "GET /users/{id}/orders", byRoute.Name)
	assert.EqualValues(t, 2, byRoute.Calls)
	assert.EqualValues(t, 6, byRoute.Attempts)
	assert.Equal(t, 200, byRoute.Recent[0].Status)
	assert.Equal(t, "ok", byRoute.Recent[0].Stop)

	assert.Equal(t, "GET http://api.example", byOrigin.Name, "method and origin, without the default port")
	assert.Equal(t, 503, byOrigin.Recent[0].Status)
	assert.Equal(t, "attempts exhausted", byOrigin.Recent[0].Stop)
	assert.True(t, byOrigin.Recent[0].GaveUp)
	assert.Equal(t, "503 Service Unavailable", byOrigin.Recent[0].Reason)

	for _, target := range []string{"/debug/retries", "/debug/retries?format=json", "/debug/retries?op=GET+%2Fusers%2F%7Bid%7D%2Forders", "/debug/retries?op=GET+http%3A%2F%2Fapi.example&format=json"} {
		resp, body := get(t, rec, target)
		require.Equal(t, http.StatusOK, resp.StatusCode, target)
		assert.NotContains(t, body, secret, target)
		// The id, as it would appear in a path; the bare digits can turn up
		// by chance in a timestamp or a wait.
		assert.NotContains(t, body, "/8412", target)
		assert.NotContains(t, body, "/down", target)
	}
	assert.Equal(t, []string{"1", "2", "3", "1", "2", "3", "1", "2", "3"}, api.attempts)
}

// Past the cap, HTTP names go to the overflow bucket, under their own names.
func TestRecordHTTPOverflow(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 1)
	tr := succeeded(t)
	rec.RecordHTTP(context.Background(), retryhttp.Summary{Method: "GET", Origin: "https://a.example", Status: 200, Trace: tr})
	for range 3 {
		rec.RecordHTTP(context.Background(), retryhttp.Summary{Method: "POST", Origin: "https://b.example", Status: 201, Trace: tr})
	}
	rec.RecordHTTP(context.Background(), retryhttp.Summary{Route: "GET /x", Method: "GET", Origin: "https://a.example", Status: 200, Trace: tr})
	rec.RecordHTTP(context.Background(), retryhttp.Summary{Method: "GET", Origin: "https://a.example", Status: 204, Trace: tr})

	s := rec.Snapshot()
	require.Len(t, s.Operations, 2)
	assert.Equal(t, "GET https://a.example", s.Operations[0].Name)
	assert.EqualValues(t, 2, s.Operations[0].Calls)
	assert.Equal(t, 204, s.Operations[0].Recent[0].Status)
	other := s.Operations[1]
	assert.True(t, other.Other)
	assert.EqualValues(t, 4, other.Calls)
	assert.Equal(t, "GET /x", other.Recent[0].Name)
	assert.Equal(t, "POST https://b.example", other.Recent[1].Name)
}

// A name recorded through retry.Do and through the Transport is one
// operation.
func TestRecordHTTPSharesNamesWithOnDone(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 0)
	rec.OnDone("GET https://a.example")(context.Background(), succeeded(t), nil)
	rec.RecordHTTP(context.Background(), retryhttp.Summary{Method: "GET", Origin: "https://a.example", Trace: succeeded(t)})
	assert.EqualValues(t, 2, only(t, rec.Snapshot()).Calls)
}

// Methods that the HTTP semantic conventions do not know share one name per
// origin, so that a client sending made-up methods cannot use up the
// Recorder's operations; the empty method is GET, as net/http sends it.
func TestRecordHTTPNormalizesMethods(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 0)
	tr := succeeded(t)
	for _, m := range []string{"PURGE", "get", "X-" + secret, "", "GET", "PATCH"} {
		rec.RecordHTTP(context.Background(), retryhttp.Summary{Method: m, Origin: "https://a.example", Status: 200, Trace: tr})
	}
	calls := map[string]int64{}
	for _, op := range rec.Snapshot().Operations {
		calls[op.Name] = op.Calls
		assert.False(t, op.Other)
	}
	assert.Equal(t, map[string]int64{"HTTP https://a.example": 3, "GET https://a.example": 2, "PATCH https://a.example": 1}, calls)
	_, body := get(t, rec, "/?format=json")
	assert.NotContains(t, body, secret)
}
