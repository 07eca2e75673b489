package retryotel_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryotel"
	"github.com/stormguard/retry/retrytest"
)

// Without options, New uses the global providers, as they are when it
// runs. The test sets the globals, so it does not run in parallel.
func TestNewDefaultsToGlobalProviders(t *testing.T) {
	reader, spans := sdkmetric.NewManualReader(), tracetest.NewSpanRecorder()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	prevM, prevT := otel.GetMeterProvider(), otel.GetTracerProvider()
	otel.SetMeterProvider(mp)
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetMeterProvider(prevM)
		otel.SetTracerProvider(prevT)
		_ = mp.Shutdown(context.Background())
		_ = tp.Shutdown(context.Background())
	})

	obs, err := retryotel.New()
	require.NoError(t, err)
	_, _ = retrytest.Do(context.Background(), retrytest.Script().Call, retry.Policy{OnDone: obs.OnDone("cache.get")})
	s := &sink{obs: obs, reader: reader, spans: spans}
	assert.Len(t, points(t, s.metrics(t)[retryotel.CallsName]), 1)
	assert.Len(t, spans.Ended(), 1)
}
