package retrydebug_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/retrydebug"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyed returns a POST to target with a secret idempotency key, as the
// mux would hand it to a handler registered under pattern ("" for none).
func keyed(pattern, target string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, target+"?token="+secret, strings.NewReader(`{"card":"`+secret+`"}`))
	r.Header.Set("Idempotency-Key", secret)
	r.Pattern = pattern
	return r
}

// idemRoute returns the route of s named name.
func idemRoute(t *testing.T, s retrydebug.Snapshot, name string) retrydebug.IdempotencyRoute {
	t.Helper()
	for _, r := range s.Idempotency {
		if r.Route == name {
			return r
		}
	}
	t.Fatalf("no idempotency route %q in %+v", name, s.Idempotency)
	return retrydebug.IdempotencyRoute{}
}

// RecordIdempotency counts keyed requests by route (the mux's pattern, or
// else the method) and outcome, with the time spent in the store; the key,
// path, query and body never reach the page or its JSON.
func TestRecordIdempotency(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 0)
	orders := keyed("POST /orders", "/orders")
	for _, s := range []idempotency.Summary{
		{Outcome: idempotency.OutcomeExecuted, Status: 201, StoreCalls: 2, StoreTime: 2 * time.Millisecond, Elapsed: 50 * time.Millisecond},
		{Outcome: idempotency.OutcomeReplayed, Status: 201, StoreCalls: 1, StoreTime: time.Millisecond},
		{Outcome: idempotency.OutcomeReplayed, Status: 201, StoreCalls: 1, StoreTime: time.Millisecond},
		{Outcome: idempotency.OutcomeInFlight, Status: 409, StoreCalls: 1, StoreTime: time.Millisecond},
		{Outcome: idempotency.OutcomeMismatch, Status: 422, StoreCalls: 1, StoreTime: time.Millisecond},
		{Outcome: idempotency.OutcomeStoreFailed, Status: 503, StoreCalls: 1, StoreTime: 250 * time.Millisecond, Err: errors.New(secret)},
		{Outcome: idempotency.OutcomeLeaseLost, Status: 201, StoreCalls: 3, StoreTime: 3 * time.Millisecond, Err: errors.New(secret)},
		{Outcome: idempotency.OutcomeRejected, Status: 400}, // the store was not asked
	} {
		rec.RecordIdempotency(orders, s)
	}
	rec.RecordIdempotency(keyed("", "/refunds/8412"), idempotency.Summary{Outcome: idempotency.OutcomeExecuted, Status: 200, StoreCalls: 2})

	s := rec.Snapshot()
	require.Len(t, s.Idempotency, 2)
	r := idemRoute(t, s, "POST /orders")
	assert.EqualValues(t, 8, r.Requests)
	assert.Equal(t, map[string]int64{"executed": 1, "replayed": 2, "in_flight": 1, "mismatch": 1, "store_failed": 1, "lease_lost": 1, "rejected": 1}, r.Outcomes)
	assert.EqualValues(t, 10, r.StoreCalls)
	assert.InEpsilon(t, float64(time.Millisecond), float64(r.StoreTime.P50), 0.07, "the p50 of the requests that called the store")
	assert.Equal(t, 250*time.Millisecond, r.StoreTime.Max)
	assert.Equal(t, 50*time.Millisecond, r.Elapsed.Max)
	assert.EqualValues(t, 1, idemRoute(t, s, "POST").Requests, "no pattern: named by the method, never by the path")

	for _, target := range []string{"/", "/?format=json"} {
		_, body := get(t, rec, target)
		assert.NotContains(t, body, secret, target)
		assert.NotContains(t, body, "/refunds/8412", target)
	}
	_, body := get(t, rec, "/")
	row := rows(body, "route")
	require.Len(t, row, 2)
	assert.Contains(t, row[1], `<td class="num storefailed bad">1</td>`)
	assert.Contains(t, row[1], `<td class="num replayed">2</td>`)
	assert.Contains(t, row[1], `<td class="num inflight">1</td>`)
	assert.Contains(t, row[1], `<td class="num mismatch">1</td>`)
	assert.Contains(t, row[1], `<td class="num leaselost bad">1</td>`)
}

// OnIdempotency names the requests that have no pattern; one that has a
// pattern keeps it.
func TestOnIdempotency(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 0)
	hook := rec.OnIdempotency("orders.create")
	hook(keyed("", "/orders/8412"), idempotency.Summary{Outcome: idempotency.OutcomeExecuted})
	hook(keyed("", "/orders/8413"), idempotency.Summary{Outcome: idempotency.OutcomeReplayed})
	hook(keyed("POST /refunds", "/refunds"), idempotency.Summary{Outcome: idempotency.OutcomeExecuted})
	s := rec.Snapshot()
	assert.EqualValues(t, 2, idemRoute(t, s, "orders.create").Requests)
	assert.EqualValues(t, 1, idemRoute(t, s, "POST /refunds").Requests)
}

// Routes past the cap share one overflow bucket, so that a mux of many
// patterns, or a hook given names per request, cannot grow the Recorder.
func TestRecordIdempotencyRoutesAreBounded(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 2)
	for i := range 50 {
		rec.RecordIdempotency(keyed(fmt.Sprintf("POST /t%d", i), "/x"), idempotency.Summary{Outcome: idempotency.OutcomeExecuted})
	}
	s := rec.Snapshot()
	require.Len(t, s.Idempotency, 3)
	other := s.Idempotency[2]
	assert.True(t, other.Other)
	assert.Equal(t, "(other routes)", other.Route)
	assert.EqualValues(t, 48, other.Requests)
}

// A real middleware, mounted per route on a mux, feeds the Recorder: the
// first request runs the handler, the retry with the same key is replayed,
// and the same key with another body is a 422.
func TestRecordIdempotencyThroughMiddleware(t *testing.T) {
	t.Parallel()
	rec := retrydebug.NewRecorder(0, 0)
	mw, err := idempotency.New(idempotency.Options{OnDone: rec.RecordIdempotency})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("POST /orders", mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})))
	send := func(body string) int {
		r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(body))
		r.Header.Set("Idempotency-Key", secret)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		return w.Code
	}
	require.Equal(t, http.StatusCreated, send(`{"n":1}`))
	require.Equal(t, http.StatusCreated, send(`{"n":1}`))
	require.Equal(t, http.StatusUnprocessableEntity, send(`{"n":2}`))

	r := idemRoute(t, rec.Snapshot(), "POST /orders")
	assert.EqualValues(t, 3, r.Requests)
	assert.Equal(t, map[string]int64{"executed": 1, "replayed": 1, "mismatch": 1}, r.Outcomes)
	assert.Positive(t, r.StoreCalls)
	_, body := get(t, rec, "/?format=json")
	assert.NotContains(t, body, secret)
}
