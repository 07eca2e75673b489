package retryotel_test

import (
	"context"
	"fmt"
	"slices"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/stormguard/retry/retryotel"
	"github.com/stormguard/retry/shed"
)

// A server's load shedder as metrics: alert on the share of
// shed.requests{shed.outcome="shed"}, and watch shed.limit move with the
// latency.
func ExampleObserver_ObserveShedLimiter() {
	reader := sdkmetric.NewManualReader()
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer meters.Shutdown(context.Background())
	obs, err := retryotel.New(retryotel.WithMeterProvider(meters))
	if err != nil {
		fmt.Println(err)
		return
	}
	l, err := shed.New(shed.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	reg, err := obs.ObserveShedLimiter("api", l)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Unregister()
	release, _ := l.Acquire(context.Background(), shed.Critical) // a request in flight
	defer release(shed.Success)

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	var lines []string // data points come in no set order
	for _, m := range rm.ScopeMetrics[0].Metrics {
		var pts []metricdata.DataPoint[int64]
		switch d := m.Data.(type) {
		case metricdata.Gauge[int64]:
			pts = d.DataPoints
		case metricdata.Sum[int64]:
			pts = d.DataPoints
		}
		for _, p := range pts {
			outcome, _ := p.Attributes.Value(retryotel.ShedOutcomeKey)
			lines = append(lines, fmt.Sprint(m.Name, " ", outcome.AsString(), " ", p.Value))
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// shed.in_flight  1
	// shed.limit  20
	// shed.queued  0
	// shed.requests admitted 1
	// shed.requests shed 0
}
