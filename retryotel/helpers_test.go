package retryotel_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stormguard/retry/retryotel"
)

// errUnavailable stands for a transient failure, a "503".
var errUnavailable = errors.New("503 service unavailable")

// secret is text that must never reach a metric or a span: it is in
// errors, paths, queries and headers of the tests' calls.
const secret = "s3cr3t-t0ken"

// sink is an Observer on the SDK, with an in-memory metric reader and span
// recorder.
type sink struct {
	obs     *retryotel.Observer
	reader  *sdkmetric.ManualReader
	spans   *tracetest.SpanRecorder
	tracers *sdktrace.TracerProvider
}

func newSink(t testing.TB, opts ...retryotel.Option) *sink {
	t.Helper()
	s := &sink{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(s.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(s.spans))
	t.Cleanup(func() {
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})
	obs, err := retryotel.New(append([]retryotel.Option{retryotel.WithMeterProvider(mp), retryotel.WithTracerProvider(tp)}, opts...)...)
	require.NoError(t, err)
	s.obs, s.tracers = obs, tp
	return s
}

// metrics collects what the Observer recorded, by metric name.
func (s *sink) metrics(t testing.TB) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, s.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, retryotel.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// point is a data point's attributes and values, whatever its kind.
type point struct {
	attrs      map[string]string
	count, sum float64 // a counter's value is its sum, with count 1
}

// points returns the data points of a metric.
func points(t testing.TB, data metricdata.Aggregation) []point {
	t.Helper()
	var out []point
	attrs := func(set attribute.Set) map[string]string {
		m := map[string]string{}
		for _, kv := range set.ToSlice() {
			m[string(kv.Key)] = kv.Value.String()
		}
		return m
	}
	switch d := data.(type) {
	case metricdata.Sum[int64]:
		require.True(t, d.IsMonotonic)
		for _, p := range d.DataPoints {
			out = append(out, point{attrs(p.Attributes), 1, float64(p.Value)})
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			out = append(out, point{attrs(p.Attributes), float64(p.Count), float64(p.Sum)})
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			out = append(out, point{attrs(p.Attributes), float64(p.Count), p.Sum})
		}
	case nil:
	default:
		t.Fatalf("unexpected aggregation %T", data)
	}
	return out
}

// byOutcome sums a metric's points by outcome: count and sum.
func byOutcome(t testing.TB, data metricdata.Aggregation) map[string][2]float64 {
	t.Helper()
	out := map[string][2]float64{}
	for _, p := range points(t, data) {
		v := out[p.attrs["retry.outcome"]]
		out[p.attrs["retry.outcome"]] = [2]float64{v[0] + p.count, v[1] + p.sum}
	}
	return out
}
