package retrydebug_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/retrydebug"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stretchr/testify/assert"
)

// Recording allocates nothing beyond the Trace: not for a first success,
// nor a retried call, nor an HTTP request named by method and origin, nor
// a gRPC call, nor a keyed request.
func TestRecordingDoesNotAllocate(t *testing.T) {
	rec := retrydebug.NewRecorder(0, 0)
	hook := rec.OnDone("inventory.get")
	ok, retried3, gaveUp := succeeded(t), retried(t, 3), exhausted(t, 4)
	ctx := context.Background()
	long := retryhttp.Summary{Method: "GET", Origin: "https://a-rather-long-host-name.example.com:8443", Status: 503, Trace: gaveUp}
	routed := retryhttp.Summary{Route: "GET /users/{id}/orders", Method: "GET", Origin: "https://api.example", Status: 200, Trace: ok}
	rec.RecordHTTP(ctx, long) // first sight of a name allocates its operation
	rec.RecordHTTP(ctx, routed)
	rec.RecordGRPC(ctx, "/inventory.v1.Stock/Get", 14, retried3)
	orders := keyed("POST /orders", "/orders")
	keyedDone := idempotency.Summary{Outcome: idempotency.OutcomeReplayed, Status: 201, StoreCalls: 1, StoreTime: 1000}
	rec.RecordIdempotency(orders, keyedDone)
	for name, f := range map[string]func(){
		"first success":  func() { hook(ctx, ok, nil) },
		"retried":        func() { hook(ctx, retried3, nil) },
		"gave up":        func() { hook(ctx, gaveUp, nil) },
		"Record":         func() { rec.Record("inventory.get", retried3) },
		"HTTP by origin": func() { rec.RecordHTTP(ctx, long) },
		"HTTP by route":  func() { rec.RecordHTTP(ctx, routed) },
		"gRPC":           func() { rec.RecordGRPC(ctx, "/inventory.v1.Stock/Get", 14, retried3) },
		"idempotency":    func() { rec.RecordIdempotency(orders, keyedDone) },
	} {
		assert.Zero(t, testing.AllocsPerRun(100, f), name)
	}
}

// BenchmarkOnDone is the cost a Recorder adds to each call of retry.Do.
func BenchmarkOnDone(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		tr   retry.Trace
	}{
		{"first success", succeeded(b)},
		{"2 retries", retried(b, 2)},
	} {
		b.Run(c.name, func(b *testing.B) {
			hook := retrydebug.NewRecorder(0, 0).OnDone("inventory.get")
			b.ReportAllocs()
			for b.Loop() {
				hook(ctx, c.tr, nil)
			}
		})
	}
	b.Run("parallel", func(b *testing.B) {
		rec := retrydebug.NewRecorder(0, 0)
		tr := succeeded(b)
		hooks := make([]func(context.Context, retry.Trace, error), 4)
		for i := range hooks {
			hooks[i] = rec.OnDone(fmt.Sprint("op", i))
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				hooks[i%len(hooks)](ctx, tr, nil)
			}
		})
	})
}

// BenchmarkRecordHTTP is the cost a Recorder adds to each request of a
// retryhttp.Transport.
func BenchmarkRecordHTTP(b *testing.B) {
	rec := retrydebug.NewRecorder(0, 0)
	s := retryhttp.Summary{Method: "GET", Origin: "https://api.example", Status: 200, Trace: succeeded(b)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rec.RecordHTTP(ctx, s)
	}
}
