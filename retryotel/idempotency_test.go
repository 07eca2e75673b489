package retryotel_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/retryotel"
)

// keyed returns a POST to target with a secret idempotency key, as the
// mux would hand it to a handler registered under pattern ("" for none).
func keyed(pattern, target string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, target+"?token="+secret, strings.NewReader(`{"card":"`+secret+`"}`))
	r.Header.Set("Idempotency-Key", secret)
	r.Pattern = pattern
	return r
}

// idemPoints sums a metric's points by route and outcome: count and sum.
func idemPoints(t *testing.T, s *sink, name string) map[[2]string][2]float64 {
	t.Helper()
	out := map[[2]string][2]float64{}
	for _, p := range points(t, s.metrics(t)[name]) {
		require.Len(t, p.attrs, 2, "route and outcome, and no other attribute")
		k := [2]string{p.attrs["http.route"], p.attrs["idempotency.outcome"]}
		v := out[k]
		out[k] = [2]float64{v[0] + p.count, v[1] + p.sum}
		for _, v := range p.attrs {
			assert.NotContains(t, v, secret)
		}
	}
	return out
}

// RecordIdempotency counts keyed requests by route (the mux's pattern, or
// else the method) and outcome, and the time each spent in the store; no
// key, path, query or error reaches an attribute.
func TestRecordIdempotency(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	orders := keyed("POST /orders", "/orders/8412")
	for _, sum := range []idempotency.Summary{
		{Outcome: idempotency.OutcomeExecuted, Status: 201, StoreCalls: 2, StoreTime: 20 * time.Millisecond},
		{Outcome: idempotency.OutcomeReplayed, Status: 201, StoreCalls: 1, StoreTime: 5 * time.Millisecond},
		{Outcome: idempotency.OutcomeReplayed, Status: 201, StoreCalls: 1, StoreTime: 5 * time.Millisecond},
		{Outcome: idempotency.OutcomeInFlight, Status: 409, StoreCalls: 1, StoreTime: 5 * time.Millisecond},
		{Outcome: idempotency.OutcomeMismatch, Status: 422, StoreCalls: 1, StoreTime: 5 * time.Millisecond},
		{Outcome: idempotency.OutcomeStoreFailed, Status: 503, StoreCalls: 1, StoreTime: 250 * time.Millisecond, Err: errors.New(secret)},
		{Outcome: idempotency.OutcomeLeaseLost, Status: 201, StoreCalls: 3, StoreTime: 30 * time.Millisecond, Err: errors.New(secret)},
		{Outcome: idempotency.OutcomeRejected, Status: 400}, // the store was not asked
	} {
		s.obs.RecordIdempotency(orders, sum)
	}
	s.obs.RecordIdempotency(keyed("", "/refunds/8412"), idempotency.Summary{Outcome: idempotency.OutcomeExecuted, StoreCalls: 2, StoreTime: time.Millisecond})
	s.obs.OnIdempotency("refunds.create")(keyed("", "/refunds/8413"), idempotency.Summary{Outcome: idempotency.OutcomeExecuted})

	assert.Equal(t, map[[2]string][2]float64{
		{"POST /orders", "executed"}:     {1, 1},
		{"POST /orders", "replayed"}:     {1, 2},
		{"POST /orders", "in_flight"}:    {1, 1},
		{"POST /orders", "mismatch"}:     {1, 1},
		{"POST /orders", "store_failed"}: {1, 1},
		{"POST /orders", "lease_lost"}:   {1, 1},
		{"POST /orders", "rejected"}:     {1, 1},
		{"POST", "executed"}:             {1, 1},
		{"refunds.create", "executed"}:   {1, 1},
	}, idemPoints(t, s, retryotel.IdempotencyRequestsName))
	store := idemPoints(t, s, retryotel.IdempotencyStoreDurationName)
	assert.Len(t, store, 7, "requests that did not call the store record no store time")
	assert.InDelta(t, 0.25, store[[2]string{"POST /orders", "store_failed"}][1], 1e-9)
	assert.Equal(t, 2.0, store[[2]string{"POST /orders", "replayed"}][0])
}

// Routes past the cap are "_OTHER".
func TestRecordIdempotencyRoutesAreBounded(t *testing.T) {
	t.Parallel()
	s := newSink(t, retryotel.WithMaxOperations(2))
	for i := range 50 {
		s.obs.RecordIdempotency(keyed(fmt.Sprintf("POST /t%d", i), "/x"), idempotency.Summary{Outcome: idempotency.OutcomeExecuted})
	}
	got := idemPoints(t, s, retryotel.IdempotencyRequestsName)
	assert.Equal(t, map[[2]string][2]float64{
		{"POST /t0", "executed"}: {1, 1},
		{"POST /t1", "executed"}: {1, 1},
		{"_OTHER", "executed"}:   {1, 48},
	}, got)
}

// A real middleware, mounted per route on a mux under a server span, feeds
// the Observer: the first request runs the handler, the retry with the same
// key is replayed, and the same key with another body is a 422; each
// request's span says how it was answered.
func TestRecordIdempotencyThroughMiddleware(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	mw, err := idempotency.New(idempotency.Options{OnDone: s.obs.RecordIdempotency})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("POST /orders", mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
	})))
	tracer := s.tracers.Tracer("test")
	send := func(body string) int {
		r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(body))
		r.Header.Set("Idempotency-Key", secret)
		ctx, span := tracer.Start(r.Context(), "POST /orders") // as otelhttp.NewHandler would
		defer span.End()
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r.WithContext(ctx))
		return w.Code
	}
	require.Equal(t, http.StatusCreated, send(`{"n":1}`))
	require.Equal(t, http.StatusCreated, send(`{"n":1}`))
	require.Equal(t, http.StatusUnprocessableEntity, send(`{"n":2}`))

	assert.Equal(t, map[[2]string][2]float64{
		{"POST /orders", "executed"}: {1, 1},
		{"POST /orders", "replayed"}: {1, 1},
		{"POST /orders", "mismatch"}: {1, 1},
	}, idemPoints(t, s, retryotel.IdempotencyRequestsName))
	var outcomes []string
	for _, sp := range s.spans.Ended() {
		outcomes = append(outcomes, attrs(sp.Attributes())["idempotency.outcome"])
	}
	assert.Equal(t, []string{"executed", "replayed", "mismatch"}, outcomes)
}
