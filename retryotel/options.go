package retryotel

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// defaultMaxOperations is how many operation names an Observer tells apart
// unless WithMaxOperations says otherwise.
const defaultMaxOperations = 100

// Option configures [New].
type Option func(*config)

type config struct {
	meters  metric.MeterProvider
	tracers trace.TracerProvider
	maxOps  int
}

func newConfig(opts []Option) config {
	c := config{maxOps: defaultMaxOperations}
	for _, o := range opts {
		o(&c)
	}
	// The globals are read when New runs, as otelhttp reads them: set them
	// first, or pass providers.
	if c.meters == nil {
		c.meters = otel.GetMeterProvider()
	}
	if c.tracers == nil {
		c.tracers = otel.GetTracerProvider()
	}
	return c
}

// WithMeterProvider sets the MeterProvider of the metrics [the global
// one, otel.GetMeterProvider, when New runs].
func WithMeterProvider(p metric.MeterProvider) Option {
	return func(c *config) { c.meters = p }
}

// WithTracerProvider sets the TracerProvider of the spans [the global one,
// otel.GetTracerProvider, when New runs]. Pass noop.NewTracerProvider()
// to record metrics only: the Observer then skips spans at no cost.
func WithTracerProvider(p trace.TracerProvider) Option {
	return func(c *config) { c.tracers = p }
}

// WithMaxOperations sets how many operation names the Observer tells apart
// [100]; the calls of further names are counted under "_OTHER", so that
// the number of time series stays bounded whatever names come in. A value
// of 0 or less means the default.
func WithMaxOperations(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxOps = n
		}
	}
}
