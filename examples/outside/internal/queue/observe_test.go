package queue_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/examples/outside/internal/queue"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrydebug"
	"github.com/stormguard/retry/retryotel"
	"github.com/stormguard/retry/retrytest"
)

// The Trace of each Publish reaches both observers through the Policy's
// OnDone, as retry.Do's does, and both show the topics' guards.
func TestObserversSeeEachPublish(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = meters.Shutdown(context.Background()) })
	obs, err := retryotel.New(retryotel.WithMeterProvider(meters), retryotel.WithTracerProvider(noop.NewTracerProvider()))
	require.NoError(t, err)
	rec := retrydebug.NewRecorder(0, 0)

	keyed := guard.Keyed{Budgets: new(guard.Budgets), Breakers: new(guard.Breakers), Throttles: new(guard.Throttles)}
	rec.Breakers("queue", keyed.Breakers)
	rec.Throttles("queue", keyed.Throttles)
	rec.Budget("queue orders", keyed.Budgets.Get("orders")) // a fixed topic: Recorder takes single Budgets only
	breakers, err := obs.ObserveBreakers("queue", keyed.Breakers)
	require.NoError(t, err)
	t.Cleanup(func() { _ = breakers.Unregister() })
	throttles, err := obs.ObserveThrottles("queue", keyed.Throttles)
	require.NoError(t, err)
	t.Cleanup(func() { _ = throttles.Unregister() })

	const op = "queue.publish"
	otelDone := obs.OnDone(op)
	pol := retry.Policy{
		Clock:  retrytest.NewAutoClock(), // each wait passes at once
		Jitter: retry.NoJitter,
		OnDone: func(ctx context.Context, t retry.Trace, err error) {
			rec.Record(op, t)
			otelDone(ctx, t, err)
		},
	}
	b := newBroker()
	b.script("orders", queue.ErrUnavailable)
	b.script("payments", queue.ErrBadMessage)
	p := newPublisher(t, b, queue.Options{Policy: pol, Guards: keyed})

	_, err = p.Publish(t.Context(), "orders", []byte("m"))
	require.NoError(t, err)
	_, err = p.Publish(t.Context(), "payments", []byte("m"))
	require.ErrorIs(t, err, queue.ErrBadMessage)

	// retrydebug: the snapshot, and the page's JSON twin.
	s := rec.Snapshot()
	require.Len(t, s.Operations, 1)
	o := s.Operations[0]
	assert.Equal(t, op, o.Name)
	assert.EqualValues(t, 2, o.Calls)
	assert.EqualValues(t, 3, o.Attempts)
	assert.Equal(t, map[string]int64{"ok": 1, "not retried": 1}, o.Stops)
	require.Len(t, o.Recent, 2)
	assert.Equal(t, "bad message", o.Recent[0].Reason)
	assert.Equal(t, []retrydebug.BreakerStatus{
		{Name: "queue", Key: "orders", State: "closed"},
		{Name: "queue", Key: "payments", State: "closed"},
	}, s.Breakers)
	assert.Len(t, s.Throttles, 2)
	require.Len(t, s.Budgets, 1)
	assert.InDelta(t, 9.1, s.Budgets[0].Tokens, 1e-9, "one failure, one success")

	w := httptest.NewRecorder()
	rec.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/debug/retries?format=json", nil))
	require.Equal(t, http.StatusOK, w.Code)
	var page retrydebug.Snapshot
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &page))
	assert.Equal(t, op, page.Operations[0].Name)

	// retryotel: the calls by outcome, and the breakers' state gauge.
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	calls := map[string]int64{}
	states := map[string]int64{} // key/state → 1 or 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case retryotel.CallsName:
				for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
					name, _ := dp.Attributes.Value(retryotel.OperationKey)
					outcome, _ := dp.Attributes.Value(retryotel.OutcomeKey)
					calls[name.AsString()+" "+outcome.AsString()] += dp.Value
				}
			case retryotel.BreakerStateName:
				for _, dp := range m.Data.(metricdata.Gauge[int64]).DataPoints {
					key, _ := dp.Attributes.Value(retryotel.GuardKeyKey)
					state, _ := dp.Attributes.Value(retryotel.BreakerStateKey)
					states[key.AsString()+" "+state.AsString()] = dp.Value
				}
			}
		}
	}
	assert.Equal(t, map[string]int64{op + " ok": 1, op + " not_retried": 1}, calls)
	assert.EqualValues(t, 1, states["orders closed"])
	assert.EqualValues(t, 0, states["orders open"])
}
