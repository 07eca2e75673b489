package retryotel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retryotel"
	"github.com/stormguard/retry/retrytest"
)

// BenchmarkOnDone is the cost an Observer adds to each call of retry.Do:
// metrics on the SDK, with tracing off (a noop TracerProvider) or on (the
// SDK with an in-memory recorder, every span sampled).
func BenchmarkOnDone(b *testing.B) {
	ctx := context.Background()
	first, _ := retrytest.Do(ctx, retrytest.Script().Call, retry.Policy{})
	twice, _ := retrytest.Do(ctx, retrytest.Script(errUnavailable, errUnavailable).Call, retry.Policy{})
	for _, c := range []struct {
		name    string
		tr      retry.Trace
		tracing bool
	}{
		{"metrics/first success", first, false},
		{"metrics/2 retries", twice, false},
		{"metrics+spans/first success", first, true},
		{"metrics+spans/2 retries", twice, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			var opts []retryotel.Option
			if !c.tracing {
				opts = append(opts, retryotel.WithTracerProvider(noop.NewTracerProvider()))
			}
			s := newSink(b, opts...)
			hook := s.obs.OnDone("inventory.get")
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				hook(ctx, c.tr, nil)
				if c.tracing && i%1024 == 0 {
					s.spans.Reset() // keep the recorder's memory flat
				}
			}
		})
	}
}

// BenchmarkRecordHTTP is the cost an Observer adds to each request of a
// retryhttp.Transport, metrics only.
func BenchmarkRecordHTTP(b *testing.B) {
	ctx := context.Background()
	tr, _ := retrytest.Do(ctx, retrytest.Script().Call, retry.Policy{})
	s := newSink(b, retryotel.WithTracerProvider(noop.NewTracerProvider()))
	sum := retryhttp.Summary{Method: "GET", Origin: "https://api.example", Status: 200, Trace: tr}
	b.ReportAllocs()
	for b.Loop() {
		s.obs.RecordHTTP(ctx, sum)
	}
}

// With tracing off, recording a call's metrics allocates nothing, whatever
// its outcome or entry point, once its operation is known.
func TestMetricsDoNotAllocate(t *testing.T) {
	ctx := context.Background()
	s := newSink(t, retryotel.WithTracerProvider(noop.NewTracerProvider()))
	hook := s.obs.OnDone("inventory.get")
	first, _ := retrytest.Do(ctx, retrytest.Script().Call, retry.Policy{})
	gaveUp, _ := retrytest.Do(ctx, retrytest.Always(errUnavailable).Call, retry.Policy{})
	sum := retryhttp.Summary{Method: "GET", Origin: "https://a-rather-long-host-name.example.com:8443", Status: 503, Trace: gaveUp}
	orders := keyed("POST /orders", "/orders")
	keyedDone := idempotency.Summary{Outcome: idempotency.OutcomeReplayed, Status: 201, StoreCalls: 1, StoreTime: time.Millisecond}
	for name, f := range map[string]func(){
		"first success": func() { hook(ctx, first, nil) },
		"gave up":       func() { hook(ctx, gaveUp, nil) },
		"HTTP":          func() { s.obs.RecordHTTP(ctx, sum) },
		"gRPC":          func() { s.obs.RecordGRPC(ctx, "/inventory.v1.Stock/Get", 14, gaveUp) },
		"idempotency":   func() { s.obs.RecordIdempotency(orders, keyedDone) },
	} {
		f() // the first of each outcome makes its series
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, n)
		}
	}
}
